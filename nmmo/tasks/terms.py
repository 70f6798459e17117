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
from nmmo.tasks.core import AT_LEAST, BIG, EQUALS, FLOOR, MIN, ONE_MINUS, Context, Term, any_of, clip01, clip_ufunc

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
_CONSTITUTION, _MELEE, _RANGE, _MAGE, _DEFENSE = (int(s) for s in (Skill.CONSTITUTION, Skill.MELEE, Skill.RANGE,
                                                                   Skill.MAGE, Skill.DEFENSE))


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
        self.alive_only = np.repeat(np.array([t.alive_only for t in terms], dtype=bool), counts)
        self.any_alive_only = bool(self.alive_only.any())
        self.fill = np.where(is_min[self.leaf], BIG, 0.0)
        self.min_leaves = np.flatnonzero(is_min & (counts > 0))
        self.min_pairs = np.flatnonzero(is_min[self.leaf])  # their pairs, contiguous per leaf
        self.min_starts = np.concatenate([[0], np.cumsum(counts[self.min_leaves])[:-1]]).astype(np.int64)
        self.empty_min = np.flatnonzero(is_min & (counts == 0))
        self.accumulating = np.flatnonzero([t.accumulate for t in terms])
        self.total = np.zeros(n)
        denom = np.array([counts[i] if t.denom == "members" else t.denom for i, t in enumerate(terms)], dtype=float)
        vacuous = denom <= 0  # nothing needed: progress 1
        post = np.array([t.post for t in terms])
        # progress = sign * agg / denom + bias (RATIO: 1, 0; ONE_MINUS: -1, 1), floor(r) + bias for FLOOR
        self.scale = np.where(vacuous, 0.0, np.where(post == ONE_MINUS, -1.0, 1.0) / np.where(vacuous, 1.0, denom))
        self.bias = np.where(vacuous | (post == ONE_MINUS), 1.0, 0.0)
        floor = (post == FLOOR) & ~vacuous
        self.floor = np.flatnonzero(floor)
        # a leaf under a `not`: 1 - clip(a r + b) = clip(-a r + 1 - b); floor leaves flip after the floor
        negated = np.zeros(n, dtype=bool) if negated is None else np.array(negated, dtype=bool)
        flip = negated & ~floor
        self.scale, self.bias = np.where(flip, -self.scale, self.scale), np.where(flip, 1.0 - self.bias, self.bias)
        self.floor_negated = np.flatnonzero(negated[self.floor])  # positions within self.floor
        self.groups = sorted({_GROUP_OF[t.column] for t in terms} | ({"alive"} if self.any_alive_only else set()))
        self.features = np.zeros((ctx.layout.slots * ctx.layout.n_worlds, core.N_FEATURES), order="F")  # by column
        self.features[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] = -1
        self.kills_written = False
        self.stale = True  # every column is filled on the first tick
        self.start_xp = _start_xp(ctx) if "xp" in self.groups else None
        if "sees" in self.groups:
            self._bind_sight(ctx, terms, members)

    def restart(self, leaves: np.ndarray) -> None:
        self.total[leaves] = 0.0

    def evaluate(self, ctx: Context) -> np.ndarray:
        """Progress of every term leaf."""
        f = self._fill(ctx)
        x = f[self.slot, self.column]
        y = clip_ufunc(x - self.offset, self.low, self.cap)
        if self.has_eq:
            y = np.where(self.is_eq, x == self.threshold, y)
        if self.any_alive_only and not ctx.all_alive:
            y = np.where(self.alive_only & ~ctx.alive[self.slot], self.fill, y)
        agg = np.bincount(self.leaf, weights=y, minlength=len(self.nodes))
        if self.min_leaves.size:
            agg[self.min_leaves] = np.minimum.reduceat(y[self.min_pairs], self.min_starts)
        if self.empty_min.size:
            agg[self.empty_min] = BIG
        if self.accumulating.size:
            acc = self.accumulating
            self.total[acc] += agg[acc]
            agg[acc] = self.total[acc]
        progress = agg * self.scale + self.bias
        if self.floor.size:
            floors = np.floor(agg[self.floor] * self.scale[self.floor])
            floors[self.floor_negated] = 1.0 - floors[self.floor_negated]
            progress[self.floor] = floors
        return clip01(progress)

    def _fill(self, ctx: Context) -> np.ndarray:
        """Fill the columns terms read. Levels and armour change only with a level-up, loot or a
        new agent (the event log says when), so most ticks they are left as they are."""
        f, ent, n = self.features, ctx.ent, len(ctx.alive)
        anew = self.stale or ctx.newcomers is not None
        self.stale = False
        for group in self.groups:
            if group in ("level", "combat") and not (anew or any_of(ent.events[:n, ints.Event.LEVEL_UP])):
                continue
            if group == "armour" and not (anew or any_of(ent.events[:n, ints.Event.EQUIPMENT_UP])):
                continue
            if group == "events":
                f[:, core.EVENTS: core.EVENTS + len(Event)] = ent.events[:n]
            elif group == "alive":
                f[:, core.ALIVE] = ctx.alive
            elif group == "level":
                f[:, core.LEVEL: core.LEVEL + len(Skill)] = ent.level[:n]
            elif group == "xp":
                np.subtract(ent.xp[:n], self.start_xp, out=f[:, core.XP_GAINED: core.XP_GAINED + len(Skill)])
            elif group == "combat":  # `Entities.combat_level`, inline
                level = ent.level[:n]
                best = np.maximum(np.maximum(level[:, _MELEE], level[:, _RANGE]), level[:, _MAGE])
                base = 0.25 * (level[:, _DEFENSE] + level[:, _CONSTITUTION])
                np.floor(base + 0.5 * best, out=f[:, core.COMBAT_LEVEL])
            elif group == "armour":
                armour = ent.armour[:n]
                np.add(armour[:, 0], armour[:, 1], out=f[:, core.ARMOUR], casting="unsafe")
            elif group == "spawn":
                f[:, core.SPAWN_DISTANCE] = chebyshev(ent.row[:n], ent.col[:n], ent.spawn_row[:n], ent.spawn_col[:n])
            elif group == "center":
                center = ctx.config.MAP_SIZE // 2
                f[:, core.CENTER_DISTANCE] = chebyshev(ctx.row, ctx.col, center, center)
            elif group == "tile":
                f[:, core.TILE] = ctx.row * ctx.config.MAP_SIZE + ctx.col
            elif group == "kills":
                self._fill_kills(f, ent.events[:n])
            elif group == "sees":
                self._fill_sight(ctx, f)
            else:  # tick
                f[:, core.TICK] = np.repeat(ctx.world_ticks, ctx.layout.slots) if ctx.layout.n_worlds > 1 else (
                    ctx.world_ticks[0])
        return f

    def _fill_kills(self, f: np.ndarray, events: np.ndarray) -> None:
        """(victim level + 1) * killed - 1: the victim's level, or -1 (kills are rare: most ticks
        there are none to write and none to clear)."""
        any_kill = any_of(events[:, ints.Event.PLAYER_KILL])
        if any_kill or self.kills_written:
            level = events[:, ints.Event.KILL_LEVEL] + 1
            np.multiply(level, events[:, ints.Event.KILL_PLAYER], out=f[:, core.KILLED_PLAYER_LEVEL], casting="unsafe")
            np.multiply(level, events[:, ints.Event.KILL_NPC], out=f[:, core.KILLED_NPC_LEVEL], casting="unsafe")
            f[:, core.KILLED_PLAYER_LEVEL: core.KILLED_NPC_LEVEL + 1] -= 1
        self.kills_written = bool(any_kill)


    def _bind_sight(self, ctx: Context, terms: list[Term], members: list[np.ndarray]) -> None:
        """Materials that never change get a map, per episode, of the tiles from which one is in
        sight; forest and scrub are looked for around the slots that need them, every tick."""
        tiles, radius = ctx.state.tiles, ctx.config.PLAYER_VISION_RADIUS
        codes = sorted({t.column - core.SEES for t in terms if t.column >= core.SEES})
        self.sight_maps = {code: _in_sight(tiles.material == code, radius).ravel()
                           for code in codes if code not in _CHANGING}
        self.changing = {code: np.unique(np.concatenate([m for t, m in zip(terms, members, strict=True)
                                                         if t.column == core.SEES + code]))
                         for code in codes if code in _CHANGING}
        steps = np.arange(-radius, radius + 1)
        self.window = (steps[:, None] * tiles.cols + steps[None, :]).ravel()

    def _fill_sight(self, ctx: Context, f: np.ndarray) -> None:
        ent, n, width = ctx.ent, len(ctx.alive), ctx.state.tiles.cols
        flat = ent.row[:n].astype(np.int64) * width + ent.col[:n]
        for code, seen in self.sight_maps.items():
            f[:, core.SEES + code] = seen[flat]
        material = ctx.state.tiles.material.ravel()
        for code, slots in self.changing.items():  # the lava border, wider than vision, keeps windows inside
            window = material[flat[slots][:, None] + self.window]
            f[slots, core.SEES + code] = any_of(window == code, axis=1)


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
