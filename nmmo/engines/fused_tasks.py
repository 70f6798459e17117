"""Tasks in the fused engine: one `TaskState` evaluates the tasks of all K worlds at once.

Each world's episode starts through its lone env (`FusedWorlds.reset_world`), whose own `Tasking`
draws the world's tasks from the episode seed's task stream and computes their embeddings, as a
lone env does; this module then compiles every world's tasks into one `TaskState` over the fused
tables (world k's slot s is row ``k * PLAYER_N + s``, its map the k-th block of the grid) and
evaluates them once per tick. So world k's task rewards, progress and embeddings are, byte for
byte, a lone env's (tests/test_vector_tasks.py).

The compiled tasks cover every world, so they are rebuilt when the worlds start new episodes. With
respawn on (the configs that train: an episode then ends only at the horizon) every world reaches
it on the same tick and all restart together; without respawn a world whose agents all die would
restart alone, so a vector env with tasks and without respawn uses the loop engine
(`nmmo.engines.blocks.resolve_engine`).

A curriculum (``TASK_CURRICULUM``) lives in each world's lone env, which draws the world's tasks
with it at the world's reset; as the lone envs do not evaluate tasks here, this module tells each
one's sampler of its world's ended lives (`nmmo.envs.tasking.LifeLedger`), in the same order and
with the same outcomes as a lone env would: the loop and fused engines keep the same curricula.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.envs.tasking import LifeLedger, LifeRewards, task_outcomes
from nmmo.tasks import TaskState, TaskStep, embedding_size


class FusedTasks:
    """The tasks of a `FusedWorlds` (see the module notes): `reset` after all worlds reset,
    `evaluate` after every tick; per-slot task rewards, lifetime outcomes and observation rows."""

    def __init__(self, config: Config, worlds) -> None:
        self.config, self.worlds = config, worlds
        self.rows = worlds.n_worlds * config.PLAYER_N
        task_set = worlds.envs[0].tasks.tasks  # every world's lone env loaded the same set
        self.state = TaskState(task_set, config, assign=config.TASK_ASSIGN, n_worlds=worlds.n_worlds)
        self.embeddings = np.zeros((self.rows, embedding_size(config)), dtype=np.float32)
        self.life_rewards = LifeRewards(self.rows)
        self.step: TaskStep | None = None
        self.feeds = worlds.envs[0].tasking.feeds_sampler  # the lone envs keep a curriculum: feed it
        self.lives = LifeLedger(self.rows)

    def reset(self) -> None:
        """Every world has just started an episode: take the tasks each lone env drew for it."""
        envs = self.worlds.envs
        per_slot = np.concatenate([env.tasks.task for env in envs])
        first_slot_of_unit = np.unique(self.state.unit_of_slot(), return_index=True)[1]  # a team's members hold one
        units = per_slot[first_slot_of_unit]
        self.state.reset(self.worlds.state, assignment=units, world_ticks=self.worlds.ticks())
        self.embeddings[:] = np.concatenate([env.tasking.embeddings for env in envs])
        self.step = None
        ids = self.worlds.state.entities.id[: self.rows]
        self.life_rewards.start(ids)
        self.lives.start(self.worlds.state.entities.alive[: self.rows], ids)

    def evaluate(self) -> TaskStep:
        """Every world's tasks after a tick (a lone env's `Tasking.evaluate`)."""
        self.step = step = self.state.evaluate(self.worlds.state, self.worlds.ticks())
        ids = self.worlds.state.entities.id[: self.rows]
        self.life_rewards.add(ids, step.rewards)
        if self.feeds:
            ending = np.repeat(self.worlds.ticks() >= self.config.HORIZON, self.config.PLAYER_N)
            slots, completed = self.lives.ended(self.worlds.state.entities.alive[: self.rows], ids, step.completed,
                                                ending)
            world = slots // self.config.PLAYER_N
            for k in np.unique(world).tolist():  # each world's lives, in slot order, to its lone env's sampler
                mine = world == k
                self.worlds.envs[k].task_sampler.update(self.state.task[slots[mine]], completed[mine])
        return step

    def rewards(self, slots: np.ndarray) -> np.ndarray:
        """The task rewards of `slots` this tick, weighted by TASK_REWARD."""
        return self.step.rewards[slots] * self.config.TASK_REWARD

    def outcome(self, slots: np.ndarray) -> np.ndarray:
        """(len(slots), 4): task index, progress, completed, the life's task reward (`Env.task_status`)."""
        return task_outcomes(self.state.task, self.step, self.life_rewards, slots)

    def write(self, buffers: dict[str, np.ndarray], rows: slice, observed: np.ndarray,
              ending: np.ndarray | None = None) -> None:
        """The rows' task buffers, and the observation's task field of the `observed` slots (the
        live ones and those that died this tick; a lone env leaves the others' rows zero). With
        `ending` (by row): only the final observations' task field of those rows."""
        if ending is not None:
            field = buffers["final_task"][rows]
            field[ending] = 0.0
            field[observed] = self.embeddings[observed]
            return
        status = self.outcome(np.arange(self.rows))
        buffers["task_index"][rows] = status[:, 0]
        buffers["task_progress"][rows] = status[:, 1]
        buffers["task_completed"][rows] = status[:, 2]
        field = buffers["task"][rows]
        field[:] = 0.0
        field[observed] = self.embeddings[observed]
