"""Rules used by more than one system or client, each defined once here.

Geometry (move deltas, Chebyshev distance, attack reach, the spawn ring, sight windows in distance
order, which tiles touch water), which tiles can be walked or entered, who may attack whom (friendly
fire), how dangerous a tile is (NPC kinds and levels, the danger overlay), when an entity is frozen,
and when an emptied episode is over. The systems, the observation builder, the overlays and the
scripted bots import them from here; nothing recomputes them. How far apart the ring keeps teams is
arithmetic on config keys alone, which the config checks need: `nmmo.config.spawning`, below this.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from nmmo.core.enums import Direction, Material

if TYPE_CHECKING:
    from nmmo.config import Config

#: (drow, dcol) per `Direction`: N (row - 1), S (row + 1), E (col + 1), W (col - 1), stay.
DELTAS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1], [0, 0]], dtype=np.int32)
DELTAS.setflags(write=False)

#: The four moves that change tile (`DELTAS` without stay), in `Direction` order: neighbour lookups.
STEPS = DELTAS[: Direction.STAY]

#: Materials an entity can stand on (when the tile is empty): grass, scrub and forest.
WALKABLE = np.zeros(len(Material), dtype=bool)
WALKABLE[[Material.GRASS, Material.SCRUB, Material.FOREST]] = True
WALKABLE.setflags(write=False)


def enterable(config: Config) -> np.ndarray:
    """Materials a player may step onto: walkable ones, and lava (legal but deadly) unless IMMORTAL,
    where lava is impassable instead."""
    out = WALKABLE.copy()
    out[Material.LAVA] = not config.IMMORTAL
    return out


def chebyshev(row_a: np.ndarray, col_a: np.ndarray, row_b: np.ndarray, col_b: np.ndarray) -> np.ndarray:
    """Chebyshev (king-move) distance: how far attacks reach and how far entities see."""
    return np.maximum(np.abs(row_a - row_b), np.abs(col_a - col_b))


def reaches(config: Config) -> np.ndarray:
    """Reach (Chebyshev tiles) per attack style, indexed by `Style`: what combat resolves, what
    the masks offer and what NPCs and bots aim by."""
    return np.array([config.COMBAT_MELEE_REACH, config.COMBAT_RANGE_REACH, config.COMBAT_MAGE_REACH])


def may_attack(config: Config, attacker_team: np.ndarray, target_team: np.ndarray) -> np.ndarray | bool:
    """Whether attacks between these teams are allowed (a mask to `&` with others): always with
    friendly fire on (then just True, no array to build on the hot path); otherwise not between
    members of one team (NPCs, team -1, belong to none)."""
    if config.COMBAT_FRIENDLY_FIRE:
        return True
    attacker_team, target_team = np.asarray(attacker_team), np.asarray(target_team)
    return ~((attacker_team == target_team) & (attacker_team >= 0))


def danger(config: Config, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """2 * (distance to the nearest playable edge) / MAP_CENTER: 0 on the edge, about 1 at the
    centre; it sets NPC kinds (passive, neutral, hostile) and levels."""
    return edge_danger(config.MAP_BORDER, config.MAP_CENTER, rows, cols)


def edge_danger(border: int, center: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`danger` from the map's geometry alone (a replay knows its border and centre, not its config)."""
    low, high = border, border + center - 1
    edge = np.minimum(np.minimum(rows - low, high - rows), np.minimum(cols - low, high - cols))
    return 2.0 * edge / center


def danger_map(border: int, center: int, size: int) -> np.ndarray:
    """`danger` of every tile of an S x S map (0 outside the playable square), float32."""
    index = np.arange(size)
    return np.maximum(edge_danger(border, center, index[:, None], index[None, :]), 0.0).astype(np.float32)


def is_frozen(freeze_end: np.ndarray, tick: int) -> np.ndarray:
    """Frozen entities cannot move this tick (a mage hit at tick t freezes through t + 2)."""
    return freeze_end >= tick


