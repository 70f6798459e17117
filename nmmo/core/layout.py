"""The observation layout: every per-agent observation array, written down once, and the array
batch that every policy receives.

A `Field` names one array: its key in the batched buffers (``tile``), its place in the PettingZoo
dict form (``("Tile",)``), its shape and dtype under a config, and its bounds for the observation
space. Everything that moves observations reads `fields(config)`: the observation builder, the
env's dict form and spaces, the vector buffers, the submission channel, the policies' batches and
the neural policy's encoder input. Adding an array to the observation means adding a `Field` here
(with a `fill` that computes it) and the code that reads it; nothing in between changes.

`ObsBatch` is the array batch: the ids of a set of agents, and each field's arrays stacked over
them (row i is agent ``ids[i]``). `to_dicts` and `from_dicts` are the only translations between
it and the dict form (the actions' translations live in `nmmo.core.actions`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Direction, EntityAttr, Style, TileAttr

N_ENTITY_ATTRS = len(EntityAttr)
N_TILE_ATTRS = len(TileAttr)
N_DIRECTIONS, N_STYLES = len(Direction), len(Style)


@dataclass(frozen=True)
class Field:
    """One observation array of every agent.

    Args:
        name: its key in batches and buffers.
        key: its path in the dict form (``("ActionTargets", "Move", "Direction")``).
        shape: the per-agent shape under a config (None: the field is absent under that config).
        dtype: its numpy dtype.
        low, high: the bounds of its Box in the observation space (None: the dtype's own, or a
            MultiBinary for a mask).
        fill: ``fill(env, slots) -> (len(slots), *shape)`` values for the agents in `slots`; None
            for the fields the observation builder (`nmmo.core.obs`) writes itself.
        mask: a 0/1 mask (a MultiBinary space; policies may read it as bool).

    """

    name: str
    key: tuple[str, ...]
    shape: Callable[[Config], tuple[int, ...] | None]
    dtype: np.dtype
    low: float | None = None
    high: float | Callable[[Config], float] | None = None
    fill: Callable[[Any, np.ndarray], np.ndarray] | None = None
    mask: bool = False


def _window(config: Config) -> int:
    return (2 * config.PLAYER_VISION_RADIUS + 1) ** 2


#: The fields, in order. The first five are the builder's; a field with a `fill` is computed by it
#: (the task embedding, present when the config has TASKS, in the config's TASK_EMBEDDING version).
FIELDS: list[Field] = [
    Field("tile", ("Tile",), lambda c: (_window(c), N_TILE_ATTRS), np.dtype(np.int16), 0,
          lambda c: max(c.MAP_SIZE, 8)),
    Field("entity", ("Entity",), lambda c: (c.PLAYER_N_OBS, N_ENTITY_ATTRS), np.dtype(np.int32)),
    Field("move_mask", ("ActionTargets", "Move", "Direction"), lambda c: (N_DIRECTIONS,), np.dtype(np.int8),
          mask=True),
    Field("style_mask", ("ActionTargets", "Attack", "Style"), lambda c: (N_STYLES,), np.dtype(np.int8), mask=True),
    Field("target_mask", ("ActionTargets", "Attack", "Target"), lambda c: (c.PLAYER_N_OBS + 1,),
          np.dtype(np.int8), mask=True),
]
#: Floats of the ``Task`` field per task-embedding version (the config key TASK_EMBEDDING). The
#: layout owns the widths, so that it needs nothing from `nmmo.tasks`, which sits above it; the
#: writers in `nmmo.tasks.embedding` fill exactly these (tests/test_task_embedding.py).
TASK_WIDTHS = {1: 276, 2: 730}


def _task_shape(config: Config) -> tuple[int, ...] | None:
    """The task embedding's length when the config has tasks (`TASK_WIDTHS` of its TASK_EMBEDDING)."""
    return (TASK_WIDTHS[config.TASK_EMBEDDING],) if config.has_tasks() else None


FIELDS.append(Field("task", ("Task",), _task_shape, np.dtype(np.float32),
                    fill=lambda env, slots: env.task_embedding(slots)))
#: The fields the observation builder writes (`nmmo.core.obs.ObservationBuilder`), in its order.
BUILT = ("tile", "entity", "move_mask", "style_mask", "target_mask")


def fields(config: Config) -> list[Field]:
    """The fields present under `config`, in order."""
    return [f for f in FIELDS if f.shape(config) is not None]


def layout(config: Config) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Per-agent shape and dtype of each observation array: the buffers of the batched API, of
    `nmmo.engines.vector`, of a batch and of the env's observation space."""
    return {f.name: (f.shape(config), f.dtype) for f in fields(config)}


def filled(config: Config) -> list[Field]:
    """The present fields that are computed by their `fill` (not by the observation builder)."""
    return [f for f in fields(config) if f.fill is not None]


