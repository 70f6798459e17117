"""Built-in predicates on positions: tiles and entities in sight, tiles occupied or seized, distances.

Coordinates are map coordinates of the agent's world, the lava border included (nmmo 2.x's), and
distances Chebyshev's (nmmo 2.x's "l-inf"). "Can see" means within PLAYER_VISION_RADIUS, the
square window an agent observes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Material
from nmmo.tasks import core
from nmmo.tasks.core import (
    BIG,
    COORD_UNIT,
    EQUALS,
    MIN,
    ONE_MINUS,
    Context,
    Leaves,
    Param,
    Predicate,
    Term,
    all_of,
    any_of,
    clip01,
)
from nmmo.tasks.distances import chebyshev_between

MATERIALS = tuple(material.name.capitalize() for material in Material)
_ROW = Param("row", "int", low=0, high=4095, scale=1024, unit=COORD_UNIT)
_COL = Param("col", "int", low=0, high=4095, scale=1024, unit=COORD_UNIT)
_NUM_TICKS = Param("num_ticks", "int", low=1, scale=1024)


class CanSeeTile(Predicate):
    """1 when a live member sees a tile of `tile_type` (a material)."""

    name = "CanSeeTile"
    differences = "a material name (Lava, Water, Grass, Scrub, Forest, Stone)"
    params = (Param("tile_type", "choice", choices=MATERIALS),)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.SEES + args["tile_type"])


class CanSeeGroup(Predicate):
    """1 when a live member sees a live agent of `target`."""

    name = "CanSeeGroup"
    differences = "a keyword"
    params = (Param("target", "group"),)

    def bind(self, leaves: Leaves, ctx: Context) -> None:
        """Every (leaf, subject member, target member) triple, and where each leaf's begin."""
        s, g = leaves.subject, leaves.groups["target"]
        pairs = [np.array(np.meshgrid(s.slots[s.owner == i], g.slots[g.owner == i])).reshape(2, -1)
                 for i in range(leaves.n)]
        leaves.static["viewer"] = np.concatenate([p[0] for p in pairs]).astype(np.int64)
        leaves.static["seen"] = np.concatenate([p[1] for p in pairs]).astype(np.int64)
        sizes = np.array([p.shape[1] for p in pairs], dtype=np.int64)
        leaves.static["owner"] = np.repeat(np.arange(leaves.n), sizes)
        leaves.static["starts"] = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        leaves.static["all_filled"] = bool((sizes > 0).all())
        leaves.static["radius"] = np.array(float(ctx.config.PLAYER_VISION_RADIUS))

    def progress(self, ctx: Context, leaves: Leaves) -> np.ndarray:
        static = leaves.static
        a, b = static["viewer"], static["seen"]
        position = ctx.position
        distance = chebyshev_between(position.take(a, axis=1), position.take(b, axis=1))
        seen = distance <= static["radius"]
        if not ctx.all_alive:
            seen &= ctx.alive[a] & ctx.alive[b]
        if static["all_filled"] and seen.size:  # any triple of the leaf
            return np.logical_or.reduceat(seen, static["starts"])
        return (np.bincount(static["owner"], weights=seen, minlength=leaves.n) > 0).astype(np.float64)


class CanSeeAgent(Predicate):
    """CanSeeGroup for a target naming one agent ("leader", "left_team_leader", ...)."""

    name = "CanSeeAgent"
    differences = "a keyword naming one agent (leader, ...), not an id"
    params = CanSeeGroup.params

    def rewrite(self, args: dict[str, Any], config: Config) -> dict:
        return {"predicate": "CanSeeGroup", "args": args}


class OccupyTile(Predicate):
    """1 when a live member stands on (`row`, `col`)."""

    name = "OccupyTile"
    params = (_ROW, _COL)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.TILE, EQUALS, threshold=args["row"] * config.MAP_SIZE + args["col"])


