"""NPC behaviour, decided for all NPCs at once from last tick's state.

Passive NPCs wander (a random empty walkable neighbour) and, when damaged, flee from the attacker
for NPC_FLEE_TICKS ticks. Neutral NPCs wander but hunt whoever damaged them while that entity stays
within NPC_VISION_RADIUS. Hostile NPCs keep a valid target, else take the nearest entity in vision
(any kind), else wander. A hunter attacks with its fixed style when the target is within reach,
otherwise steps toward it along a walkable path: a breadth-first search over the NPC's vision
window (all chasing NPCs at once), falling back to the neighbour that most reduces the distance
when no path exists inside the window. NPCs never enter lava or water.
"""

from __future__ import annotations

import functools

import numpy as np

from nmmo.config import Config
from nmmo.core import draws
from nmmo.core.enums import ints
from nmmo.core.rules import STEPS, WALKABLE, chebyshev, flat_deltas, reaches, window_offsets
from nmmo.core.state import State

NO_ACTIONS = (np.zeros(0, dtype=np.int64),) * 4


def decide(state: State, config: Config, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The NPCs' actions this tick: (rows, directions, styles, targets), one entry per live NPC row
    (style and target -1: no attack). Updates the NPCs' own AI columns (targets, fleeing).

    Speed: tiles are read by flat index (one `take` per grid), the four neighbours are laid out
    (4, NPCs) so broadcasts run along the long axis, and the reaction to damage only visits the
    NPCs that took some."""
    ent, tiles = state.entities, state.tiles
    if not config.has("NPC"):
        return NO_ACTIONS
    rows = np.flatnonzero(ent.alive[ent.n_players :])
    if rows.size == 0:
        return NO_ACTIONS
    rows += ent.n_players
    vision, width = config.NPC_VISION_RADIUS, tiles.cols
    kind = ent.npc_type[rows]
    r0, c0 = ent.row[rows], ent.col[rows]

    # Forget targets that died, were replaced or left vision (-1 reads the last row: masked by `has`).
    t = ent.target[rows]
    keep = (t >= 0) & ent.alive[t] & (ent.id[t] == ent.target_id[rows]) & (
        chebyshev(r0, c0, ent.row[t], ent.col[t]) <= vision)
    ent.target[rows[~keep]] = -1

    # React to last tick's damage (only NPCs that took some can have been hit).
    struck = np.flatnonzero(ent.damage_taken[rows] > 0)
    if struck.size:
        _react(ent, config, rows[struck], kind[struck], keep[struck], r0[struck], c0[struck])

    # Hostiles without a target take the nearest entity in vision.
    seeking = np.flatnonzero((kind == ints.NPCType.HOSTILE) & (ent.target[rows] < 0))
    if seeking.size:
        pos = r0[seeking].astype(np.int64) * width + c0[seeking]
        occ = tiles.occupancy.ravel().take(pos[:, None] + _sight_offsets(vision, width))
        who = occ[np.arange(seeking.size), np.argmax(occ >= 0, axis=1)]  # first seen, else an empty tile (< 0)
        found = who >= 0
        ent.target[rows[seeking[found]]] = who[found]
    t = ent.target[rows]
    hunting = t >= 0
    ent.target_id[rows[hunting]] = ent.id[t[hunting]]

    # Act: attack in reach, else chase; flee; else wander.
    tr, tc = ent.row[t], ent.col[t]  # the hunted's position (hunters only)
    style = ent.style[rows]
    in_reach = hunting & (chebyshev(r0, c0, tr, tc) <= reaches(config)[style])
    styles = np.where(in_reach, style, -1).astype(np.int64)
    targets = np.where(in_reach, t, -1).astype(np.int64)

    score = np.multiply(draws.uniform(rng, rows, 4).T, 0.5, order="C")  # (4, NPCs): the random jitter
    pos = r0.astype(np.int64) * width + c0
    dest = flat_deltas(width)[: len(STEPS), None] + pos
    enterable = WALKABLE.take(tiles.material.ravel().take(dest))
    enterable &= tiles.occupancy.ravel().take(dest) < 0

    fleeing = ~hunting & (ent.flee_ticks[rows] > 0)
    chasing = hunting & ~in_reach
    goal = chasing | fleeing
    if goal.any():  # chasers minimise the distance to the goal, fleers maximise it; wanderers: jitter alone
        goal_r = np.where(hunting, tr, ent.flee_row[rows])
        goal_c = np.where(hunting, tc, ent.flee_col[rows])
        l1 = np.abs(STEPS[:, :1] + (r0 - goal_r)) + np.abs(STEPS[:, 1:] + (c0 - goal_c))
        if chasing.any():
            path = _path_steps(state, rows[chasing], t[chasing], vision).T
            l1[:, chasing] = np.where(np.isfinite(path), path, l1[:, chasing] + 4 * vision)  # no path: greedy, last
        np.negative(l1, out=l1, where=fleeing)
        score = np.where(goal, l1 + score, score)
    score[~enterable] = np.inf
    best = score.T.argmin(axis=1)
    can_move = enterable.any(axis=0)  # the best score is finite
    directions = np.where(can_move & ~in_reach, best, ints.Direction.STAY).astype(np.int64)
    ent.flee_ticks[rows[fleeing]] -= 1
    return rows, directions, styles, targets


def _react(ent, config: Config, rows, kind, keep, r0, c0) -> None:
    """Damaged NPCs: passive ones flee from the attacker, neutral ones (and hostile ones without a
    kept target) hunt it while it is within vision."""
    hitter = ent.attacker_row[rows]
    safe = np.where(hitter >= 0, hitter, 0)
    was_hit = (hitter >= 0) & ent.alive[safe] & (ent.id[safe] == ent.attacker_id[rows])
    flee = rows[was_hit & (kind == ints.NPCType.PASSIVE)]
    ent.flee_ticks[flee] = config.NPC_FLEE_TICKS
    ent.flee_row[flee] = ent.row[ent.attacker_row[flee]]
    ent.flee_col[flee] = ent.col[ent.attacker_row[flee]]
    near = chebyshev(r0, c0, ent.row[safe], ent.col[safe]) <= config.NPC_VISION_RADIUS
    retaliate = was_hit & near & ((kind == ints.NPCType.NEUTRAL) | ((kind == ints.NPCType.HOSTILE) & ~keep))
    ent.target[rows[retaliate]] = hitter[retaliate]


def _path_steps(state: State, rows: np.ndarray, targets: np.ndarray, radius: int) -> np.ndarray:
    """Walking distance to each target from each of the 4 neighbours of each NPC, by BFS inside the
    NPC's (2r+1)^2 window (inf where unreachable within it). Occupied tiles block, except the
    NPC's own and the target's. One relaxation sweep per step, for all NPCs at once; a cell's
    distance is final once finite (BFS layers), so the sweeps stop as soon as every neighbour that
    could still be reached has one (or nothing changes)."""
    ent, tiles = state.entities, state.tiles
    side, width = 2 * radius + 1, tiles.cols
    corner = (ent.row[rows] - radius).astype(np.int64) * width + (ent.col[rows] - radius)
    cells = corner[:, None] + _window_offsets(side, width)
    occupant = tiles.occupancy.ravel().take(cells)
    passable = WALKABLE.take(tiles.material.ravel().take(cells))
    passable &= (occupant < 0) | (occupant == rows[:, None]) | (occupant == targets[:, None])
    passable = passable.reshape(-1, side, side)
    at_target = cells == ent.row[targets].astype(np.int64)[:, None] * width + ent.col[targets][:, None]
    dist = np.full((rows.size, side + 2, side + 2), np.inf)  # padded by one ring of inf
    inner = dist[:, 1:-1, 1:-1]
    inner[at_target.reshape(-1, side, side)] = 0.0
    nr, nc = radius + 1 + STEPS[:, 0], radius + 1 + STEPS[:, 1]  # the neighbours in padded coordinates
    reachable = passable[:, nr - 1, nc - 1]  # the neighbours a sweep may still give a distance
    for _ in range(side * side):
        best = np.minimum(np.minimum(dist[:, :-2, 1:-1], dist[:, 2:, 1:-1]),
                          np.minimum(dist[:, 1:-1, :-2], dist[:, 1:-1, 2:]))
        best += 1.0
        better = best < inner
        better &= passable
        if not better.any():
            break
        np.copyto(inner, best, where=better)
        if not (reachable & np.isinf(dist[:, nr, nc])).any():
            break
    return dist[:, nr, nc]


@functools.lru_cache(maxsize=16)
def _window_offsets(side: int, width: int) -> np.ndarray:
    """Flat offsets of a side x side window from its top-left tile, row-major."""
    dr, dc = np.divmod(np.arange(side * side), side)
    return _frozen(dr * width + dc)


@functools.lru_cache(maxsize=16)
def _sight_offsets(radius: int, width: int) -> np.ndarray:
    """Flat offsets of the vision window in sight order (`window_offsets`), the own tile left out."""
    dr, dc, _ = window_offsets(radius)
    return _frozen(dr[1:].astype(np.int64) * width + dc[1:])


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # cached and shared
    return array
