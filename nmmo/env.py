"""`nmmo.Env`: the PettingZoo ParallelEnv over the realm, and a batched array API beside it.

Agents: ints 1, 2, 3, ... in spawn order, never reused in an episode. Agent slots (rows of the
batched arrays) are reused by the next id.

Observation (per agent, `observation_space(agent)`): ``Tile`` ((2R+1)^2 x `TileAttr`, int16),
``Entity`` (PLAYER_N_OBS x `EntityAttr`, int32; row 0 is the observer), ``ActionTargets`` masks
{"Move": {"Direction": [5]}, "Attack": {"Style": [3], "Target": [PLAYER_N_OBS + 1]}} (int8),
``AgentId`` and ``CurrentTick``.

Action (per agent): ``{"Move": {"Direction": 0..4}, "Attack": {"Style": 0..2, "Target":
0..PLAYER_N_OBS}}``, either part optional; Target indexes the agent's last Entity rows and the
last index is the no-op. Invalid sub-actions (out of range or masked) are dropped and listed in
``infos[agent]["invalid_actions"]``; an attack whose style and target each pass their mask but whose
target is beyond that style's reach is dropped with ``infos[agent]["attack_out_of_reach"]``;
malformed actions raise ValueError naming agent and key. Stepping after the horizon raises.
Actions for agents that already died are ignored; unknown ids raise ValueError.

Rewards: -1 on death, else 0, unless `reward_fn` is given or `reward(agent_id)` is overridden;
with REWARD_ACHIEVEMENT on, plus achievement points / 15 on the tick they are earned (reported
in ``infos[agent]["achievement_points"]`` then, or whenever ``env.report_achievements`` is set);
with PLAYER_TEAM_SPIRIT =
alpha > 0 each reward becomes alpha * team mean + (1 - alpha) * own.

Episode metrics arrive in ``infos[agent]["episode"]`` when an agent dies or the episode ends.

Version history: v0 (this) — first release.

"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from nmmo import config as config_module
from nmmo import spaces
from nmmo.actions import ATTACK, DIRECTION, MOVE, STYLE, TARGET, apply_indices, int64_error, parse_action
from nmmo.config import Config
from nmmo.enums import Direction
from nmmo.metrics import REWARD_SCALE as ACHIEVEMENT_REWARD_SCALE
from nmmo.metrics import achievement_points, achievement_values, lifetime_metrics
from nmmo.obs import ObservationBuilder, Observations, as_index
from nmmo.overlays import Overlays
from nmmo.realm import Realm, TickResult
from nmmo.replay import Recorder, capture
from nmmo.rules import team_spirit
from nmmo.world import get_map


@dataclass
class BatchStep:
    """One step of the batched API; every array has one row per agent slot."""

    obs: Observations
    rewards: np.ndarray  # float32
    terminated: np.ndarray  # bool
    truncated: np.ndarray  # bool
    agent_ids: np.ndarray  # int64 id of the agent each row belongs to (0: empty slot)
    alive: np.ndarray  # bool: the slot holds a live agent after this step
    episodes: dict[str, np.ndarray] | None = None  # lifetime metrics of the slots that finished (terminated
    #                                               or truncated) this step, one entry per such slot
    episode_slots: np.ndarray | None = None


class Env(ParallelEnv):
    """The game world as a PettingZoo ParallelEnv (agents, spaces and rewards: see the module notes).

    Args:
        config: a `nmmo.config.Config`, a canonical config name ("small_maps"), a preset name or a
            TOML path; None is `nmmo.config.Default`.
        seed: seed of the first `reset()` when that call passes none.
        reward_fn: optional ``f(env, agent_id) -> float`` replacing the default reward.
        log_fn: optional ``f(env, agent_id) -> dict`` whose scalars are added to the episode metrics.
        render_mode: None, or "rgb_array" for `render()` to return the map as an RGB image.
        record: record the episode for `save_replay` (see `nmmo.replay`).

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
    ) -> None:
        self.config = config_module.resolve(config).validate()
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
        self._id_to_slot: dict[int, int] = {}
        self._map_cache: dict[int, Any] = {}
        self.overlays = Overlays(lambda: self.realm.state, self.config.MAP_BORDER, self.config.MAP_CENTER)
        self._recorder: Recorder | None = Recorder() if record else None
        self._custom_reward = reward_fn is not None or type(self).reward is not Env.reward
        self._custom_log = log_fn is not None or type(self).log is not Env.log
        #: report achievement points in infos (``infos[agent]["achievement_points"]``) even when
        #: REWARD_ACHIEVEMENT is off; interfaces that read them (`RewardShaping`) turn it on
        self.report_achievements = False
        # achievement points already accounted per slot, and the agent they belong to (a slot is reused)
        self._points_paid = np.zeros(self.n_slots, dtype=np.int64)
        self._points_owner = np.zeros(self.n_slots, dtype=np.int64)

    # ------------------------------------------------------------- spaces
    def observation_space(self, agent: int) -> gymnasium.spaces.Dict:
        """The same space object for every agent and every call."""
        self._check_agent_id(agent)
        if self._spaces is None:
            self._spaces = (spaces.observation_space(self.config, len(self.possible_agents)),
                            spaces.action_space(self.config))
        return self._spaces[0]

    def action_space(self, agent: int) -> gymnasium.spaces.Dict:
        """The same space object for every agent and every call."""
        self._check_agent_id(agent)
        self.observation_space(agent)
        return self._spaces[1]

    def _check_agent_id(self, agent: Any) -> None:
        if not (isinstance(agent, (int, np.integer)) and 1 <= agent <= len(self.possible_agents)):
            raise ValueError(f"{agent!r} is not an agent id of this env (ints 1..{len(self.possible_agents)})")

    # -------------------------------------------------------------- reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode on a map drawn from the training pool with the env RNG.

        `options` may name the map: ``{"map_seed": s}`` (any seed, e.g. a held-out evaluation map
        from ``nmmo.world.map_seed(config, i, "eval")``). Other keys are ignored. Each episode
        runs on one seed, kept in ``env.episode_seed``: a fresh env reset with it (and the same
        options) and stepped with the same actions replays the episode exactly.
        """
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
        self._points_paid[:] = 0
        self._points_owner[:] = 0
        self.overlays.reset()
        self.overlays.track(self.realm.state)
        if self._recorder is not None:
            self._recorder.start(self.realm.state, self._replay_header())
        slots = self._live_slots()
        self._obs = self._observe(slots, np.zeros(0, dtype=np.int64))
        self._refresh_agents()
        obs = self._obs_dicts(slots)
        infos = {agent: {} for agent in obs}
        return obs, infos

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
        with self._changing_the_world():
            return self._step_arrays(directions, styles, targets)

    def _step_arrays(self, directions: np.ndarray, styles: np.ndarray, targets: np.ndarray) -> BatchStep:
        ent = self.realm.state.entities
        ids_before = ent.id[: self.n_slots].copy()
        alive_before = ent.alive[: self.n_slots].copy()
        result = self._advance(directions, styles, targets)
        died = result.dead[result.dead < self.n_slots]
        terminated = np.zeros(self.n_slots, dtype=bool)
        terminated[died] = True
        rewarded = np.flatnonzero(alive_before | ent.alive[: self.n_slots])
        rewards = np.zeros(self.n_slots, dtype=np.float32)
        earned = self.achievements_earned(rewarded) if self.config.REWARD_ACHIEVEMENT else None
        rewards[rewarded] = self._reward_values(rewarded, terminated[rewarded], earned)
        truncated = np.zeros(self.n_slots, dtype=bool)
        if self.done:
            truncated[:] = alive_before & ~terminated
        ids = np.where(alive_before, ids_before, 0)
        alive = ent.alive[: self.n_slots].copy()
        ids = np.where(alive & ~terminated, ent.id[: self.n_slots], ids)
        finished = np.flatnonzero(terminated | truncated)
        episodes = lifetime_metrics(self.realm.state, finished) if finished.size else None
        return BatchStep(self._obs, rewards, terminated, truncated, ids, alive & ~truncated, episodes, finished)

    # ------------------------------------------------------------ replays
    def record(self) -> None:
        """Record from the next reset on (same as `Env(..., record=True)`)."""
        self._recorder = Recorder()

    def save_replay(self, path, policies: list[str] | None = None, team_policy: list[int] | None = None) -> Path:
        """Write the episode recorded so far (see `nmmo.replay`); returns the path. `policies` names
        who played, for the viewer, which colours players by policy when there are several: team t's
        players belong to ``policies[team_policy[t]]`` (how the tournament dealt them), or without
        `team_policy` to ``policies[t % len(policies)]``."""
        if self._recorder is None:
            raise ValueError("this env is not recording: pass record=True or call env.record() before reset()")
        if policies is not None:
            if isinstance(policies, str) or not policies or not all(isinstance(p, str) for p in policies):
                raise ValueError(f"policies must be a non-empty list of names, got {policies!r}")
            self._recorder.header["policies"] = list(policies)
        if team_policy is not None:
            if policies is None or not all(isinstance(i, int) and 0 <= i < len(policies) for i in team_policy):
                raise ValueError(f"team_policy must list an index into policies for every team, got {team_policy!r}")
            self._recorder.header["team_policy"] = list(team_policy)
        self._recorder.capture_overlays(self.overlays, len(self._recorder.frames) - 1)
        return self._recorder.save(path)

    def _replay_header(self) -> dict:
        return {"config_name": self.config.name, "config_toml": self.config.to_toml(),
                "map_seed": self.realm.map.seed, "n_players": self.n_slots, "center": self.config.MAP_CENTER,
                "border": self.config.MAP_BORDER, "horizon": self.config.HORIZON}

    @property
    def done(self) -> bool:
        """True once the horizon is reached."""
        return self.realm.state is not None and self.realm.state.tick >= self.config.HORIZON

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
        """The viewer's columns of every entity slot now (`nmmo.replay.capture`: copies)."""
        return capture(self.realm.state)

    def live_players(self) -> tuple[np.ndarray, np.ndarray]:
        """(agent ids, agent slots) of the live agents, in slot order."""
        slots = self._live_slots()
        return self.realm.state.entities.id[slots].copy(), slots

    def metrics_now(self) -> dict[int, dict]:
        """Every live agent's lifetime metrics as if the episode ended now (for runs stopped before
        the horizon, whose live agents have not been reported in infos yet)."""
        ids, slots = self.live_players()
        values = lifetime_metrics(self.realm.state, slots)
        columns = {name: array.tolist() for name, array in values.items()}
        return {agent: {name: column[i] for name, column in columns.items()} for i, agent in enumerate(ids.tolist())}

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
            raise RuntimeError(f"the episode is over (tick {self.realm.state.tick} reached HORIZON = "
                               f"{self.config.HORIZON}); call reset() to start the next one")

    def _live_slots(self) -> np.ndarray:
        return np.flatnonzero(self.realm.state.entities.alive[: self.n_slots])

    def _refresh_agents(self) -> None:
        slots = self._live_slots()
        ids = self.realm.state.entities.id[slots].tolist()
        self.agents = [] if self.done else ids
        self._id_to_slot = dict(zip(ids, slots.tolist(), strict=True))

    def _empty_actions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        capacity = self.realm.capacity
        return (np.full(capacity, Direction.STAY, dtype=np.int64), np.full(capacity, -1, dtype=np.int64),
                np.full(capacity, -1, dtype=np.int64))

    def _advance(self, directions, styles, targets) -> TickResult:
        last_tick = self.realm.state.tick + 1 >= self.config.HORIZON
        result = self.realm.tick(directions, styles, targets, self._np_random, respawn=not last_tick)
        self.overlays.track(self.realm.state)
        if self._recorder is not None:
            self._recorder.capture(self.realm.state, self.overlays)
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
        return out

    def _obs_dicts(self, slots: np.ndarray) -> dict[int, dict]:
        o = self._obs
        tick = self.realm.state.tick
        index = as_index(slots)
        # Iterating over the stacked arrays yields per-agent views at C speed.
        rows = zip(self.realm.state.entities.id[slots].tolist(), o.tile[index], o.entity[index],
                   o.move_mask[index], o.style_mask[index], o.target_mask[index], strict=True)
        return {
            agent: {
                "Tile": tile,
                "Entity": entity,
                "ActionTargets": {MOVE: {DIRECTION: move}, ATTACK: {STYLE: style, TARGET: target}},
                "AgentId": agent,
                "CurrentTick": tick,
            }
            for agent, tile, entity, move, style, target in rows
        }

    def _dict_outputs(self, observers_before, result: TickResult, invalid: dict) -> tuple:
        ent = self.realm.state.entities
        died = result.dead[result.dead < self.n_slots]
        slots = np.concatenate([observers_before, result.spawned])  # spawned slots were empty before
        obs = self._obs_dicts(slots)
        ids = ent.id[slots].tolist()
        is_dead = np.isin(slots, died)
        counted = self.config.REWARD_ACHIEVEMENT or self.report_achievements
        earned = self.achievements_earned(slots) if counted else np.zeros(0, dtype=np.int64)
        values = self._reward_values(slots, is_dead, earned)
        rewards = dict(zip(ids, values.tolist(), strict=True))
        terminations = dict(zip(ids, is_dead.tolist(), strict=True))
        truncate = self.done
        truncations = dict(zip(ids, (~is_dead & truncate).tolist(), strict=True))
        infos: dict[int, dict] = {aid: {} for aid in ids}
        for aid, problems in invalid.items():
            if aid in infos:
                infos[aid].update(problems)
        for i in np.flatnonzero(earned).tolist():
            infos[ids[i]]["achievement_points"] = int(earned[i])
        finished = slots if truncate else died
        if finished.size:
            self._add_episode_infos(infos, finished)
        return obs, rewards, terminations, truncations, infos

    def achievements_earned(self, slots: np.ndarray) -> np.ndarray:
        """Achievement points the agents in `slots` reached since they were last accounted (each
        tier counts once per agent id): what REWARD_ACHIEVEMENT pays, in ``infos[agent]
        ["achievement_points"]`` on the dict API. Accounting is per slot and agent id, so a
        slot's next agent starts from zero."""
        state = self.realm.state
        ids = state.entities.id[slots]
        points = achievement_points(achievement_values(state.entities, slots))
        paid = np.where(self._points_owner[slots] == ids, self._points_paid[slots], 0)
        self._points_paid[slots] = points
        self._points_owner[slots] = ids
        return points - paid

    def _reward_values(self, slots: np.ndarray, died: np.ndarray, earned: np.ndarray | None = None) -> np.ndarray:
        """Rewards of the agents in `slots` this step (`died` marks those that died; `earned`: their
        achievement points this step, paid as points / 15 when REWARD_ACHIEVEMENT is on)."""
        ent = self.realm.state.entities
        if self._custom_reward:
            values = np.array([self.reward(aid) for aid in ent.id[slots].tolist()], dtype=np.float64)
        else:
            values = np.where(died, -1.0, 0.0)
        if self.config.REWARD_ACHIEVEMENT and earned is not None and earned.size:
            values = values + earned / ACHIEVEMENT_REWARD_SCALE
        alpha = self.config.PLAYER_TEAM_SPIRIT
        if alpha > 0 and values.size:
            values = team_spirit(values, ent.team[slots], alpha)
        return values

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

    def _add_episode_infos(self, infos: dict, slots: np.ndarray) -> None:
        state = self.realm.state
        metrics = lifetime_metrics(state, slots)
        ids = state.entities.id[slots].tolist()
        for i, aid in enumerate(ids):
            episode = {name: values[i].item() for name, values in metrics.items()}
            if self._custom_log:
                episode.update(self.log(aid))
            infos.setdefault(aid, {})["episode"] = episode

    # ------------------------------------------------------------ actions
    def _parse_actions(self, actions: Any):
        if not isinstance(actions, dict):
            raise ValueError(f"actions must be a dict {{agent_id: action}}, got {type(actions).__name__}")
        directions, styles, targets = self._empty_actions()
        slots, agent_ids, parsed = [], [], []
        id_to_slot = self._id_to_slot
        for agent, action in actions.items():
            slot = id_to_slot.get(agent)
            if slot is None:
                self._check_known(agent)
                continue  # already dead: ignored
            slots.append(slot)
            agent_ids.append(agent)
            parsed.append(parse_action(agent, action))
        try:
            indices = np.array(parsed, dtype=np.int64).reshape(-1, 3)
        except OverflowError:
            agent = next(a for a, p in zip(agent_ids, parsed, strict=True) if not all(-(2**63) <= v < 2**63 for v in p))
            raise int64_error(agent, actions[agent]) from None
        invalid = apply_indices(self._obs, self.realm.state, self.config, np.array(slots, dtype=np.int64),
                                indices, (directions, styles, targets), agent_ids)
        return directions, styles, targets, invalid

    def _check_known(self, agent: Any) -> None:
        if not isinstance(agent, (int, np.integer)) or isinstance(agent, bool):
            raise ValueError(f"action keys are agent ids (int), got {agent!r}")
        if not 1 <= agent < self.realm.state.next_player_id:
            raise ValueError(f"action for unknown agent {agent}: ids issued so far are 1.."
                             f"{self.realm.state.next_player_id - 1}; live agents are env.agents")

    # ------------------------------------------------------------- render
    def render(self) -> np.ndarray | None:
        """rgb_array: the map coloured by material with players white and NPCs black."""
        if self.render_mode != "rgb_array" or self.realm.state is None:
            return None
        from nmmo.world import material_rgb

        state = self.realm.state
        image = material_rgb(state.tiles.material).copy()
        ent = state.entities
        alive = np.flatnonzero(ent.alive)
        colours = np.where((alive < ent.n_players)[:, None], 255, 0).astype(np.uint8)
        image[ent.row[alive], ent.col[alive]] = colours
        return image

    def close(self) -> None:
        """Nothing to release; present for the PettingZoo API."""
