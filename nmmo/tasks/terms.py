"""Every `Term` leaf of the assigned tasks evaluated as one batch, on a per-slot feature matrix.

Most predicates are arithmetic on one per-agent quantity (a level, an event count, a distance)
summed or minimized over a subject: as terms they share a single pass of some fifteen numpy calls
per tick, however many predicates and tasks there are. The feature matrix holds one row per agent
slot and one column per quantity (`core.EVENTS` ... `core.TICK`); only the columns some term reads
are filled each tick.
"""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import Event, Material, Skill, ints
from nmmo.core.rules import chebyshev
from nmmo.core.systems.events import Written
from nmmo.core.systems.progression import xp_table
from nmmo.tasks import core
from nmmo.tasks.core import AT_LEAST, BIG, EQUALS, FLOOR, MIN, ONE_MINUS, Context, Term, clip_ufunc

# Feature columns by the group that fills them.
_GROUPS = {
    "events": range(core.EVENTS, core.EVENTS + len(Event)), "alive": [core.ALIVE],
    "level": range(core.LEVEL, core.LEVEL + len(Skill)), "xp": range(core.XP_GAINED, core.XP_GAINED + len(Skill)),
    "combat": [core.COMBAT_LEVEL], "armour": [core.ARMOUR], "spawn": [core.SPAWN_DISTANCE],
    "center": [core.CENTER_DISTANCE], "tile": [core.TILE], "kills": [core.KILLED_PLAYER_LEVEL, core.KILLED_NPC_LEVEL],
    "tick": [core.TICK], "sees": range(core.SEES, core.SEES + len(Material)),
}
_GROUP_OF = {column: group for group, columns in _GROUPS.items() for column in columns}
_CHANGING = (int(Material.FOREST), int(Material.SCRUB))  # harvests and regrowth change these tiles
_MELEE, _RANGE, _MAGE = int(Skill.MELEE), int(Skill.RANGE), int(Skill.MAGE)
_CONSTITUTION, _DEFENSE = int(Skill.CONSTITUTION), int(Skill.DEFENSE)
#: Groups whose columns are left as they are while only completed tasks read them (events and
#: ALIVE are always filled: most terms read them, and ALIVE decides which members count).
_SKIPPABLE = ("level", "xp", "combat", "armour", "spawn", "kills", "tick")
#: What a state that has not ticked yet reads as: everything may have changed.
_EVERYTHING = Written(kill=True, equipment_up=True, level_up=(True,) * len(Skill))


