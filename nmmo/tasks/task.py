"""Tasks held by agents: assignment at reset, then one vectorized evaluation per tick.

`TaskState` is what an env calls::

    tasks = TaskState(load_task_set("foraging"), config)       # assign="agent" or "team"
    tasks.reset(state, rng)                                    # after the realm's reset
    step = tasks.evaluate(state)                               # after every realm tick
    step.rewards, step.progress, step.completed, step.task     # one entry per agent slot

Assignment: one spec per agent slot (``assign="agent"``) or per team (``"team"``: every member
holds it), drawn by weight with the given generator, or given explicitly; the same generator
state gives the same assignment. Use a generator of its own (`task_rng`), not the env's: drawing
from the env's would change the game.

Task types (nmmo 2.1.1's Task, OngoingTask, HoldDurationTask): ``task`` rewards increments of
progress (negative when progress falls) until it completes, then nothing; ``ongoing`` rewards the
progress every tick and is complete exactly while its progress is 1 (nmmo 2.1.1 latched it on the
first such tick, so a StayAlive team task read "completed" at the end of lives that broke it, with
progress 0 beside it; completion now says whether the task held when the life ended, which is what
the task reports and the curricula read); ``hold`` counts consecutive ticks with progress 1, its
progress is that count over `hold`, rewarded by increments, and 1.0 on the tick it completes. ``reward_on =
"completion"`` rewards 1 once when it completes instead (ongoing: every tick it is satisfied).
Rewards are multiplied by the spec's `reward` and go to the agent, or to every member slot of
the team (reward_to = "team").

Lives: a task belongs to an agent's life. An agent's task is evaluated while the agent is alive
and once more on the tick it dies (its last events count); a slot's next agent (respawn) holds
the same spec, started afresh (progress, counts and completion back to zero). A team's task
runs for the whole episode while any member is (or was at the tick's start) alive; respawned
members join it. Slots report their task's index, progress and completion even when empty (the
env decides whom to report to).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

import numpy as np

from nmmo.config import Config
from nmmo.core.state import State
from nmmo.tasks.compiler import Compiled, compile_tasks
from nmmo.tasks.core import ONE, ZERO, Context, Layout, all_of, any_of, clip_ufunc
from nmmo.tasks.embedding import embed
from nmmo.tasks.spec import TaskSet

#: Stream id that `task_rng` mixes into an episode seed, so task draws never touch the game's.
TASK_STREAM = 0x7A5C


def task_rng(episode_seed: int) -> np.random.Generator:
    """The generator tasks of an episode are assigned with: a stream of its own from the seed."""
    return np.random.default_rng([TASK_STREAM, int(episode_seed)])


def _read_only(values: np.ndarray) -> np.ndarray:
    view = values.view()
    view.flags.writeable = False
    return view


@dataclass
class TaskStep:
    """One tick of tasks, one entry per agent slot."""

    rewards: np.ndarray  # float64: task rewards this tick
    progress: np.ndarray  # float64 in [0, 1]: progress of the task the slot holds (read-only)
    completed: np.ndarray  # bool (read-only)
    task: np.ndarray  # int32, read-only: index of the slot's task in the task set (fixed for the episode)


class TaskState:
    """Tasks of `n_worlds` worlds of `config` (the fused engine's layout: world w's slot s is row
    w * PLAYER_N + s); see the module notes. `seconds` is its own evaluation time (a code timer);
    `timing(state)` adds the event log's."""

    def __init__(self, tasks: TaskSet, config: Config, assign: str = "agent", n_worlds: int = 1,
                 skip_completed: bool = True) -> None:
        if assign not in ("agent", "team"):
            raise ValueError(f"assign must be 'agent' or 'team', got {assign!r}")
        self.tasks, self.config, self.assign = tasks, config, assign
        self.skip_completed = skip_completed  # False: evaluate every node every tick (same results, slower)
        self.layout = Layout(config.PLAYER_N, config.PLAYER_TEAM_SIZE, n_worlds)
        self.n_slots = config.PLAYER_N * n_worlds
        weights = np.array([spec.weight for spec in tasks], dtype=np.float64)
        if weights.sum() <= 0:
            raise ValueError(f"{tasks.source}: every task has weight 0: nothing to sample")
        self.weights = weights / weights.sum()
        self.embeddings = np.stack([embed(spec, config.TASK_EMBEDDING) for spec in tasks])  # (tasks, size) float32
        self.row_offset = (np.arange(self.n_slots) // config.PLAYER_N * config.MAP_SIZE).astype(np.int32)
        self._team_of_row: np.ndarray | None = None
        self.seconds = 0.0
        self.task = np.full(self.n_slots, -1, dtype=np.int32)
        self._compiled: Compiled | None = None

    @property
    def units(self) -> int:
        """How many specs an assignment holds: one per slot or one per team."""
        return self.n_slots if self.assign == "agent" else self.layout.n_teams * self.layout.n_worlds

    def reset(self, state: State, rng: np.random.Generator | None = None, assignment=None,
              world_ticks: np.ndarray | None = None) -> None:
        """Assign tasks for a new episode: `assignment` (spec indices, one per unit: slot or team)
        or drawn by weight from `rng`."""
        start = perf_counter()
        if assignment is None:
            if rng is None:
                raise ValueError("pass a numpy Generator (e.g. nmmo.tasks.task_rng(seed)) or an explicit assignment")
            assignment = rng.choice(len(self.tasks), size=self.units, p=self.weights)
        assignment = np.asarray(assignment)
        if (assignment.shape != (self.units,) or not np.issubdtype(assignment.dtype, np.integer)
                or assignment.min() < 0 or assignment.max() >= len(self.tasks)):
            raise ValueError(f"assignment must be {self.units} task indices in [0, {len(self.tasks)}) (one per "
                             f"{self.assign}), got {assignment!r}")
        if self.assign == "team":
            assignment = assignment[self.team_of_slot()]
        self.task[:] = assignment
        self._task_view = self.task.view()
        self._task_view.flags.writeable = False
        self._ticks = np.zeros(self.layout.n_worlds, dtype=np.int64)
        ticks = np.zeros(self.layout.n_worlds, dtype=np.int64) if world_ticks is None else world_ticks
        self._team_of_row = np.full(state.entities.capacity + 1, -1, dtype=np.int64)
        self._team_of_row[: self.n_slots] = self.team_of_slot()
        self._ctx = ctx = Context(state, self.config, self.layout, ticks, self.row_offset, self._team_of_row)
        self._compiled = c = compile_tasks(self.tasks, self.layout, self.task, ctx)
        n = len(c.spec)
        self._progress = np.zeros(n)
        self._completed = np.zeros(n, dtype=bool)
        self._to_complete = np.ones(n)  # progress that completes each task: 1, or inf once it is complete
        self._frozen = np.zeros(n, dtype=bool)  # completed, and not ongoing: progress stays
        self._timer = np.zeros(n)
        self._node_progress = np.zeros(c.n_nodes)
        ent = state.entities
        self._slot_id = ent.id[: self.n_slots].copy()
        self._issued = (state, state.next_player_id)  # no new id issued since: no newcomer to look for
        self._was_alive = ent.alive[: self.n_slots].copy()
        self._was_all_alive = False
        self._tick = -1
        self._refresh_skips()
        self.seconds += perf_counter() - start

    def unit_of_slot(self) -> np.ndarray:
        """Each slot's unit: the slot itself (assign="agent") or its team across worlds ("team")."""
        if self.assign == "agent":
            return np.arange(self.n_slots)
        return self.team_of_slot()

    def team_of_slot(self) -> np.ndarray:
        """Each slot's team, numbered across worlds (world w's team t is w * n_teams + t)."""
        world, local = np.divmod(np.arange(self.n_slots), self.config.PLAYER_N)
        return world * self.layout.n_teams + local // self.layout.team_size

    def evaluate(self, state: State, world_ticks: np.ndarray | None = None) -> TaskStep:
        """Progress and rewards of every task after a tick (`world_ticks`: each world's tick,
        default the state's)."""
        start = perf_counter()
        c = self._compiled
        if c is None:
            raise RuntimeError("call TaskState.reset(state, rng) before evaluate()")
        ent, n = state.entities, self.n_slots
        alive = ent.alive[:n]
        seen_state, seen_id = self._issued
        same_ids = state is seen_state and state.next_player_id == seen_id and state.written is not None
        if world_ticks is None and same_ids:
            newcomer = None  # a lone world's ticks issue a new id to every agent they spawn
        else:
            newcomer, self._issued = self._newcomers(alive, ent.id[:n]), (state, state.next_player_id)
        if world_ticks is None and state.tick != self._tick:
            self._tick = state.tick
            self._ticks.fill(self._tick)
        ctx = self._ctx
        ctx.advance(state, self._ticks if world_ticks is None else world_ticks, newcomer)
        active = None  # every instance: some slot of each is alive, or was when the tick began
        if not ctx.all_alive:
            active_slot = alive | self._was_alive
            if not all_of(active_slot):
                active = np.bincount(c.recipient_inst, weights=active_slot[c.recipient_slot], minlength=len(c.spec)) > 0
        progress = self._node_progress  # every node is written below: terms, batches, combinations
        if c.terms is not None:
            c.terms.evaluate(ctx, out=progress[c.terms.block])
        for batch, skip in zip(c.batches, self._skip, strict=True):
            if skip:  # every task reading it is done: its progress stays as it was
                continue
            values = clip_ufunc(batch.predicate.progress(ctx, batch), ZERO, ONE, out=progress[batch.block])
            negated = batch.static["negated"]
            if negated.size:
                values[negated] = 1.0 - values[negated]
        for level in c.levels:
            level.apply(progress)
        rewards = self._account(progress[c.root], active)  # every node's progress is already in [0, 1]

        if not (ctx.all_alive and self._was_all_alive):
            self._was_alive[:] = alive
            self._was_all_alive = ctx.all_alive
        if c.paid_in_order:  # a fresh array each tick
            slot_rewards = rewards
        else:
            paid = rewards if c.one_recipient else rewards[c.recipient_inst]
            slot_rewards = np.bincount(c.recipient_slot, weights=paid, minlength=n)
        if c.held_in_order:  # never changed in place once computed (each tick makes new ones): read-only
            self._progress.flags.writeable = self._completed.flags.writeable = False
            step = TaskStep(slot_rewards, self._progress, self._completed, self._task_view)
        else:
            step = TaskStep(slot_rewards, _read_only(self._progress[c.held]), _read_only(self._completed[c.held]),
                            self._task_view)
        self.seconds += perf_counter() - start
        return step

    def _newcomers(self, alive: np.ndarray, ids: np.ndarray) -> np.ndarray | None:
        """Slots with a new agent this tick (None: none), whose tasks start afresh."""
        changed = ids != self._slot_id  # a dead agent keeps its id until a new one takes the slot
        if not any_of(changed):
            return None
        newcomer = alive & changed
        if not any_of(newcomer):
            return None
        self._slot_id[newcomer] = ids[newcomer]
        self._restart(newcomer)
        return newcomer

    def _account(self, value: np.ndarray, active: np.ndarray | None) -> np.ndarray:
        """Rewards of every instance from this tick's predicate value; progress, completion and
        hold timers advance for the active ones (None: all)."""
        c = self._compiled
        done, before = self._completed, self._progress
        if c.any_hold:
            timer = self._timer + ONE
            timer *= value >= ONE  # consecutive satisfied ticks
            progress = np.minimum(np.multiply(timer, c.inv_hold), ONE)
            np.copyto(progress, value, where=c.not_hold)
        else:
            progress = value.copy()  # `value` is still read below (ongoing rewards)
        np.copyto(progress, before, where=self._frozen)  # a completed task stays as it was
        just = progress >= self._to_complete  # newly complete (one comparison: a done task's bar is inf)
        if c.any_ongoing:  # an ongoing task is paid its value (= its progress) each tick, not its increment
            rewards = np.subtract(progress, np.multiply(before, c.not_ongoing_weight))
        else:
            rewards = progress - before
        any_just = any_of(just)
        completed = done | just if any_just else done
        if c.any_ongoing:  # an ongoing task is complete while it holds, not from its first good tick on
            completed = np.where(c.not_ongoing, completed, progress >= ONE)
        if c.any_hold and any_just:
            rewards[c.is_hold & just] = 1.0
        if c.any_completion:
            rewards = np.where(c.on_completion, np.where(c.not_ongoing, just, value >= 1.0), rewards)
        if not c.unit_reward:
            rewards *= c.multiplier
        if active is not None:
            progress, completed = np.where(active, progress, before), np.where(active, completed, done)
            if c.any_hold:
                timer = np.where(active, timer, self._timer)
            rewards = np.where(active, rewards, 0.0)
        self._progress, self._completed = progress, completed
        if c.any_hold:
            self._timer = timer
        if any_just or active is not None:
            self._to_complete = np.where(self._completed, np.inf, 1.0)
        if any_just:
            frozen, before_count = self._completed & c.not_ongoing, np.count_nonzero(self._frozen)
            self._frozen = frozen
            if np.count_nonzero(frozen) != before_count:  # only grows here; ongoing tasks never freeze
                self._refresh_skips()
        return rewards

    def _restart(self, slots_mask: np.ndarray) -> None:
        c = self._compiled
        instances = (c.inst_slot >= 0) & slots_mask[np.maximum(c.inst_slot, 0)]
        thawed = any_of(self._frozen & instances)  # a completed task restarts: what was skipped runs again
        self._progress = np.where(instances, 0.0, self._progress)  # new arrays: the last step's stay as they were
        self._completed = self._completed & ~instances
        self._to_complete = np.where(self._completed, np.inf, 1.0)
        self._frozen[instances] = False
        self._timer[instances] = 0.0
        for batch, owners in zip(c.batches, c.leaf_inst, strict=True):
            batch.restart(instances[owners])
        if c.terms is not None:
            c.terms.restart(instances[c.term_inst])
        if thawed:
            self._refresh_skips()

    def _refresh_skips(self) -> None:
        """What to skip: batches without state of their own (`Leaves.kept`) whose every leaf
        belongs to a completed task-type task (nmmo 2.x stops evaluating those too), and the
        feature columns only such leaves read. Changes only when a task completes or restarts."""
        c = self._compiled
        frozen = self._frozen if self.skip_completed else np.zeros_like(self._frozen)
        if c.stateless_owner.size:  # count each stateless batch's leaves that still run
            running = np.bincount(c.stateless_batch, weights=~frozen[c.stateless_owner], minlength=len(c.batches))
            self._skip = ((running == 0) & c.stateless_mask).tolist()
        else:
            self._skip = [False] * len(c.batches)
        if c.terms is not None:
            c.terms.skip_done(frozen[c.term_inst])
        for level in c.levels:
            level.skip_done(frozen)

    def slot_embeddings(self) -> np.ndarray:
        """(slots, embedding_size(config)) float32: the embedding of each slot's task."""
        return self.embeddings[self.task]

    def timing(self, state: State) -> dict[str, float]:
        """Seconds spent so far: writing the event log (``state.event_seconds``) and on tasks."""
        return {"events_s": float(state.event_seconds), "tasks_s": float(self.seconds)}
