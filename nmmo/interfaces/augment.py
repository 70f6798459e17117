"""`Augment`: one of the 8 rotations/flips of the map per episode, exactly invertible."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import EntityAttr, TileAttr
from nmmo.core.rules import DELTAS
from nmmo.interfaces.base import MASK_KEY, TARGETS_KEY, Interface, _require_raw

# ----------------------------------------------------------- augmentation
_QUARTER = np.array([[0, -1], [1, 0]])  # np.rot90's quarter turn on (row, col) offsets: (dr, dc) -> (-dc, dr)
_MIRROR = np.array([[1, 0], [0, -1]])  # east-west mirror: (dr, dc) -> (dr, -dc)


def dihedral_matrix(index: int) -> np.ndarray:
    """The 2x2 integer matrix of transform `index` (0..7) on (row, col) offsets: `index % 4`
    quarter turns (as np.rot90), after an east-west mirror when `index >= 4`. 0 is the identity."""
    if not (isinstance(index, (int, np.integer)) and 0 <= index < 8):
        raise ValueError(f"dihedral transform index must be an int in 0..7, got {index!r}")
    turn = np.linalg.matrix_power(_QUARTER, int(index) % 4)
    return turn @ _MIRROR if index >= 4 else turn


def dihedral_inverse(index: int) -> int:
    """The index of the transform that undoes transform `index`."""
    inverse = dihedral_matrix(index).T  # orthogonal: the inverse is the transpose
    return next(j for j in range(8) if np.array_equal(dihedral_matrix(j), inverse))


class Augment(Interface):
    """Rotates/flips the world each episode: one of the 8 symmetries of the square map, drawn at
    ``reset(seed)`` (deterministic; without a seed, from the stream started by `seed` here) unless
    `transform` fixes it. Before the first reset it is the identity.

    What the policy sees is what it would see on the transformed map: the Tile window is rotated
    and its ROW/COL hold transformed map coordinates, the Entity ROW/COL are transformed (rows with
    ID 0 are padding and stay 0), and the Move mask is permuted with the directions. Move
    directions in actions are mapped back to raw ones. Entity rows keep their order, so Attack
    Target indices and masks need no change (ties in distance stay in the raw row-major order).
    The transform is exactly invertible: `dihedral_inverse` gives the one that undoes it.
    """

    #: Mixed into reset seeds, so the drawn transform is independent of what the env draws from
    #: the same seed (the map: without it, every map would always show in one orientation).
    SALT = 0xA06

    def __init__(self, config: Config, transform: int | None = None, seed: int | None = 0) -> None:
        self.map_size = config.MAP_SIZE
        self.radius = config.PLAYER_VISION_RADIUS
        self.fixed = None if transform is None else int(transform)
        self._rng = np.random.default_rng(None if seed is None else [int(seed), self.SALT])
        self._prepare(0 if transform is None else transform)

    def reset(self, seed: int | None = None) -> None:
        if self.fixed is None:
            rng = self._rng if seed is None else np.random.default_rng([int(seed), self.SALT])
            self._prepare(int(rng.integers(8)))

    def _prepare(self, index: int) -> None:
        """Precompute the window permutation and direction maps of transform `index`."""
        matrix = dihedral_matrix(index)
        self.transform, self._matrix = int(index), matrix
        side = 2 * self.radius + 1
        dr, dc = np.divmod(np.arange(side * side), side)
        moved = np.stack([dr - self.radius, dc - self.radius], axis=1) @ matrix.T + self.radius
        destination = moved[:, 0] * side + moved[:, 1]  # raw cell i lands on cell destination[i]
        self._source = np.argsort(destination)  # view cell j shows raw cell _source[j]
        turned = DELTAS.astype(np.int64) @ matrix.T
        self._to_view = np.array([_row_index(DELTAS, d) for d in turned], dtype=np.int64)
        self._to_raw = np.argsort(self._to_view)

    def _map_coords(self, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map coordinates on the transformed map. Offsets from the centre are doubled so that even
        and odd map sizes both stay in integers."""
        last = self.map_size - 1
        r2, c2 = 2 * rows.astype(np.int64) - last, 2 * cols.astype(np.int64) - last
        (a, b), (c, d) = self._matrix
        return (a * r2 + b * c2 + last) // 2, (c * r2 + d * c2 + last) // 2

    def _tiles(self, tiles: np.ndarray) -> np.ndarray:
        out = tiles[:, self._source]
        rows, cols = self._map_coords(out[..., TileAttr.ROW], out[..., TileAttr.COL])
        out[..., TileAttr.ROW], out[..., TileAttr.COL] = rows, cols
        return out

    def _entities(self, out: np.ndarray) -> np.ndarray:
        """Transform positions in place (`out` is a fresh stack); rows with ID 0 are padding."""
        valid = out[..., EntityAttr.ID] != 0
        rows, cols = self._map_coords(out[..., EntityAttr.ROW], out[..., EntityAttr.COL])
        out[..., EntityAttr.ROW] = np.where(valid, rows, out[..., EntityAttr.ROW])
        out[..., EntityAttr.COL] = np.where(valid, cols, out[..., EntityAttr.COL])
        return out

    def _masks(self, masks: Mapping, move: np.ndarray) -> dict:
        return {**masks, "Move": {**masks["Move"], "Direction": move}}

    def observations(self, obs: dict) -> dict:
        """All agents at once: stacked tiles and entity tables, transformed, split back per agent."""
        _require_raw(obs, "Augment", ("Tile", "Entity"))
        if self.transform == 0 or not obs:
            return obs
        values = list(obs.values())
        tiles = self._tiles(np.stack([ob["Tile"] for ob in values]))
        entities = self._entities(np.stack([ob["Entity"] for ob in values]))
        out = {}
        for i, (agent, ob) in enumerate(obs.items()):
            view = {**ob, "Tile": tiles[i], "Entity": entities[i]}
            for key in (TARGETS_KEY, MASK_KEY):
                if key in ob:
                    view[key] = self._masks(ob[key], ob[key]["Move"]["Direction"][self._to_raw])
            out[agent] = view
        return out

    def actions(self, actions: dict, obs: dict) -> dict:
        """Move directions back to raw ones; anything else (and malformed moves) passes unchanged."""
        if self.transform == 0:
            return actions
        return {agent: self._action(action) for agent, action in actions.items()}

    def _action(self, action: Any) -> Any:
        move = action.get("Move") if isinstance(action, Mapping) else None
        direction = move.get("Direction") if isinstance(move, Mapping) else None
        if isinstance(direction, np.ndarray) and direction.ndim == 0:
            direction = direction.item()
        if isinstance(direction, bool) or not isinstance(direction, (int, np.integer)) or not 0 <= direction < 5:
            return action
        return {**action, "Move": {**move, "Direction": int(self._to_raw[direction])}}


def _row_index(table: np.ndarray, row: np.ndarray) -> int:
    return int(np.flatnonzero((table == row).all(axis=1))[0])
