"""Tasks: per-agent and per-team objectives as data, evaluated for every agent at once.

- `nmmo.tasks.events`: the event log the systems write (eat, drink, explore, hits, kills, level
  ups, equipment, tile held), read as arrays.
- `nmmo.tasks.registry`: predicates by name (built-ins, plug-ins through the ``nmmo.predicates``
  entry-point group) and the table of differences from nmmo 2.1.1.
- `nmmo.tasks.spec`: task sets as TOML / JSON files (`load_task_set`; shipped sets in
  ``nmmo/configs/tasks/``), checked and never executed.
- `nmmo.tasks.embedding`: a fixed-length vector per spec, versioned (the config key TASK_EMBEDDING;
  version 2, `embedding_v2`, reads back with `decode`; version 1, `embedding_v1`, is frozen).
- `nmmo.tasks.sampling`: who gets which task at reset (`TaskSampler`, `CurriculumSampler`).
- `nmmo.tasks.task`: `TaskState`, assignment at reset and one evaluation per tick; under it
  `compiler` (assigned tasks as flat arrays), `terms` (most predicates, one batch), `core`
  (Param, Predicate, subjects, batches), `predicates` and `spatial` (the built-ins).
"""

from nmmo.tasks.core import SUBJECTS, Context, Leaves, Members, Param, Predicate
from nmmo.tasks.embedding import EMBEDDING_SIZE, decode, embed, embedding_size
from nmmo.tasks.registry import register
from nmmo.tasks.sampling import CurriculumSampler, TaskSampler
from nmmo.tasks.spec import (
    TaskSet,
    TaskSpec,
    every_shipped_spec,
    load_task_set,
    parse_task,
    shipped,
    task_set_from_data,
)
from nmmo.tasks.task import TaskState, TaskStep, task_rng

__all__ = [
    "EMBEDDING_SIZE", "SUBJECTS", "Context", "CurriculumSampler", "TaskSampler",
    "Leaves", "Members", "Param", "Predicate", "TaskSet", "TaskSpec",
    "TaskState", "TaskStep", "decode", "embed", "embedding_size", "every_shipped_spec", "load_task_set",
    "parse_task", "register", "shipped", "task_rng", "task_set_from_data",
]