# ------------------------------------------------------------------ the batch
@dataclass
class ObsBatch(Mapping):
    """The observations of a set of agents as arrays: ``batch["tile"]`` is (n, *shape), row i is
    the agent ``batch.ids[i]``. A read-only mapping of field name to array; `keys` gives the dict
    form's path of each field (so a batch built from a worker's frame keeps fields this process
    has never heard of)."""

    ids: np.ndarray  # (n,) int64
    arrays: dict[str, np.ndarray]
    tick: int = 0
    keys_: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)

    @property
    def n(self) -> int:
        """How many agents the batch holds."""
        return len(self.ids)

    def key(self, name: str) -> tuple[str, ...]:
        """The dict form's path of field `name`."""
        return self.keys_.get(name) or key_of(name)

    def select(self, rows: np.ndarray | slice) -> ObsBatch:
        """The batch of some of its agents (`rows`: indices, a boolean mask or a slice)."""
        return ObsBatch(self.ids[rows], {k: v[rows] for k, v in self.arrays.items()}, self.tick, self.keys_)

    def to_dicts(self) -> dict[int, dict]:
        """The dict form (`nmmo.Env.step`'s observations): views into the batch's arrays."""
        return to_dicts(self.ids.tolist(), self.arrays, self.tick, self.keys_)


def key_of(name: str) -> tuple[str, ...]:
    """The dict path of the field `name` (a name `FIELDS` does not hold is its own key)."""
    return next((f.key for f in FIELDS if f.name == name), (name,))


def to_dicts(ids: list[int], arrays: Mapping[str, Sequence], tick: int,
             keys: Mapping[str, tuple[str, ...]] | None = None) -> dict[int, dict]:
    """Per-agent observation dicts of stacked `arrays` (row i: agent ``ids[i]``; a list of the
    rows' arrays does as well), views into them.
    The five built fields are written out literally (this runs for every agent of every dict step);
    any other field goes to its path (`keys`, else `FIELDS`)."""
    if not all(name in arrays for name in BUILT):
        out = {agent: {"AgentId": agent, "CurrentTick": tick} for agent in ids}
        extra = list(arrays)
    else:
        tile, entity = arrays["tile"], arrays["entity"]
        move, style, target = arrays["move_mask"], arrays["style_mask"], arrays["target_mask"]
        out = {
            agent: {"Tile": t, "Entity": e,
                    "ActionTargets": {"Move": {"Direction": m}, "Attack": {"Style": s, "Target": g}},
                    "AgentId": agent, "CurrentTick": tick}
            for agent, t, e, m, s, g in zip(ids, tile, entity, move, style, target, strict=True)
        }
        extra = [name for name in arrays if name not in BUILT]
    for name in extra:
        path = (keys or {}).get(name) or key_of(name)
        for ob, value in zip(out.values(), arrays[name], strict=True):
            _put(ob, path, value)
    return out


def slots_selector(slots: np.ndarray) -> slice | np.ndarray:
    """A slice when `slots` is an increasing consecutive run (cheaper than fancy indexing), else the
    array itself. (First and last alone do not decide it: [0, 2, 1, 3] is not a run.)"""
    if slots.size and slots[-1] - slots[0] + 1 == slots.size and (slots[1:] > slots[:-1]).all():
        return slice(int(slots[0]), int(slots[-1]) + 1)
    return slots


def rows_of(arrays: Mapping[str, np.ndarray], slots: np.ndarray) -> dict[str, Sequence]:
    """The rows `slots` of each of `arrays` without copying them, for `to_dicts`: a slice of each
    where the slots are one run (`slots_selector`), else each row's view picked from a list of them
    (gathering the rows first would copy every observation, ~10 MB a step at 1024 agents)."""
    select = slots_selector(slots)
    if isinstance(select, slice):
        return {name: values[select] for name, values in arrays.items()}
    rows = slots.tolist()
    out = {}
    for name, values in arrays.items():
        views = list(values)
        out[name] = [views[i] for i in rows]
    return out


def from_dicts(observations: Mapping[int, Mapping], config: Config | None = None) -> ObsBatch:
    """The batch of per-agent observation dicts (each field stacked over the agents): the
    fields of `config`'s layout, or without a config the built ones and any other `FIELDS` entry
    the dicts hold."""
    ids = np.fromiter(observations, dtype=np.int64, count=len(observations))
    obs = list(observations.values())
    wanted = fields(config) if config is not None else [f for f in FIELDS if f.name in BUILT or (
        obs and _has(obs[0], f.key))]
    if not obs:
        shapes = layout(config) if config is not None else {}
        arrays = {f.name: np.zeros((0, *shapes.get(f.name, ((0,), f.dtype))[0]), f.dtype) for f in wanted}
        return ObsBatch(ids, arrays, 0)
    arrays = {f.name: np.stack([_at(o, f.key) for o in obs]) for f in wanted}
    return ObsBatch(ids, arrays, int(obs[0].get("CurrentTick", 0)))


def _at(value: Mapping, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _has(value: Mapping, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return False
        value = value[key]
    return True


def _put(ob: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        ob = ob.setdefault(key, {})
    ob[path[-1]] = value
