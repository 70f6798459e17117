"""The stacked buffers of a vector env: one row per agent slot of every env (row ``k * PLAYER_N +
s``), each observation field of the layout (`nmmo.core.layout`) and the step's outputs, laid out one
after another so worker processes and Ray actors can share them as one block of memory."""

from __future__ import annotations

from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from nmmo.config import Config
from nmmo.core.layout import layout as obs_layout
from nmmo.core.metrics import METRICS

STEP_FIELDS = {"reward": np.float32, "terminated": bool, "truncated": bool, "alive": bool, "agent_id": np.int64}
METRIC_NAMES = METRICS  # the columns of `VecStep.episodes`


@dataclass
class VecStep:
    """Stacked outputs; `episodes` holds one row of metrics per agent that finished this step and
    `episode_rows` the row (env k, slot s: k * PLAYER_N + s) it played in."""

    obs: dict[str, np.ndarray]
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    alive: np.ndarray
    agent_id: np.ndarray
    episodes: np.ndarray  # (finished agents, len(METRIC_NAMES)) float64
    episode_rows: np.ndarray  # (finished agents,) the row each of those lifetimes was played in


def allocate_buffers(config: Config, rows: int, shm: shared_memory.SharedMemory | None = None) -> dict[str, np.ndarray]:
    """Views of every buffer, laid out one after another (in `shm` when given)."""
    specs = {name: ((rows, *shape), dtype) for name, (shape, dtype) in obs_layout(config).items()}
    specs.update({name: ((rows,), np.dtype(dtype)) for name, dtype in STEP_FIELDS.items()})
    out, offset = {}, 0
    for name, (shape, dtype) in specs.items():
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if shm is None:
            out[name] = np.zeros(shape, dtype)
        else:
            out[name] = np.ndarray(shape, dtype, buffer=shm.buf, offset=offset)
        offset += (nbytes + 63) // 64 * 64
    out["_bytes"] = offset  # type: ignore[assignment]
    return out


def stack_episodes(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros((0, len(METRIC_NAMES) + 1))


