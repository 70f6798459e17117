"""What a scripted policy remembers between ticks: a team map, and a few numbers per agent.

A policy controls many agents, and it pools what they all see, like a team sharing one map:
every tick each agent's Tile window is written into `MapMemory` in map coordinates (the Tile
observation carries absolute ROW/COL), with the tick it was seen. Nothing comes from outside the
observations, so the memory only knows what the policy's own agents have looked at, and a
forest it saw harvested stays scrub in memory until some agent looks again (it may have
regrown meanwhile: `MapMemory.stale` says which scrub has been out of sight long enough to be
worth a look).

`distance_field` is the planner's work horse: a multi-source breadth-first search over the
remembered walkable tiles, grown one ring per numpy step over flat tile indices, so its cost
follows the tiles it reaches (not the map's area: large maps stay cheap) and it stops as soon
as every agent that asked is reached.

`AgentBook` keeps per-agent numbers that observations do not carry: where the agent spawned
(the Explore metric counts from there), its resource capacities (the most food and water it has
been seen with) and the errand it has committed to.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Material
from nmmo.core.rules import danger
from scripted.core import Batch

UNKNOWN = -1
#: Distance of tiles a search did not reach.
FAR = np.int16(30000)


class MapMemory:
    """The team's map: last seen material per tile (`UNKNOWN` never seen) and when it was seen."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.material = np.full((size, size), UNKNOWN, dtype=np.int8)
        self.seen_at = np.zeros((size, size), dtype=np.int32)
        self.occupied = np.zeros(size * size, dtype=bool)  # seen occupied this tick (flat)
        self._occupied_at = np.zeros(0, dtype=np.int64)
        self.haunted_until = np.full(size * size, -1, dtype=np.int32)  # near a recent hostile NPC
        self.tick = 0

    def clear(self) -> None:
        self.material.fill(UNKNOWN)
        self.seen_at.fill(0)
        self.occupied.fill(False)
        self._occupied_at = np.zeros(0, dtype=np.int64)
        self.haunted_until.fill(-1)
        self.tick = 0

    def update(self, batch: Batch) -> None:
        """Write every agent's window into the map (a new tick)."""
        self.tick += 1
        self.material[batch.rows, batch.cols] = batch.material
        self.seen_at[batch.rows, batch.cols] = self.tick
        self.occupied[self._occupied_at] = False
        self._occupied_at = (batch.rows[batch.occupied].astype(np.int64) * self.size
                             + batch.cols[batch.occupied])
        self.occupied[self._occupied_at] = True

    def walkable(self) -> np.ndarray:
        """Flat bool: tiles known to be walkable (grass, scrub, forest; never lava or unknown)."""
        flat = self.material.ravel()
        return (flat >= Material.GRASS) & (flat <= Material.FOREST)

    def is_(self, material: Material) -> np.ndarray:
        return self.material.ravel() == material

    def stale(self, ticks: int) -> np.ndarray:
        """Flat bool: scrub not looked at for `ticks` ticks (it has likely grown back)."""
        return self.is_(Material.SCRUB) & (self.seen_at.ravel() <= self.tick - ticks)

    def next_to(self, material: Material) -> np.ndarray:
        """Flat bool: tiles with a known tile of `material` among their 4 orthogonal neighbours."""
        grid = self.material == material
        near = np.zeros_like(grid)
        near[1:] |= grid[:-1]
        near[:-1] |= grid[1:]
        near[:, 1:] |= grid[:, :-1]
        near[:, :-1] |= grid[:, 1:]
        return near.ravel()

    def next_to_unknown(self) -> np.ndarray:
        """Flat bool: tiles with an unseen neighbour (stepping there reveals new ground)."""
        return self.next_to(UNKNOWN)  # type: ignore[arg-type]


def square_marks(size: int, rows: np.ndarray, cols: np.ndarray, radius: int) -> np.ndarray:
    """Flat bool map: tiles within Chebyshev `radius` of any of the given tiles."""
    out = np.zeros(size * size, dtype=bool)
    if rows.size == 0:
        return out
    span = np.arange(-radius, radius + 1)
    rr = np.clip(rows[:, None, None] + span[None, :, None], 0, size - 1)
    cc = np.clip(cols[:, None, None] + span[None, None, :], 0, size - 1)
    out[(rr * size + cc).ravel()] = True
    return out


#: Maps up to this many tiles are searched with dense boolean rings (a few whole-map passes per
#: ring beat gathering a large frontier); larger ones with a sparse frontier of tile indices.
DENSE_TILES = 1 << 18


