"""The fused engine: K worlds of one config in one set of tables, every system run once per tick.

A vector env that loops over K separate envs pays numpy's fixed cost per call (some sixty calls a
tick) K times. Here the K worlds share one entity table and one tile grid, so each system and the
observation builder run once over all of them and the per-call cost is paid once.

Layout:

- Entity rows: every world's players first, world-major (world k's agent slot s is row
  ``k * PLAYER_N + s``, the same row as in `nmmo.engines.vector`'s arrays), then every world's NPCs (world
  k's NPC j is row ``K * PLAYER_N + k * NPC_N + j``). So ``row < n_players`` still means "a
  player", and within a world the rows keep a lone env's order (players, then NPCs, by slot).
- Tiles: the worlds' maps, each with its lava border, stacked into one tall grid (world k's map in
  rows ``k * S .. (k + 1) * S - 1``); entities carry coordinates in that grid. Borders are wider
  than any vision window, reach, NPC search or move, so nothing the systems do crosses from one
  world into another, and they run unchanged (observations show coordinates within the world).
- Time: one clock for all worlds; world k's episode began at tick ``start[k]`` of it. The systems
  only compare or subtract tick-valued columns (spawn tick, freeze end) with the clock, so a world
  behaves exactly as a lone env whose clock reads ``tick - start[k]``.
- Randomness: each world keeps the `numpy.random.Generator` a lone env with its seed would have,
  and every draw site draws per world, sized by that world alone (`nmmo.core.draws`); spawning loops
  over the worlds that spawn, calling the same choice functions a lone env calls.

So world k gives, byte for byte, what a lone `nmmo.Env` with world k's seed gives for the same
actions (tests/test_fused.py checks it over hundreds of ticks with combat, NPCs and resets).
Episodes start through a lone env per world (`Env.reset`'s own seeding, map choice and spawning)
whose initial state is copied in; a world whose episode ends resets alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nmmo.config import Config
from nmmo.core.actions import STAY, apply_indices
from nmmo.core.draws import WorldRngs
from nmmo.core.metrics import METRICS, lifetime_metrics
from nmmo.core.obs import OBS_FIELDS, ObservationBuilder, Observations, TileCodes
from nmmo.core.realm import Realm
from nmmo.core.rules import nobody_returns
from nmmo.core.state import NO_TICK, Entities, State, Tiles
from nmmo.core.systems import spawn
from nmmo.engines.buffers import FINAL_PREFIX
from nmmo.engines.fused_tasks import FusedTasks
from nmmo.envs.env import Env
from nmmo.envs.outcomes import earned_points, mix_rewards

#: Entity columns, and those that need translating between a lone world and the fused tables.
COLUMNS = tuple(f.name for f in dataclasses.fields(Entities) if not f.init)
COORDINATES = ("row", "spawn_row", "flee_row")  # tile rows: shifted by the world's block of the grid
TICKS = ("spawn_tick", "freeze_end")  # ticks: shifted by the world's start (NO_TICK stays)
ROW_REFERENCES = ("attacker_row", "target")  # entity rows (-1: none)
#: The clock is moved back (with every tick-valued column) before int32 columns could overflow.
REBASE_AT = 2**30


class FusedWorlds(Realm):
    """K worlds in one set of tables (see the module notes), advanced by `Realm.tick`'s systems.

    `envs[k]` starts world k's episodes (its seed stream, map cache and spawning) and holds its
    generator; `reset_world(k)` starts the next one and copies it in, `load(k, env)` copies any
    lone env's state in, `world_state(k)` copies world k out as a lone `State`."""

    def __init__(self, config: Config, seeds: list[int]) -> None:
        super().__init__(config)
        k, n = len(seeds), config.PLAYER_N
        m = self.capacity - n  # NPC rows per world
        self.n_worlds, self.lone_capacity = k, self.capacity
        self.side = side = config.MAP_SIZE
        self.n_players, self.capacity = k * n, k * self.capacity
        self.world_of_row = np.concatenate([np.repeat(np.arange(k), n), np.repeat(np.arange(k), m)])
        self.lone_row = np.concatenate([np.tile(np.arange(n), k), n + np.tile(np.arange(m), k)])
        self.rows_of = np.empty((k, self.lone_capacity), dtype=np.int64)  # rows_of[k, lone row] = fused row
        self.rows_of[self.world_of_row, self.lone_row] = np.arange(self.capacity)
        self.row_offset = (self.world_of_row * side).astype(np.int32)
        grid = np.zeros((k * side, side), dtype=np.uint8)
        occupancy_type = np.int16 if self.capacity < 2**15 - 1 else np.int32
        tiles = Tiles(material=grid, base_material=grid.copy(), occupancy=np.full(grid.shape, -1, occupancy_type),
                      water_adjacent=np.zeros(grid.shape, dtype=bool), depleted=np.zeros(0, dtype=np.int64))
        self.state = State(Entities(self.capacity, self.n_players), tiles)
        self.envs = [Env(config, seed=s) for s in seeds]
        self.start = np.zeros(k, dtype=np.int64)  # the clock's reading when each world's episode began
        self.next_player_id = np.ones(k, dtype=np.int64)
        self.next_npc_id = np.full(k, -1, dtype=np.int64)
        self.rngs = WorldRngs([env.episodes.rng for env in self.envs], self.world_of_row, self.lone_row, side * side)

    # ------------------------------------------------------------ episodes
    def ticks(self) -> np.ndarray:
        """Each world's tick in its own episode."""
        return self.state.tick - self.start

    def reset_world(self, k: int, seed: int | None = None) -> None:
        """Start world k's next episode exactly as `Env.reset(seed)` of its lone env would."""
        env = self.envs[k]
        env._begin_episode(seed, None)
        self.load(k, env)
        env.realm.state = None  # the fused tables hold it from here on

    def load(self, k: int, env: Env) -> None:
        """Make world k the state of the lone `env` (whose generator and episode it takes over)."""
        lone, state = env.realm.state, self.state
        if state.tick >= REBASE_AT:
            self._rebase()
        self.envs[k], self.rngs.generators[k] = env, env.episodes.rng
        start = state.tick - lone.tick
        rows, side = self.rows_of[k], self.side
        for name in COLUMNS:
            value = getattr(lone.entities, name)
            if name in COORDINATES:
                value = value + k * side
            elif name in TICKS:
                value = np.where(value == NO_TICK, NO_TICK, value + start)
            elif name in ROW_REFERENCES:
                value = np.where(value >= 0, rows[np.maximum(value, 0)], -1)
            getattr(state.entities, name)[rows] = value
        tiles, block = state.tiles, slice(k * side, (k + 1) * side)
        tiles.material[block] = lone.tiles.material
        tiles.base_material[block] = lone.tiles.base_material
        tiles.water_adjacent[block] = lone.tiles.water_adjacent
        occupancy = lone.tiles.occupancy
        tiles.occupancy[block] = np.where(occupancy >= 0, rows[np.maximum(occupancy, 0)], -1)
        others = tiles.depleted[tiles.depleted // (side * side) != k]  # each world's entries stay in harvest order
        tiles.depleted = np.concatenate([others, lone.tiles.depleted + k * side * side])
        self.start[k] = start
        self.next_player_id[k], self.next_npc_id[k] = lone.next_player_id, lone.next_npc_id

    def world_state(self, k: int) -> State:
        """World k as the `State` of a lone env (copies): for checks and for tools."""
        state, rows, side = self.state, self.rows_of[k], self.side
        start = int(self.start[k])
        ent = Entities(self.lone_capacity, self.config.PLAYER_N)
        for name in COLUMNS:
            value = getattr(state.entities, name)[rows]
            if name in COORDINATES:
                value = value - k * side
            elif name in TICKS:
                value = np.where(value == NO_TICK, NO_TICK, value - start)
            elif name in ROW_REFERENCES:
                value = np.where(value >= 0, self.lone_row[np.maximum(value, 0)], -1)
            getattr(ent, name)[...] = value
        block = slice(k * side, (k + 1) * side)
        occupancy = state.tiles.occupancy[block]
        occupancy_type = np.int16 if self.lone_capacity < 2**15 - 1 else np.int32
        occupancy = np.where(occupancy >= 0, self.lone_row[np.maximum(occupancy, 0)], -1).astype(occupancy_type)
        depleted = state.tiles.depleted
        grids = state.tiles
        tiles = Tiles(material=grids.material[block].copy(), base_material=grids.base_material[block].copy(),
                      occupancy=occupancy, water_adjacent=grids.water_adjacent[block].copy(),
                      depleted=depleted[depleted // (side * side) == k] - k * side * side)
        return State(ent, tiles, tick=state.tick - start, next_player_id=int(self.next_player_id[k]),
                     next_npc_id=int(self.next_npc_id[k]), map_seed=int(self.envs[k].realm.map.seed))

    def _rebase(self) -> None:
        """Move the clock back (differences of ticks, all the systems use, stay the same)."""
        state, shift = self.state, int(self.start.min())
        ent = state.entities
        state.tick -= shift
        self.start -= shift
        ent.spawn_tick -= shift
        ent.freeze_end[:] = np.where(ent.freeze_end == NO_TICK, NO_TICK, ent.freeze_end - shift)

    # ------------------------------------------------------------ spawning
    def _respawn_players(self, rng, respawn: np.ndarray) -> np.ndarray:
        """`spawn.respawn_players` in every world whose `respawn` flag is set: each world's choice
        from its own generator, then one write for all."""
        config, state = self.config, self.state
        if not config.PLAYER_RESPAWN or config.PLAYER_SPAWN_ATTEMPTS == 0:
            return np.zeros(0, dtype=np.int64)
        n, side = config.PLAYER_N, self.side
        alive = state.entities.alive[: self.n_players].reshape(self.n_worlds, n)
        rows, tiles, slots, ids = [], [], [], []
        for k in np.flatnonzero(respawn & ~alive.all(axis=1)).tolist():
            block = slice(k * side, (k + 1) * side)
            chosen_slots, chosen = spawn.choose_respawns(config, self.rngs.generators[k], alive[k],
                                                         state.tiles.material[block], state.tiles.occupancy[block])
            if chosen_slots.size:
                first = int(self.next_player_id[k])
                self.next_player_id[k] += chosen_slots.size
                rows.append(k * n + chosen_slots)
                tiles.append(chosen + (k * side, 0))
                slots.append(chosen_slots)
                ids.append(np.arange(first, first + chosen_slots.size))
        if not rows:
            return np.zeros(0, dtype=np.int64)
        rows = np.concatenate(rows)
        spawn._place(state, rows, np.concatenate(tiles))
        spawn.init_players(state.entities, config, rows, np.concatenate(slots), np.concatenate(ids), state.tick + 1)
        return rows

    def _spawn_npcs(self, rng) -> None:
        """`spawn.spawn_npcs` in every world with a free NPC row, as `_respawn_players` does."""
        config, state = self.config, self.state
        m = self.lone_capacity - config.PLAYER_N
        if not config.has("NPC") or config.NPC_SPAWN_ATTEMPTS <= 0 or m == 0:
            return
        side = self.side
        alive = state.entities.alive[self.n_players :].reshape(self.n_worlds, m)
        rows, tiles, ids, stats = [], [], [], []
        for k in np.flatnonzero(~alive.all(axis=1)).tolist():
            block, generator = slice(k * side, (k + 1) * side), self.rngs.generators[k]
            free = np.flatnonzero(~alive[k])
            rc = spawn.choose_npc_tiles(config, generator, state.tiles.material[block], state.tiles.occupancy[block],
                                        free.size, config.NPC_SPAWN_ATTEMPTS)
            if len(rc):
                first = int(self.next_npc_id[k])
                self.next_npc_id[k] -= len(rc)
                rows.append(self.n_players + k * m + free[: len(rc)])
                tiles.append(rc + (k * side, 0))
                ids.append(np.arange(first, first - len(rc), -1))
                stats.append(spawn.npc_stats(config, generator, rc[:, 0], rc[:, 1]))
        if not rows:
            return
        rows = np.concatenate(rows)
        spawn._place(state, rows, np.concatenate(tiles))
        spawn._reset_entity_rows(state.entities, rows, state.tick + 1)
        columns = tuple(np.concatenate(column) for column in zip(*stats, strict=True))
        spawn.init_npcs(state.entities, rows, np.concatenate(ids), columns)

    @property
    def players(self):
        raise NotImplementedError("ids repeat across fused worlds: read one world through world_state(k)")

    npcs = players


class FusedBlock:
    """K fused worlds behind the interface of `nmmo.engines.vector.EnvBlock`: rows ``start_row ..`` of
    the vector env's buffers, observations built straight into them, worlds reset on their own.

    The step is `Env.step_arrays` for all worlds at once (same validation, rewards, truncation
    and episode metrics), then the resets of the worlds whose episode ended. `env` is accepted for
    `EnvBlock`'s signature: the fused engine runs `nmmo.Env` only (`nmmo.engines.vector.resolve_engine`)."""

    def __init__(self, config: Config, seeds: list[int], buffers: dict[str, np.ndarray], start_row: int,
                 env: type | str | None = None) -> None:
        self.config, self.slots = config, config.PLAYER_N
        self.worlds = FusedWorlds(config, seeds)
        self.rows = len(seeds) * config.PLAYER_N
        self.buffers, self.start = buffers, start_row
        view = slice(start_row, start_row + self.rows)
        self.builder = ObservationBuilder(config, self.rows)
        self.builder.row_offset = self.worlds.row_offset
        tiles = self.worlds.state.tiles
        self.codes = self.builder.codes = TileCodes(tiles.material, tiles.occupancy, self.worlds.side)
        self.obs, self.final = (Observations(**{name: buffers[prefix + name][view] for name in OBS_FIELDS},
                                             entity_rows=np.full((self.rows, config.PLAYER_N_OBS), -1, np.int32))
                                for prefix in ("", FINAL_PREFIX))  # the final ones: `VecStep.final_obs`
        self.world_of_slot = self.worlds.world_of_row[: self.rows]
        self.points_paid = np.zeros(self.rows, dtype=np.int64)  # as `Env.achievements_earned` keeps them
        self.points_owner = np.zeros(self.rows, dtype=np.int64)
        self.nobody_returns = nobody_returns(config)
        self.tasks = FusedTasks(config, self.worlds) if config.has_tasks() else None  # `nmmo.engines.fused_tasks`

    @property
    def envs(self) -> list[Env]:
        """The lone env that starts each world's episodes (its `episode_seed` is the running one)."""
        return self.worlds.envs

    def episode_seeds(self) -> list[int]:
        return [int(env.episode_seed) for env in self.worlds.envs]

    def ticks(self) -> list[int]:
        return self.worlds.ticks().tolist()

    def restore(self, seeds: list[int], logs: list[list[np.ndarray]]) -> None:
        """Bring the worlds to where a lost block's were: each world's episode is replayed in a
        lone env (the engine is deterministic) and copied in; with tasks, the worlds (in step with
        each other) replay their episodes here, so that the tasks' progress is rebuilt too."""
        if self.tasks is not None:
            self._reset_all(seeds)
            self._observe(np.zeros(0, dtype=np.int64))
            for actions in zip(*logs, strict=True):
                self.step(np.concatenate(actions))
            return
        for k, (seed, log) in enumerate(zip(seeds, logs, strict=True)):
            env = Env(self.config)
            env.reset(seed=seed)
            for actions in log:
                env.step_arrays(actions)
            self.worlds.load(k, env)
            self._refresh_codes(k)
            rows = slice(k * self.slots, (k + 1) * self.slots)
            self.points_paid[rows], self.points_owner[rows] = env.outcomes.points_paid, env.outcomes.points_owner
        self._observe(np.zeros(0, dtype=np.int64))

    def _reset_all(self, seeds: list[int | None]) -> None:
        for k, seed in enumerate(seeds):
            self._reset_world(k, seed)
        if self.tasks is not None:
            self.tasks.reset()

    def reset(self) -> None:
        self._reset_all([None] * self.worlds.n_worlds)
        b, rows = self.buffers, slice(self.start, self.start + self.rows)
        ent = self.worlds.state.entities
        b["reward"][rows] = 0
        b["terminated"][rows] = b["truncated"][rows] = b["reset"][rows] = False
        b["alive"][rows] = ent.alive[: self.rows]
        b["agent_id"][rows] = ent.id[: self.rows] * ent.alive[: self.rows]
        self._observe(np.zeros(0, dtype=np.int64))

    def _refresh_codes(self, k: int) -> None:
        cells = self.worlds.side**2
        self.codes.refresh(slice(k * cells, (k + 1) * cells))

    def _reset_world(self, k: int, seed: int | None = None) -> None:
        self.worlds.reset_world(k, seed)
        self._refresh_codes(k)
        rows = slice(k * self.slots, (k + 1) * self.slots)
        self.points_paid[rows] = 0
        self.points_owner[rows] = 0

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Step every world with (rows, 3) actions; returns the metric rows of agents that finished
        (as `EnvBlock.step`)."""
        worlds, config, n = self.worlds, self.config, self.rows
        state = worlds.state
        ent = state.entities
        capacity = worlds.capacity
        directions = np.full(capacity, STAY, dtype=np.int64)
        styles, targets = np.full(capacity, -1, dtype=np.int64), np.full(capacity, -1, dtype=np.int64)
        slots = np.flatnonzero(ent.alive[:n])
        apply_indices(self.obs, state, config, slots, actions[slots], (directions, styles, targets))
        ids_before, alive_before = ent.id[:n].copy(), ent.alive[:n].copy()
        last_tick = worlds.ticks() + 1 >= config.HORIZON
        result = worlds.tick(directions, styles, targets, worlds.rngs, respawn=~last_tick)
        if self.tasks is not None:
            self.tasks.evaluate()
        died = result.dead[result.dead < n]
        terminated = np.zeros(n, dtype=bool)
        terminated[died] = True
        alive = ent.alive[:n].copy()
        rewarded = np.flatnonzero(alive_before | alive)
        rewards = np.zeros(n, dtype=np.float32)
        earned = self._earned(rewarded) if config.REWARD_ACHIEVEMENT else None
        rewards[rewarded] = self._reward_values(rewarded, terminated[rewarded], earned)
        done = worlds.ticks() >= config.HORIZON
        truncated = alive_before & ~terminated & done[self.world_of_slot]
        ids = np.where(alive_before, ids_before, 0)
        ids = np.where(alive & ~terminated, ent.id[:n], ids)
        finished = np.flatnonzero(terminated | truncated)
        episodes = self._episode_rows(finished)
        alive &= ~truncated
        over = done | (self.nobody_returns & ~alive.reshape(-1, self.slots).any(axis=1))
        b, rows = self.buffers, slice(self.start, self.start + n)
        b["reward"][rows] = rewards
        b["terminated"][rows] = terminated
        b["truncated"][rows], b["reset"][rows] = truncated, over[self.world_of_slot]
        ended = np.flatnonzero(over).tolist()
        if ended:  # their last observations, before they reset
            self._observe(died, ending=over[self.world_of_slot])
        for k in ended:  # auto-reset: the world's rows now hold the next episode's agents
            self._reset_world(k)
            block = slice(k * self.slots, (k + 1) * self.slots)
            alive[block] = ent.alive[block]
            ids[block] = ent.id[block]
        if ended and self.tasks is not None:
            if len(ended) != worlds.n_worlds:  # resolve_engine keeps such configs off this engine
                raise RuntimeError("the fused engine's tasks need every world to reset together (respawn on)")
            self.tasks.reset()
        b["alive"][rows] = alive
        b["agent_id"][rows] = np.where(alive | over[self.world_of_slot], ids, 0)  # a reset world: its new agents
        self._observe(died[~over[self.world_of_slot[died]]] if ended else died)
        return episodes

    def _episode_rows(self, finished: np.ndarray) -> np.ndarray:
        """Metrics (and the task outcome, with tasks) of the lives that ended, then their rows."""
        outcome = [] if self.tasks is None else list(self.tasks.outcome(finished).T)
        if finished.size == 0:
            return np.zeros((0, len(METRICS) + len(outcome) + 1))
        values = lifetime_metrics(self.worlds.state, finished)
        return np.stack([*(values[m] for m in METRICS), *outcome, (self.start + finished).astype(np.float64)],
                        axis=1)

    def _earned(self, slots: np.ndarray) -> np.ndarray:
        """`Env.achievements_earned` for slots of any world."""
        return earned_points(self.worlds.state.entities, slots, self.points_paid, self.points_owner)

    def _reward_values(self, slots: np.ndarray, died: np.ndarray, earned: np.ndarray | None) -> np.ndarray:
        """`Outcomes.reward_values` (the default reward) for slots of any world; team spirit mixes
        within each world's teams."""
        teams = self.world_of_slot[slots] * self.slots + self.worlds.state.entities.team[slots].astype(np.int64)
        tasks = None if self.tasks is None else self.tasks.rewards(slots)
        return mix_rewards(self.config, np.where(died, -1.0, 0.0), earned, teams, tasks)

    def _observe(self, died: np.ndarray, ending: np.ndarray | None = None) -> None:
        """Observations of every live agent, and the final ones of agents that died this tick in
        worlds that go on, written into the vector env's buffers; with `ending` (by row), those rows'
        last observations (live and died) into the final observations' buffers instead."""
        state = self.worlds.state
        alive = state.entities.alive[: self.rows]
        live = np.flatnonzero(alive if ending is None else alive & ending)
        died = died if ending is None else died[ending[died]]
        self.codes.update(state)
        self.builder.refill(self.obs if ending is None else self.final, state, live, died)
        if self.tasks is not None:
            self.tasks.write(self.buffers, slice(self.start, self.start + self.rows), np.r_[live, died], ending)
