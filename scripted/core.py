"""Shared machinery of the scripted bots, vectorized over all the agents a policy controls.

Bots see only what any submission sees: the observation arrays (`nmmo.core.layout.ObsBatch`), which
`batch_of` reshapes into windows (agents x window x window); they answer in the array form
(`nmmo.policy.ArrayPolicy`: one (direction, style, target) row per agent). `walk_distances` is a
breadth-first search from every agent over its visible window at once; `step_towards` turns chosen
goal tiles into first moves along shortest paths; `Scripted` is the bots' base class.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Direction, Material, TileAttr
from nmmo.core.layout import ObsBatch, from_dicts
from nmmo.core.rules import STEPS
from nmmo.policy import ArrayPolicy

UNREACHED = np.int16(-1)


@dataclass
class Batch:
    """The observations of n agents as arrays; windows are (n, side, side), agent at the centre."""

    ids: list[int]
    material: np.ndarray
    occupied: np.ndarray
    rows: np.ndarray  # absolute row of each window tile
    cols: np.ndarray
    entity: np.ndarray  # (n, N_OBS, len(EntityAttr))
    move_mask: np.ndarray  # (n, 5) bool
    style_mask: np.ndarray  # (n, 3) bool
    target_mask: np.ndarray  # (n, N_OBS + 1) bool

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def radius(self) -> int:
        return self.material.shape[1] // 2

    @property
    def me(self) -> np.ndarray:
        """Each agent's own Entity row (row 0)."""
        return self.entity[:, 0]


def batch_of(obs: ObsBatch) -> Batch:
    """The bots' view of an array batch: the Tile columns as windows, the masks as bools."""
    tiles = obs["tile"]
    side = int(round(np.sqrt(tiles.shape[1])))
    tiles = tiles.reshape(obs.n, side, side, -1)
    return Batch(
        ids=obs.ids.tolist(),
        material=tiles[..., TileAttr.MATERIAL],
        occupied=tiles[..., TileAttr.OCCUPIED].astype(bool),
        rows=tiles[..., TileAttr.ROW],
        cols=tiles[..., TileAttr.COL],
        entity=obs["entity"],
        move_mask=obs["move_mask"].astype(bool),
        style_mask=obs["style_mask"].astype(bool),
        target_mask=obs["target_mask"].astype(bool),
    )


def stack(observations: dict[int, dict]) -> Batch:
    """The bots' view of per-agent observation dicts (`batch_of` of their stacked arrays)."""
    return batch_of(from_dicts(observations))


class Scripted(ArrayPolicy, abc.ABC):
    """Base of the bots: config, an injected RNG (the only source of randomness, so a seed fixes
    every action), `reset(seed)`, and the array form (`act_arrays`; `act`, the dict form, comes
    from `ArrayPolicy`)."""

    def __init__(self, config: Config, seed: int | None = None) -> None:
        super().__init__(config)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act_arrays(self, batch: ObsBatch) -> np.ndarray:
        if batch.n == 0:
            return np.zeros((0, 3), dtype=np.int64)
        return self.decide(batch_of(batch))

    @abc.abstractmethod
    def decide(self, batch: Batch) -> np.ndarray:
        """(n, 3) action rows for the agents of the batch (each bot defines its decision; `to_rows`)."""


