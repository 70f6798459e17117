"""Observations for all agents at once: Tile crops, Entity windows and ActionTargets masks.

For each observer the occupancy grid is cropped around it with offsets pre-sorted by Chebyshev
distance (ties row-major), so the entities it sees come out already in observation order; one
`nonzero` compacts them and one gather copies their feature rows. Only visible rows are written,
into freshly zeroed buffers, so the cost follows what agents see, not the padded size, and arrays
handed out earlier never change.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nmmo.config import Config
from nmmo.enums import Direction, EntityAttr, Material, Skill, Style, TileAttr
from nmmo.rules import DELTAS, enterable, freeze_left, is_frozen, may_attack
from nmmo.state import State
from nmmo.systems.combat import reaches
from nmmo.systems.npc import window_offsets

N_ENTITY_ATTRS = len(EntityAttr)
N_TILE_ATTRS = len(TileAttr)
N_DIRECTIONS, N_STYLES = len(Direction), len(Style)


#: The observation arrays of the batched API, in order (`layout` gives their shapes and dtypes).
OBS_FIELDS = ("tile", "entity", "move_mask", "style_mask", "target_mask")


def layout(config: Config) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Per-agent shape and dtype of each observation array (`OBS_FIELDS` order): the buffers of
    the batched API, of `nmmo.vector` and of the env's observation space."""
    window = (2 * config.PLAYER_VISION_RADIUS + 1) ** 2
    n_obs = config.PLAYER_N_OBS
    return {
        "tile": ((window, N_TILE_ATTRS), np.dtype(np.int16)),
        "entity": ((n_obs, N_ENTITY_ATTRS), np.dtype(np.int32)),
        "move_mask": ((N_DIRECTIONS,), np.dtype(np.int8)),
        "style_mask": ((N_STYLES,), np.dtype(np.int8)),
        "target_mask": ((n_obs + 1,), np.dtype(np.int8)),
    }


@dataclass
class Observations:
    """Stacked observations, one row per agent slot (rows of empty slots are zero)."""

    tile: np.ndarray  # (slots, (2R+1)^2, N_TILE_ATTRS) int16
    entity: np.ndarray  # (slots, PLAYER_N_OBS, N_ENTITY_ATTRS) int32
    move_mask: np.ndarray  # (slots, 5) int8
    style_mask: np.ndarray  # (slots, 3) int8
    target_mask: np.ndarray  # (slots, PLAYER_N_OBS + 1) int8
    entity_rows: np.ndarray  # (slots, PLAYER_N_OBS) int32: entity-table row of each Entity row (-1)
    written: list = field(default_factory=list, repr=False)  # (slots, observers, ranks) per build

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.tile, self.entity, self.move_mask, self.style_mask, self.target_mask, self.entity_rows


