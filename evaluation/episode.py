"""One evaluation episode: several policies share one world for a fixed number of ticks.

Agent slots are split among policies round-robin (slot % number of policies), so the split is even
with the remainder going to the first policies, and an agent that respawns into a slot plays for
that slot's policy. Every lifetime the engine reports (deaths, and everyone alive at the horizon)
is credited to its agent's policy. Episodes are self-contained tasks (picklable, the config as TOML
text) so a process pool can run them in any order and the results do not depend on that order.
"""

from __future__ import annotations

import multiprocessing
import time
import tomllib
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np

import nmmo
from evaluation.metrics import METRICS, aggregate_by_policy, lifetime_matrix, lifetimes_from_infos, policy_means
from evaluation.submission import START_METHOD, Faults, is_trusted, make_handle
from nmmo import config as config_module
from nmmo.config import Config


# ------------------------------------------------------------------ setup
def config_from_toml(text: str, name: str = "custom") -> Config:
    """Rebuild a config from `Config.to_toml()` text (how configs travel to worker processes and
    into result files: a config class made from a TOML file cannot be pickled)."""
    return config_module.from_spec(tomllib.loads(text), name=name, source=f"<{name} TOML>")


def with_horizon(config: Config, ticks: int) -> Config:
    """A copy of `config` whose episodes last exactly `ticks` ticks (the caller's config is untouched)."""
    if not isinstance(ticks, int) or ticks < 1:
        raise ValueError(f"ticks must be a positive int, got {ticks!r}")
    copy = config_from_toml(config.to_toml(), config.name)
    copy.description = config.description
    return copy.set("HORIZON", ticks)


def episode_seeds(seed: int, episodes: int) -> list[int]:
    """Independent env seeds for episodes 0..n-1, all derived from one run seed."""
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(episodes)]


def policy_seed(episode_seed: int, index: int) -> int:
    """Seed for `reset(seed)` of the policy at position `index` in one episode."""
    return int(np.random.SeedSequence([episode_seed, index]).generate_state(1)[0])


def eval_map_seeds(config: Config, episodes: int) -> list[int]:
    """Held-out map of each episode: episode i plays on evaluation map i (wrapping around the pool)."""
    return [nmmo.world.map_seed(config, i % config.MAP_N_EVAL, "eval") for i in range(episodes)]


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
    startup_timeout: float = 60.0
    max_restarts: int = 5
    replay_path: str | None = None  # record the episode and save the replay here


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

    def scores(self, metric: str = "achievement") -> list[float | None]:
        """Per policy, the mean of `metric` over its agents' lifetimes (the episode's ranking score)."""
        return policy_means(self.lifetimes, self.owners, len(self.policies), metric)

    def metrics(self) -> dict[str, dict[str, dict]]:
        """{policy: {metric: {"mean", "std", "count"}}} for this episode."""
        return aggregate_by_policy(self.lifetimes, self.owners, self.policies)


def _live(env: nmmo.Env, n_policies: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the live agents and the policy each plays for (its slot mod the number of policies)."""
    ent = env.realm.state.entities
    slots = np.flatnonzero(ent.alive[: env.n_slots])
    return ent.id[slots].astype(np.int64), slots % n_policies


def run_episode(task: EpisodeTask) -> EpisodeResult:
    """Play one episode to its horizon (or until nobody is left) and return its lifetimes."""
    start = time.perf_counter()
    config = config_from_toml(task.config_text, task.config_name)
    n = len(task.policies)
    env = nmmo.Env(config, seed=task.seed, record=task.replay_path is not None)
    handles = [make_handle(spec, config, task.time_budget, task.startup_timeout, task.max_restarts)
               for spec in task.policies]
    order = sorted(range(n), key=lambda p: is_trusted(task.policies[p]))  # workers think while others run
    owner_of = np.full(len(env.possible_agents) + 1, -1, dtype=np.int64)
    reported: dict[int, dict] = {}
    engine_errors = 0
    try:
        obs, _ = env.reset(seed=task.seed, options={"map_seed": task.map_seed})
        for p, handle in enumerate(handles):
            handle.reset(policy_seed(task.seed, p))
        ids, owners = _live(env, n)
        owner_of[ids] = owners
        while env.agents:
            for p in order:
                handles[p].submit({agent: obs[agent] for agent in ids[owners == p].tolist()})
            actions: dict[int, dict] = {}
            for p in order:
                actions.update(handles[p].collect())
            try:
                obs, _, _, _, infos = env.step(actions)
            except ValueError:  # the world did not advance: play the tick with everyone idle
                engine_errors += 1
                obs, _, _, _, infos = env.step({})
            ids, owners = _live(env, n)
            owner_of[ids] = owners
            reported.update(lifetimes_from_infos(infos))
        if task.replay_path is not None:
            env.save_replay(task.replay_path)
    finally:
        for handle in handles:
            handle.close()
    agents = np.fromiter(reported, dtype=np.int64, count=len(reported))
    owners_all = owner_of[agents]
    keep = owners_all >= 0
    matrix = lifetime_matrix(list(reported.values()))[keep] if reported else np.zeros((0, len(METRICS)))
    return EpisodeResult(task.index, task.seed, task.map_seed, int(env.realm.state.tick), matrix, owners_all[keep],
                         [h.faults for h in handles], engine_errors, time.perf_counter() - start, task.policies)


def run_episodes(tasks: Sequence[EpisodeTask], workers: int = 2, progress: bool = True,
                 desc: str = "episodes") -> list[EpisodeResult]:
    """Run episodes in a pool of `workers` processes (0: one after another in this process) and
    return their results in task order, whatever order they finish in."""
    from tqdm import tqdm

    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    results: list[EpisodeResult | None] = [None] * len(tasks)
    with tqdm(total=len(tasks), desc=desc, unit="episode", disable=not progress) as bar:
        if workers == 0:
            for i, task in enumerate(tasks):
                results[i] = run_episode(task)
                bar.update()
        else:
            context = multiprocessing.get_context(START_METHOD)
            with ProcessPoolExecutor(min(workers, len(tasks)) or 1, mp_context=context) as pool:
                futures = {pool.submit(run_episode, task): i for i, task in enumerate(tasks)}
                try:
                    for future in as_completed(futures):
                        results[futures[future]] = future.result()
                        bar.update()
                except BaseException:  # an engine error or Ctrl-C: do not start the queued episodes
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
    return results  # type: ignore[return-value]