def distance_field(open_: np.ndarray, sources: np.ndarray, heads: np.ndarray, width: int,
                   stop_at: np.ndarray, limit: int, min_rings: int = 0) -> np.ndarray:
    """Walking steps to the nearest source through `open_` tiles, `FAR` where not reached.

    Each source has a head start (`heads`, >= 0): it counts as that many steps farther than it is
    (a harvested forest is worth a walk only when no fresh one is near; a forest far from water
    is a poor place to eat on the way to a drink), so the result is min over sources of (walking
    steps + head start). `open_` is a flat bool map whose outermost ring must be closed (the map's
    lava border is), so the four neighbour offsets never wrap. The search grows one ring per
    iteration and stops once every tile in `stop_at` is reached and `min_rings` rings are done
    (the neighbours one step closer are reached by then, which is all walking downhill needs),
    when nothing is left to reach, or after `limit` rings. Small maps grow rings as whole-map
    boolean passes; large ones as a frontier of tile indices, which touches only reached tiles,
    so a search over the remembered part of a large map costs what one over a small map does."""
    return distance_fields(open_, [(sources, heads)], width, stop_at, limit, min_rings)[0]


def distance_fields(open_: np.ndarray, jobs: list[tuple[np.ndarray, np.ndarray]], width: int,
                    stop_at: np.ndarray, limit: int, min_rings: int = 0) -> list[np.ndarray]:
    """`distance_field` for several (sources, heads) over the same tiles at once: on small maps
    the searches share each ring's whole-map passes (stacked), which costs little more than one."""
    ordered = []
    for sources, heads in jobs:
        keep = open_[sources] & (heads <= limit)
        order = np.argsort(heads[keep], kind="stable")
        ordered.append((sources[keep][order], heads[keep][order]))
    if open_.size > DENSE_TILES:
        return [_sparse_rings(open_, src, hd, width, stop_at, limit, min_rings) for src, hd in ordered]
    # Dense rings cost what the area costs: search the bounding box of the open tiles (plus the
    # closed ring around it), not the whole map with its lava border.
    grid = open_.reshape(-1, width)
    rows, cols = np.flatnonzero(grid.any(axis=1)), np.flatnonzero(grid.any(axis=0))
    if rows.size == 0:
        return [np.full(open_.size, FAR, dtype=np.int16) for _ in jobs]
    r0, r1 = max(rows[0] - 1, 0), min(rows[-1] + 2, grid.shape[0])
    c0, c1 = max(cols[0] - 1, 0), min(cols[-1] + 2, width)
    box_width = c1 - c0

    def inside(flat: np.ndarray) -> np.ndarray:
        r, c = np.divmod(flat, width)
        keep = (r >= r0) & (r < r1) & (c >= c0) & (c < c1)
        return (r[keep] - r0) * box_width + (c[keep] - c0), keep

    boxed = []
    for src, hd in ordered:
        idx, keep = inside(src)
        boxed.append((idx, hd[keep]))
    stop, _ = inside(stop_at)
    found = _dense_rings(grid[r0:r1, c0:c1].ravel(), boxed, box_width, stop, limit, min_rings)
    out = []
    for field in found:
        full = np.full(grid.shape, FAR, dtype=np.int16)
        full[r0:r1, c0:c1] = field.reshape(r1 - r0, box_width)
        out.append(full.ravel())
    return out


def _sparse_rings(open_: np.ndarray, sources: np.ndarray, heads: np.ndarray, width: int, stop_at: np.ndarray,
                  limit: int, min_rings: int) -> np.ndarray:
    free = open_.copy()
    dist = np.full(open_.size, FAR, dtype=np.int16)
    frontier = np.zeros(0, dtype=np.int64)
    waiting = stop_at
    slot = np.empty(open_.size, dtype=np.int64)  # scratch for de-duplicating without a sort
    offsets = np.array([-width, width, -1, 1])
    step = taken = 0
    while (waiting.size or step < min_rings) and step <= limit and (frontier.size or taken < sources.size):
        if step:
            grown = (frontier[None, :] + offsets[:, None]).ravel()
            frontier = grown[free[grown]]
        if taken < sources.size and heads[taken] <= step:
            upto = int(np.searchsorted(heads, step, side="right"))
            fresh = sources[taken:upto]
            frontier = np.concatenate([frontier, fresh[free[fresh]]])
            taken = upto
        slot[frontier] = np.arange(frontier.size)
        frontier = frontier[slot[frontier] == np.arange(frontier.size)]
        free[frontier] = False
        dist[frontier] = step
        waiting = waiting[dist[waiting] == FAR]
        step += 1
    return dist