class ObservationBuilder:
    """Precomputes window offsets once; `build` fills observations for a set of slots."""

    def __init__(self, config: Config, n_slots: int) -> None:
        self.config = config
        self.n_slots = n_slots
        self.n_obs = config.PLAYER_N_OBS
        radius = config.PLAYER_VISION_RADIUS
        self.sorted_dr, self.sorted_dc, self.sorted_dist = window_offsets(radius)
        side = 2 * radius + 1
        self.radius, self.side = radius, side
        rm_dr, rm_dc = np.divmod(np.arange(side * side), side)
        self.tile_dr = (rm_dr - radius).astype(np.int32)
        self.tile_dc = (rm_dc - radius).astype(np.int32)
        # position of each distance-sorted offset in the row-major window
        self.sorted_to_rowmajor = ((self.sorted_dr + radius) * side + (self.sorted_dc + radius)).astype(np.int64)
        self.combat = config.has("Combat")
        self.reach = reaches(config) if self.combat else np.zeros(3, dtype=np.int64)
        self.max_reach = int(self.reach.max())
        self._pool = RecyclingPool(self.allocate)
        self.enterable = enterable(config)
        self._windows: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _window(self, grid: np.ndarray) -> np.ndarray:
        """The (2R+1)^2 sliding-window view of a tile grid, made once per grid: the grids are
        updated in place, and a view sees every update (making one costs as much as a small build)."""
        cached = self._windows.get(id(grid))
        if cached is None or cached[0] is not grid:
            if len(self._windows) >= 4:  # grids of earlier episodes
                self._windows.clear()
            cached = self._windows[id(grid)] = (grid, sliding_window_view(grid, (self.side, self.side)))
        return cached[1]

    def acquire(self, slots: np.ndarray) -> Observations:
        """A zeroed buffer set from the pool (`RecyclingPool`): a recycled one is cleared of just
        the rows it wrote last time. `slots` are the rows about to be rebuilt (their tiles need no
        clearing)."""
        buffer, recycled = self._pool.take()
        if recycled:
            self._clear(buffer, slots)
        return buffer

    def _clear(self, buffer: Observations, rebuilt: np.ndarray) -> None:
        """Zero what the last use wrote: the entity rows it filled, the masks (set sparsely by
        `build`), and the tiles of slots that will not be rebuilt (rebuilt ones are overwritten)."""
        fresh = np.zeros(self.n_slots, dtype=bool)
        fresh[rebuilt] = True
        for slots, observers, ranks in buffer.written:
            buffer.entity[observers, ranks] = 0
            buffer.entity_rows[observers, ranks] = -1
            stale = slots[~fresh[slots]]
            buffer.tile[stale] = 0
            buffer.move_mask[stale] = 0
        buffer.style_mask.fill(0)
        buffer.target_mask.fill(0)
        buffer.written.clear()

    def allocate(self) -> Observations:
        n = self.n_slots
        arrays = {name: np.zeros((n, *shape), dtype) for name, (shape, dtype) in layout(self.config).items()}
        return Observations(**arrays, entity_rows=np.full((n, self.n_obs), -1, dtype=np.int32))

    def entity_features(self, state: State) -> np.ndarray:
        """One feature row per entity-table row (IS_SELF left 0), in `EntityAttr` column order."""
        ent = state.entities
        feats = np.empty((ent.capacity, N_ENTITY_ATTRS), dtype=np.int32)
        feats[:, EntityAttr.ID] = ent.id
        feats[:, EntityAttr.IS_SELF] = 0
        feats[:, EntityAttr.NPC_TYPE] = ent.npc_type
        feats[:, EntityAttr.TEAM] = ent.team
        feats[:, EntityAttr.ROW] = ent.row
        feats[:, EntityAttr.COL] = ent.col
        feats[:, EntityAttr.HEALTH] = ent.health
        feats[:, EntityAttr.FOOD] = ent.food
        feats[:, EntityAttr.WATER] = ent.water
        feats[:, EntityAttr.FREEZE] = freeze_left(ent.freeze_end, state.tick)
        feats[:, EntityAttr.COMBAT_LEVEL] = ent.combat_level()
        feats[:, EntityAttr.ARMOUR] = ent.equipment().astype(np.int32)
        feats[:, EntityAttr.ATTACKER_ID] = ent.attacker_id
        feats[:, EntityAttr.DAMAGE] = ent.damage_taken
        feats[:, EntityAttr.TIME_ALIVE] = state.tick - ent.spawn_tick
        feats[:, EntityAttr.MELEE] = ent.level[:, Skill.MELEE]
        feats[:, EntityAttr.RANGE] = ent.level[:, Skill.RANGE]
        feats[:, EntityAttr.MAGE] = ent.level[:, Skill.MAGE]
        feats[:, EntityAttr.DEFENSE] = ent.level[:, Skill.DEFENSE]
        return feats

    def build(self, state: State, slots: np.ndarray, out: Observations, feats: np.ndarray | None = None,
              died: bool = False) -> None:
        """Write observations of the agents in `slots` (entity rows) into `out`. With `died`, they
        are agents removed this tick: each sees itself on its last tile (unless another entity
        stands there now) and may only stay, with no attack; the state is not touched."""
        if slots.size == 0:
            return
        ent, tiles = state.entities, state.tiles
        if feats is None:
            feats = self.entity_features(state)
        rows, cols = ent.row[slots], ent.col[slots]

        # Tiles, row-major crop: indexing a sliding-window view copies whole window rows, about
        # twice as fast as gathering single tiles with flat indices.
        top, left = rows - self.radius, cols - self.radius
        occ_rm = self._window(tiles.occupancy)[top, left].reshape(slots.size, -1)  # a copy (fancy indexing)
        if died:
            centre = occ_rm[:, self.radius * self.side + self.radius]
            centre[centre < 0] = slots[centre < 0]
        tile = np.empty((slots.size, occ_rm.shape[1], N_TILE_ATTRS), dtype=np.int16)
        tile[:, :, TileAttr.MATERIAL] = self._window(tiles.material)[top, left].reshape(slots.size, -1)
        tile[:, :, TileAttr.OCCUPIED] = occ_rm >= 0
        tile[:, :, TileAttr.ROW] = rows[:, None] + self.tile_dr
        tile[:, :, TileAttr.COL] = cols[:, None] + self.tile_dc
        out.tile[as_index(slots)] = tile

        # Entities in distance order, compacted to the first PLAYER_N_OBS.
        occ = occ_rm.take(self.sorted_to_rowmajor, axis=1)
        agent, pos = np.divmod(np.flatnonzero(occ >= 0), occ.shape[1])  # 10x faster than 2-D nonzero
        counts = np.bincount(agent, minlength=slots.size)
        starts = np.cumsum(counts) - counts
        rank = np.arange(agent.size) - starts[agent]
        keep = rank < self.n_obs
        agent, pos, rank = agent[keep], pos[keep], rank[keep]
        seen = occ[agent, pos]
        observer = slots[agent]
        out.written.append((slots, observer, rank))
        out.entity[observer, rank] = feats[seen]
        out.entity_rows[observer, rank] = seen
        is_self = seen == observer
        out.entity[observer[is_self], rank[is_self], EntityAttr.IS_SELF] = 1

        # Attack masks.
        out.target_mask[slots, self.n_obs] = 1
        if self.combat:
            dist = self.sorted_dist[pos]
            valid = ~is_self & (dist <= self.max_reach) & may_attack(self.config, ent.team[observer], ent.team[seen])
            out.target_mask[observer[valid], rank[valid]] = 1
            for style, reach in enumerate(self.reach):
                out.style_mask[observer[valid & (dist <= reach)], style] = 1

        # Move mask: enterable neighbours, nothing but "stay" while frozen next tick.
        nr = rows[:, None] + DELTAS[:4, 0]
        nc = cols[:, None] + DELTAS[:4, 1]
        material = tiles.material[nr, nc]
        free = (tiles.occupancy[nr, nc] < 0) | (material == Material.LAVA)
        movable = self.enterable[material] & free
        movable &= ~is_frozen(ent.freeze_end[slots], state.tick)[:, None]
        out.move_mask[slots, :4] = movable & (not died)
        out.move_mask[slots, 4] = 1
        if died:
            out.style_mask[slots] = 0
            out.target_mask[slots, : self.n_obs] = 0


