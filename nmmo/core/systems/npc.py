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

import numpy as np

from nmmo.config import Config
from nmmo.core import draws
from nmmo.core.enums import ints
from nmmo.core.rules import STEPS, WALKABLE, chebyshev, reaches, window_offsets
from nmmo.core.state import State


def _chebyshev(ent, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return chebyshev(ent.row[a], ent.col[a], ent.row[b], ent.col[b])


NO_ACTIONS = (np.zeros(0, dtype=np.int64),) * 4


def decide(state: State, config: Config, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """The NPCs' actions this tick: (rows, directions, styles, targets), one entry per live NPC row
    (style and target -1: no attack). Updates the NPCs' own AI columns (targets, fleeing)."""
    ent, tiles = state.entities, state.tiles
    if not config.has("NPC"):
        return NO_ACTIONS
    rows = ent.n_players + np.flatnonzero(ent.alive[ent.n_players :])
    if rows.size == 0:
        return NO_ACTIONS
    vision = config.NPC_VISION_RADIUS
    kind = ent.npc_type[rows]

    # Forget targets that died, were replaced or left vision.
    t = ent.target[rows]
    has = t >= 0
    safe = np.where(has, t, 0)
    keep = has & ent.alive[safe] & (ent.id[safe] == ent.target_id[rows]) & (_chebyshev(ent, rows, safe) <= vision)
    ent.target[rows[~keep]] = -1

    # React to last tick's damage.
    hitter = ent.attacker_row[rows]
    safe = np.where(hitter >= 0, hitter, 0)
    was_hit = (
        (ent.damage_taken[rows] > 0) & (hitter >= 0) & ent.alive[safe] & (ent.id[safe] == ent.attacker_id[rows])
    )
    flee = rows[was_hit & (kind == ints.NPCType.PASSIVE)]
    ent.flee_ticks[flee] = config.NPC_FLEE_TICKS
    ent.flee_row[flee] = ent.row[ent.attacker_row[flee]]
    ent.flee_col[flee] = ent.col[ent.attacker_row[flee]]
    near = _chebyshev(ent, rows, safe) <= vision
    retaliate = was_hit & near & ((kind == ints.NPCType.NEUTRAL) | ((kind == ints.NPCType.HOSTILE) & ~keep))
    ent.target[rows[retaliate]] = hitter[retaliate]

    # Hostiles without a target take the nearest entity in vision.
    seeking = rows[(kind == ints.NPCType.HOSTILE) & (ent.target[rows] < 0)]
    if seeking.size:
        dr, dc, _ = window_offsets(vision)
        occ = tiles.occupancy[ent.row[seeking][:, None] + dr[1:], ent.col[seeking][:, None] + dc[1:]]
        seen = occ >= 0
        first = np.argmax(seen, axis=1)
        found = seen[np.arange(seeking.size), first]
        ent.target[seeking[found]] = occ[np.arange(seeking.size), first][found]
    t = ent.target[rows]
    hunting = t >= 0
    ent.target_id[rows[hunting]] = ent.id[t[hunting]]

    # Act: attack in reach, else chase; flee; else wander.
    safe = np.where(hunting, t, 0)
    dist = _chebyshev(ent, rows, safe)
    style = ent.style[rows]
    in_reach = hunting & (dist <= reaches(config)[style])
    styles = np.where(in_reach, style, -1).astype(np.int64)
    targets = np.where(in_reach, t, -1).astype(np.int64)

    jitter = draws.uniform(rng, rows, 4) * 0.5
    dest_r = ent.row[rows][:, None] + STEPS[:, 0]
    dest_c = ent.col[rows][:, None] + STEPS[:, 1]
    dest = dest_r.astype(np.int64) * tiles.cols + dest_c
    enterable = WALKABLE[tiles.material.ravel().take(dest)] & (tiles.occupancy.ravel().take(dest) < 0)

    fleeing = ~hunting & (ent.flee_ticks[rows] > 0)
    goal_r = np.where(hunting, ent.row[safe], ent.flee_row[rows])[:, None]
    goal_c = np.where(hunting, ent.col[safe], ent.flee_col[rows])[:, None]
    l1 = np.abs(dest_r - goal_r) + np.abs(dest_c - goal_c)
    chasing = hunting & ~in_reach
    if chasing.any():
        path = _path_steps(state, rows[chasing], t[chasing], vision)
        l1[chasing] = np.where(np.isfinite(path), path, l1[chasing] + 4 * vision)  # no path: greedy, ranked last
    score = np.where(fleeing[:, None], -l1, l1) + jitter  # chasers minimise, fleers maximise distance
    score = np.where((hunting & ~in_reach | fleeing)[:, None], score, jitter)  # wanderers: random
    score = np.where(enterable, score, np.inf)
    best = np.argmin(score, axis=1)
    can_move = np.isfinite(score[np.arange(rows.size), best])
    directions = np.where(can_move & ~in_reach, best, ints.Direction.STAY).astype(np.int64)
    ent.flee_ticks[rows[fleeing]] -= 1
    return rows, directions, styles, targets


def _path_steps(state: State, rows: np.ndarray, targets: np.ndarray, radius: int) -> np.ndarray:
    """Walking distance to each target from each of the 4 neighbours of each NPC, by BFS inside the
    NPC's (2r+1)^2 window (inf where unreachable within it). Occupied tiles block, except the
    NPC's own and the target's. One relaxation sweep per step, for all NPCs at once."""
    ent, tiles = state.entities, state.tiles
    side = 2 * radius + 1
    dr, dc = np.divmod(np.arange(side * side), side)
    wr = ent.row[rows][:, None] + dr - radius
    wc = ent.col[rows][:, None] + dc - radius
    occupant = tiles.occupancy[wr, wc]
    passable = WALKABLE[tiles.material[wr, wc]] & (
        (occupant < 0) | (occupant == rows[:, None]) | (occupant == targets[:, None]))
    passable = passable.reshape(-1, side, side)
    dist = np.full((rows.size, side + 2, side + 2), np.inf)  # padded by one ring of inf
    at_target = ((wr == ent.row[targets][:, None]) & (wc == ent.col[targets][:, None])).reshape(-1, side, side)
    inner = dist[:, 1:-1, 1:-1]
    inner[at_target] = 0.0
    for _ in range(side * side):
        best = np.minimum(np.minimum(dist[:, :-2, 1:-1], dist[:, 2:, 1:-1]),
                          np.minimum(dist[:, 1:-1, :-2], dist[:, 1:-1, 2:])) + 1.0
        relaxed = np.where(passable & (best < inner), best, inner)
        if np.array_equal(relaxed, inner):
            break
        inner[...] = relaxed
    centre = radius + 1  # the NPC's cell in padded coordinates
    neighbours = STEPS
    return dist[:, centre + neighbours[:, 0], centre + neighbours[:, 1]]
