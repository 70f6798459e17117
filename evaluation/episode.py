"""One evaluation episode: several policies share one world for a fixed number of ticks.

Agent slots are dealt to policies in equal shares (the first policies get one more when the slots
do not divide evenly) in an order drawn from the episode seed and the tournament's secret
(`deal`), so nothing an agent can observe of another (its id, its TEAM column, where it spawned)
says which policy controls it; an agent that respawns into a slot plays for that slot's policy.
The secret also salts the seeds policies get in `reset(seed)`: a submission cannot search the
run seeds for the one that gave its reset seed and then recompute the deal. With teams (PLAYER_TEAM_SIZE > 1)
whole teams are dealt, so teammates always play for the same policy. Every lifetime the engine
reports (deaths, and everyone alive at the horizon) is credited to its agent's policy.
Episodes are self-contained tasks (picklable, the config as TOML text) so a process pool can run
them in any order and the results do not depend on that order.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import nmmo
from evaluation.metrics import GAME_METRICS, METRICS, TASK_METRICS, aggregate_by_policy, lifetime_matrix, policy_means
from evaluation.sandbox.host import Limits, end_of_episode
from evaluation.submission import START_METHOD, Faults, is_trusted, make_handle
from evaluation.task_deal import deal_tasks
from evaluation.value_overlays import ValueOverlays
from nmmo import config as config_module
from nmmo import console
from nmmo.config import Config
from nmmo.core.actions import NO_OP_ROW
from nmmo.core.layout import ObsBatch
from nmmo.engines.process import die_with_parent
from nmmo.envs.outcomes import BatchStep

BACKENDS = ("process", "ray")


# ------------------------------------------------------------------ setup
def with_horizon(config: Config, ticks: int) -> Config:
    """A copy of `config` whose episodes last exactly `ticks` ticks (the caller's config is untouched),
    at a minigame's fixed difficulty: evaluation episodes do not depend on their order, so the
    curriculum of training (GAME_ADAPTIVE) is off."""
    if not isinstance(ticks, int) or ticks < 1:
        raise ValueError(f"ticks must be a positive int, got {ticks!r}")
    copy = config_module.from_toml(config.to_toml(), config.name)
    copy.description = config.description
    return copy.set("HORIZON", ticks).set("GAME_ADAPTIVE", False)


def shuffled_tasks(batch: ObsBatch) -> ObsBatch:
    """`batch` with each agent's task embedding replaced by another task's: the distinct tasks in
    the batch in a cycle (sorted), each agent reads the one after its own, so none reads its own
    task (teammates, who share one, all read the same other). Completion is still scored on each
    agent's own task, so a policy that uses its task input completes fewer tasks this way; one that
    ignores it, as many. A batch with fewer than two distinct tasks is returned as it is."""
    task = batch.arrays.get("task")
    if task is None or batch.n < 2:
        return batch
    distinct, which = np.unique(task, axis=0, return_inverse=True)
    if len(distinct) < 2:
        return batch
    return replace(batch, arrays={**batch.arrays, "task": distinct[(which.ravel() + 1) % len(distinct)]})


def episode_seeds(seed: int, episodes: int) -> list[int]:
    """Independent env seeds for episodes 0..n-1, all derived from one run seed."""
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(episodes)]


def policy_seed(episode_seed: int, index: int, secret: int | None = None) -> int:
    """Seed for `reset(seed)` of the policy at position `index` in one episode, salted by the
    tournament's `secret` (None: unsalted, as `evaluate` runs one policy and has no deal to hide)."""
    return int(np.random.SeedSequence([episode_seed, index, *_salt(secret)]).generate_state(1)[0])


def draw_secret() -> int:
    """A fresh tournament secret: 128 bits from the OS, so no one can guess or search it."""
    return secrets.randbits(128)


def _salt(secret: int | None) -> list[int]:
    if secret is None:
        return []
    if not isinstance(secret, int) or isinstance(secret, bool) or secret < 0:
        raise ValueError(f"the tournament secret must be a non-negative int, got {secret!r}")
    return [secret]


def eval_map_seeds(config: Config, episodes: int) -> list[int]:
    """Held-out map of each episode: episode i plays on evaluation map i (wrapping around the pool)."""
    return [nmmo.core.world.map_seed(config, i % config.MAP_N_EVAL, "eval") for i in range(episodes)]


# ---------------------------------------------------------------- episode
@dataclass(frozen=True)
class EpisodeTask:
    """Everything a worker process needs to play one episode. The episode lasts the config's HORIZON."""

    index: int
    config_text: str
    config_name: str
    policies: tuple[str, ...]
    seed: int
    map_seed: int
    time_budget: float = 1.0
    limits: Limits = Limits()  # bounds on submissions' worker processes
    max_restarts: int = 5
    replay_path: str | None = None  # record the episode and save the replay here
    secret: int | None = None  # salts the deal and the policies' reset seeds (never sent to a worker)
    task_input: str = "own"  # "shuffled": each agent reads another task's embedding (`shuffled_tasks`)
    replay_names: tuple[str, ...] | None = None  # the policies' names in the replay (None: their specs)


@dataclass
class EpisodeResult:
    """Lifetimes (one row per lifetime, columns `METRICS`), which policy each belongs to, and faults."""

    index: int
    seed: int
    map_seed: int
    ticks: int
    lifetimes: np.ndarray
    owners: np.ndarray
    faults: list[Faults]
    engine_errors: int = 0  # ticks the engine rejected the validated actions (should stay 0)
    seconds: float = 0.0
    policies: tuple[str, ...] = field(default=())
    teams: np.ndarray | None = None  # team of each lifetime (slot // PLAYER_TEAM_SIZE)
    tasks: np.ndarray | None = None  # with tasks on: (task index, progress, completed, reward) of each lifetime
    won: np.ndarray | None = None  # in a minigame: 1.0 where the lifetime's team won the episode, else 0.0

    @property
    def names(self) -> tuple[str, ...]:
        """The metrics of its lifetimes: `METRICS`, `TASK_METRICS` with tasks on, `GAME_METRICS` in a game."""
        return (*METRICS, *(TASK_METRICS if self.tasks is not None else ()), *(GAME_METRICS if self.won is not None
                                                                               else ()))

    def table(self) -> np.ndarray:
        """One row per lifetime, one column per metric of `names`."""
        columns = [self.lifetimes]
        if self.tasks is not None:
            columns.append(self.tasks[:, [3, 2]])
        if self.won is not None:
            columns.append(self.won.reshape(-1, 1))
        return np.concatenate(columns, axis=1) if len(columns) > 1 else self.lifetimes

    def scores(self, metric: str = "achievement") -> list[float | None]:
        """Per policy, the mean of `metric` over its agents' lifetimes (the episode's ranking score);
        None for a policy that never ran in this episode (it could not be built): it is not ranked."""
        means = policy_means(self.table(), self.owners, len(self.policies), metric, self.names)
        return [None if faults.not_started else mean for mean, faults in zip(means, self.faults, strict=True)]

    def metrics(self) -> dict[str, dict[str, dict]]:
        """{policy: {metric: {"mean", "std", "count"}}} for this episode."""
        return aggregate_by_policy(self.table(), self.owners, self.policies, self.names)


#: Stream of the episode seed that `deal` draws from (apart from the env's own stream).
DEAL_STREAM = 0x0DEA1


def deal(seed: int, n_teams: int, n_policies: int, secret: int | None = None) -> np.ndarray:
    """Policy index of each team (a team of one is a slot): equal shares, the first ``n_teams %
    n_policies`` policies one more, in an order drawn from the episode seed and the `secret`."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, DEAL_STREAM, *_salt(secret)]))
    return rng.permutation(np.arange(n_teams) % n_policies)


def _live(env: nmmo.Env, team_policy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids of the live agents, the policy each plays for (its team's, `team_policy`) and its team."""
    ids, slots = env.live_players()
    teams = slots // env.config.PLAYER_TEAM_SIZE
    return ids.astype(np.int64), team_policy[teams], teams


def _respawns_coming(env: nmmo.Env) -> bool:
    """Everybody died but the episode goes on: respawns will bring agents back before the horizon
    (the dict API ticks through such a gap inside one step; the array API one tick per step)."""
    return not env.done and bool(env.config.PLAYER_RESPAWN and env.config.PLAYER_SPAWN_ATTEMPTS)


def _finished_lifetimes(step: BatchStep) -> dict[int, dict[str, Any]]:
    """{agent: lifetime metrics} of the agents whose lives ended in this array step."""
    if step.episodes is None:
        return {}
    agents = step.agent_ids[step.episode_slots].tolist()
    return {agent: {name: values[i].item() for name, values in step.episodes.items()}
            for i, agent in enumerate(agents)}


def run_episode(task: EpisodeTask) -> EpisodeResult:
    """Play one episode to its horizon (or until nobody is left) and return its lifetimes."""
    start = time.perf_counter()
    config = config_module.from_toml(task.config_text, task.config_name)
    n = len(task.policies)
    env = nmmo.Env(config, seed=task.seed, record=task.replay_path is not None)
    handles = [make_handle(spec, config, task.time_budget, task.limits, task.max_restarts)
               for spec in task.policies]
    order = sorted(range(n), key=lambda p: is_trusted(task.policies[p]))  # workers think while others run
    owner_of = np.full(len(env.possible_agents) + 1, -1, dtype=np.int64)
    team_of = np.full(len(env.possible_agents) + 1, -1, dtype=np.int64)
    reported: dict[int, dict] = {}
    task_rows: dict[int, np.ndarray] = {}  # with tasks on: each finished lifetime's task outcome
    engine_errors = 0
    team_policy = deal(task.seed, -(-config.PLAYER_N // config.PLAYER_TEAM_SIZE), n, task.secret)
    try:
        options = {"map_seed": task.map_seed}
        if env.tasks is not None and n > 1:  # every policy's agents hold the same tasks
            options["tasks"] = deal_tasks(env.tasks, team_policy, n, task.seed, _salt(task.secret))
        env.reset(seed=task.seed, options=options)
        for p, handle in enumerate(handles):
            handle.reset(policy_seed(task.seed, p, task.secret))
        ids, owners, teams = _live(env, team_policy)
        owner_of[ids], team_of[ids] = owners, teams
        values = ValueOverlays(env, handles) if task.replay_path is not None else None
        while env.agents or _respawns_coming(env):
            batch = env.observations()  # the live agents in slot order, as `_live` lists them
            seen = [batch.select(owners == p) for p in range(n)]
            if task.task_input == "shuffled":
                seen = [shuffled_tasks(part) for part in seen]
            for p in order:
                handles[p].submit(seen[p])
            actions = np.tile(np.array(NO_OP_ROW, dtype=np.int64), (env.n_slots, 1))
            slot_of = dict(zip(ids.tolist(), env.live_players()[1].tolist(), strict=True))
            for p in order:
                agents, rows = handles[p].collect_rows()  # validated: agents are the policy's own
                actions[[slot_of[a] for a in agents.tolist()]] = rows
            if values is not None:
                values.add(seen, env.tick)
            try:
                step = env.step_arrays(actions)
            except ValueError:  # the world did not advance: play the tick with everyone idle
                engine_errors += 1
                step = env.step_arrays(np.tile(np.array(NO_OP_ROW, dtype=np.int64), (env.n_slots, 1)))
            ids, owners, teams = _live(env, team_policy)
            owner_of[ids], team_of[ids] = owners, teams
            reported.update(_finished_lifetimes(step))
            if env.tasks is not None and step.episode_slots is not None:
                task_rows.update(zip(step.agent_ids[step.episode_slots].tolist(), env.task_status(step.episode_slots),
                                     strict=True))
        if task.replay_path is not None:
            env.save_replay(task.replay_path, policies=list(task.replay_names or task.policies),
                            team_policy=team_policy.tolist())
    finally:
        for handle in handles:
            handle.close()
        end_of_episode()
    agents = np.fromiter(reported, dtype=np.int64, count=len(reported))
    owners_all = owner_of[agents]
    keep = owners_all >= 0
    matrix = lifetime_matrix(list(reported.values()))[keep] if reported else np.zeros((0, len(METRICS)))
    tasks = np.array([task_rows[a] for a in agents[keep].tolist()]).reshape(-1, 4) if env.tasks is not None else None
    won = np.isin(team_of[agents][keep], env.game_winners()).astype(np.float64) if env.game is not None else None
    return EpisodeResult(task.index, task.seed, task.map_seed, env.tick, matrix, owners_all[keep],
                         [h.faults for h in handles], engine_errors, time.perf_counter() - start, task.policies,
                         team_of[agents][keep], tasks, won)


def episode_worker(parent: int) -> None:
    """Set up an episode process: it dies with its parent and ignores Ctrl-C (`die_with_parent`), and
    its torch math (a neural policy, the value landscape) runs on one thread: with several episodes
    in parallel, each process's default of one thread per core made them fight over the cores (a
    2-worker tournament with baseline:small took 27.6 s instead of 8.5 s)."""
    die_with_parent(parent)
    os.environ["OMP_NUM_THREADS"] = "1"  # read by torch when the episode first imports it
    torch = sys.modules.get("torch")
    if torch is not None:  # already imported (a forked parent): set it directly
        torch.set_num_threads(1)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued episodes and end the running ones now: an interrupted run keeps what
    finished (the journal) and must not wait for episodes nobody will read."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # the executor has no public handle
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join(timeout=5)
    if manager is not None:
        # let the executor's thread close its wake-up pipe now: at interpreter exit Python 3.11
        # writes to that pipe unlocked, and a close racing the write printed "Bad file descriptor"
        manager.join(timeout=5)


def run_episodes(tasks: Sequence[EpisodeTask], workers: int = 2, progress: bool = True, desc: str = "episodes",
                 backend: str = "process", ray_address: str | None = None,
                 on_result: Callable[[EpisodeResult], None] | None = None) -> list[EpisodeResult]:
    """Run episodes in a pool of `workers` processes (0: one after another in this process) or,
    with ``backend="ray"``, `workers` Ray actors; return their results in task order, whatever
    order they finish in. `on_result` sees each result as it arrives (to grow a live table or a
    journal)."""
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    results: list[EpisodeResult | None] = [None] * len(tasks)
    # nothing to play (a resumed run whose journal holds every episode): no "0/0 episodes" line
    with console.progress(total=len(tasks), desc=desc, unit="episode", enabled=progress and bool(tasks)) as bar:

        def finished(i: int, result: EpisodeResult) -> None:
            results[i] = result
            bar.update()
            if on_result is not None:
                on_result(result)

        if backend == "ray":
            pool = RayEpisodePool(max(workers, 1), ray_address)
            try:
                pool.run(tasks, finished)
            finally:
                pool.close()
        elif workers == 0:
            for i, task in enumerate(tasks):
                finished(i, run_episode(task))
        else:
            context = multiprocessing.get_context(START_METHOD)
            pool = ProcessPoolExecutor(min(workers, len(tasks)) or 1, mp_context=context, initializer=episode_worker,
                                       initargs=(os.getpid(),))
            try:
                futures = {pool.submit(run_episode, task): i for i, task in enumerate(tasks)}
                for future in as_completed(futures):
                    finished(futures[future], future.result())
            except BaseException:  # an engine error or Ctrl-C: stop the running episodes, start no queued one
                stop_pool(pool)
                raise
            pool.shutdown(wait=True)
    return results  # type: ignore[return-value]


class EpisodeWorker:
    """A Ray actor that plays episodes (stateless: every task carries all it needs)."""

    def run(self, task: EpisodeTask) -> EpisodeResult:
        return run_episode(task)

    def pid(self) -> int:
        import os

        return os.getpid()


class RayEpisodePool:
    """`workers` Ray actors fed one episode at a time. An actor that dies mid-episode (node lost,
    process killed) is replaced and the episode runs again on the new one; since an episode is a
    pure function of its task, the result is the one the lost actor would have returned."""

    def __init__(self, workers: int, address: str | None = None, max_attempts: int = 3) -> None:
        from nmmo.engines import distributed

        self.ray = distributed.init(address)
        distributed.check_capacity(self.ray, workers)
        self.remote_class = self.ray.remote(num_cpus=1, max_restarts=0)(EpisodeWorker)
        self.actors = [self.remote_class.remote() for _ in range(workers)]
        self.max_attempts = max_attempts
        self.retries = 0  # episodes run again after their actor died

    def run(self, tasks: Sequence[EpisodeTask], finished: Callable[[int, EpisodeResult], None]) -> None:
        """Play every task; call ``finished(i, result)`` as each completes."""
        queue = list(range(len(tasks)))[::-1]
        attempts = [0] * len(tasks)
        running: dict[Any, tuple[int, int]] = {}  # ref -> (task index, actor slot)

        def dispatch(slot: int) -> None:
            if queue:
                i = queue.pop()
                attempts[i] += 1
                running[self.actors[slot].run.remote(tasks[i])] = (i, slot)

        for slot in range(len(self.actors)):
            dispatch(slot)
        while running:
            [ref], _ = self.ray.wait(list(running), num_returns=1)
            i, slot = running.pop(ref)
            try:
                result = self.ray.get(ref)
            except self.ray.exceptions.RayActorError:
                if attempts[i] >= self.max_attempts:
                    raise RuntimeError(f"episode {tasks[i].index} lost its Ray actor {attempts[i]} times") from None
                self.retries += 1
                self.actors[slot] = self.remote_class.remote()
                queue.append(i)  # next in line, on the replacement actor
                dispatch(slot)
                continue
            finished(i, result)
            dispatch(slot)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
