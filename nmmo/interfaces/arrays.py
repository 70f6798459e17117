"""The trainer form's observation as arrays: `FlatLayout` writes the flat vector and the flat action
mask of a whole batch of rows straight from the engine's arrays (an `ObsBatch`, a vector env's
buffers), with no per-agent dict on the way.

The layout is read from the config's fields (`nmmo.core.layout.fields`), and it is exactly the one
`Flatten` gives the trainer form's dict (`nmmo.integrations.parallel_env`): the top-level keys in
sorted order (``AgentId``, ``CurrentTick``, ``Entity``, ``Task`` when the config has tasks,
``Tile``), each leaf flattened, as float32; the ActionTargets go to the mask (`flat_mask`'s order:
move, style, target). So a checkpoint trained on either form reads the other's vectors (a test
compares them field by field).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmmo.config import Config
from nmmo.core.layout import fields

#: The two scalars of the dict form that are not fields of the layout, by their dict key.
SCALARS = {"AgentId": "agent_id", "CurrentTick": "tick"}


@dataclass(frozen=True)
class FlatLayout:
    """Where each part of a row goes: ``slices[name]`` for the field names and ``agent_id``,
    ``tick``; ``size`` the vector's length; ``mask_size`` the flat mask's (5 + 3 + PLAYER_N_OBS + 1)."""

    slices: dict[str, slice]
    size: int
    mask_fields: tuple[str, ...]
    mask_size: int

    @classmethod
    def of(cls, config: Config) -> FlatLayout:
        """The layout under `config` (see the module notes)."""
        present = fields(config)
        parts = {key: (name, 1) for key, name in SCALARS.items()}
        for spec in present:
            if not spec.mask:
                parts[spec.key[0]] = (spec.name, int(np.prod(spec.shape(config))))
        slices, offset = {}, 0
        for key in sorted(parts):
            name, size = parts[key]
            slices[name] = slice(offset, offset + size)
            offset += size
        masks = tuple(spec.name for spec in present if spec.mask)
        mask_size = sum(int(np.prod(spec.shape(config))) for spec in present if spec.mask)
        return cls(slices, offset, masks, mask_size)

    def write(self, out: np.ndarray, arrays: dict[str, np.ndarray], agent_id: np.ndarray,
              tick: np.ndarray | int) -> np.ndarray:
        """The flat vectors of ``len(out)`` rows into `out` (rows, >= size; only its first `size`
        columns are written), from each field's stacked arrays, the rows' agent ids and ticks."""
        rows = len(out)
        out[:, self.slices["agent_id"].start] = agent_id
        out[:, self.slices["tick"].start] = tick
        for name, where in self.slices.items():
            if name not in SCALARS.values():
                out[:, where] = arrays[name].reshape(rows, -1)
        return out

    def write_mask(self, out: np.ndarray, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The flat action masks of ``len(out)`` rows into `out` (rows, mask_size)."""
        offset = 0
        for name in self.mask_fields:
            width = arrays[name].shape[1]
            out[:, offset:offset + width] = arrays[name]
            offset += width
        return out
