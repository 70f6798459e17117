"""One world as an environment: `env` (`nmmo.Env`, the PettingZoo ParallelEnv and its batched array
API), built from its components: `episodes` (each episode's seed and map), `tasking`, `gaming`,
`outcomes`, `spaces` (with `global_state`) and `viewing` (overlays, recording); and the value
`landscape` add-on. Many worlds at once are `nmmo.engines`; replays and overlays are `nmmo.replays`.

`nmmo.Env`'s contract:

Agents: ints 1, 2, 3, ... in spawn order, never reused in an episode. Agent slots (rows of the
batched arrays) are reused by the next id.

Observation (per agent, `observation_space(agent)`): ``Tile`` ((2R+1)^2 x `TileAttr`, int16),
``Entity`` (PLAYER_N_OBS x `EntityAttr`, int32; row 0 is the observer), ``ActionTargets`` masks
{"Move": {"Direction": [5]}, "Attack": {"Style": [3], "Target": [PLAYER_N_OBS + 1]}} (int8),
``AgentId`` and ``CurrentTick``.

Action (per agent): ``{"Move": {"Direction": 0..4}, "Attack": {"Style": 0..2, "Target":
0..PLAYER_N_OBS}}``, either part optional; Target indexes the agent's last Entity rows and the
last index is the no-op. No mask is ever all zeros: with no target in reach every style is allowed
and the no-op is the only target. Invalid sub-actions (out of range or masked) are dropped and
counted in ``infos[agent]["invalid_actions"]``; an attack whose style and target each pass their
mask but whose target is beyond that style's reach is dropped with
``infos[agent]["attack_out_of_reach"] = 1`` (infos hold numbers; `info_details` adds the reasons);
malformed actions raise ValueError naming agent and key. Stepping after the horizon raises.
Actions for agents that already died are ignored; unknown ids raise ValueError.

Rewards: -1 on death, else 0, unless `reward_fn` is given or `reward(agent_id)` is overridden;
with REWARD_ACHIEVEMENT on, plus achievement points / 15 on the tick they are earned (reported
in ``infos[agent]["achievement_points"]`` then, or whenever ``env.report_achievements`` is set);
with PLAYER_TEAM_SPIRIT =
alpha > 0 each reward becomes alpha * team mean + (1 - alpha) * own.

Lifetime metrics arrive in ``infos[agent]["life"]`` when an agent dies or the episode ends (never
under "episode", the key SB3 and gymnasium reserve).

Global state (`state()`, `state_space`): for centralized critics, see `nmmo.envs.global_state`.

The env's id is ``nmmo_v0`` (PettingZoo's versioned names): it changes when a trajectory for the
same seed and actions would. The package's own version is ``nmmo.__version__``; CHANGELOG.md lists
what changed.
"""
