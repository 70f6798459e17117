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

from nmmo.config import Config
from nmmo.core.enums import EntityAttr, Skill, TileAttr, ints
from nmmo.core.layout import BUILT, N_ENTITY_ATTRS, filled, layout, slots_selector
from nmmo.core.rules import STEPS, enterable, freeze_left, is_frozen, may_attack, reaches, window_offsets
from nmmo.core.state import State

#: A packed Tile row's OCCUPIED bit (`TileCodes`: MATERIAL, OCCUPIED, ROW, COL as four int16).
OCCUPIED_BIT = 1 << 16
#: The arrays the builder writes (`nmmo.core.layout.BUILT`; `nmmo.core.layout.fields` lists them all).
OBS_FIELDS = BUILT


@dataclass
class Observations:
    """Stacked observations, one row per agent slot (rows of empty slots are zero)."""

    tile: np.ndarray  # (slots, (2R+1)^2, N_TILE_ATTRS) int16
    entity: np.ndarray  # (slots, PLAYER_N_OBS, N_ENTITY_ATTRS) int32
    move_mask: np.ndarray  # (slots, 5) int8
    style_mask: np.ndarray  # (slots, 3) int8
    target_mask: np.ndarray  # (slots, PLAYER_N_OBS + 1) int8
    entity_rows: np.ndarray  # (slots, PLAYER_N_OBS) int32: entity-table row of each Entity row (-1)
    written: list = field(default_factory=list, repr=False)  # (slots, observer * PLAYER_N_OBS + rank) per build
    extra: dict = field(default_factory=dict)  # the layout's other fields (`nmmo.core.layout.filled`), by name

    def fields(self) -> dict[str, np.ndarray]:
        """Every observation array by its layout name (the built five, then the filled ones)."""
        return {"tile": self.tile, "entity": self.entity, "move_mask": self.move_mask,
                "style_mask": self.style_mask, "target_mask": self.target_mask, **self.extra}

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
        self.rowmajor_to_sorted = np.argsort(self.sorted_to_rowmajor)
        # row-major window cell of each move direction's neighbour, in `STEPS` order
        self.neighbour_cells = (radius + STEPS[:, 0]) * side + (radius + STEPS[:, 1])
        self.combat = config.has("Combat")
        self.reach = reaches(config) if self.combat else np.zeros(3, dtype=np.int64)
        self.max_reach = int(self.reach.max())
        #: the style mask when the nearest target is at distance d (row d)
        self.styles_within = (np.arange(self.max_reach + 1)[:, None] <= self.reach).astype(np.int8)
        self._pool = RecyclingPool(self.allocate)
        self.enterable = enterable(config)
        self._windows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: per entity row, what to subtract from its tile row to get the row observations show
        #: (the fused engine stacks worlds' maps in one grid; None: nothing, a lone world)
        self.row_offset: np.ndarray | None = None
        #: packed Tile rows of every tile (`TileCodes`): kept in step by `observe` for a lone world,
        #: by the fused engine for its stacked ones
        self.codes: TileCodes | None = None

    def _window(self, grid: np.ndarray) -> np.ndarray:
        """A tile grid as one opaque element per flat index: the 2R+1 cells from there on. A gather of
        window rows from it copies each row at once, about twice as fast as indexing a sliding-window
        view (cell by cell). Made once per grid: grids change in place, and the view sees it."""
        cached = self._windows.get(id(grid))
        if cached is None or cached[0] is not grid:
            if len(self._windows) >= 4:  # grids of earlier episodes
                self._windows.clear()
            size = grid.itemsize
            view = np.ndarray((grid.size - self.side + 1,), np.dtype((np.void, self.side * size)), grid, 0, (size,))
            cached = self._windows[id(grid)] = (grid, view)
        return cached[1]

    def acquire(self, slots: np.ndarray) -> tuple[Observations, list]:
        """A zeroed buffer set from the pool (`RecyclingPool`) and the entity cells its last use
        wrote (`_clear`: a recycled one is cleared of just what it wrote; `slots` are the rows about
        to be rebuilt, their tiles need no clearing)."""
        buffer, recycled = self._pool.take()
        return buffer, self._clear(buffer, slots) if recycled else []

    def observe(self, state: State, live: np.ndarray, died: np.ndarray, source: object) -> Observations:
        """Fresh buffers with the observations of `live` agents and the final ones of agents that
        `died` this tick (they see themselves on their last tile), computed fields from `source`."""
        out, written = self.acquire(np.concatenate([live, died]))
        self._track_tiles(state)
        feats = self.entity_features(state)
        self.build(state, live, out, feats)
        self.build(state, died, out, feats, died=True)
        self._clear_rows(out, written)
        self.fill(out, source, np.concatenate([live, died]))
        return out

    def _track_tiles(self, state: State) -> None:
        """Keep a lone world's packed Tile rows (`TileCodes`) in step with its grids: made anew when
        the grids are new (a reset), then updated where entities stood or stand and forests changed.
        One gather of them is cheaper than building the Tile columns (docs/benchmarks.md)."""
        tiles = state.tiles
        if self.codes is None or self.codes.source is not tiles:
            self.codes = TileCodes(tiles.material, tiles.occupancy, tiles.material.shape[0])
            self.codes.source = tiles
        self.codes.update(state)

    def refill(self, out: Observations, state: State, live: np.ndarray, died: np.ndarray) -> None:
        """Build the observations of `live` agents, and the final ones of agents that `died` this
        tick, into `out` again (the fused engine keeps one buffer set: its vector env's arrays),
        clearing first what `out` held."""
        written = self._clear(out, np.concatenate([live, died])) if out.written else []
        feats = self.entity_features(state)
        self.build(state, live, out, feats)
        self.build(state, died, out, feats, died=True)
        self._clear_rows(out, written)

    def fill(self, out: Observations, source: object, slots: np.ndarray) -> None:
        """The layout's computed fields (`nmmo.core.layout.filled`) of `slots`, from `source` (the env
        that observes: each field's `fill` reads what it needs of it)."""
        if slots.size:
            for spec in filled(self.config):
                out.extra[spec.name][slots] = spec.fill(source, slots)

    def _clear(self, buffer: Observations, rebuilt: np.ndarray) -> list:
        """Zero what the last use wrote that the coming builds do not overwrite whole: the masks
        (set sparsely by `build`) and the tiles of slots that will not be rebuilt. Returns the
        entity cells the last use wrote, for `_clear_rows` once the builds have written theirs."""
        fresh = np.zeros(self.n_slots, dtype=bool)
        fresh[rebuilt] = True
        for slots, _ in buffer.written:
            stale = slots[~fresh[slots]]
            buffer.tile[stale] = 0
            buffer.move_mask[stale] = 0
        buffer.style_mask.fill(0)
        buffer.target_mask.fill(0)
        for values in buffer.extra.values():
            values.fill(0)
        written, buffer.written = buffer.written, []
        return written

    def _clear_rows(self, buffer: Observations, written: list) -> None:
        """Zero the entity cells of an earlier use (`written`) that this one's builds did not
        overwrite: most cells are written again (an observer sees about as many entities as a tick
        before), and a build writes whole rows, so zeroing all of them first wrote them twice."""
        if not written:
            return
        earlier = np.concatenate([cells for _, cells in written])
        rewritten = np.zeros(self.n_slots * self.n_obs, dtype=bool)
        for _, cells in buffer.written:
            rewritten[cells] = True
        stale = earlier[~rewritten[earlier]]
        _records(buffer.entity)[stale] = bytes(buffer.entity.shape[-1] * buffer.entity.itemsize)
        _flat(buffer.entity_rows)[stale] = -1

    def allocate(self) -> Observations:
        n = self.n_slots
        arrays = {name: np.zeros((n, *shape), dtype) for name, (shape, dtype) in layout(self.config).items()}
        built = {name: arrays.pop(name) for name in BUILT}
        return Observations(**built, entity_rows=np.full((n, self.n_obs), -1, dtype=np.int32), extra=arrays)

    def entity_features(self, state: State) -> np.ndarray:
        """One feature row per entity-table row (IS_SELF left 0), in `EntityAttr` column order."""
        ent = state.entities
        feats = np.empty((ent.capacity, N_ENTITY_ATTRS), dtype=np.int32)
        feats[:, EntityAttr.ID] = ent.id
        feats[:, EntityAttr.IS_SELF] = 0
        feats[:, EntityAttr.NPC_TYPE] = ent.npc_type
        feats[:, EntityAttr.TEAM] = ent.team
        feats[:, EntityAttr.ROW] = ent.row if self.row_offset is None else ent.row - self.row_offset
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

        # Tiles, row-major crop: one gather of whole window rows (`_window`), by the flat index of
        # each row's first cell.
        width = tiles.occupancy.shape[1]
        corner = (rows - self.radius).astype(np.int64) * width + (cols - self.radius)
        lines = (corner[:, None] + np.arange(0, self.side * width, width)).ravel()
        occ_rm = self._window(tiles.occupancy)[lines].view(tiles.occupancy.dtype).reshape(slots.size, -1)
        if died:
            centre = occ_rm[:, self.radius * self.side + self.radius]
            centre[centre < 0] = slots[centre < 0]
        # Tile rows: one gather of packed rows (`TileCodes`, kept in step by `observe` or the fused engine)
        codes = self._window(self.codes.grid)[lines].view(np.int64).reshape(slots.size, -1)
        if died:  # each sees itself on its last tile
            codes[:, self.radius * self.side + self.radius] |= OCCUPIED_BIT
        packed = out.tile.view(np.int64).reshape(out.tile.shape[0], -1)
        select = slots_selector(slots)
        packed[select] = codes

        # Entities in distance order, compacted to the first PLAYER_N_OBS. Writes go through flat
        # indices (observer * rows + rank): much cheaper than pairs of fancy indices.
        # The occupied tiles come out row-major; sorting their (observer, distance order) keys
        # orders them (cheaper than permuting every window into distance order first). (Reading
        # them from the packed rows' OCCUPIED column instead of cropping the occupancy grid was
        # measured: no faster, a strided read of the packed rows costs what the crop does.)
        window = occ_rm.shape[1]
        agent, at = np.divmod(np.flatnonzero(occ_rm >= 0), window)  # 10x faster than 2-D nonzero
        agent, pos = np.divmod(np.sort(agent * window + self.rowmajor_to_sorted[at], kind="stable"), window)
        counts = np.bincount(agent, minlength=slots.size)
        starts = np.cumsum(counts) - counts
        rank = np.arange(agent.size) - starts[agent]
        if counts.max() > self.n_obs:
            keep = rank < self.n_obs
            agent, pos, rank = agent[keep], pos[keep], rank[keep]
        seen = occ_rm.ravel()[agent * window + self.sorted_to_rowmajor[pos]]
        observer = slots[agent]
        cells = observer * self.n_obs + rank
        out.written.append((slots, cells))
        is_self = seen == observer
        picked = _records(feats)[seen]  # whole rows, one copy each; IS_SELF set before they are scattered
        picked.view(feats.dtype).reshape(-1, N_ENTITY_ATTRS)[is_self, EntityAttr.IS_SELF] = 1
        _records(out.entity)[cells] = picked
        _flat(out.entity_rows)[cells] = seen

        # Attack masks. No sub-mask is ever all zeros (masked categoricals refuse one): with no
        # target in reach, every style stays selectable and the no-op is the only target, so no
        # attack happens. The style and move masks are made whole and written once.
        out.target_mask[slots, self.n_obs] = 1
        style = np.ones((slots.size, out.style_mask.shape[1]), dtype=np.int8)
        if self.combat and not died:
            dist = self.sorted_dist[pos]
            valid = (dist <= self.max_reach) & ~is_self
            if not self.config.COMBAT_FRIENDLY_FIRE:  # else anyone may be attacked: no team lookups
                valid &= may_attack(self.config, ent.team[observer], ent.team[seen])
            valid = np.flatnonzero(valid)
            _flat(out.target_mask)[(observer * (self.n_obs + 1) + rank).take(valid)] = 1
            # A style is valid when the nearest valid target (the first, entities come nearest
            # first) is within its reach.
            near_agent = agent.take(valid)
            if near_agent.size:
                first = np.flatnonzero(np.concatenate(([True], near_agent[1:] != near_agent[:-1])))
                style[near_agent.take(first)] = self.styles_within.take(dist.take(valid.take(first)), axis=0)
        out.style_mask[select] = style

        # Move mask: enterable neighbours, nothing but "stay" while frozen next tick. The four
        # neighbours' material and occupancy are read from their packed Tile rows just gathered
        # (one small take instead of two gathers from the grids).
        neighbours = codes[:, self.neighbour_cells]
        material = neighbours & 0xFFFF
        free = (neighbours & OCCUPIED_BIT == 0) | (material == ints.Material.LAVA)
        move = np.ones((slots.size, out.move_mask.shape[1]), dtype=np.int8)
        move[:, :4] = self.enterable[material] & free & ~is_frozen(ent.freeze_end[slots], state.tick)[:, None]
        if died:
            move[:, :4] = 0
        out.move_mask[select] = move


