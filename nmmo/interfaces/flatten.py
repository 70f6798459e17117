"""`Flatten` (one fixed-length float vector per agent) and `ActionMask` (masks under PettingZoo's
``"action_mask"`` key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.interfaces.base import MASK_KEY, TARGETS_KEY, Interface


# ---------------------------------------------------------------- flatten
def _leaf_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest value of each element of a leaf space, flattened."""
    if isinstance(space, spaces.Box):
        return space.low.ravel().astype(np.float64), space.high.ravel().astype(np.float64)
    if isinstance(space, spaces.MultiBinary):
        size = int(np.prod(space.shape))
        return np.zeros(size), np.ones(size)
    if isinstance(space, spaces.Discrete):
        return np.array([space.start], dtype=np.float64), np.array([space.start + space.n - 1], dtype=np.float64)
    if isinstance(space, spaces.MultiDiscrete):
        low = np.broadcast_to(space.start, space.nvec.shape).ravel().astype(np.float64)
        return low, low + space.nvec.ravel() - 1
    raise TypeError(f"cannot flatten a {type(space).__name__} space")


def _space_leaves(space: spaces.Space, path: tuple = ()) -> list[tuple[tuple, spaces.Space]]:
    """(path, leaf space) pairs in flattening order: dict keys sorted, tuples in order."""
    if isinstance(space, spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in _space_leaves(space.spaces[key], (*path, key))]
    if isinstance(space, spaces.Tuple):
        return [leaf for i, sub in enumerate(space.spaces) for leaf in _space_leaves(sub, (*path, i))]
    return [(path, space)]


def _value_leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, int]]:
    """(path, size) pairs of an observation in the same order as `_space_leaves` gives."""
    if isinstance(value, Mapping):
        return [leaf for key in sorted(value) for leaf in _value_leaves(value[key], (*path, key))]
    if isinstance(value, (tuple, list)):
        return [leaf for i, sub in enumerate(value) for leaf in _value_leaves(sub, (*path, i))]
    return [(path, int(np.size(value)))]


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


class Flatten(Interface):
    """Observations as one fixed-length vector (float32 by default): every leaf of the observation
    space, dict keys sorted, Discrete values as they are (no one-hot). A top-level ``action_mask``
    is left out of the vector; when present the result is PettingZoo's
    ``{"observation": vector, "action_mask": mask}`` pair. `keys` picks (and orders) the top-level
    keys to flatten; the others are dropped. `layout` names the slice of each leaf."""

    def __init__(self, keys: Sequence[str] | None = None, dtype: Any = np.float32) -> None:
        self.keys = None if keys is None else list(keys)
        self.dtype = np.dtype(dtype)
        self._paths: list[tuple[tuple, slice]] | None = None

    def _top_keys(self, keys: Sequence[Any]) -> list:
        if self.keys is None:
            return sorted(k for k in keys if k != MASK_KEY)
        missing = [k for k in self.keys if k not in keys]
        if missing:
            raise KeyError(f"Flatten keys {missing} are not in the observation (it has {sorted(keys)})")
        return self.keys

    def _set_layout(self, sizes: list[tuple[tuple, int]]) -> int:
        """Remember where each leaf goes; the total length."""
        offsets = np.cumsum([0, *(size for _, size in sizes)])
        self._paths = [(path, slice(int(a), int(b)))
                       for (path, _), a, b in zip(sizes, offsets[:-1], offsets[1:], strict=True)]
        return int(offsets[-1])

    @property
    def layout(self) -> dict[str, slice]:
        """{"Entity": slice, "ActionTargets.Move.Direction": slice, ...} once the layout is known."""
        if self._paths is None:
            raise RuntimeError("the layout is known after observation_space() or observations()")
        return {".".join(map(str, path)): where for path, where in self._paths}

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        if not isinstance(space, spaces.Dict):
            raise TypeError(f"Flatten needs a Dict observation space, got {type(space).__name__}")
        leaves = [leaf for key in self._top_keys(list(space.spaces))
                  for leaf in _space_leaves(space.spaces[key], (key,))]
        length = self._set_layout([(path, int(np.prod(leaf.shape or (1,)))) for path, leaf in leaves])
        bounds = [_leaf_bounds(leaf) for _, leaf in leaves]
        low = np.concatenate([b[0] for b in bounds]) if bounds else np.zeros(0)
        high = np.concatenate([b[1] for b in bounds]) if bounds else np.zeros(0)
        vector = spaces.Box(low.astype(self.dtype), high.astype(self.dtype), (length,), self.dtype)
        if MASK_KEY in space.spaces:
            return spaces.Dict({"observation": vector, MASK_KEY: space.spaces[MASK_KEY]})
        return vector

    def observations(self, obs: dict) -> dict:
        """All agents at once: one (agents, length) matrix, one row per agent."""
        if not obs:
            return {}
        first = next(iter(obs.values()))
        if self._paths is None:
            keys = self._top_keys(list(first))
            self._set_layout([leaf for key in keys for leaf in _value_leaves(first[key], (key,))])
        length = self._paths[-1][1].stop if self._paths else 0
        values = list(obs.values())
        matrix = np.empty((len(values), length), dtype=self.dtype)
        for path, where in self._paths:
            matrix[:, where] = np.stack([np.asarray(_get(ob, path)) for ob in values]).reshape(len(values), -1)
        if MASK_KEY in first:
            return {agent: {"observation": row, MASK_KEY: ob[MASK_KEY]}
                    for (agent, ob), row in zip(obs.items(), matrix, strict=True)}
        return dict(zip(obs, matrix, strict=True))


# ------------------------------------------------------------ action mask
class ActionMask(Interface):
    """The ActionTargets masks under ``action_mask``, laid out like the action space, which is the
    key PettingZoo tools sample with (``space.sample(mask=obs["action_mask"])``). `keep_targets`
    also keeps them under ActionTargets."""

    def __init__(self, keep_targets: bool = False) -> None:
        self.keep_targets = keep_targets

    def _move(self, items: Mapping) -> dict:
        if not isinstance(items, Mapping) or TARGETS_KEY not in items:
            raise ValueError(f"ActionMask reads the raw {TARGETS_KEY} masks: put it before interfaces that change the "
                             "observation's keys (Flatten, combine), or pass it as a member: combine(config, "
                             "ActionMask())")
        out = {k: v for k, v in items.items() if self.keep_targets or k != TARGETS_KEY}
        out[MASK_KEY] = items[TARGETS_KEY]
        return out

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        return spaces.Dict(self._move(space.spaces))

    def observations(self, obs: dict) -> dict:
        return {agent: self._move(ob) for agent, ob in obs.items()}