class RecyclingPool:
    """Observation buffers that are recycled only once nobody outside the pool holds them.

    The env hands out observations as views of a buffer's arrays (the dict API's per-agent arrays,
    the batched API's stacked ones), and promises they never change under their holder. A view
    keeps a reference to its array, so while a user holds any observation of a buffer, the
    reference counts of the buffer or of its arrays exceed what the pool alone holds, and the pool
    hands out another buffer (allocating one if needed, keeping up to `size`). Recycling matters:
    the page faults of fresh memory cost more than building the observations (docs/benchmarks.md).
    CPython's `sys.getrefcount` is the one place this relies on; it is read here and nowhere else.
    """

    def __init__(self, allocate: Callable[[], Observations], size: int = 4) -> None:
        self.allocate, self.size = allocate, size
        self.buffers: list[Observations] = []
        self._free: tuple[int, ...] | None = None  # reference counts of a buffer nobody else holds

    def take(self) -> tuple[Observations, bool]:
        """A buffer nobody outside holds, and whether it was used before (then it needs clearing)."""
        for buffer in self.buffers:
            if self._counts(buffer) == self._free:
                return buffer, True
        buffer = self.allocate()
        if len(self.buffers) < self.size:
            self.buffers.append(buffer)
            if self._free is None:
                self._free = self._counts(buffer)
        return buffer, False

    @staticmethod
    def _counts(buffer: Observations) -> tuple[int, ...]:
        return (sys.getrefcount(buffer), *(sys.getrefcount(a) for a in buffer.arrays()))


def as_index(slots: np.ndarray) -> slice | np.ndarray:
    """A slice when `slots` is an increasing consecutive run (cheaper than fancy indexing), else the
    array itself. (First and last alone do not decide it: [0, 2, 1, 3] is not a run.)"""
    if slots.size and slots[-1] - slots[0] + 1 == slots.size and (slots.size < 2 or np.all(np.diff(slots) == 1)):
        return slice(int(slots[0]), int(slots[-1]) + 1)
    return slots
