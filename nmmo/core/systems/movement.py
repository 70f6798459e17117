"""Movement: all moves of a tick resolved at once, after attacks.

The rule (vectorized; `reference_resolve` is the slow per-agent version the tests compare with):
every entity that moves gets a random priority this tick from the env RNG. Moves into lava always
succeed (the mover leaves its tile and dies at the end of the phase; with IMMORTAL, lava is
impassable instead). Other moves go in rounds: each pending mover whose target tile is empty claims
it; among claimants of one tile the highest priority wins and the others fail; a mover whose target
is occupied waits for a later round, since the occupant may leave. Rounds end when nothing moves.
So a line of agents walking the same way all move, swaps and rotations never happen, two entities
never share a tile, and no id or slot has an edge.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core import draws
from nmmo.core.enums import Direction, Material, ints
from nmmo.core.rules import DELTAS, WALKABLE, flat_deltas, is_frozen
from nmmo.core.systems import events


def resolve(state, config: Config, directions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move entities; `directions` is per entity row (STAY for none). Returns rows that entered lava.
    Tiles are addressed by flat index (row * cols + col): one `take` or `put` per grid and round."""
    ent, tiles = state.entities, state.tiles
    moving = directions != ints.Direction.STAY
    moving &= ent.alive
    moving &= ent.health > 0
    moving &= ~is_frozen(ent.freeze_end, state.tick)
    movers = np.flatnonzero(moving)
    priority = draws.uniform_all(rng, ent.capacity)
    if movers.size == 0:
        return movers
    width = tiles.cols
    occupancy, d = tiles.occupancy.ravel(), directions[movers]
    src = ent.row[movers].astype(np.int64) * width + ent.col[movers]
    dest = src + flat_deltas(width).take(d)
    material = tiles.material.ravel().take(dest)
    walk = WALKABLE.take(material)  # lava is not walkable

    into_lava = (material == ints.Material.LAVA) & (not config.IMMORTAL)
    lava = movers[into_lava]
    if lava.size:
        occupancy[src[into_lava]] = -1
        ent.row[lava] += DELTAS[d[into_lava], 0]
        ent.col[lava] += DELTAS[d[into_lava], 1]
        ent.health[lava] = 0

    pending, dest, src = movers[walk], dest[walk], src[walk]
    while pending.size:
        free = occupancy.take(dest) < 0
        if not free.any():
            break
        claimants, claimed, left = pending[free], dest[free], src[free]
        winners = _winners(tiles, claimants, claimed, priority)
        w, to = claimants[winners], claimed[winners]
        occupancy[left[winners]] = -1
        occupancy[to] = w
        ent.row[w], ent.col[w] = np.divmod(to, width)
        events.moved(state, w)
        waiting = ~free  # everyone who claimed a free tile either moved or lost it for good
        pending, dest, src = pending[waiting], dest[waiting], src[waiting]
    return lava


def _winners(tiles, claimants: np.ndarray, flat: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Index (into `claimants`) of the highest-priority claimant of each claimed tile (`flat`).
    Most tiles have one claimant: a scatter into a scratch grid finds the contested ones, and
    only their claimants are sorted (stable, so ties go to the earlier claimant, as one sort of
    all of them would)."""
    if tiles.scratch is None or tiles.scratch.size != tiles.occupancy.size:
        tiles.scratch = np.empty(tiles.occupancy.size, dtype=np.int64)
    scratch, index = tiles.scratch, np.arange(flat.size)
    scratch[flat] = index  # one claimant per tile is recorded (which one does not matter)
    unrecorded = scratch.take(flat) != index
    if not unrecorded.any():  # no tile has two claimants
        return index
    scratch[flat[unrecorded]] = -1  # tiles where another claimant was not recorded
    contested = scratch.take(flat) == -1
    rival = np.flatnonzero(contested)
    order = rival[np.lexsort((-priority[claimants[rival]], flat[rival]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = flat[order][1:] != flat[order][:-1]
    return np.concatenate([index[~contested], order[first]])


def reference_resolve(state, config: Config, directions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same rule, one entity at a time: slow and obviously correct (for tests)."""
    ent, tiles = state.entities, state.tiles
    priority = rng.random(ent.capacity)
    movers = [
        i for i in range(ent.capacity)
        if ent.alive[i] and ent.health[i] > 0 and directions[i] != Direction.STAY
        and not is_frozen(ent.freeze_end[i], state.tick)
    ]
    lava, pending = [], []
    for i in movers:
        r, c = ent.row[i] + DELTAS[directions[i], 0], ent.col[i] + DELTAS[directions[i], 1]
        material = tiles.material[r, c]
        if material == Material.LAVA and not config.IMMORTAL:
            tiles.occupancy[ent.row[i], ent.col[i]] = -1
            ent.row[i], ent.col[i], ent.health[i] = r, c, 0
            lava.append(i)
        elif WALKABLE[material] and material != Material.LAVA:
            pending.append((i, r, c))
    while pending:
        claims: dict[tuple[int, int], list[int]] = {}
        for i, r, c in pending:
            if tiles.occupancy[r, c] < 0:
                claims.setdefault((r, c), []).append(i)
        if not claims:
            break
        for (r, c), claimants in claims.items():
            winner = max(claimants, key=lambda i: priority[i])
            tiles.occupancy[ent.row[winner], ent.col[winner]] = -1
            ent.row[winner], ent.col[winner] = r, c
            tiles.occupancy[r, c] = winner
        claimed = {i for group in claims.values() for i in group}
        pending = [(i, r, c) for i, r, c in pending if i not in claimed]
    return np.array(sorted(lava), dtype=np.int64)
