"""`nmmo.Env`: the PettingZoo ParallelEnv over the realm, and a batched array API beside it.

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

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from nmmo import config as config_module
from nmmo.config import Config
from nmmo.core.actions import STAY, apply_indices, parse_actions
from nmmo.core.layout import ObsBatch, to_dicts
from nmmo.core.obs import ObservationBuilder, Observations, slots_selector
from nmmo.core.realm import Realm, TickResult
from nmmo.core.world import get_map
from nmmo.envs.gaming import Gaming
from nmmo.envs.outcomes import BatchStep, Outcomes
from nmmo.envs.overlays import Overlays
from nmmo.envs.spaces import Spaces
from nmmo.envs.tasking import Tasking, TaskSource
from nmmo.io.replay import Recorder, capture

__all__ = ["BatchStep", "Env"]  # BatchStep lives in nmmo.envs.outcomes, with the rest of a step's accounting


class Env(Outcomes, Spaces, Tasking, Gaming, ParallelEnv):
    """The game world as a PettingZoo ParallelEnv (agents, spaces and rewards: see the module notes).

    What each step gives the agents besides observations (rewards, terminations, infos, episode
    metrics) is accounted by the `nmmo.envs.outcomes.Outcomes` mixin, and its spaces and global state
    come from the `nmmo.envs.spaces.Spaces` mixin, whose methods are this class's.

    Args:
        config: a `nmmo.config.Config`, a canonical config name ("small_maps"), a preset name or a
            TOML path; None is `nmmo.config.Default`.
        seed: seed of the first `reset()` when that call passes none.
        reward_fn: optional ``f(env, agent_id) -> float`` replacing the default reward.
        log_fn: optional ``f(env, agent_id) -> dict`` whose scalars are added to the episode metrics.
        render_mode: None, or "rgb_array" for `render()` to return the map as an RGB image.
        record: record the episode for `save_replay` (see `nmmo.io.replay`).
        info_details: add the reasons for dropped sub-actions to infos as strings (by default infos
            hold numbers only).
        tasks: objectives as data (`nmmo.envs.tasking`): a shipped task set's name, a .toml / .json
            path, a `nmmo.tasks.TaskSet` or a list of task tables; None: the config's TASKS.

    """

    metadata = {"name": "nmmo_v0", "render_modes": ["rgb_array"], "is_parallelizable": True}

    def __init__(
        self,
        config: Config | str | None = None,
        seed: int | None = None,
        reward_fn: Callable[[Env, int], float] | None = None,
        log_fn: Callable[[Env, int], dict] | None = None,
        render_mode: str | None = None,
        record: bool = False,
        info_details: bool = False,
        tasks: TaskSource = None,
    ) -> None:
        self.config = config_module.resolve(config).validate()
        self._init_tasks(self._init_game(tasks))  # first: with tasks on, the env's config (a copy) names them
        self.render_mode = render_mode
        self.reward_fn = reward_fn
        self.log_fn = log_fn
        self._seed = seed
        self._np_random: np.random.Generator | None = None
        self.episode_seed: int | None = None  # `reset(seed=env.episode_seed)` on a fresh env replays this episode
        self.realm = Realm(self.config)
        self.n_slots = self.config.PLAYER_N
        self.n_obs = self.config.PLAYER_N_OBS
        self._builder = ObservationBuilder(self.config, self.n_slots)
        spawn_budget = self.config.PLAYER_SPAWN_ATTEMPTS * self.config.HORIZON if self.config.PLAYER_RESPAWN else 0
        self.possible_agents = list(range(1, self.config.PLAYER_N + spawn_budget + 1))
        self.agents: list[int] = []
        self._obs: Observations | None = None
        self._failure: str | None = None  # set when a step failed half-way: the env is unusable until reset
        self._spaces: tuple[gymnasium.spaces.Dict, gymnasium.spaces.Dict] | None = None  # made once
        self._state_space: gymnasium.spaces.Box | None = None
        self._id_to_slot: dict[int, int] = {}
        self._map_cache: dict[int, Any] = {}
        self.overlays = Overlays(lambda: self.realm.state, self.config.MAP_BORDER, self.config.MAP_CENTER)
        self._recorder: Recorder | None = Recorder() if record else None
        self._custom_reward = reward_fn is not None or type(self).reward is not Env.reward
        self._custom_log = log_fn is not None or type(self).log is not Env.log
        #: report achievement points in infos (``infos[agent]["achievement_points"]``) even when
        #: REWARD_ACHIEVEMENT is off; interfaces that read them (`RewardShaping`) turn it on
        self.report_achievements = False
        #: infos hold numbers only (PettingZoo-to-tensor wrappers need that); True adds the reasons
        #: for dropped sub-actions as strings under ``"invalid_action_details"``
        self.info_details = info_details
        self._clear_points()

    # -------------------------------------------------------------- reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode on a map drawn from the training pool with the env RNG.

        `options` may name the map: ``{"map_seed": s}`` (any seed, e.g. a held-out evaluation map
        from ``nmmo.core.world.map_seed(config, i, "eval")``). Other keys are ignored. Each episode
        runs on one seed, kept in ``env.episode_seed``: a fresh env reset with it (and the same
        options) and stepped with the same actions replays the episode exactly. With tasks on,
        ``{"tasks": indices}`` gives every agent slot (or team) its task (see `nmmo.envs.tasking`).
        """
        self._begin_episode(seed, options)
        self.overlays.reset()
        self.overlays.track(self.realm.state, self.task_columns())
        if self._recorder is not None:
            self._recorder.start(self.realm.state, self._replay_header(), self.task_columns(), self.game_state())
        slots = self._live_slots()
        self._obs = self._observe(slots, np.zeros(0, dtype=np.int64))
        self._refresh_agents()
        obs = self._obs_dicts(slots)
        infos = {agent: {} for agent in obs}
        self._add_task_infos(infos, slots, list(obs))
        return obs, infos

    def _begin_episode(self, seed: int | None, options: dict | None) -> None:
        """The state part of `reset`: the episode's seed and generator, its map, the realm's
        initial state (the fused engine, `nmmo.envs.fused`, starts its worlds' episodes with it too)."""
        if seed is None and self._np_random is None:
            seed = self._seed
        if seed is None and self._np_random is None:  # unseeded: fresh entropy, still replayable
            seed = int(np.random.SeedSequence().generate_state(2, np.uint64)[0] >> np.uint64(1))
        elif seed is None:  # a fresh episode stream derived from the previous one: reproducible from the first seed
            seed = int(self._np_random.integers(2**63))
        self.episode_seed = seed
        self._failure = None
        self._np_random = np.random.default_rng(seed)
        rng = self._np_random
        map_seed = int(rng.integers(self.config.MAP_N))  # drawn even when overridden: same RNG stream
        if options and options.get("map_seed") is not None:
            requested = options["map_seed"]
            if not isinstance(requested, (int, np.integer)) or isinstance(requested, bool) or requested < 0:
                raise ValueError(f"options['map_seed'] must be a non-negative int, got {requested!r}")
            map_seed = int(requested)
        if map_seed not in self._map_cache:
            self._map_cache = {map_seed: get_map(self.config, map_seed)}  # keep the last one in memory
        self.realm.reset(self._map_cache[map_seed], rng)
        self._clear_points()
        self._reset_game()  # a minigame's rules and tasks (`nmmo.envs.gaming`)
        self._reset_tasks(seed, options)

    # --------------------------------------------------------------- step
    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        """PettingZoo parallel step; see the module docstring for the action format."""
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        self._check_not_over()
        directions, styles, targets, invalid = self._parse_actions(actions)  # raises before anything changes
        with self._changing_the_world():
            observers_before = self._live_slots()
            result = self._advance(directions, styles, targets)
            outputs = self._dict_outputs(observers_before, result, invalid)
            none_spawned = np.zeros(0, dtype=np.int64)
            while not self.agents and not self.done and self.config.PLAYER_RESPAWN and (
                    self.config.PLAYER_SPAWN_ATTEMPTS):
                # Every agent died in the same tick. PettingZoo loops stop on an empty `agents`, so tick
                # on (nobody to act) until the respawns arrive: `agents` is empty only at the end.
                result = self._advance(*self._empty_actions())
                for merged, extra in zip(outputs, self._dict_outputs(none_spawned, result, {}), strict=True):
                    merged.update(extra)
        return outputs

    def step_arrays(self, actions: np.ndarray) -> BatchStep:
        """Batched step: `actions` is (slots, 3) ints [direction, style, target index] per agent slot
        (rows of empty slots are ignored; -1 or the no-op index means no attack). Invalid entries
        are dropped like invalid sub-actions. Returned arrays never change while you hold them."""
        if self._obs is None:
            raise RuntimeError("call reset() before step_arrays()")
        self._check_not_over()
        actions = np.asarray(actions)
        if actions.shape != (self.n_slots, 3) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be an integer array of shape ({self.n_slots}, 3), got "
                             f"{actions.dtype} {actions.shape}")
        directions, styles, targets = self._empty_actions()
        slots = self._live_slots()
        apply_indices(self._obs, self.realm.state, self.config, slots, actions[slots], (directions, styles, targets))
        ent = self.realm.state.entities
        ids_before, alive_before = ent.id[: self.n_slots].copy(), ent.alive[: self.n_slots].copy()
        with self._changing_the_world():
            result = self._advance(directions, styles, targets)
            return self._array_outcome(ids_before, alive_before, result)

    # ------------------------------------------------------------ replays
    def record(self) -> None:
        """Record from the next reset on (same as `Env(..., record=True)`)."""
        self._recorder = Recorder()

    def record_values(self, values: dict[int, float]) -> None:
        """Record each agent's value estimate on this tick's frame (a policy's `last_values`, given
        after `act` and before `step`), for the viewer's inspector; nothing when not recording."""
        if self._recorder is not None:
            self._recorder.record_values(values)

    def save_replay(self, path, policies: list[str] | None = None, team_policy: list[int] | None = None) -> Path:
        """Write the episode recorded so far (see `nmmo.io.replay`); returns the path. `policies` names
        who played, for the viewer, which colours players by policy when there are several: team t's
        players belong to ``policies[team_policy[t]]`` (how the tournament dealt them), or without
        `team_policy` to ``policies[t % len(policies)]``."""
        if self._recorder is None:
            raise ValueError("this env is not recording: pass record=True or call env.record() before reset()")
        self._recorder.name_players(policies, team_policy)
        self._recorder.capture_overlays(self.overlays, len(self._recorder.frames) - 1)
        return self._recorder.save(path)

    def _replay_header(self) -> dict:
        return {"config_name": self.config.name, "config_toml": self.config.to_toml(),
                "map_seed": self.realm.map.seed, "n_players": self.n_slots, "center": self.config.MAP_CENTER,
                "border": self.config.MAP_BORDER, "horizon": self.config.HORIZON, **self.task_header()}

    @property
    def done(self) -> bool:
        """True once the horizon is reached (or a minigame is won)."""
        return self.realm.state is not None and (self.realm.state.tick >= self.config.HORIZON or self.game_over)

    # --------------------------------------------- read-only access for clients
    # What the viewer server, evaluation and tools read, without reaching into `realm.state`.
    @property
    def tick(self) -> int:
        """The current tick (0 after reset)."""
        return int(self.realm.state.tick)

    @property
    def material(self) -> np.ndarray:
        """The map's current materials (S x S, a harvested forest reads as scrub): a read-only view."""
        view = self.realm.state.tiles.material.view()
        view.flags.writeable = False
        return view

    def frame(self) -> dict[str, np.ndarray]:
        """The viewer's columns of every entity slot now, task fields included (`nmmo.io.replay.capture`)."""
        return capture(self.realm.state, self.task_columns())

    def live_players(self) -> tuple[np.ndarray, np.ndarray]:
        """(agent ids, agent slots) of the live agents, in slot order."""
        slots = self._live_slots()
        return self.realm.state.entities.id[slots].copy(), slots

    # ----------------------------------------------------------- internals
    @contextlib.contextmanager
    def _changing_the_world(self):
        """Once a step has begun to change the state, any failure (an engine bug, a custom reward
        that raises) leaves a half-stepped world: the env refuses to go on until `reset`."""
        try:
            yield
        except BaseException as err:
            self._failure = f"{type(err).__name__}: {err}"
            raise

    def _check_not_over(self) -> None:
        if self._failure is not None:
            raise RuntimeError(f"this env failed in the middle of a step ({self._failure}) and its state is "
                               "half-stepped; call reset() to start a new episode")
        if self.done:
            raise RuntimeError(f"the episode is over (tick {self.realm.state.tick}, HORIZON = {self.config.HORIZON}"
                               f"{', the game won' if self.game_over else ''}); call reset() to start the next one")

    def _live_slots(self) -> np.ndarray:
        return np.flatnonzero(self.realm.state.entities.alive[: self.n_slots])

    def _refresh_agents(self) -> None:
        slots = self._live_slots()
        ids = self.realm.state.entities.id[slots].tolist()
        self.agents = [] if self.done else ids
        self._id_to_slot = dict(zip(ids, slots.tolist(), strict=True))

    def _empty_actions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        capacity = self.realm.capacity
        return (np.full(capacity, STAY, dtype=np.int64), np.full(capacity, -1, dtype=np.int64),
                np.full(capacity, -1, dtype=np.int64))

    def _advance(self, directions, styles, targets) -> TickResult:
        last_tick = self.realm.state.tick + 1 >= self.config.HORIZON
        result = self.realm.tick(directions, styles, targets, self._np_random, respawn=not last_tick)
        self._evaluate_tasks()
        self._game_tick()
        columns = self.task_columns(progress=self._recorder is not None)  # the overlays count completions only
        self.overlays.track(self.realm.state, columns)
        if self._recorder is not None:
            self._recorder.capture(self.realm.state, self.overlays, columns, self.game_state())
        died = result.dead[result.dead < self.n_slots]
        self._obs = self._observe(self._live_slots(), died)
        self._refresh_agents()
        return result

    def _observe(self, live: np.ndarray, died: np.ndarray) -> Observations:
        """Fresh observation buffers for live agents and for agents that died this tick (whose
        final observation shows them on their last tile)."""
        out = self._builder.acquire(np.concatenate([live, died]))
        state = self.realm.state
        feats = self._builder.entity_features(state)
        self._builder.build(state, live, out, feats)
        self._builder.build(state, died, out, feats, died=True)
        self._builder.fill(out, self, np.concatenate([live, died]))
        return out

    def _obs_dicts(self, slots: np.ndarray) -> dict[int, dict]:
        index = slots_selector(slots)
        arrays = {name: values[index] for name, values in self._obs.fields().items()}
        return to_dicts(self.realm.state.entities.id[slots].tolist(), arrays, self.realm.state.tick)

    def observations(self) -> ObsBatch:
        """The live agents' observations as an array batch (`nmmo.core.layout.ObsBatch`): what `step`
        returns as dicts, for policies that take arrays (`act_arrays`)."""
        slots = self._live_slots()
        index = slots_selector(slots)
        return ObsBatch(self.realm.state.entities.id[slots].astype(np.int64),
                        {name: values[index] for name, values in self._obs.fields().items()}, self.realm.state.tick)

    def _dict_outputs(self, observers_before, result: TickResult, invalid: dict) -> tuple:
        """`step`'s five dicts for the agents that observed before this tick and those spawned in
        it (their slots were empty before): observations here, the rest from `nmmo.envs.outcomes`."""
        slots = np.concatenate([observers_before, result.spawned])
        died = result.dead[result.dead < self.n_slots]
        return (self._obs_dicts(slots), *self._outcome_dicts(slots, died, invalid))

    # -------------------------------------------------- hooks for custom rewards
    def reward(self, agent_id: int) -> float:
        """Reward of one agent this step: -1 if it died, else 0. Override for custom rewards (the
        env's tables are readable here: `self.realm.players`, `self.realm.state`)."""
        if self.reward_fn is not None:
            return float(self.reward_fn(self, agent_id))
        return -1.0 if agent_id not in self._id_to_slot or not self._slot_alive(agent_id) else 0.0

    def _slot_alive(self, agent_id: int) -> bool:
        slot = self._id_to_slot[agent_id]
        return bool(self.realm.state.entities.alive[slot])

    def log(self, agent_id: int) -> dict:
        """Extra scalars (or dicts of scalars) for an agent's episode metrics. Override or pass
        `log_fn`."""
        return dict(self.log_fn(self, agent_id)) if self.log_fn is not None else {}

    # ------------------------------------------------------------ actions
    def _parse_actions(self, actions: Any):
        """The tick's (directions, styles, targets) arrays from a dict of actions, and {agent:
        problems} for the sub-actions dropped; raises for malformed ones before anything changes."""
        directions, styles, targets = self._empty_actions()
        slots, agent_ids, indices = parse_actions(actions, self._id_to_slot, self.realm.state.next_player_id)
        invalid = apply_indices(self._obs, self.realm.state, self.config, slots, indices,
                                (directions, styles, targets), agent_ids)
        return directions, styles, targets, invalid

    # ------------------------------------------------------------- render
    def render(self) -> np.ndarray | None:
        """rgb_array: the map coloured by material with players white and NPCs black
        (`nmmo.core.render`, which ``nmmo replay export`` draws replays with too)."""
        if self.render_mode != "rgb_array" or self.realm.state is None:
            return None
        from nmmo.core.render import entities_rgb

        ent = self.realm.state.entities
        alive = np.flatnonzero(ent.alive)
        return entities_rgb(self.realm.state.tiles.material, ent.row[alive], ent.col[alive], alive < ent.n_players)

    def close(self) -> None:
        """Nothing to release; present for the PettingZoo API."""
