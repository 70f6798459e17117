"""`nmmo.Env`: the PettingZoo ParallelEnv over the realm, and a batched array API beside it, built
from the components beside it in `nmmo.envs`. What it promises (agents, observations, actions,
rewards, lifetime metrics, its id) is `nmmo.envs`'s docstring.
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
from nmmo.core.actions import apply_indices, no_actions, parse_actions
from nmmo.core.layout import ObsBatch, rows_of, slots_selector, to_dicts
from nmmo.core.obs import ObservationBuilder, Observations
from nmmo.core.realm import Realm, TickResult
from nmmo.envs.episodes import Episodes
from nmmo.envs.gaming import Gaming
from nmmo.envs.gc_pause import gc_paused
from nmmo.envs.outcomes import BatchStep, Outcomes
from nmmo.envs.spaces import Spaces
from nmmo.envs.tasking import Tasking, TaskSource
from nmmo.envs.viewing import Viewing
from nmmo.replays.replay import capture
from nmmo.tasks import TaskSet

__all__ = ["BatchStep", "Env"]  # BatchStep lives in nmmo.envs.outcomes, with the rest of a step's accounting


class Env(ParallelEnv):
    """The game world as a PettingZoo ParallelEnv (agents, spaces and rewards: see `nmmo.envs`).

    The env advances the realm and observes it. It holds its components and calls them, handing each
    the state tables it reads: ``episodes`` (seeds and maps, `nmmo.envs.episodes.Episodes`),
    ``gaming`` (the minigame, `nmmo.envs.gaming.Gaming`), ``tasking`` (tasks,
    `nmmo.envs.tasking.Tasking`), ``outcomes`` (rewards, infos, episode metrics,
    `nmmo.envs.outcomes.Outcomes`), ``spaces`` (spaces and global state, `nmmo.envs.spaces.Spaces`)
    and ``viewing`` (overlays and recording, `nmmo.envs.viewing.Viewing`). What clients read of them
    keeps the names it had on the env (`task_status`, `game_winners`, `observation_space`, ...).

    Args:
        config: a `nmmo.config.Config`, a canonical config name ("small_maps"), a preset name or a
            TOML path; None is `nmmo.config.Default`.
        seed: seed of the first `reset()` when that call passes none.
        reward_fn: optional ``f(env, agent_id) -> float`` replacing the default reward.
        log_fn: optional ``f(env, agent_id) -> dict`` whose scalars are added to the episode metrics.
        render_mode: None, or "rgb_array" for `render()` to return the map as an RGB image.
        record: record the episode for `save_replay` (see `nmmo.replays.replay`).
        info_details: add the reasons for dropped sub-actions to infos as strings (by default infos
            hold numbers only).
        tasks: objectives as data (`nmmo.envs.tasking`): a shipped task set's name, a .toml / .json
            path, a `nmmo.tasks.TaskSet` or a list of task tables; None: the config's TASKS.

    """

    metadata = {"name": "nmmo_v0", "render_modes": ["rgb_array"], "is_parallelizable": True}
    #: Optional ``f(task_set, task_indices) -> (n, embedding_size(config)) float32``: your own encoding of
    #: each slot's task in the observation (default: `nmmo.tasks.embed` of the spec), read at each reset.
    task_encoder: Callable[[TaskSet, np.ndarray], np.ndarray] | None = None

    def __init__(self, config: Config | str | None = None, seed: int | None = None,
                 reward_fn: Callable[[Env, int], float] | None = None, log_fn: Callable[[Env, int], dict] | None = None,
                 render_mode: str | None = None, record: bool = False, info_details: bool = False,
                 tasks: TaskSource = None) -> None:
        self.config = config_module.resolve(config).validate()
        self.gaming = Gaming(self.config)
        self._take_tasks(self.gaming.tasks(tasks))  # first: with tasks on, the env's config (a copy) names them
        self.render_mode = render_mode
        self.reward_fn = reward_fn
        self.log_fn = log_fn
        self.episodes = Episodes(self.config, seed)
        self.realm = Realm(self.config)
        self.n_slots = self.config.PLAYER_N
        self.n_obs = self.config.PLAYER_N_OBS
        self._builder = ObservationBuilder(self.config, self.n_slots)
        spawn_budget = self.config.PLAYER_SPAWN_ATTEMPTS * self.config.HORIZON if self.config.PLAYER_RESPAWN else 0
        self.possible_agents = list(range(1, self.config.PLAYER_N + spawn_budget + 1))
        self.agents: list[int] = []
        self._obs: Observations | None = None
        self._failure: str | None = None  # set when a step failed half-way: the env is unusable until reset
        self.spaces = Spaces(self.config, len(self.possible_agents))
        self._id_to_slot: dict[int, int] = {}
        self.viewing = Viewing(self.config, lambda: self.realm.state, record)
        self.overlays = self.viewing.overlays  # `register` and `update` your own heatmaps here
        custom_reward = reward_fn is not None or type(self).reward is not Env.reward
        custom_log = log_fn is not None or type(self).log is not Env.log
        self.outcomes = Outcomes(self.config, self.n_slots, self.reward if custom_reward else None,
                                 self.log if custom_log else None)
        #: report achievement points in infos (``infos[agent]["achievement_points"]``) even when
        #: REWARD_ACHIEVEMENT is off; interfaces that read them (`RewardShaping`) turn it on
        self.report_achievements = False
        #: infos hold numbers only (PettingZoo-to-tensor wrappers need that); True adds the reasons
        #: for dropped sub-actions as strings under ``"invalid_action_details"``
        self.info_details = info_details

    def _take_tasks(self, tasks: TaskSource) -> None:
        """The env's tasks from now on (at construction, and when an adaptive game's set moves on)."""
        self.tasking = Tasking(self.config, tasks)
        self.config = self.tasking.config

    # -------------------------------------------------------------- reset
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode on a map drawn from the training pool with the env RNG.

        `options` may name the map: ``{"map_seed": s}`` (any seed, e.g. a held-out evaluation map
        from ``nmmo.core.world.map_seed(config, i, "eval")``). Other keys are ignored. Each episode
        runs on one seed, kept in ``env.episode_seed``: a fresh env reset with it (and the same
        options) and stepped with the same actions replays the episode exactly. With tasks on,
        ``{"tasks": indices}`` gives every agent slot (or team) its task (see `nmmo.envs.tasking`).
        """
        with gc_paused():
            return self._reset(seed, options)

    def _reset(self, seed: int | None, options: dict | None) -> tuple[dict, dict]:
        self._begin_episode(seed, options)
        self.viewing.start(self.realm.state, self.task_columns, self._replay_header, self.game_state)
        slots = self._live_slots()
        self._obs = self._builder.observe(self.realm.state, slots, np.zeros(0, dtype=np.int64), self)
        self._refresh_agents()
        obs = self._obs_dicts(slots)
        infos = {agent: {} for agent in obs}
        self.tasking.add_infos(infos, slots, list(obs))
        return obs, infos

    def _begin_episode(self, seed: int | None, options: dict | None) -> None:
        """The state part of `reset`: the episode's seed and generator, its map, the realm's
        initial state (the fused engine, `nmmo.engines.fused`, starts its worlds' episodes with it too)."""
        self._failure = None
        game_map = self.episodes.begin(seed, options)
        self.realm.reset(game_map, self.episodes.rng)
        self.outcomes.clear_points()
        new_tasks = self.gaming.next_tasks()  # an adaptive minigame's tasks may move on (`nmmo.envs.gaming`)
        if new_tasks is not None:
            self._take_tasks(new_tasks)
        self.gaming.start(self.realm)
        self.tasking.reset(self.realm.state, self.episodes.seed, options, self.task_encoder)

    # --------------------------------------------------------------- step
    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        """PettingZoo parallel step; see `nmmo.envs` for the action format. The cyclic garbage
        collector waits until it returns (`nmmo.envs.gc_pause`)."""
        with gc_paused():
            return self._step(actions)

    def _step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
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
                result = self._advance(*no_actions(self.realm.capacity))
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
        directions, styles, targets = no_actions(self.realm.capacity)
        slots = self._live_slots()
        apply_indices(self._obs, self.realm.state, self.config, slots, actions[slots], (directions, styles, targets))
        ent = self.realm.state.entities
        ids_before, alive_before = ent.id[: self.n_slots].copy(), ent.alive[: self.n_slots].copy()
        with self._changing_the_world():
            result = self._advance(directions, styles, targets)
            return self.outcomes.batch(self.realm.state, self._obs, ids_before, alive_before, result, self.tasking,
                                       self.done)

    # ------------------------------------------------------------ replays
    def record(self) -> None:
        """Record from the next reset on (same as `Env(..., record=True)`)."""
        self.viewing.record()

    def record_values(self, values: dict[int, float]) -> None:
        """Record each agent's value estimate on this tick's frame (a policy's `last_values`, given
        after `act` and before `step`), for the viewer's inspector; nothing when not recording."""
        self.viewing.record_values(values)

    def save_replay(self, path, policies: list[str] | None = None, team_policy: list[int] | None = None) -> Path:
        """Write the episode recorded so far (see `nmmo.replays.replay`); returns the path. `policies` names
        who played, for the viewer, which colours players by policy when there are several: team t's
        players belong to ``policies[team_policy[t]]`` (how the tournament dealt them), or without
        `team_policy` to ``policies[t % len(policies)]``."""
        return self.viewing.save(path, policies, team_policy)

    def _replay_header(self) -> dict:
        return {"config_name": self.config.name, "config_toml": self.config.to_toml(),
                "map_seed": self.realm.map.seed, "n_players": self.n_slots, "center": self.config.MAP_CENTER,
                "border": self.config.MAP_BORDER, "horizon": self.config.HORIZON, **self.task_header()}

    @property
    def episode_seed(self) -> int | None:
        """The seed of this episode: `reset(seed=env.episode_seed)` on a fresh env replays it."""
        return self.episodes.seed

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
        """The viewer's columns of every entity slot now, task fields included (`nmmo.replays.replay.capture`)."""
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

    def _advance(self, directions, styles, targets) -> TickResult:
        last_tick = self.realm.state.tick + 1 >= self.config.HORIZON
        result = self.realm.tick(directions, styles, targets, self.episodes.rng, respawn=not last_tick)
        self.tasking.evaluate(self.realm.state)
        self.gaming.tick(self.realm.state)
        columns = self.task_columns(progress=self.viewing.recording)  # the overlays count completions only
        self.viewing.capture(self.realm.state, columns, self.game_state)
        died = result.dead[result.dead < self.n_slots]
        self._obs = self._builder.observe(self.realm.state, self._live_slots(), died, self)
        self._refresh_agents()
        return result

    def _obs_dicts(self, slots: np.ndarray) -> dict[int, dict]:
        return to_dicts(self.realm.state.entities.id[slots].tolist(), rows_of(self._obs.fields(), slots),
                        self.realm.state.tick)

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
        return (self._obs_dicts(slots), *self.outcomes.dicts(self.realm.state, slots, died, invalid, self.tasking,
                                                             self.done, self.info_details, self.report_achievements))

    # ------------------------------------------------ the components' faces
    # What clients read of the components, under the names they have always had.
    tasks = property(lambda self: self.tasking.tasks, doc="The episode's tasks (`nmmo.tasks.TaskState`); None: off.")
    task_sampler = property(lambda self: self.tasking.sampler, doc="What draws the tasks at reset (`Tasking.sampler`).")
    task_embedding = property(lambda self: self.tasking.embedding, doc="`Tasking.embedding`: the Task field of slots.")
    task_status = property(lambda self: self.tasking.status, doc="`Tasking.status`: each slot's task outcome so far.")
    task_header = property(lambda self: self.tasking.header, doc="`Tasking.header`: the replay header's task entry.")
    game = property(lambda self: self.gaming.game, doc="The minigame GAME names (`nmmo.games`); None: the open world.")
    game_over = property(lambda self: self.gaming.over, doc="Whether a team won the game before the horizon.")
    state_space = property(lambda self: self.spaces.state_space, doc="The space of `state()` (`Spaces.state_space`).")

    def task_columns(self, progress: bool = True) -> dict[str, np.ndarray] | None:
        """A frame's task fields, one entry per entity slot; None with tasks off (`Tasking.columns`)."""
        return self.tasking.columns(self.realm.state, progress)

    def task_timing(self) -> dict[str, float]:
        """Seconds spent so far on the event log and on task evaluation (code timers)."""
        return self.tasking.timing(self.realm.state)

    def game_winners(self) -> np.ndarray:
        """The teams that won (the episode is over), or that would win if it ended now."""
        return self.gaming.winners(self.realm.state)

    def game_state(self) -> dict[str, Any]:
        """What the viewer shows of the game now ({} without one; `Gaming.view`)."""
        return self.gaming.view(self.realm.state)

    def game_result(self) -> str:
        """One line for people on who won and why, '' without a game (`Gaming.result`)."""
        return self.gaming.result(self.realm.state)

    def observation_space(self, agent: int) -> gymnasium.spaces.Dict:
        """The same space object for every agent and every call."""
        return self.spaces.observation_space(agent)

    def action_space(self, agent: int) -> gymnasium.spaces.Dict:
        """The same space object for every agent and every call."""
        return self.spaces.action_space(agent)

    def state(self) -> np.ndarray:
        """The global state for centralized critics (float32, `state_space`; `nmmo.envs.global_state`)."""
        if self._obs is None:
            raise RuntimeError("call reset() before state()")
        return self.spaces.state(self.realm.state, self._builder.entity_features(self.realm.state))

    def achievements_earned(self, slots: np.ndarray) -> np.ndarray:
        """Achievement points the agents in `slots` reached since they were last accounted, each tier
        once per agent: what REWARD_ACHIEVEMENT pays (`Outcomes.achievements_earned`)."""
        return self.outcomes.achievements_earned(self.realm.state.entities, slots)

    def metrics_now(self) -> dict[int, dict]:
        """Every live agent's lifetime metrics as if the episode ended now (for runs stopped before
        the horizon, whose live agents have not been reported in infos yet)."""
        return self.outcomes.metrics_now(self.realm.state, *self.live_players())

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
        directions, styles, targets = no_actions(self.realm.capacity)
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
        from nmmo.core.render import state_rgb

        return state_rgb(self.realm.state)

    def close(self) -> None:
        """Nothing to release; present for the PettingZoo API."""