class TileCodes:
    """Every tile's `Tile` observation row (MATERIAL, OCCUPIED, ROW, COL: four int16) packed into
    one int64, so that an agent's Tile observation is one gather of whole window rows from this
    grid instead of two gathers and four strided writes.

    The grid is kept in step with the tile grids by its owner, which knows what can change: a
    tile's occupancy changes only where an entity stood at the last update or stands now, and its
    material only where a player harvested (where it stood) or a forest regrew (a tile that was
    depleted at the last update). `update` refreshes exactly those tiles; `refresh` any others (a
    world that reset). Shown rows are rows within the world: `side` rows of the grid per world."""

    def __init__(self, material: np.ndarray, occupancy: np.ndarray, side: int) -> None:
        if np.little_endian is False or list(TileAttr) != [0, 1, 2, 3]:  # pragma: no cover - packing order
            raise RuntimeError("TileCodes packs the Tile columns in little-endian order")
        self.material, self.occupancy = material.ravel(), occupancy.ravel()
        self.grid = np.empty(material.shape, dtype=np.int64)
        self.flat = self.grid.ravel()
        self.cols, self.side = material.shape[1], side
        self.shown = _shown_bits(material.shape, side)
        self._last = np.zeros(0, dtype=np.int64)  # tiles to look at next time
        self.source: object = None  # the grids' owner (`ObservationBuilder._track_tiles` compares it)
        self.refresh(slice(None))

    def refresh(self, cells: np.ndarray | slice) -> None:
        """Recompute the packed rows of `cells` (flat indices, or a slice of them)."""
        occupied = (self.occupancy[cells] >= 0).astype(np.int64) * OCCUPIED_BIT
        self.flat[cells] = self.shown[cells] | self.material[cells] | occupied

    def update(self, state: State) -> None:
        """Refresh the tiles that may have changed since the last update (see the class notes)."""
        ent = state.entities
        live = np.flatnonzero(ent.alive)
        now = ent.row[live].astype(np.int64) * self.cols + ent.col[live]
        self.refresh(np.concatenate([self._last, now]))
        self._last = np.concatenate([now, state.tiles.depleted])


_SHOWN: dict[tuple[int, int, int], np.ndarray] = {}


def _shown_bits(shape: tuple[int, int], side: int) -> np.ndarray:
    """Every tile's ROW and COL columns packed as `TileCodes` packs them (the row within its
    world of `side` rows), flat; the same for every episode on grids of this shape, so kept."""
    key = (*shape, side)
    if key not in _SHOWN:
        if len(_SHOWN) >= 4:
            _SHOWN.clear()
        row, col = np.divmod(np.arange(shape[0] * shape[1], dtype=np.int64), shape[1])
        _SHOWN[key] = ((row % side) << 32) | (col << 48)
    return _SHOWN[key]


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


def _records(rows: np.ndarray) -> np.ndarray:
    """A C-contiguous array of rows (..., N_ENTITY_ATTRS) as a 1-D array with one opaque element
    per row: gathering or scattering whole rows then copies one element each."""
    view = rows.view(np.dtype((np.void, rows.shape[-1] * rows.itemsize)))
    view.shape = (-1,)
    return view


def _flat(array: np.ndarray) -> np.ndarray:
    """A 1-D view of a buffer, to write through flat indices (raises rather than copy)."""
    view = array.view()
    view.shape = (-1,)
    return view