def freeze_left(freeze_end: np.ndarray, tick: int) -> np.ndarray:
    """Ticks an entity stays frozen counting the coming one (the FREEZE observation column)."""
    return np.maximum(freeze_end - tick + 1, 0)


def nobody_returns(config: Config) -> bool:
    """Whether an episode whose agents are all dead is over: no respawns would bring any back (a
    vector env then resets it at once rather than tick an empty world to the horizon)."""
    return not (config.PLAYER_RESPAWN and config.PLAYER_SPAWN_ATTEMPTS)


def team_spirit(rewards: np.ndarray, teams: np.ndarray, alpha: float) -> np.ndarray:
    """Alpha * (mean reward of the agent's team) + (1 - alpha) * own reward."""
    rewards = np.asarray(rewards, dtype=np.float64)
    _, inverse = np.unique(teams, return_inverse=True)
    sums = np.bincount(inverse, weights=rewards)
    counts = np.bincount(inverse)
    return alpha * (sums / counts)[inverse] + (1.0 - alpha) * rewards


# ---------------------------------------------------------------- geometry
def ring_tiles(low: int, high: int) -> np.ndarray:
    """Tiles of the square ring with corners (low, low) and (high, high), clockwise from top-left."""
    span = np.arange(low, high)
    top = np.stack([np.full_like(span, low), span], axis=1)
    right = np.stack([span, np.full_like(span, high)], axis=1)
    bottom = np.stack([np.full_like(span, high), span[::-1] + 1], axis=1)
    left = np.stack([span[::-1] + 1, np.full_like(span, low)], axis=1)
    return np.concatenate([top, right, bottom, left]).astype(np.int64)


@functools.lru_cache(maxsize=8)
def window_offsets(radius: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dr, dc, chebyshev distance) of a (2r+1)^2 window, sorted by distance then row-major: the
    order in which an observer sees entities."""
    dr, dc = np.meshgrid(np.arange(-radius, radius + 1), np.arange(-radius, radius + 1), indexing="ij")
    dr, dc = dr.ravel(), dc.ravel()
    dist = chebyshev(dr, dc, 0, 0)
    order = np.argsort(dist, kind="stable")
    out = dr[order].astype(np.int32), dc[order].astype(np.int32), dist[order].astype(np.int32)
    for array in out:
        array.setflags(write=False)  # shared by every caller
    return out


def water_adjacent(material: np.ndarray) -> np.ndarray:
    """Boolean grid: tiles with water among their 4 orthogonal neighbours (where agents drink)."""
    water = material == Material.WATER
    near = np.zeros_like(water)
    for dr, dc in STEPS.tolist():  # the neighbour at (dr, dc) is water: shift the water grid back
        near[max(-dr, 0): near.shape[0] - max(dr, 0), max(-dc, 0): near.shape[1] - max(dc, 0)] |= (
            water[max(dr, 0): water.shape[0] - max(-dr, 0), max(dc, 0): water.shape[1] - max(-dc, 0)])
    return near


@functools.lru_cache(maxsize=16)
def flat_deltas(width: int) -> np.ndarray:
    """`DELTAS` as flat-index offsets on a row-major grid of `width` columns, per `Direction` (stay:
    0; the first four are `STEPS`): one `take` per grid finds where moves lead."""
    offsets = DELTAS[:, 0].astype(np.int64) * width + DELTAS[:, 1]
    offsets.setflags(write=False)  # shared by every caller
    return offsets


def flat_neighbours(width: int) -> tuple[tuple[int, int], ...]:
    """The four moves (`STEPS`) on a row-major grid of `width` columns: (index offset, the column a
    move may not start from, -1 for none), for searches over flat indices."""
    return tuple((int(dr) * width + int(dc), width - 1 if dc > 0 else 0 if dc < 0 else -1) for dr, dc in STEPS)