def _dense_rings(open_: np.ndarray, jobs: list[tuple[np.ndarray, np.ndarray]], width: int, stop_at: np.ndarray,
                 limit: int, min_rings: int) -> np.ndarray:
    # One row per search. A tile's distance is the number of rings it stayed unreached: one
    # whole-map add per ring is several times cheaper than writing a ring through a boolean mask.
    k = len(jobs)
    free = np.repeat(open_[None, :], k, axis=0)
    count = np.zeros(free.shape, dtype=np.int16)
    frontier = np.zeros(free.shape, dtype=bool)
    grown = np.empty_like(frontier)
    waiting = [stop_at[open_[stop_at]] for _ in jobs]
    taken = [0] * k
    step = 0
    alive = True  # the last ring reached something
    while ((any(w.size for w in waiting) or step < min_rings) and step <= limit
           and (alive or any(t < src.size for t, (src, _) in zip(taken, jobs, strict=True)))):
        if step:
            grown[:] = False
            np.logical_or(grown[:, width:], frontier[:, :-width], out=grown[:, width:])
            np.logical_or(grown[:, :-width], frontier[:, width:], out=grown[:, :-width])
            np.logical_or(grown[:, 1:], frontier[:, :-1], out=grown[:, 1:])
            np.logical_or(grown[:, :-1], frontier[:, 1:], out=grown[:, :-1])
            np.logical_and(grown, free, out=frontier)
        for j, (sources, heads) in enumerate(jobs):
            if taken[j] < sources.size and heads[taken[j]] <= step:
                upto = int(np.searchsorted(heads, step, side="right"))
                fresh = sources[taken[j] : upto]
                frontier[j, fresh[free[j, fresh]]] = True
                taken[j] = upto
        alive = bool(frontier.any())
        if alive:
            np.logical_xor(free, frontier, out=free)  # the frontier is all free: this clears it
            waiting = [w[free[j, w]] for j, w in enumerate(waiting)]
        np.add(count, free, out=count)
        step += 1
    return np.where(open_[None, :] & ~free, count, FAR).astype(np.int16)


def closed_border(open_: np.ndarray, size: int) -> np.ndarray:
    """Close the outermost ring of a flat map in place (see `distance_field`); returns it."""
    grid = open_.reshape(size, size)
    grid[[0, -1], :] = False
    grid[:, [0, -1]] = False
    return open_


def outer_band(config: Config, max_danger: float) -> np.ndarray:
    """Flat bool: playable tiles whose danger (`nmmo.core.rules.danger`: 2 x distance to the nearest
    playable edge / side, 0 at the edge, about 1 at the centre) is below `max_danger`.
    NPCs there spawn passive (below 0.5) or neutral (below 0.8); hostile ones spawn inside."""
    index = np.arange(config.MAP_SIZE)
    level = danger(config, index[:, None], index[None, :])  # negative outside the playable square
    return ((level >= 0) & (level < max_danger)).ravel()


class AgentBook:
    """Per-agent numbers kept between ticks, in arrays indexed by agent id (ids are never reused
    within an episode, so a respawned agent starts a fresh row)."""

    NONE, FOOD, WATER = 0, 1, 2

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.spawn = np.full((0, 2), -1, dtype=np.int64)
        self.cap = np.zeros((0, 2), dtype=np.int64)  # most food, water seen: the capacities
        self.goal = np.zeros(0, dtype=np.int8)
        self.searching = np.zeros(0, dtype=bool)  # the errand is a search (its source unknown)

    def see(self, ids: np.ndarray, rows: np.ndarray, cols: np.ndarray, food: np.ndarray,
            water: np.ndarray) -> None:
        """Register new agents (their first position is their spawn) and update capacities."""
        top = int(ids.max()) + 1 if ids.size else 0
        if top > len(self.goal):
            grow = max(top, 2 * len(self.goal)) - len(self.goal)
            self.spawn = np.concatenate([self.spawn, np.full((grow, 2), -1, dtype=np.int64)])
            self.cap = np.concatenate([self.cap, np.zeros((grow, 2), dtype=np.int64)])
            self.goal = np.concatenate([self.goal, np.zeros(grow, dtype=np.int8)])
            self.searching = np.concatenate([self.searching, np.zeros(grow, dtype=bool)])
        new = ids[self.spawn[ids, 0] < 0]
        if new.size:
            at = np.isin(ids, new)
            self.spawn[ids[at], 0], self.spawn[ids[at], 1] = rows[at], cols[at]
            self.goal[ids[at]] = self.NONE
        self.cap[ids, 0] = np.maximum(self.cap[ids, 0], food)
        self.cap[ids, 1] = np.maximum(self.cap[ids, 1], water)