class NearTile(Predicate):
    """1 when a live member stands within Chebyshev `dist` of (`row`, `col`); otherwise 1 - the
    nearest live member's distance beyond `dist` over MAP_CENTER // 2, so progress grows on the way
    (0 when no member is alive). Ours: OccupyTile asks for one tile, which water, stone or another
    agent may make out of reach on a given map; a place within a few tiles is reachable on any."""

    name = "NearTile"
    differences = ("ours: a live member within Chebyshev `dist` of (row, col); on the way, 1 - the distance "
                   "beyond `dist` / (MAP_CENTER // 2)")
    params = (_ROW, _COL, Param("dist", "int", 2, 0, 4095, scale=128))

    def bind(self, leaves: Leaves, ctx: Context) -> None:
        """Each member's distance to its leaf's tile (asked of `Distances` once), its leaf's slack."""
        m, args = leaves.subject, leaves.args
        points = np.stack((args["row"][m.owner], args["col"][m.owner]))
        leaves.static["distance"] = ctx.distances.want(m.slots, points)
        leaves.static["dist"] = args["dist"].astype(np.float64)
        leaves.static["per_tile"] = np.array(1.0 / max(ctx.config.MAP_CENTER // 2, 1))

    def progress(self, ctx: Context, leaves: Leaves) -> np.ndarray:
        static, m = leaves.static, leaves.subject
        d = ctx.distances.of(ctx)[static["distance"]]
        if not ctx.all_alive:
            d = np.where(ctx.alive[m.slots], d, BIG)
        beyond = np.maximum(m.min(d, empty=BIG) - static["dist"], 0.0)
        return clip01(1.0 - beyond * static["per_tile"])


class DistanceTraveled(Predicate):
    """The live members' summed distance from where they spawned, over `dist`."""

    name = "DistanceTraveled"
    params = (Param("dist", "int", low=1, scale=128),)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.SPAWN_DISTANCE, denom=args["dist"])


class ProgressTowardCenter(Predicate):
    """1 - (the nearest live member's distance to the centre tile) / (MAP_CENTER // 2); 0 when
    no member is alive."""

    name = "ProgressTowardCenter"

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.CENTER_DISTANCE, agg=MIN, denom=config.MAP_CENTER // 2, post=ONE_MINUS)


class AllMembersWithinRange(Predicate):
    """1 when the live members' rows and columns each span at most `dist`; otherwise nmmo 2.x's
    partial credit: the mean of (MAP_CENTER - span) / (MAP_CENTER - dist) and, for rows and
    columns, dist / max(3 std, dist). 0 when no member is alive."""

    name = "AllMembersWithinRange"
    params = (Param("dist", "int", low=0, scale=128),)

    def bind(self, leaves: Leaves, ctx: Context) -> None:
        m = leaves.subject
        filled = m.counts > 0
        leaves.static["filled"], leaves.static["starts"] = np.flatnonzero(filled), m.starts[filled]
        dist = leaves.args["dist"][filled].astype(np.float64)
        leaves.static["dist"], leaves.static["sd_dist"] = dist, dist[:, None]
        leaves.static["far"] = np.maximum(ctx.config.MAP_CENTER - dist, 1)
        leaves.static["single"] = bool((m.counts == 1).all())  # lone members are always within range

    def progress(self, ctx: Context, leaves: Leaves) -> np.ndarray:
        m, static = leaves.subject, leaves.static
        if static["single"]:  # span 0 when alive (within: 1), no one alive when dead (0)
            return ctx.alive[m.slots]
        out = np.zeros(leaves.n)
        if not static["filled"].size:
            return out
        starts, dist = static["starts"], static["dist"]
        alive = ctx.alive[m.slots][:, None]
        rc = np.empty((m.slots.size, 2))
        rc[:, 0], rc[:, 1] = ctx.row[m.slots], ctx.col[m.slots]
        span = (np.maximum.reduceat(np.where(alive, rc, -BIG), starts) - np.minimum.reduceat(np.where(alive, rc, BIG),
                                                                                              starts))
        span = np.maximum(span[:, 0], span[:, 1])
        within = span <= dist  # nobody alive: span -2 BIG
        if all_of(within):
            out[static["filled"]] = span > -BIG
            return out
        weighted = rc * alive
        count = np.maximum(np.add.reduceat(alive[:, 0], starts), 1)[:, None]
        mean = np.add.reduceat(weighted, starts) / count
        std = np.sqrt(np.maximum(np.add.reduceat(weighted * rc, starts) / count - mean * mean, 0.0))
        spread = np.maximum(3 * std, static["sd_dist"])  # (leaves, 2)
        score = np.divide(static["sd_dist"], spread, out=np.zeros(spread.shape), where=spread > 0)
        score = score[:, 0] + score[:, 1]
        partial = clip01(((ctx.config.MAP_CENTER - span) / static["far"] + score) / 3.0)
        out[static["filled"]] = np.where(span <= -BIG, 0.0, np.where(within, 1.0, partial))
        return out


class SeizeTile(Predicate):
    """Hold (`row`, `col`) for `num_ticks`. A tile is seized by the last player to stand on it
    whose team did not hold it already (NPCs never seize), and stays theirs after they leave
    (until a new agent takes the holder's slot). When a subject member holds it: progress_bonus
    + seize_bonus + the rest in proportion to the ticks held; otherwise progress_bonus * (1 -
    nearest live member's distance / (MAP_CENTER // 2))."""

    name = "SeizeTile"
    differences = "any tile (2.1.1: tiles the map marks as targets)"
    params = (_ROW, _COL, _NUM_TICKS, Param("progress_bonus", "float", 0.4, 0, 1, scale=1),
              Param("seize_bonus", "float", 0.3, 0, 1, scale=1))

    def bind(self, leaves: Leaves, ctx: Context) -> None:
        rows, cols = leaves.args["row"].astype(np.int64), leaves.args["col"].astype(np.int64)
        m, args, side = leaves.subject, leaves.args, ctx.config.MAP_SIZE
        static = leaves.static
        static["flat"] = (rows + leaves.world * side) * ctx.state.tiles.cols + cols
        # per member: the distance to its leaf's tile (with the other readers' distances: `Distances`)
        static["distance"] = ctx.distances.want(m.slots, np.stack((rows[m.owner], cols[m.owner])))
        static["half_center"] = np.array(float(ctx.config.MAP_CENTER // 2))
        static["gain"] = (1.0 - args["progress_bonus"] - args["seize_bonus"]) / args["num_ticks"]
        static["held_base"] = args["progress_bonus"] + args["seize_bonus"]
        static["approach"] = args["progress_bonus"] / max(ctx.config.MAP_CENTER // 2, 1)
        slots = ctx.layout.slots * ctx.layout.n_worlds
        is_member = np.zeros((leaves.n, slots + 1), dtype=bool)  # the last column: no holder (-1)
        is_member[m.owner, m.slots] = True
        static["is_member"], static["leaf"] = is_member, np.arange(leaves.n)
        static["single"] = bool((m.counts == 1).all())  # each leaf's nearest member is its member
        for key in ("holder", "holder_team", "since"):  # never zeroed: the tile's history
            leaves.kept[key] = np.full(leaves.n, -1, dtype=np.int64)
        leaves.kept["held"] = np.zeros(leaves.n, dtype=bool)
        static["any_held"] = False

    def progress(self, ctx: Context, leaves: Leaves) -> np.ndarray:
        static, kept = leaves.static, leaves.kept
        self._seize(ctx, leaves)
        nearest = self._nearest(ctx, leaves)
        approach = np.subtract(static["half_center"], nearest)
        approach *= static["approach"]
        if static["any_held"]:
            held = static["held_base"] + static["gain"] * (ctx.ticks(leaves) - kept["since"])
            approach = np.where(kept["held"], held, approach)
        if not (ctx.all_alive and static["single"]):  # a leaf may have no live member (nearest BIG)
            return np.where(nearest < BIG, clip01(approach), 0.0)
        return approach

    @staticmethod
    def _seize(ctx: Context, leaves: Leaves) -> None:
        """Holders change when a player of another team stands on the tile, or the holder's slot
        gets a new agent (the tile is free again); whether a subject member holds it follows."""
        static, kept = leaves.static, leaves.kept
        holder, holder_team = kept["holder"], kept["holder_team"]
        changed = False
        if ctx.newcomers is not None:
            gone = (holder >= 0) & ctx.newcomers[holder]
            holder[gone], holder_team[gone] = -1, -1
            changed = bool(gone.any())
        occupant = ctx.state.tiles.occupancy.ravel()[static["flat"]]
        if np.maximum.reduce(occupant) >= 0:  # someone stands on a tile (-1: nobody)
            team = ctx.team_of_row[occupant]  # -1: nobody, or an NPC
            new = (team >= 0) & (team != holder_team)
            if any_of(new):
                who = occupant[new].astype(np.int64)
                holder[new], holder_team[new] = who, team[new]
                kept["since"][new] = ctx.ticks(leaves)[new] - ctx.ent.tile_ticks[who]
                changed = True
        if changed:
            kept["held"] = static["is_member"][static["leaf"], holder]
            static["any_held"] = any_of(kept["held"])

    @staticmethod
    def _nearest(ctx: Context, leaves: Leaves) -> np.ndarray:
        """The nearest live member's distance to the tile (BIG when none is alive)."""
        m = leaves.subject
        d = ctx.distances.of(ctx)[leaves.static["distance"]]
        if not ctx.all_alive:
            d = np.where(ctx.alive[m.slots], d, BIG)
        if leaves.static["single"]:
            return d
        return m.min(d, empty=BIG)


class SeizeCenter(Predicate):
    """SeizeTile on the centre tile (MAP_SIZE // 2, MAP_SIZE // 2)."""

    name = "SeizeCenter"
    params = (_NUM_TICKS, Param("progress_bonus", "float", 0.3, 0, 1, scale=1),
              Param("seize_bonus", "float", 0.3, 0, 1, scale=1))

    def rewrite(self, args: dict[str, Any], config: Config) -> dict:
        center = config.MAP_SIZE // 2
        return {"predicate": "SeizeTile", "args": {"row": center, "col": center, **args}}


QUADRANTS = ("first", "second", "third", "fourth")
_QUADRANT_SIGNS = {"first": (1, 1), "second": (-1, 1), "third": (-1, -1), "fourth": (1, -1)}  # nmmo 2.x's


class SeizeQuadCenter(Predicate):
    """SeizeTile on the centre of a quadrant: MAP_CENTER // 4 tiles from the centre diagonally."""

    name = "SeizeQuadCenter"
    params = (_NUM_TICKS, Param("quadrant", "choice", choices=QUADRANTS),
              Param("progress_bonus", "float", 0.3, 0, 1, scale=1), Param("seize_bonus", "float", 0.3, 0, 1, scale=1))

    def rewrite(self, args: dict[str, Any], config: Config) -> dict:
        center, half = config.MAP_SIZE // 2, config.MAP_CENTER // 4
        sign_row, sign_col = _QUADRANT_SIGNS[args["quadrant"]]
        rest = {key: value for key, value in args.items() if key != "quadrant"}
        return {"predicate": "SeizeTile", "args": {"row": center + half * sign_row, "col": center + half * sign_col,
                                                    **rest}}
