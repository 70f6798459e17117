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
from nmmo.core.systems.progression import xp_table
from nmmo.tasks import core
from nmmo.tasks.core import AT_LEAST, BIG, EQUALS, FLOOR, MIN, ONE_MINUS, Context, Term, any_of, clip_ufunc

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
_CHANGES = slice(int(Event.PLAYER_KILL), int(Event.LEVEL_DEFENSE) + 1)  # the events that gate fills, by offset:
_KILL, _EQUIPMENT_UP, _LEVEL_UP = (int(e) - _CHANGES.start for e in (Event.PLAYER_KILL, Event.EQUIPMENT_UP,
                                                                      Event.LEVEL_UP))
_CONSTITUTION, _MELEE, _RANGE, _MAGE, _DEFENSE = (int(s) for s in (Skill.CONSTITUTION, Skill.MELEE, Skill.RANGE,
                                                                   Skill.MAGE, Skill.DEFENSE))
_COMBAT_UP = [int(Event.LEVEL_CONSTITUTION) + s - _CHANGES.start for s in (_CONSTITUTION, _MELEE, _RANGE, _MAGE,
                                                                           _DEFENSE)]  # level-ups that change it


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
        self.is_eq = np.repeat(np.array([t.op == EQUALS for t in terms]), counts)
        self.has_eq = bool(self.is_eq.any())
        self.threshold = per_pair([t.threshold for t in terms])
        is_min = np.array([t.agg == MIN for t in terms], dtype=bool)
        self.alive_only = per_pair([t.alive_only for t in terms])  # 1.0: a dead member reads `fill`
        self.any_alive_only = bool(self.alive_only.any())
        self.fill = np.where(is_min[self.leaf], BIG, 0.0)
        self.min_leaves = np.flatnonzero(is_min & (counts > 0))
        self.min_pairs = np.flatnonzero(is_min[self.leaf])  # their pairs, contiguous per leaf
        self.min_starts = np.concatenate([[0], np.cumsum(counts[self.min_leaves])[:-1]]).astype(np.int64)
        self.empty_min = np.flatnonzero(is_min & (counts == 0))
        self.accumulating = np.array([t.accumulate for t in terms], dtype=bool)
        self.any_accumulating = bool(self.accumulating.any())
        self.total = np.zeros(n)
        self._bind_progress(terms, counts, negated)
        groups = {_GROUP_OF[t.column] for t in terms} | ({"alive"} if self.any_alive_only else set())
        self.groups = sorted(groups)
        self._bind_features(ctx, terms, members, groups)

    def _bind_progress(self, terms: list[Term], counts: np.ndarray, negated: list[bool] | None) -> None:
        """Progress = sign * agg / denom + bias (RATIO: 1, 0; ONE_MINUS: -1, 1); FLOOR: floor(agg /
        denom), times -1 plus 1 under a `not`. A leaf under a `not`: 1 - clip(a r + b) = clip(-a r + 1 - b)."""
        n = len(terms)
        denom = np.array([counts[i] if t.denom == "members" else t.denom for i, t in enumerate(terms)], dtype=float)
        vacuous = denom <= 0  # nothing needed: progress 1
        post = np.array([t.post for t in terms])
        self.scale = np.where(vacuous, 0.0, np.where(post == ONE_MINUS, -1.0, 1.0) / np.where(vacuous, 1.0, denom))
        self.bias = np.where(vacuous | (post == ONE_MINUS), 1.0, 0.0)
        self.is_floor = (post == FLOOR) & ~vacuous
        self.any_floor = bool(self.is_floor.any())
        negated = np.zeros(n, dtype=bool) if negated is None else np.array(negated, dtype=bool)
        flip = negated & ~self.is_floor
        self.scale, self.bias = np.where(flip, -self.scale, self.scale), np.where(flip, 1.0 - self.bias, self.bias)
        floor_negated = negated & self.is_floor
        self.floor_sign = np.where(floor_negated, -1.0, 1.0)  # x * 1.0 is x
        self.bias = np.where(self.is_floor, floor_negated.astype(np.float64), self.bias)

    def _bind_features(self, ctx: Context, terms: list[Term], members: list[np.ndarray], groups: set) -> None:
        """The feature matrix, the filler of each group it needs, and the flat index of every
        pair's feature (and of its member's ALIVE), so that one gather reads them all."""
        rows = ctx.layout.slots * ctx.layout.n_worlds
        self.features = np.zeros((rows, core.N_FEATURES), order="F")  # by column
        self.features[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] = -1
        self.flat_features = self.features.ravel(order="F")  # a view
        self.index = self.column * rows + self.slot
        self.alive_index = core.ALIVE * rows + self.slot
        self.kills_written = False
        self.stale = True  # every column is filled on the first tick
        self.gated = bool(groups & {"level", "combat", "armour", "kills"})
        self.event_span = _span([t.column for t in terms if _GROUP_OF[t.column] == "events"])
        self.start_xp = _start_xp(ctx) if "xp" in groups else None
        self.xp_span = _span([t.column - core.XP_GAINED for t in terms if _GROUP_OF[t.column] == "xp"])
        self.tile_tables = self._tile_tables(ctx, terms, groups)
        self.changing: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if "sees" in groups:
            self._bind_changing(ctx, terms, members)
        fillers = {"events": self._fill_events, "alive": self._fill_alive, "level": self._fill_level,
                   "xp": self._fill_xp, "combat": self._fill_combat, "armour": self._fill_armour,
                   "spawn": self._fill_spawn, "kills": self._fill_kills, "tick": self._fill_tick}
        self.fillers = [fillers[group] for group in sorted(groups) if group in fillers]

    def restart(self, leaves: np.ndarray) -> None:
        self.total[leaves] = 0.0

    def evaluate(self, ctx: Context, out: np.ndarray | None = None) -> np.ndarray:
        """Progress of every term leaf (into `out`, if given)."""
        features = self._fill(ctx)
        x = features[self.index]
        y = clip_ufunc(x - self.offset, self.low, self.cap)
        if self.has_eq:
            y = np.where(self.is_eq, x == self.threshold, y)
        if self.any_alive_only and not ctx.all_alive:  # dead members of alive-only terms read `fill`
            np.copyto(y, self.fill, where=features[self.alive_index] < self.alive_only)
        agg = np.bincount(self.leaf, weights=y, minlength=len(self.nodes))
        if self.min_leaves.size:
            agg[self.min_leaves] = np.minimum.reduceat(y[self.min_pairs], self.min_starts)
        if self.empty_min.size:
            agg[self.empty_min] = BIG
        if self.any_accumulating:
            np.add(self.total, agg, out=self.total, where=self.accumulating)
            np.copyto(agg, self.total, where=self.accumulating)
        progress = agg * self.scale
        if self.any_floor:
            np.floor(progress, out=progress, where=self.is_floor)
            progress *= self.floor_sign
        progress += self.bias
        return clip_ufunc(progress, 0.0, 1.0, out=progress if out is None else out)

    def _fill(self, ctx: Context) -> np.ndarray:
        """Fill the columns terms read; return them flat. Levels and armour change only with a
        level-up, loot or a new agent (the event log says when), so most ticks they are left as they are."""
        f, n = self.features, len(ctx.alive)
        anew = self.stale or ctx.newcomers is not None
        self.stale = False
        changes = self._changes(ctx.ent.events[:n]) if self.gated else None
        for filler in self.fillers:
            filler(ctx, f, n, anew, changes)
        if self.tile_tables:
            flat = ctx.flat
            for column, table in self.tile_tables:
                f[:, column] = table[flat]
        if self.changing:
            self._fill_changing(ctx, f)
        return self.flat_features

    @staticmethod
    def _changes(events: np.ndarray) -> list[bool]:
        """Kills, ..., equipment and level-ups (all, then per skill) of the tick, per column, in one reduction."""
        return any_of(events[:, _CHANGES], axis=0).tolist()

    def _fill_events(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        f[:, self.event_span] = ctx.ent.events[:n, self.event_span]

    def _fill_alive(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        f[:, core.ALIVE] = ctx.alive

    def _fill_level(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        if anew or changes[_LEVEL_UP]:
            f[:, core.LEVEL: core.LEVEL + len(Skill)] = ctx.ent.level[:n]

    def _fill_xp(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        span = self.xp_span
        np.subtract(ctx.ent.xp[:n, span], self.start_xp[span], out=f[:, core.XP_GAINED + span.start: core.XP_GAINED
                                                                       + span.stop])

    def _fill_combat(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        """`Entities.combat_level`, inline (only its five skills change it)."""
        if anew or any(changes[i] for i in _COMBAT_UP):
            level = ctx.ent.level[:n]
            best = np.maximum(np.maximum(level[:, _MELEE], level[:, _RANGE]), level[:, _MAGE])
            base = 0.25 * (level[:, _DEFENSE] + level[:, _CONSTITUTION])
            np.floor(base + 0.5 * best, out=f[:, core.COMBAT_LEVEL])

    def _fill_armour(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        if anew or changes[_EQUIPMENT_UP]:
            armour = ctx.ent.armour[:n]
            np.add(armour[:, 0], armour[:, 1], out=f[:, core.ARMOUR], casting="unsafe")

    def _fill_spawn(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        ent = ctx.ent
        np.maximum(np.abs(ent.row[:n] - ent.spawn_row[:n]), np.abs(ent.col[:n] - ent.spawn_col[:n]),
                   out=f[:, core.SPAWN_DISTANCE], casting="unsafe")

    def _fill_tick(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        f[:, core.TICK] = np.repeat(ctx.world_ticks, ctx.layout.slots) if ctx.layout.n_worlds > 1 else (
            ctx.world_ticks[0])

    def _fill_kills(self, ctx: Context, f: np.ndarray, n: int, anew: bool, changes) -> None:
        """(victim level + 1) * killed - 1: the victim's level, or -1 (kills are rare: most ticks
        there are none to write and none to clear)."""
        any_kill = changes[_KILL]
        if any_kill or self.kills_written:
            events = ctx.ent.events[:n]
            level = events[:, ints.Event.KILL_LEVEL] + 1
            np.multiply(level, events[:, ints.Event.KILL_PLAYER], out=f[:, core.KILLED_PLAYER_LEVEL], casting="unsafe")
            np.multiply(level, events[:, ints.Event.KILL_NPC], out=f[:, core.KILLED_NPC_LEVEL], casting="unsafe")
            f[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] -= 1
        self.kills_written = any_kill

    @staticmethod
    def _tile_tables(ctx: Context, terms: list[Term], groups: set) -> list[tuple[int, np.ndarray]]:
        """Per-tile values of the columns that depend on the tile only (the centre distance, the
        tile, whether a material that never changes is in sight), per episode: each is then one
        gather by the slots' tiles."""
        tiles, side = ctx.state.tiles, ctx.config.MAP_SIZE
        row, col = np.divmod(np.arange(tiles.material.size), tiles.cols)
        row %= side  # within its world
        tables = []
        if "center" in groups:
            tables.append((core.CENTER_DISTANCE, chebyshev(row, col, side // 2, side // 2).astype(np.float64)))
        if "tile" in groups:
            tables.append((core.TILE, (row * side + col).astype(np.float64)))
        codes = sorted({t.column - core.SEES for t in terms if t.column >= core.SEES} - set(_CHANGING))
        for code in codes:
            seen = _in_sight(tiles.material == code, ctx.config.PLAYER_VISION_RADIUS).ravel()
            tables.append((core.SEES + code, seen.astype(np.float64)))  # float: the fill is a plain copy
        return tables

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

    def _fill_changing(self, ctx: Context, f: np.ndarray) -> None:
        flat, material = ctx.flat, ctx.state.tiles.material.ravel()
        flat_features = self.flat_features
        for code, (slots, index) in self.changing.items():  # the lava border, wider than vision, keeps windows inside
            window = material[flat[slots][:, None] + self.window]
            flat_features[index] = any_of(window == code, axis=1)


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