def walk_distances(free: np.ndarray, max_steps: int | None = None) -> np.ndarray:
    """Steps from the centre of each window to every tile through `free` tiles (-1: unreached).

    Frontier BFS on boolean windows, all agents at once: each iteration grows every frontier by
    one step. Buffers are padded by one tile so the four shifts are plain slices, and a tile's
    distance is counted as the number of iterations it stayed unseen (no masked writes).
    """
    n, side, _ = free.shape
    r = side // 2
    open_ = np.zeros((n, side + 2, side + 2), dtype=bool)
    open_[:, 1:-1, 1:-1] = free
    seen = np.zeros_like(open_)
    seen[:, r + 1, r + 1] = True
    frontier = seen.copy()
    grown = np.empty_like(open_)
    count = np.zeros((n, side + 2, side + 2), dtype=np.int16)
    limit = max_steps if max_steps is not None else side * side
    for _ in range(limit):
        grown[:] = False
        np.logical_or(grown[:, 1:], frontier[:, :-1], out=grown[:, 1:])
        np.logical_or(grown[:, :-1], frontier[:, 1:], out=grown[:, :-1])
        np.logical_or(grown[:, :, 1:], frontier[:, :, :-1], out=grown[:, :, 1:])
        np.logical_or(grown[:, :, :-1], frontier[:, :, 1:], out=grown[:, :, :-1])
        np.logical_and(grown, open_, out=frontier)
        np.logical_and(frontier, ~seen, out=frontier)
        if not frontier.any():
            break
        seen |= frontier
        count += ~seen  # still unseen after this step: one more step away
    dist = np.where(seen, count + seen, UNREACHED)[:, 1:-1, 1:-1].astype(np.int16)
    dist[:, r, r] = 0
    return dist


def step_towards(dist: np.ndarray, goal_flat: np.ndarray, has_goal: np.ndarray) -> np.ndarray:
    """First move along a shortest path from the centre to each agent's goal tile (STAY where
    there is no goal or the goal is the centre). Backtracks from the goals, all agents at once."""
    n, side, _ = dist.shape
    r = side // 2
    moves = np.full(n, Direction.STAY, dtype=np.int64)
    gr, gc = np.divmod(goal_flat, side)
    d = dist[np.arange(n), gr, gc].astype(np.int64)
    active = has_goal & (d > 0)
    cur_r, cur_c = gr.copy(), gc.copy()
    idx = np.arange(n)
    padded = np.full((n, side + 2, side + 2), UNREACHED, dtype=np.int16)
    padded[:, 1:-1, 1:-1] = dist
    while True:
        walking = active & (d > 1)
        if not walking.any():
            break
        # step to a neighbour one closer to the centre (first such direction)
        nb_r = cur_r[:, None] + 1 + STEPS[:, 0]
        nb = padded[idx[:, None], nb_r, cur_c[:, None] + 1 + STEPS[:, 1]]
        choice = np.argmax(nb == (d - 1)[:, None], axis=1)
        cur_r = np.where(walking, cur_r + STEPS[choice, 0], cur_r)
        cur_c = np.where(walking, cur_c + STEPS[choice, 1], cur_c)
        d = np.where(walking, d - 1, d)
    dr, dc = cur_r - r, cur_c - r
    for direction, (ddr, ddc) in enumerate(STEPS):
        moves[active & (dr == ddr) & (dc == ddc)] = direction
    return moves


def safe_moves(batch: Batch) -> np.ndarray:
    """(n, 5) moves that are legal and do not enter lava (stay is always safe)."""
    r = batch.radius
    neighbour = batch.material[:, r + STEPS[:, 0], r + STEPS[:, 1]]
    safe = batch.move_mask.copy()
    safe[:, :4] &= neighbour != Material.LAVA
    safe[:, Direction.STAY] = True
    return safe


def random_choice(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random True column per row of a boolean matrix (every row must have one)."""
    return np.argmax(rng.random(mask.shape) * mask, axis=1)


def to_rows(batch: Batch, moves: np.ndarray, styles: np.ndarray | None = None,
            targets: np.ndarray | None = None) -> np.ndarray:
    """(n, 3) action rows from per-agent arrays (target -1: no attack, and then no style either). A
    move the mask forbids (the agent is frozen, or the tile just filled) becomes "stay"."""
    rows = np.full((batch.n, 3), -1, dtype=np.int64)
    allowed = batch.move_mask[np.arange(batch.n), moves]
    rows[:, 0] = np.where(allowed, moves, Direction.STAY)
    if styles is not None:
        attacks = targets >= 0
        rows[attacks, 1] = styles[attacks]
        rows[attacks, 2] = targets[attacks]
    return rows
