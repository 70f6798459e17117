"""Tasks in an env: `Tasking`, the component through which `nmmo.Env` assigns each agent (or team) a
task at reset, evaluates every task after each tick, pays task rewards and shows the task to the agent.

Turned on by ``Env(config, tasks=...)`` (a shipped set's name, a TOML / JSON path, a `TaskSet`, a
list of spec tables, or a `nmmo.tasks.TaskSampler` that chooses the tasks at each reset) or the
config key ``TASKS``; ``env.reset(options={"tasks": indices})`` gives the tasks explicitly (one spec
index per agent slot, or per team); the config's ``TASK_*`` keys say how tasks are
assigned (``TASK_ASSIGN``: one per agent or per team) and how the reward mixes the task reward
(``TASK_REWARD``) with the survival reward (``TASK_SURVIVAL_REWARD`` times -1 at death and the
achievement points). With tasks on:

- the observation gains ``Task`` (``batch["task"]``): the embedding of the agent's task
  (`nmmo.tasks.embedding`, in the config's TASK_EMBEDDING version: `embedding_size(config)` floats;
  `Env.task_encoder` replaces it with your own encoding of the same length);
- ``infos[agent]`` carries ``task`` (its index in the set), ``task_progress`` (0..1) and
  ``task_completed`` (0/1), every step;
- tasks are drawn from their own random stream (`nmmo.tasks.task_rng` of the episode seed), so
  turning tasks on changes nothing else in the episode;
- replays and the viewer show them: `task_header` is the replay header's ``tasks`` entry and
  `task_columns` each frame's task fields (`nmmo.replays.replay`);
- with ``TASK_CURRICULUM`` set (and no sampler given), the env builds that curriculum's sampler
  (`nmmo.tasks.sampling.curriculum_sampler`) and feeds it the outcome of each of its lives as it
  ends (`LifeLedger`: a death, a slot taken by a new agent, the horizon, a reset), before the
  next draw; every env of a vector env thus keeps its own curriculum (the fused engine feeds each
  world's lone env's sampler the same way, `nmmo.engines.fused_tasks`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.state import State
from nmmo.tasks import TaskSet, TaskState, TaskStep, embedding_size, load_task_set, task_rng, task_set_from_data
from nmmo.tasks.sampling import TaskSampler, curriculum_sampler

#: What `tasks=` (or the TASKS key) accepts.
TaskSource = str | Path | TaskSet | TaskSampler | list | dict | None


def as_task_set(tasks: Any) -> TaskSet:
    """A `TaskSet` from a shipped set's name, a path, parsed data (a list of spec tables or a table
    with a ``task`` list) or a TaskSet."""
    if isinstance(tasks, TaskSet):
        return tasks
    if isinstance(tasks, TaskSampler):
        return tasks.tasks
    if isinstance(tasks, (str, Path)):
        return load_task_set(tasks)
    if isinstance(tasks, (list, dict)):
        return task_set_from_data(tasks, "<tasks given to the env>", "inline")
    raise ValueError(f"tasks must be a task set name, a .toml/.json path, a TaskSet or a list of task tables, "
                     f"got {type(tasks).__name__}")


class LifeLedger:
    """Which lives of a set of slots ended since the last tick, and with which outcome: what a
    curriculum is fed. A life is open from the tick its agent is seen alive; it ends when the slot
    is found empty (its outcome: this tick's completion, as the task is evaluated once more on the
    tick its agent dies), taken by a new agent (the last tick's completion: the new life restarted
    the task) or when its world reaches the horizon (this tick's)."""

    def __init__(self, rows: int) -> None:
        self.open = np.zeros(rows, dtype=bool)
        self.ids = np.zeros(rows, dtype=np.int64)
        self.completed = np.zeros(rows, dtype=bool)  # each slot's completion after the last tick

    def start(self, alive: np.ndarray, ids: np.ndarray) -> None:
        """A new episode: the live slots open their lives."""
        self.open[:], self.ids[:], self.completed[:] = alive, ids, False

    def ended(self, alive: np.ndarray, ids: np.ndarray, completed: np.ndarray,
              ending: np.ndarray | bool = False) -> tuple[np.ndarray, np.ndarray]:
        """After a tick: the slots whose lives ended and those lives' outcomes (`ending`: the slots
        whose world reached its horizon)."""
        replaced = self.open & alive & (ids != self.ids)
        ended = self.open & (~alive | replaced | ending)
        outcome = np.where(replaced, self.completed, completed)
        self.open[:] = alive & ~np.asarray(ending, dtype=bool)
        self.ids[:], self.completed[:] = ids, completed
        return np.flatnonzero(ended), outcome[ended]

    def close(self, completed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every open life ends (an early reset): the slots and their last outcomes."""
        slots = np.flatnonzero(self.open)
        self.open[:] = False
        return slots, (self.completed if completed is None else completed)[slots]


class LifeRewards:
    """Each slot's task reward over its agent's life so far: it restarts when a new agent takes the
    slot (what a lifetime that ends reports, `task_outcomes`)."""

    def __init__(self, rows: int) -> None:
        self.total = np.zeros(rows)
        self.ids = np.full(rows, -1, dtype=np.int64)

    def start(self, ids: np.ndarray) -> None:
        self.total[:], self.ids[:] = 0.0, ids

    def add(self, ids: np.ndarray, rewards: np.ndarray) -> None:
        fresh = ids != self.ids
        self.total[fresh], self.ids[fresh] = 0.0, ids[fresh]
        self.total += rewards


def task_outcomes(task: np.ndarray, step, lives: LifeRewards, slots: np.ndarray) -> np.ndarray:
    """(len(slots), 4) float64 rows of (task index, progress, completed, the life's task reward) after
    the last tick `step` (None before the first: no progress yet)."""
    progress = step.progress[slots] if step is not None else np.zeros(len(slots))
    completed = step.completed[slots] if step is not None else np.zeros(len(slots), dtype=bool)
    return np.stack([task[slots], progress, completed, lives.total[slots]], axis=1).astype(np.float64)


class Tasking:
    """An env's tasks, as a component `nmmo.Env` holds (``env.tasking``) and calls: built from the
    env's config and a task source, it is handed the state tables whenever it reads them, so it runs
    (and is tested) without an env. With no task source and no TASKS key it is off (``tasks`` None)
    and every call is a no-op or says so.

    Its `config` is the env's, or, with tasks on, a copy whose TASKS key names the tasks (the
    observation layout reads the key); the env takes it in place of its own."""

    def __init__(self, config: Config, tasks: TaskSource = None) -> None:
        if tasks is None and config.TASKS:
            tasks = config.TASKS
        self.config = config
        self.tasks: TaskState | None = None
        #: the sampler that chooses the tasks at each reset: one given as `tasks`, or the curriculum
        #: TASK_CURRICULUM names (which this component feeds the lives that end), or None
        self.sampler = tasks if isinstance(tasks, TaskSampler) else None
        self.step: TaskStep | None = None  # the last tick's evaluation (None right after a reset)
        self.feeds_sampler = False
        if tasks is None:
            return
        task_set = as_task_set(tasks)
        # a curriculum the env builds itself, it feeds itself (a sampler you pass, you feed)
        self.feeds_sampler = self.sampler is None and bool(config.TASK_CURRICULUM)
        if self.feeds_sampler:
            self.sampler = curriculum_sampler(config.TASK_CURRICULUM, task_set)
        self.lives = LifeLedger(config.PLAYER_N)
        if config.TASKS != str(tasks):
            # the key says tasks are on (the observation layout reads it) and names them; on a copy:
            # the caller's config is not changed
            self.config = copy.copy(config).set(
                "TASKS", str(tasks) if isinstance(tasks, (str, Path)) else f"<{task_set.name}>")
        self.tasks = TaskState(task_set, self.config, assign=self.config.TASK_ASSIGN)
        self.life_rewards = LifeRewards(config.PLAYER_N)
        self.embeddings = np.zeros((config.PLAYER_N, embedding_size(self.config)), dtype=np.float32)

    def reset(self, state: State, episode_seed: int, options: dict | None,
              encoder: Callable[[TaskSet, np.ndarray], np.ndarray] | None = None) -> None:
        """A new episode on `state`: the tasks drawn from the episode seed's own stream (or given in
        ``options["tasks"]``, or by the sampler) and their embeddings (`encoder`'s, when given)."""
        given = (options or {}).get("tasks")
        if self.tasks is None:
            if given is not None:
                raise ValueError("options['tasks'] given, but this env has no tasks: make it with tasks=...")
            return
        rng = task_rng(episode_seed)
        if self.feeds_sampler and self.step is not None:  # lives the reset cuts short, before the draw
            self._feed(*self.lives.close())
        if given is None and self.sampler is not None:
            given = self.sampler.sample(rng, self.tasks.units)
        try:
            self.tasks.reset(state, rng, assignment=given)
        except ValueError as err:
            raise ValueError(f"options['tasks'] (or the sampler's draw): {err}") from None
        self.step = None
        ids = state.entities.id[: self.config.PLAYER_N]
        self.life_rewards.start(ids)
        self.lives.start(state.entities.alive[: self.config.PLAYER_N], ids)
        table = self.tasks.slot_embeddings() if encoder is None else np.asarray(
            encoder(self.tasks.tasks, self.tasks.task), dtype=np.float32)
        if table.shape != self.embeddings.shape:
            raise ValueError(f"task_encoder returned shape {table.shape}, expected {self.embeddings.shape}")
        self.embeddings[:] = table

    def evaluate(self, state: State) -> None:
        """After a tick: every task's reward, progress and completion; the lives that ended feed the
        curriculum."""
        if self.tasks is None:
            return
        self.step = step = self.tasks.evaluate(state)
        ids = state.entities.id[: self.config.PLAYER_N]
        self.life_rewards.add(ids, step.rewards)
        if self.feeds_sampler:
            self._feed(*self.lives.ended(state.entities.alive[: self.config.PLAYER_N], ids, step.completed,
                                         state.tick >= self.config.HORIZON))

    def _feed(self, slots: np.ndarray, completed: np.ndarray) -> None:
        """Report ended lives (their slots' tasks and outcomes) to the env's curriculum."""
        if slots.size:
            self.sampler.update(self.tasks.task[slots], completed)

    def embedding(self, slots: np.ndarray) -> np.ndarray:
        """The observation's ``Task`` field of `slots`."""
        return self.embeddings[slots]

    def rewards(self, slots: np.ndarray) -> np.ndarray | None:
        """The task rewards of `slots` this tick, weighted by TASK_REWARD (None: tasks are off)."""
        if self.tasks is None or self.step is None:
            return None
        return self.step.rewards[slots] * self.config.TASK_REWARD

    def add_infos(self, infos: dict, slots: np.ndarray, ids: list[int]) -> None:
        """``task``, ``task_progress`` and ``task_completed`` of each agent of `slots` (ids `ids`)."""
        if self.tasks is None:
            return
        step = self.step
        task = self.tasks.task[slots].tolist()
        progress = step.progress[slots].tolist() if step is not None else [0.0] * len(task)
        done = step.completed[slots].astype(int).tolist() if step is not None else [0] * len(task)
        for agent, t, p, c in zip(ids, task, progress, done, strict=True):
            info = infos.setdefault(agent, {})
            info["task"], info["task_progress"], info["task_completed"] = t, p, c

    def status(self, slots: np.ndarray) -> np.ndarray:
        """(len(slots), 4) float64 rows of (task index, progress, completed, task reward of the life
        so far) after the last tick: what a lifetime that ends now reports (tasks off: an empty
        table). The reward is the task's own (times the spec's `reward`, before TASK_REWARD)."""
        if self.tasks is None:
            return np.zeros((0, 4))
        return task_outcomes(self.tasks.task, self.step, self.life_rewards, slots)

    def header(self) -> dict:
        """The replay header's task entry: ``{"tasks": {name, names, specs, assign}}`` (the set's name,
        its specs' names and tables, TASK_ASSIGN), or ``{}`` with tasks off."""
        if self.tasks is None:
            return {}
        specs = list(self.tasks.tasks)
        return {"tasks": {"name": self.tasks.tasks.name, "names": [spec.name for spec in specs],
                          "specs": [spec.to_dict() for spec in specs], "assign": self.tasks.assign}}

    def columns(self, state: State, progress: bool = True) -> dict[str, np.ndarray] | None:
        """A frame's task fields (`nmmo.replays.replay.TASK_FIELDS`), one entry per entity slot of
        `state`: ``task`` (int16, the slot's spec index; -1 for NPC rows), ``task_progress`` (int16,
        per-mille; left out with `progress` False) and ``task_done`` (int8) after the last tick; None
        with tasks off."""
        if self.tasks is None:
            return None
        capacity, n = state.entities.alive.size, self.config.PLAYER_N
        task, done = np.full(capacity, -1, dtype=np.int16), np.zeros(capacity, dtype=np.int8)
        task[:n] = self.tasks.task[:n]
        step = self.step
        if step is not None:
            done[:n] = step.completed[:n]
        columns = {"task": task, "task_done": done}
        if progress:
            columns["task_progress"] = permille = np.zeros(capacity, dtype=np.int16)
            if step is not None:
                permille[:n] = np.rint(np.clip(step.progress[:n], 0.0, 1.0) * 1000)
        return columns

    def timing(self, state: State) -> dict[str, float]:
        """Seconds spent so far on the event log and on task evaluation (code timers)."""
        return {} if self.tasks is None else self.tasks.timing(state)
