"""One tick of planning for the foraging bots: memory update, threat zones, distance fields.

`Planner.plan` turns a `Batch` into a `Plan`: it writes the agents' views into the team memory,
closes the tiles near hostile NPCs, and runs four multi-source searches over the remembered map
(`scripted.memory.distance_field`), each once for all agents:

- ``dist_f``: steps to the nearest food (a fresh forest; scrub counts farther: a little when it
  has been out of sight long enough to have likely regrown, a lot otherwise);
- ``dist_w``: steps to the nearest drinking tile (walkable, orthogonally next to water);
- ``via_f``: steps to water by way of a forest (sources: forests, each with a head start equal to
  its own distance to water), so descending it leads to a forest from which water is close;
- ``via_w``: the same for water then food, where water amid few forests (a poor home) and amid
  a crowd counts farther. Descending it leads to water close to a grove: where an idle agent
  waits.

A source counts farther (a head start) outside the outer band where NPCs spawn passive, near
where a hostile NPC was lately seen, and (forests) amid a crowd. Agents that no known path
connects to a source also get `hope_f`/`hope_w`: the same searches across unseen playable ground.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import EntityAttr, Material, NPCType
from nmmo.core.rules import STEPS
from scripted.core import Batch, Scripted
from scripted.memory import (
    FAR,
    UNKNOWN,
    AgentBook,
    MapMemory,
    closed_border,
    distance_field,
    distance_fields,
    outer_band,
    square_marks,
)

#: Distance assumed to a resource with no known source (about a short search away).
SEARCH_DISTANCE = 8


class Plan(SimpleNamespace):
    """One tick's arrays. Per agent: ids, row, col, here (flat tile), food and water (what it will
    have after this tick's harvest or drink), health, on_forest, at_water, in_zone, allowed (n, 5) moves,
    d_food, d_water (steps to the nearest source; `SEARCH_DISTANCE` when none is known), known_f,
    known_w, via_f, via_w (steps to the first resource and on to the other). Flat map fields:
    open, zone, dist_f, dist_w, via_f_field, via_w_field. Threat positions: threat_row/col."""


class Planner(Scripted):
    """Base of the foraging bots: the team memory, per-agent book and each tick's `Plan`."""

    #: Keep this far (Chebyshev) from hostile NPCs: beyond their vision (5), so they never hunt
    #: it; plans go around, and an agent that finds itself this close flees.
    hostile_berth = 6
    #: Food and water within `haunt_radius` of where a hostile NPC was seen in the last
    #: `haunt_ticks` ticks count `haunt_penalty` steps farther: agents leave its haunt for
    #: other sources rather than dodge it at the water's edge.
    haunt_radius, haunt_ticks, haunt_penalty = 10, 30, 12
    #: Exploration stays where NPCs spawn passive (danger below this), and sources elsewhere
    #: count `inner_penalty` steps farther.
    safe_danger, inner_penalty = 0.5, 8
    #: Head start (extra steps) of scrub not seen for `stale_ticks` (likely regrown) ...
    stale_penalty, stale_ticks = 4, 40
    #: ... and of any other scrub (where to wait for regrowth when no forest is known at all).
    scrub_penalty = 30
    #: A frontier with no unseen ground around it counts this many steps farther in a search.
    search_bias = 6
    #: Deepest search, in steps; and how far food and water fields always reach (the via fields
    #: see sources at most this far from the other resource).
    plan_limit, via_rings = 160, 16
    #: Water with fewer than `grove_size` forests (or scrub, which regrows) within `grove_radius`
    #: (Chebyshev) counts a step farther per missing forest as a place to stay: one forest feeds
    #: an agent once per ~40 ticks, so a home needs a grove.
    grove_size, grove_radius = 6, 4
    #: Food, and water as a place to stay, count `crowd_weight` steps farther per entity seen
    #: within `crowd_radius` of them: crowds eat forests bare and stand in the way.
    crowd_weight, crowd_radius = 1, 2
    #: Unseen ground counts as a source of food and water this many steps beyond the edge of the
    #: known map (0: off).
    search_head = 12
    #: Deepest search across unseen ground.
    hope_limit = 64
    #: Flee whatever hits it (Forage never fights back; Combat sizes its attackers up instead).
    flee_attackers = True

    def __init__(self, config: Config, seed: int | None = None) -> None:
        super().__init__(config, seed)
        self.size = config.MAP_SIZE
        self.memory = MapMemory(self.size)
        self.book = AgentBook()
        self.band = outer_band(config, self.safe_danger)
        self.playable = outer_band(config, 2.0).reshape(self.size, self.size)
        self.offsets = STEPS[:, 0].astype(np.int64) * self.size + STEPS[:, 1]
        self.allowed: np.ndarray | None = None  # (n, 5) safe moves of the last batch

    def reset(self, seed: int | None = None) -> None:
        """A new episode: a new map, so the memory starts empty."""
        super().reset(seed)
        self.memory.clear()
        self.book.clear()

    def plan(self, batch: Batch) -> Plan:
        """Update the memory and compute this tick's fields and per-agent distances."""
        mem, book, size, r = self.memory, self.book, self.size, batch.radius
        mem.update(batch)
        p = Plan()
        p.ids = np.asarray(batch.ids, dtype=np.int64)
        me = batch.me.astype(np.int64)
        p.row, p.col = me[:, EntityAttr.ROW], me[:, EntityAttr.COL]
        here = p.here = p.row * size + p.col
        food, water = me[:, EntityAttr.FOOD], me[:, EntityAttr.WATER]
        book.see(p.ids, p.row, p.col, food, water)
        p.on_forest = batch.material[:, r, r] == Material.FOREST
        p.at_water = (batch.material[:, r + STEPS[:, 0], r + STEPS[:, 1]]
                      == Material.WATER).any(axis=1)
        p.health = me[:, EntityAttr.HEALTH]
        p.food = np.where(p.on_forest, book.cap[p.ids, 0], food)
        p.water = np.where(p.at_water, book.cap[p.ids, 1], water)

        p.threat_row, p.threat_col = self.threats(batch)
        zone = p.zone = square_marks(size, p.threat_row, p.threat_col, self.hostile_berth)
        haunt = square_marks(size, p.threat_row, p.threat_col, self.haunt_radius)
        mem.haunted_until[haunt] = mem.tick + self.haunt_ticks
        self.haunted = mem.haunted_until >= mem.tick
        p.in_zone = zone[here]
        p.allowed = self.allowed = self.safe_moves(batch, here, zone, p.in_zone)
        # Plan over remembered walkable tiles, around hostile NPCs (others come and go: a blocked
        # step is dealt with when taken); a tile someone else stands on is no source.
        open_ = mem.walkable() & ~zone
        open_[here] = True
        open_ = p.open = closed_border(open_, size)
        taken = mem.occupied.copy()
        taken[here] = False
        usable = open_ & ~taken
        forest = usable & mem.is_(Material.FOREST)
        forest[here[p.on_forest]] = False  # eaten this tick
        stale = usable & mem.stale(self.stale_ticks)
        scrub = usable & mem.is_(Material.SCRUB) & ~stale
        # Unseen ground may hold either resource: the edge of the known map counts as a source
        # `search_head` steps farther, so a far remembered source loses to a search nearby.
        frontier = usable & self.band & mem.next_to_unknown() if self.search_head else np.zeros_like(usable)
        f_src, f_head = self.sources([(forest, 0), (stale, self.stale_penalty), (scrub, self.scrub_penalty),
                                      (frontier, self.search_head)])
        w_src, w_head = self.sources([(usable & mem.next_to(Material.WATER), 0), (frontier, self.search_head)])
        p.f_src, p.w_src = f_src[f_head == 0], w_src[w_head == 0]  # fresh, in band, not haunted
        # a forest amid a crowd is likely eaten before one gets there: it counts farther
        crowd = box_counts(mem.occupied.reshape(size, size), self.crowd_radius, np.concatenate([f_src, w_src]))
        crowd_f, crowd_w = crowd[: f_src.size], crowd[f_src.size :]
        f_head = f_head + self.crowd_weight * crowd_f
        limit, rings = self.plan_limit, self.via_rings
        p.dist_f, p.dist_w = distance_fields(open_, [(f_src, f_head), (w_src, w_head)], size, here, limit, rings)
        on_w, on_f = p.dist_w[f_src].astype(np.int64), p.dist_f[w_src].astype(np.int64)
        # water with few forests around is a poor place to stay: it counts farther
        grove = box_counts((mem.is_(Material.FOREST) | mem.is_(Material.SCRUB)).reshape(size, size),
                           self.grove_radius, w_src)
        sparse = np.maximum(self.grove_size - grove, 0)
        via_w_heads = w_head + on_f + sparse + self.crowd_weight * crowd_w
        # no search beyond what walking back through here would give (see the bounds below)
        near_f = np.minimum(p.dist_f[here].astype(np.int64), 2 * SEARCH_DISTANCE)
        near_w = np.minimum(p.dist_w[here].astype(np.int64), 2 * SEARCH_DISTANCE)
        via_limit = int(min(limit, (2 * np.maximum(near_f, near_w) + np.minimum(near_f, near_w)).max(initial=0)))
        p.via_f_field, p.via_w_field = distance_fields(open_, [(f_src, f_head + on_w), (w_src, via_w_heads)], size,
                                                       here, via_limit)

        d_food, d_water = p.dist_f[here].astype(np.int64), p.dist_w[here].astype(np.int64)
        # Agents no known path leads from to a source (a respawn on unexplored ground, say) hope:
        # they plan across unseen playable ground too, which is walkable more often than not.
        p.hope_f = p.hope_w = None
        lost_f, lost_w = d_food >= self.scrub_penalty, d_water >= FAR
        if lost_f.any() or lost_w.any():
            hopeful = closed_border((mem.walkable() | ((mem.material == UNKNOWN) & self.playable).ravel()) & ~zone,
                                    size)
            if lost_f.any():
                p.hope_f = distance_field(hopeful, *self.sources([(forest, 0), (stale, self.stale_penalty)]),
                                          size, here[lost_f], self.hope_limit)
                d_food = np.where(lost_f, np.minimum(d_food, p.hope_f[here]), d_food)
            if lost_w.any():
                p.hope_w = distance_field(hopeful, w_src, w_head, size, here[lost_w], self.hope_limit)
                d_water = np.where(lost_w, p.hope_w[here], d_water)
        p.lost_f, p.lost_w = lost_f, lost_w
        # only fresh scrub in reach: no food known (search; wait on scrub if the map is all seen)
        p.known_f, p.known_w = d_food < self.scrub_penalty, d_water < FAR
        p.d_food = np.where(p.on_forest, 0, np.where(p.known_f, d_food, SEARCH_DISTANCE))
        p.d_water = np.where(p.known_w, d_water, SEARCH_DISTANCE)
        # no via path known: bound it by walking back through here; eating here: straight to water
        p.via_f = np.minimum(p.via_f_field[here], 2 * p.d_food + p.d_water)
        p.via_f = np.where(p.on_forest, p.d_water, p.via_f)
        p.via_w = np.minimum(p.via_w_field[here], 2 * p.d_water + p.d_food)
        return p

    def sources(self, tiers: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Flat source indices and head starts for `distance_field`, from (mask, head start) tiers;
        sources outside the outer band count `inner_penalty` steps farther, so agents use them
        only when they are much nearer, and those in a hostile NPC's haunt `haunt_penalty`."""
        src, heads = [], []
        for mask, head_start in tiers:
            idx = np.flatnonzero(mask)
            src.append(idx)
            heads.append(head_start + np.where(self.band[idx], 0, self.inner_penalty)
                         + np.where(self.haunted[idx], self.haunt_penalty, 0))
        return np.concatenate(src), np.concatenate(heads).astype(np.int64)

    def search_field(self, p: Plan, agents: np.ndarray) -> np.ndarray:
        """Steps to unseen ground in the band, for a resource no one has seen: to the nearest edge
        of the known map, where edges with more unseen playable ground around them (a view's
        worth) count as nearer, so searchers sweep open country rather than skirt the map's rim."""
        mem, size, side = self.memory, self.size, 2 * self.config.PLAYER_VISION_RADIUS + 1
        frontier = np.flatnonzero(p.open & self.band & mem.next_to_unknown())
        count = box_counts((mem.material == UNKNOWN) & self.playable, side // 2, frontier)
        heads = np.rint(self.search_bias * (1 - count / (side * side / 2))).astype(np.int64)
        return distance_field(p.open, frontier, np.maximum(heads, 0), size, p.here[agents], self.plan_limit)

    def threats(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        """Positions of every hostile NPC any agent sees (pooled), and of visible attackers."""
        ent = batch.entity
        hostile = ent[:, :, EntityAttr.NPC_TYPE] == NPCType.HOSTILE
        if self.flee_attackers:
            attacker = ent[:, :, EntityAttr.ID] == batch.me[:, None, EntityAttr.ATTACKER_ID]
            hostile = hostile | (attacker & (batch.me[:, None, EntityAttr.ATTACKER_ID] != 0))
        agent, slot = np.nonzero(hostile)
        return (ent[agent, slot, EntityAttr.ROW].astype(np.int64), ent[agent, slot, EntityAttr.COL].astype(np.int64))

    def safe_moves(self, batch: Batch, here: np.ndarray, zone: np.ndarray, in_zone: np.ndarray) -> np.ndarray:
        """(n, 5) moves that are legal, never onto lava, and (unless already there) not into the
        hostile zone; staying is always allowed."""
        r = batch.radius
        neighbour = batch.material[:, r + STEPS[:, 0], r + STEPS[:, 1]]
        allowed = batch.move_mask.copy()
        allowed[:, :4] &= neighbour != Material.LAVA
        allowed[:, :4] &= ~zone[here[:, None] + self.offsets] | in_zone[:, None]
        allowed[:, 4] = True
        return allowed


#: Maps with more tiles than this count tiles near a place by blocks of BLOCK x BLOCK tiles (a
#: summed-area table of the whole map is the costliest step there, and these counts are hints).
BOX_EXACT_TILES, BLOCK = 1 << 18, 4


def box_counts(grid: np.ndarray, radius: int, at: np.ndarray) -> np.ndarray:
    """How many True tiles of the square bool `grid` lie within Chebyshev `radius` of each flat
    position in `at`: exact on small maps (summed-area table); on large ones from the sums of
    the BLOCK-sized blocks around the position's block, scaled to the box's area."""
    size = grid.shape[0]
    if grid.size <= BOX_EXACT_TILES:
        return _box_sum(grid, radius).ravel()[at]
    blocks = -(-size // BLOCK)
    padded = np.zeros((blocks * BLOCK, blocks * BLOCK), dtype=np.uint8)
    padded[:size, :size] = grid
    # block sums as BLOCK strided slices added up (a reduction over the inner axes is ~7x slower)
    rows = padded.reshape(blocks * BLOCK, blocks, BLOCK)
    rows = sum(rows[:, :, k] for k in range(BLOCK)).reshape(blocks, BLOCK, blocks)
    coarse = sum(rows[:, k].astype(np.int32) for k in range(BLOCK))
    reach = max(1, round(radius / BLOCK))
    sums = _box_sum(coarse, reach)
    scale = (2 * radius + 1) ** 2 / ((2 * reach + 1) * BLOCK) ** 2
    return np.rint(sums[at // size // BLOCK, at % size // BLOCK] * scale).astype(np.int64)


def _box_sum(grid: np.ndarray, radius: int) -> np.ndarray:
    """Per cell, the sum of `grid` within Chebyshev `radius` (summed-area table)."""
    size, side = grid.shape[0], 2 * radius + 1
    table = np.zeros((size + side, size + side), dtype=np.int32)
    table[radius + 1 : radius + 1 + size, radius + 1 : radius + 1 + size] = grid
    table = table.cumsum(0).cumsum(1)
    return table[side:, side:] - table[:-side, side:] - table[side:, :-side] + table[:-side, :-side]


__all__ = ["FAR", "SEARCH_DISTANCE", "AgentBook", "Plan", "Planner"]
