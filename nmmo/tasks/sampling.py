"""Who gets which task at reset: samplers.

An env with ``tasks=`` a task set draws every unit's task (an agent slot's, or a team's with
``TASK_ASSIGN = "team"``) by the specs' weights. ``tasks=`` a sampler instead lets the draw change
between episodes; a sampler has a ``tasks`` TaskSet and ``sample(rng, units)`` returning one spec
index per unit. `CurriculumSampler` is the curriculum of nmmo 2.x in its simplest form: the tasks
that lifetimes complete least often are drawn most often, from completions you report;
`EdgeSampler` draws most often the tasks at the edge of the agents' ability (completed about half
the time). ``TASK_CURRICULUM = "edge"`` (a config key) gives every env of a config an `EdgeSampler`
that it feeds itself with the outcomes of its own ended lives (`nmmo.envs.tasking`).

To give the tasks yourself, pass them at reset: ``env.reset(options={"tasks": indices})``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nmmo.tasks.spec import TaskSet, load_task_set


class TaskSampler:
    """Draws each unit's task by the specs' weights (what a plain task set does). Subclass it and
    override `sample` (and `update`, to learn from outcomes)."""

    def __init__(self, tasks: TaskSet | str | Path) -> None:
        self.tasks = tasks if isinstance(tasks, TaskSet) else load_task_set(tasks)
        weights = np.array([spec.weight for spec in self.tasks], dtype=np.float64)
        if weights.sum() <= 0:
            raise ValueError(f"{self.tasks.source}: every task has weight 0: nothing to sample")
        self.weights = weights / weights.sum()

    def probabilities(self) -> np.ndarray:
        """Each spec's chance of being drawn for one unit."""
        return self.weights

    def sample(self, rng: np.random.Generator, units: int) -> np.ndarray:
        """One spec index per unit (`rng` is the episode's task stream: same seed, same draw)."""
        return rng.choice(len(self.tasks), size=units, p=self.probabilities())

    def update(self, task: np.ndarray, completed: np.ndarray) -> None:
        """Outcomes of ended lifetimes: the spec index each held and whether it completed it."""

    def outcomes(self, task, completed) -> tuple[np.ndarray, np.ndarray]:
        """`update`'s arguments as arrays, checked (ValueError naming what is wrong)."""
        task, completed = np.asarray(task, dtype=np.int64), np.asarray(completed, dtype=np.float64)
        if task.shape != completed.shape or (task.size and (task.min() < 0 or task.max() >= len(self.tasks))):
            raise ValueError(f"update takes spec indices in [0, {len(self.tasks)}) and as many outcomes; "
                             f"got {task.shape} and {completed.shape}")
        return task, completed


class CurriculumSampler(TaskSampler):
    """Weights each spec by how rarely it is completed: weight x (1 - completion rate) + `floor`
    (so a mastered task is still drawn now and then). The rate is a running mean over the
    lifetimes reported to `update` (decay `decay` per report), starting at `prior`."""

    def __init__(self, tasks: TaskSet | str | Path, floor: float = 0.05, decay: float = 0.99,
                 prior: float = 0.0) -> None:
        super().__init__(tasks)
        if not 0.0 < floor <= 1.0 or not 0.0 < decay < 1.0 or not 0.0 <= prior <= 1.0:
            raise ValueError(f"need 0 < floor <= 1, 0 < decay < 1 and 0 <= prior <= 1; got floor={floor}, "
                             f"decay={decay}, prior={prior}")
        self.floor, self.decay = floor, decay
        self.rate = np.full(len(self.tasks), prior)

    def probabilities(self) -> np.ndarray:
        weights = self.weights * (1.0 - self.rate) + self.floor * (self.weights > 0)
        return weights / weights.sum()

    def update(self, task: np.ndarray, completed: np.ndarray) -> None:
        task, completed = self.outcomes(task, completed)
        for index, outcome in zip(task.tolist(), completed.tolist(), strict=True):
            self.rate[index] = self.decay * self.rate[index] + (1.0 - self.decay) * outcome


class EdgeSampler(TaskSampler):
    """The curriculum of ``TASK_CURRICULUM = "edge"``: weights each spec by its weight x (rate x (1 -
    rate) + `floor`), where rate is the spec's running completion rate over the ended lives that
    held it. A task never completed (too hard for now) or always completed (mastered) falls to the
    floor; one completed about half the time gets up to 1 + 0.25 / floor times more draws.

    The rate starts at 0.5 (every spec is as likely as the best until seen) and is the mean of the
    outcomes with that prior counted as two lives (Laplace's rule) until `window` lives, then a
    moving average with step 1 / `window`: a few lives move a new task's estimate, and it keeps
    following the agents as they learn. Chosen over the learning-progress curriculum of the nmmo
    2.x baselines (|fast - slow EMA| of completion), whose signal is a difference of two noisy
    means: at a CPU budget a task is held by a few hundred lives per run, too few to tell a rise
    from the noise, while p(1 - p) is large from the first lives of a half-completed task. The
    updates are plain arithmetic in the order the lives are reported: the same outcomes give the
    same rates and, with the same episode seeds, the same draws."""

    def __init__(self, tasks: TaskSet | str | Path, floor: float = 0.05, window: int = 100) -> None:
        super().__init__(tasks)
        if not 0.0 < floor <= 1.0 or window < 2:
            raise ValueError(f"need 0 < floor <= 1 and window >= 2; got floor={floor}, window={window}")
        self.floor, self.window = floor, window
        self.rate = np.full(len(self.tasks), 0.5)
        self.lives = np.zeros(len(self.tasks), dtype=np.int64)  # ended lives reported per spec

    def probabilities(self) -> np.ndarray:
        weights = self.weights * (self.rate * (1.0 - self.rate) + self.floor)
        return weights / weights.sum()

    def update(self, task: np.ndarray, completed: np.ndarray) -> None:
        task, completed = self.outcomes(task, completed)
        for index, outcome in zip(task.tolist(), completed.tolist(), strict=True):
            self.lives[index] += 1
            step = 1.0 / min(self.lives[index] + 2, self.window)
            self.rate[index] += step * (outcome - self.rate[index])


#: The curricula the config key TASK_CURRICULUM names ("": none, the specs' weights).
CURRICULA: dict[str, type[TaskSampler]] = {"edge": EdgeSampler}


def curriculum_sampler(name: str, tasks: TaskSet | str | Path) -> TaskSampler | None:
    """The sampler of TASK_CURRICULUM `name` over `tasks` (None for ""); ValueError for an unknown name."""
    if not name:
        return None
    if name not in CURRICULA:
        raise ValueError(f"TASK_CURRICULUM must be '' or one of {', '.join(map(repr, CURRICULA))}, got {name!r}")
    return CURRICULA[name](tasks)
