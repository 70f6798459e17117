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

#: ``reset``: the row's world ended its episode this step (its horizon, or nobody left) and began the next
#: one, which its rows now hold (its last observations: ``final_<field>``).
STEP_FIELDS = {"reward": np.float32, "terminated": bool, "truncated": bool, "alive": bool, "agent_id": np.int64,
               "reset": bool}
#: With tasks on (config TASKS): each row's task index in the set, its progress and completion (the
#: embedding is the observation's "task" field).
TASK_FIELDS = {"task_index": np.int32, "task_progress": np.float32, "task_completed": bool}
METRIC_NAMES = METRICS  # the columns of `VecStep.episodes`
#: With tasks on, the columns of `VecStep.episode_tasks`: each finished lifetime's task outcome.
TASK_OUTCOME = ("task_index", "task_progress", "task_completed", "task_reward")


#: The buffers of the final observations (``final_<field>``): where a world's episode ended this
#: step (its horizon, or nobody left), its rows' observations as the episode ended, before the
#: auto-reset wrote the next episode's into the observation buffers (`VecStep.final_obs`).
FINAL_PREFIX = "final_"


def final_name(name: str) -> str:
    """The buffer of field `name`'s final observations."""
    return FINAL_PREFIX + name


def step_fields(config: Config) -> dict[str, type]:
    """The per-row outputs of a step: `STEP_FIELDS`, and `TASK_FIELDS` with tasks on."""
    return {**STEP_FIELDS, **TASK_FIELDS} if config.has_tasks() else STEP_FIELDS


def episode_width(config: Config) -> int:
    """Columns of a block's finished-lifetime rows: metrics, the task outcome with tasks on, the row."""
    return len(METRIC_NAMES) + (len(TASK_OUTCOME) if config.has_tasks() else 0) + 1


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
    tasks: dict[str, np.ndarray] | None = None  # with tasks on: TASK_FIELDS per row
    episode_tasks: np.ndarray | None = None  # with tasks on: (finished agents, len(TASK_OUTCOME))
    #: the rows whose world reset this step (`STEP_FIELDS`' ``reset``)
    reset: np.ndarray | None = None
    #: each observation field's final observations: the rows of worlds that reset this step hold
    #: their episode's last observations (what a trainer bootstraps a truncation from); other rows
    #: hold whatever an earlier reset left
    final_obs: dict[str, np.ndarray] | None = None


def allocate_buffers(config: Config, rows: int, shm: shared_memory.SharedMemory | None = None) -> dict[str, np.ndarray]:
    """Views of every buffer, laid out one after another (in `shm` when given)."""
    specs = {name: ((rows, *shape), dtype) for name, (shape, dtype) in obs_layout(config).items()}
    specs.update({name: ((rows,), np.dtype(dtype)) for name, dtype in step_fields(config).items()})
    specs.update({final_name(name): ((rows, *shape), dtype) for name, (shape, dtype) in obs_layout(config).items()})
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


def stack_episodes(parts: list[np.ndarray], width: int = len(METRIC_NAMES) + 1) -> np.ndarray:
    """Finished-lifetime rows of several blocks as one array (`width` columns when there are none)."""
    return np.concatenate(parts) if parts else np.zeros((0, width))


