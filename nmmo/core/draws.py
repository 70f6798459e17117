"""Random draws of the systems, for one world or for many worlds held in one set of tables.

A lone env draws from one `numpy.random.Generator` in a fixed order. The fused engine
(`nmmo.engines.fused`) holds K worlds in one set of tables, each world with its own Generator, and gives
world k exactly the draws a lone env with world k's seed would make: the same calls, sized by that
world's own entities, in the same order. The systems draw through the helpers below, which call
the Generator directly for a lone world (one call, as before) and hand the entity rows to
`WorldRngs` for fused worlds, which splits them by world, draws per world and puts each draw on
its row.

Every draw site draws for rows in increasing row order, as a lone world does; within one world the
fused layout keeps that order (players before NPCs, each in slot order), so world k's draws land on
the same rows as a lone world's.
"""

from __future__ import annotations

import numpy as np

Rng = np.random.Generator  # or WorldRngs


def uniform(rng, rows: np.ndarray, *tail: int) -> np.ndarray:
    """``rng.random((len(rows), *tail))``: one draw (or row of draws) per entity row in `rows`."""
    if type(rng) is np.random.Generator:
        return rng.random((rows.size, *tail))
    return rng.per_row("random", rows, tail)


def integers(rng, rows: np.ndarray, low: int, high: int) -> np.ndarray:
    """``rng.integers(low, high, size=len(rows))``: one draw per entity row in `rows`."""
    if type(rng) is np.random.Generator:
        return rng.integers(low, high, size=rows.size)
    return rng.per_row("integers", rows, (), low, high)


def uniform_all(rng, capacity: int) -> np.ndarray:
    """``rng.random(capacity)``: one draw per entity slot, live or not."""
    if type(rng) is np.random.Generator:
        return rng.random(capacity)
    return rng.every_row()


def uniform_tiles(rng, flat: np.ndarray) -> np.ndarray:
    """``rng.random(len(flat))``: one draw per tile (flat index into the tile grids)."""
    if type(rng) is np.random.Generator:
        return rng.random(flat.size)
    return rng.per_world("random", flat // rng.tiles_per_world, ())


class WorldRngs:
    """The Generators of K fused worlds, and where each world's entity rows lie in the tables.

    `world_of_row[r]` is the world of entity row r and `lone_row[r]` its row in a lone env (players
    0..N-1, then NPCs); `tiles_per_world` is the size of a world's block of the flat tile grids."""

    def __init__(self, generators: list[np.random.Generator], world_of_row: np.ndarray, lone_row: np.ndarray,
                 tiles_per_world: int) -> None:
        self.generators = generators
        self.world_of_row, self.tiles_per_world = world_of_row, tiles_per_world
        self.capacity = int(lone_row.max()) + 1 if lone_row.size else 0  # rows per lone world
        self.index = (world_of_row.astype(np.int64) * self.capacity + lone_row).astype(np.int64)

    def per_row(self, method: str, rows: np.ndarray, tail: tuple, *args) -> np.ndarray:
        return self.per_world(method, self.world_of_row[rows], tail, *args)

    def per_world(self, method: str, worlds: np.ndarray, tail: tuple, *args) -> np.ndarray:
        """Draws for items of `worlds` (in lone order within each world): each world's Generator
        draws for its own items, with nothing drawn for a world that has none."""
        counts = np.bincount(worlds, minlength=len(self.generators))
        parts = [getattr(self.generators[k], method)(*args, size=(int(n), *tail))
                 for k, n in enumerate(counts.tolist()) if n]
        if not parts:
            return np.zeros((0, *tail))
        draws = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if worlds.size > 1 and np.any(worlds[1:] < worlds[:-1]):  # not grouped by world: put each draw back
            out = np.empty_like(draws)
            out[np.argsort(worlds, kind="stable")] = draws
            return out
        return draws

    def every_row(self) -> np.ndarray:
        """One uniform draw per entity slot of every world (`uniform_all`)."""
        draws = np.concatenate([g.random(self.capacity) for g in self.generators])
        return draws[self.index]
