"""Chebyshev distances that several readers need every tick, in one pass.

The spawn-distance column of the terms and SeizeTile's distance to its tile both measure slots
against fixed points. Each asks once, when tasks are bound (`Distances.want`: the slots, and a
(2, k) array of rows and columns within their worlds); on a tick the first reader computes every
pair in four array calls (`Distances.of`), where each reader on its own would take three or four.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from nmmo.tasks.core import Context


def chebyshev_between(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Chebyshev distances between positions given as (2, k) arrays of rows and columns (or a
    (2, 1) point): three array ops, where separate row and column arrays take five."""
    d = np.subtract(a, b)
    np.abs(d, out=d)
    return np.maximum(d[0], d[1], out=out)


class Distances:
    """The pairs readers asked for; their distances on the current tick."""

    def __init__(self) -> None:
        self._slots: list[np.ndarray] = []
        self._points: list[np.ndarray] = []
        self._index: np.ndarray | None = None
        self._targets: np.ndarray | None = None
        self._values: np.ndarray | None = None
        self._size = 0

    def want(self, slots: np.ndarray, points: np.ndarray) -> slice:
        """Ask for the distances from `slots` to `points` ((2, len(slots)) rows and columns) every
        tick; returns where they are in `of`'s result."""
        slots = np.asarray(slots, dtype=np.int64)
        self._slots.append(slots)
        self._points.append(np.asarray(points, dtype=np.float64).reshape(2, slots.size))
        self._index = None
        part, self._size = slice(self._size, self._size + slots.size), self._size + slots.size
        return part

    def set_points(self, part: slice, points: np.ndarray) -> None:
        """New points for a part (spawn tiles change with new agents)."""
        self._compose()
        self._targets[:, part] = points
        self._values = None

    def next_tick(self) -> None:
        self._values = None

    def of(self, ctx: Context) -> np.ndarray:
        """Every pair's distance on this tick (computed on the tick's first call)."""
        if self._values is None:
            self._compose()
            self._values = chebyshev_between(ctx.position.take(self._index, axis=1), self._targets)
        return self._values

    def _compose(self) -> None:
        if self._index is None:
            self._index = np.concatenate(self._slots)
            self._targets = np.concatenate(self._points, axis=1)