class Terms:
    """The term leaves: `nodes` (their node ids), (leaf, member slot) pairs in leaf order, and
    per-pair and per-leaf constants from each `Term`."""

    def __init__(self, nodes: list[int], terms: list[Term], members: list[np.ndarray], ctx: Context,
                 negated: list[bool] | None = None) -> None:
        n = len(terms)
        self.nodes = np.array(nodes, dtype=np.int64)
        counts = np.array([len(m) for m in members], dtype=np.int64)
        self.slot = np.concatenate(members).astype(np.int64) if members else np.zeros(0, np.int64)
        self.leaf = np.repeat(np.arange(n), counts)

        def per_pair(values) -> np.ndarray:
            return np.repeat(np.array(values, dtype=np.float64), counts)

        self.column = np.repeat(np.array([t.column for t in terms], dtype=np.int64), counts)
        # y = clip(x - offset, low, cap): VALUE has no floor; AT_LEAST is clip(x - threshold + 1, 0, 1)
        # on integer features; EQUALS is computed apart
        self.offset = per_pair([t.threshold - 1 if t.op == AT_LEAST else t.offset for t in terms])
        self.low = per_pair([0.0 if t.op == AT_LEAST else -BIG for t in terms])
        self.cap = per_pair([1.0 if t.op == AT_LEAST else t.cap for t in terms])
        self.equal_pairs = np.flatnonzero(np.repeat(np.array([t.op == EQUALS for t in terms]), counts))
        self.equal_to = per_pair([t.threshold for t in terms])[self.equal_pairs]
        is_min = np.array([t.agg == MIN for t in terms], dtype=bool)
        self.alive_only = per_pair([t.alive_only for t in terms])  # 1.0: a dead member reads `fill`
        self.any_alive_only = bool(self.alive_only.any())
        self.fill = np.where(is_min[self.leaf], BIG, 0.0)
        shared_min = is_min & (counts > 1)  # a minimum over one member is that member's value: the sum's
        self.min_leaves = np.flatnonzero(shared_min)
        self.min_pairs = np.flatnonzero(shared_min[self.leaf])  # their pairs, contiguous per leaf
        self.min_starts = np.concatenate([[0], np.cumsum(counts[self.min_leaves])[:-1]]).astype(np.int64)
        self.empty_min = np.flatnonzero(is_min & (counts == 0))
        accumulating = np.array([t.accumulate for t in terms], dtype=bool)
        self.accumulated = np.flatnonzero(accumulating)  # index arrays: ufuncs with where= cost twice as much
        self.total = np.zeros(self.accumulated.size)  # their running totals
        self._bind_progress(terms, counts, negated)
        groups = {_GROUP_OF[t.column] for t in terms} | ({"alive"} if self.any_alive_only else set())
        self._bind_features(ctx, terms, members, groups)

    def _bind_progress(self, terms: list[Term], counts: np.ndarray, negated: list[bool] | None) -> None:
        """Progress = sign * agg / denom + bias (RATIO: 1, 0; ONE_MINUS: -1, 1); FLOOR: floor(agg /
        denom), times -1 plus 1 under a `not`. A leaf under a `not`: 1 - clip(a r + b) = clip(-a r + 1 - b)."""
        n = len(terms)
        denom = np.array([counts[i] if t.denom == "members" else t.denom for i, t in enumerate(terms)], dtype=float)
        vacuous = denom <= 0  # nothing needed: progress 1
        post = np.array([t.post for t in terms])
        # every feature is integer-valued: with integral offsets and caps, so are the aggregates, and
        # floor(agg / 1) is agg (AllAlive over one member): a ratio, one floor fewer per tick
        integral = np.array([all(float(v).is_integer() for v in (t.offset, t.cap, t.threshold)) for t in terms],
                            dtype=bool)
        post = np.where((post == FLOOR) & (denom == 1) & integral, core.RATIO, post)
        self.scale = np.where(vacuous, 0.0, np.where(post == ONE_MINUS, -1.0, 1.0) / np.where(vacuous, 1.0, denom))
        self.bias = np.where(vacuous | (post == ONE_MINUS), 1.0, 0.0)
        is_floor = (post == FLOOR) & ~vacuous
        self.floored = np.flatnonzero(is_floor)
        negated = np.zeros(n, dtype=bool) if negated is None else np.array(negated, dtype=bool)
        flip = negated & ~is_floor
        self.scale, self.bias = np.where(flip, -self.scale, self.scale), np.where(flip, 1.0 - self.bias, self.bias)
        floor_negated = negated & is_floor
        self.floor_sign = np.where(floor_negated, -1.0, 1.0)
        self.any_floor_negated = bool(floor_negated.any())  # else the sign product can go: x * 1.0 is x
        self.bias = np.where(is_floor, floor_negated.astype(np.float64), self.bias)

    def _bind_features(self, ctx: Context, terms: list[Term], members: list[np.ndarray], groups: set) -> None:
        """The feature matrix, which groups of columns it fills, and the flat index of every pair's
        feature (and of its member's ALIVE), so that one gather reads them all."""
        rows = ctx.layout.slots * ctx.layout.n_worlds
        self.features = np.zeros((rows, core.N_FEATURES), order="F")  # by column
        self.features[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] = -1
        self.flat_features = self.features.ravel(order="F")  # a view
        self.index = self.column * rows + self.slot
        self.alive_index = core.ALIVE * rows + self.slot
        self.kills_written = False
        self.stale = True  # every column is filled on the first tick
        self.alive_full = False  # the ALIVE column holds every slot alive
        self.fills = {group: group in groups for group in _GROUPS}
        self.event_span = _span([t.column for t in terms if _GROUP_OF[t.column] == "events"])
        self.start_xp = _start_xp(ctx) if "xp" in groups else None
        self.xp_span = _span([t.column - core.XP_GAINED for t in terms if _GROUP_OF[t.column] == "xp"])
        self.xp_columns = slice(core.XP_GAINED + self.xp_span.start, core.XP_GAINED + self.xp_span.stop)
        if "spawn" in groups:  # every slot's distance to its spawn tile (set when agents arrive)
            self._spawn_part = ctx.distances.want(np.arange(rows), np.zeros((2, rows)))
        self._bind_tiles(ctx, terms, groups)
        self.changing: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if "sees" in groups:
            self._bind_changing(ctx, terms, members)
        self.changing_columns = {core.SEES + code for code in self.changing}
        self._bind_skips(terms)

    def restart(self, leaves: np.ndarray) -> None:
        self.total[leaves[self.accumulated]] = 0.0

    def skip_done(self, done: np.ndarray) -> None:
        """Stop filling the columns that only leaves of completed tasks read (`done`: per leaf; a
        restarted task's leaves read them again, filled afresh on the tick its agent arrives)."""
        running = np.bincount(self.skip_key, weights=~done[self.keyed], minlength=len(self.skip_keys)) > 0
        for key, needed in zip(self.skip_keys, running.tolist(), strict=True):
            if key == "tiles":
                self.tile_needed = needed
            elif isinstance(key, int):
                self.changing_needed[key] = needed
            else:
                self.fills[key] = needed

    def _bind_skips(self, terms: list[Term]) -> None:
        """Each leaf's skip key (a group, "tiles" for the tile block, a changing material's
        code; none for events and ALIVE), so that one count tells which are still read."""
        keys = [group for group in _SKIPPABLE if self.fills[group]] + (["tiles"] if self.tile_table is not None else [])
        keys += list(self.changing)
        self.skip_keys = keys
        index = {key: i for i, key in enumerate(keys)}

        def key_of(term: Term):
            if term.column in self.changing_columns:
                return index[term.column - core.SEES]
            if self.tile_table is not None and self.tile_columns.start <= term.column < self.tile_columns.stop:
                return index["tiles"]
            return index.get(_GROUP_OF[term.column])

        of_leaf = [key_of(t) for t in terms]
        self.keyed = np.flatnonzero([k is not None for k in of_leaf])
        self.skip_key = np.array([k for k in of_leaf if k is not None], dtype=np.int64)
        self.tile_needed = self.tile_table is not None
        self.changing_needed = {code: True for code in self.changing}

    def evaluate(self, ctx: Context, out: np.ndarray | None = None) -> np.ndarray:
        """Progress of every term leaf (into `out`, if given)."""
        features = self._fill(ctx)
        x = features[self.index]
        equal = x[self.equal_pairs] == self.equal_to if self.equal_pairs.size else None
        y = clip_ufunc(np.subtract(x, self.offset, out=x), self.low, self.cap, out=x)
        if equal is not None:
            y[self.equal_pairs] = equal
        if self.any_alive_only and not ctx.all_alive:  # dead members of alive-only terms read `fill`
            np.copyto(y, self.fill, where=features[self.alive_index] < self.alive_only)
        agg = np.bincount(self.leaf, weights=y, minlength=len(self.nodes))
        if self.min_leaves.size:
            agg[self.min_leaves] = np.minimum.reduceat(y[self.min_pairs], self.min_starts)
        if self.empty_min.size:
            agg[self.empty_min] = BIG
        if self.total.size:
            self.total += agg[self.accumulated]
            agg[self.accumulated] = self.total
        progress = np.multiply(agg, self.scale, out=agg)
        if self.floored.size:
            progress[self.floored] = np.floor(progress[self.floored])
            if self.any_floor_negated:
                progress *= self.floor_sign
        progress += self.bias
        return clip_ufunc(progress, core.ZERO, core.ONE, out=progress if out is None else out)

    def _fill(self, ctx: Context) -> np.ndarray:
        """Fill the columns terms read; return them flat. Levels, armour and kills change only with
        a level-up, loot, a kill or a new agent (the event log says when), so most ticks they are
        left as they are; ALIVE is left while every slot stays alive."""
        f, n, ent, fills = self.features, len(ctx.alive), ctx.ent, self.fills
        anew = self.stale or ctx.newcomers is not None
        self.stale = False
        written = ctx.state.written or _EVERYTHING
        if fills["events"]:
            f[:, self.event_span] = ent.events[:n, self.event_span]
        if fills["alive"] and (anew or not (ctx.all_alive and self.alive_full)):
            f[:, core.ALIVE] = ctx.alive
            self.alive_full = ctx.all_alive
        if fills["level"] and (anew or written.level_up):
            f[:, core.LEVEL: core.LEVEL + len(Skill)] = ent.level[:n]
        if fills["xp"]:
            np.subtract(ent.xp[:n, self.xp_span], self.start_xp[self.xp_span], out=f[:, self.xp_columns])
        level_up = written.level_up
        if fills["combat"] and (anew or (level_up and (level_up[_CONSTITUTION] or level_up[_MELEE] or level_up[_RANGE]
                                                       or level_up[_MAGE] or level_up[_DEFENSE]))):
            self._fill_combat(ent.level[:n], f)
        if fills["armour"] and (anew or written.equipment_up):
            np.add(ent.armour[:n, 0], ent.armour[:n, 1], out=f[:, core.ARMOUR], casting="unsafe")
        if fills["spawn"]:
            if anew:  # spawn rows and columns within their worlds
                spawn = np.array((ent.spawn_row[:n] - ctx.row_offset, ent.spawn_col[:n]), dtype=np.float64)
                ctx.distances.set_points(self._spawn_part, spawn)
            f[:, core.SPAWN_DISTANCE] = ctx.distances.of(ctx)[self._spawn_part]
        if fills["kills"] and (written.kill or self.kills_written):
            self._fill_kills(ent.events[:n], f)
            self.kills_written = written.kill
        if fills["tick"]:
            f[:, core.TICK] = np.repeat(ctx.world_ticks, ctx.layout.slots) if ctx.layout.n_worlds > 1 else (
                ctx.world_ticks[0])
        if fills["tile"]:  # the flat index, less the world's first tile (worlds are stacked as rows)
            np.subtract(ctx.flat, self._tile_offset, out=f[:, core.TILE])
        if self.tile_needed:
            f[:, self.tile_columns] = self.tile_table.take(ctx.flat, axis=0)  # take: twice as fast as [] on rows
        if self.changing and True in self.changing_needed.values():
            self._fill_changing(ctx)
        return self.flat_features

    @staticmethod
    def _fill_combat(level: np.ndarray, f: np.ndarray) -> None:
        """`Entities.combat_level`, inline (only its five skills change it)."""
        best = np.maximum(np.maximum(level[:, _MELEE], level[:, _RANGE]), level[:, _MAGE])
        base = 0.25 * (level[:, _DEFENSE] + level[:, _CONSTITUTION])
        np.floor(base + 0.5 * best, out=f[:, core.COMBAT_LEVEL])

    @staticmethod
    def _fill_kills(events: np.ndarray, f: np.ndarray) -> None:
        """(victim level + 1) * killed - 1: the victim's level, or -1 (kills are rare: most ticks
        there are none to write and none to clear)."""
        level = events[:, ints.Event.KILL_LEVEL] + 1
        np.multiply(level, events[:, ints.Event.KILL_PLAYER], out=f[:, core.KILLED_PLAYER_LEVEL], casting="unsafe")
        np.multiply(level, events[:, ints.Event.KILL_NPC], out=f[:, core.KILLED_NPC_LEVEL], casting="unsafe")
        f[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] -= 1

    def _bind_tiles(self, ctx: Context, terms: list[Term], groups: set) -> None:
        """Per-tile values of the columns that depend on the tile only (the centre distance,
        whether a material that never changes is in sight), side by side in one table per
        episode: each tick one gather by the slots' tiles fills them all. (TILE is the flat tile
        index itself, less the world's offset.)"""
        tiles, side = ctx.state.tiles, ctx.config.MAP_SIZE
        if tiles.cols != side:
            raise ValueError(f"tile grid of {tiles.cols} columns for worlds of side {side}: worlds stack as rows")
        self._tile_offset = ctx.row_offset.astype(np.int64) * side
        row, col = np.divmod(np.arange(tiles.material.size), tiles.cols)
        row %= side  # within its world
        values: dict[int, np.ndarray] = {}
        if "center" in groups:
            values[core.CENTER_DISTANCE] = chebyshev(row, col, side // 2, side // 2)
        codes = sorted({t.column - core.SEES for t in terms if t.column >= core.SEES} - set(_CHANGING))
        for code in codes:
            values[core.SEES + code] = _in_sight(tiles.material == code, ctx.config.PLAYER_VISION_RADIUS).ravel()
        self.tile_table = None
        if values:
            low, high = min(values), max(values) + 1
            self.tile_columns = slice(low, high)
            # int8 where the values fit, else int16 (distances and 0 / 1): a fifth of float64's bytes
            # or less, so the rows the agents stand on are more often in cache when a tick gathers
            # them; a column nobody reads stays 0
            small = max(int(np.max(value)) for value in values.values()) <= np.iinfo(np.int8).max
            self.tile_table = np.zeros((tiles.material.size, high - low), dtype=np.int8 if small else np.int16)
            for column, value in values.items():
                self.tile_table[:, column - low] = value

    def _bind_changing(self, ctx: Context, terms: list[Term], members: list[np.ndarray]) -> None:
        """Forest and scrub change (harvests, regrowth): they are looked for around the slots that
        need them, every tick."""
        tiles, radius = ctx.state.tiles, ctx.config.PLAYER_VISION_RADIUS
        codes = sorted({t.column - core.SEES for t in terms if t.column >= core.SEES} & set(_CHANGING))
        rows = len(self.features)
        for code in codes:
            slots = np.unique(np.concatenate([m for t, m in zip(terms, members, strict=True)
                                              if t.column == core.SEES + code]))
            self.changing[code] = slots, (core.SEES + code) * rows + slots  # and their cells in the flat features
        steps = np.arange(-radius, radius + 1)
        self.window = (steps[:, None] * tiles.cols + steps[None, :]).ravel()

    def _fill_changing(self, ctx: Context) -> None:
        flat, material = ctx.flat, ctx.state.tiles.material.ravel()
        flat_features = self.flat_features
        for code, (slots, index) in self.changing.items():  # the lava border, wider than vision, keeps windows inside
            if not self.changing_needed[code]:
                continue
            window = material[flat[slots][:, None] + self.window]
            flat_features[index] = np.logical_or.reduce(window == code, axis=1)


def _span(columns: list[int]) -> slice:
    """The smallest range of `columns` (a block copies in one call)."""
    return slice(min(columns, default=0), max(columns, default=0) + 1)


def _in_sight(grid: np.ndarray, radius: int) -> np.ndarray:
    """Tiles with a True tile of `grid` within Chebyshev `radius` (a summed-area table)."""
    table = np.zeros((grid.shape[0] + 1, grid.shape[1] + 1), dtype=np.int32)
    np.cumsum(np.cumsum(grid, axis=0, dtype=np.int32), axis=1, out=table[1:, 1:])
    low_r = np.clip(np.arange(grid.shape[0]) - radius, 0, grid.shape[0])
    high_r = np.clip(np.arange(grid.shape[0]) + radius + 1, 0, grid.shape[0])
    low_c = np.clip(np.arange(grid.shape[1]) - radius, 0, grid.shape[1])
    high_c = np.clip(np.arange(grid.shape[1]) + radius + 1, 0, grid.shape[1])
    count = (table[high_r][:, high_c] - table[low_r][:, high_c] - table[high_r][:, low_c] + table[low_r][:, low_c])
    return count > 0


def _start_xp(ctx: Context) -> np.ndarray:
    """XP of each skill at spawn (the XP of the starting levels)."""
    config = ctx.config
    progression = config.has("Progression")
    start = np.full(len(Skill), config.PROGRESSION_BASE_LEVEL if progression else 1)
    start[[Skill.CONSTITUTION, Skill.HUNTING, Skill.FISHING]] = (
        config.PROGRESSION_RESOURCE_BASE_LEVEL if progression else 10)
    return xp_table(config.PROGRESSION_LEVEL_MAX if progression else 99)[start].astype(np.float64)
