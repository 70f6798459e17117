"""Self-contained evaluation and TrueSkill tournaments on held-out maps.

- `evaluate`: one policy controls every agent for N ticks, on several seeds and held-out maps;
  the result is its metric table.
- `run_tournament`: a few policies share one world (Scripted Combat always among them, as the SR
  anchor) in equal shares of a fixed population dealt at random; episode i runs on held-out map i;
  each episode ranks the policies by the mean of a metric over their agents' lifetimes
  (lifetime by default, ties broken by mean achievement, remaining ties are draws) and TrueSkill
  is updated from the rankings in episode order, so the SR after every episode shows convergence.
  The canonical format is the `tournament` config (`TOURNAMENT_CONFIG`).

Both return a JSON-ready dict (see `evaluation.results` for saving and loading it) holding what is
needed to reproduce the run: the config as TOML, seeds, map seeds, policy specs and versions.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trueskill

import nmmo
from evaluation.episode import (
    EpisodeResult,
    EpisodeTask,
    draw_secret,
    episode_seeds,
    eval_map_seeds,
    policy_seed,
    run_episodes,
    with_horizon,
)
from evaluation.metrics import (
    GAME_METRICS,
    METRICS,
    TASK_INPUTS,
    TASK_METRICS,
    aggregate_by_policy,
    aggregate_teams,
    check_metric,
)
from evaluation.rating import ANCHOR, BETA, Ratings, all_way_ties, episode_ranks, history_entry, payoff_table
from evaluation.sandbox.host import Limits
from evaluation.submission import Faults, check_private, check_spec
from evaluation.task_results import task_report
from nmmo import config as config_module
from nmmo.config import Config
from nmmo.policy import display_names
from nmmo.tasks import TaskSet, load_task_set
from nmmo.tasks.spec import task_set_key

FORMAT = "flatmmo-evaluation"
FORMAT_VERSION = 2  # v2: equal shares dealt at random, a tie-break metric instead of random tie orders
#: The canonical tournament format (configs/tournament.toml): `nmmo tournament`'s default config.
TOURNAMENT_CONFIG = "tournament"
#: What ranks policies in an episode by default: how long their agents lived (mean ticks), and what
#: orders equal lifetimes: their achievement points. Survival integrates every skill of the game
#: (foraging, fighting, avoiding NPCs); achievement first ranked `random` above Meander, from kills
#: of starving agents that chance hands it (docs/evaluation.md, "Score").
METRIC = "lifetime"
TIE_BREAK = "achievement"


def versions() -> dict[str, str]:
    """Versions that can change results: this package, numpy, Python and trueskill."""
    try:
        package = importlib.metadata.version("flatmmo")
    except importlib.metadata.PackageNotFoundError:
        package = nmmo.__version__
    return {"flatmmo": package, "numpy": np.__version__, "python": platform.python_version(),
            "trueskill": trueskill.__version__}


def tournament_policies(policies: Sequence[str], anchor: str = ANCHOR) -> list[str]:
    """The policies in the order given, each once, with the anchor appended when it is missing."""
    specs = [str(p).strip() for p in policies]
    if not specs or any(not p for p in specs):
        raise ValueError("give at least one policy spec (random, idle, scripted:Forage, file.py:Class, ...)")
    repeated = sorted({p for p in specs if specs.count(p) > 1})
    if repeated:
        raise ValueError(f"policy listed more than once: {', '.join(repeated)}")
    return specs if anchor in specs else [*specs, anchor]


def equal_shares(config: Config, n_policies: int) -> Config:
    """`config` with PLAYER_N cut to the largest population every policy gets an equal share of
    (whole teams; a copy when it changes). A policy's score is a mean over its agents, so equal
    shares are not needed for fairness, but they keep every policy's sample the same size."""
    team = config.PLAYER_TEAM_SIZE
    teams = -(-config.PLAYER_N // team)
    population = team * n_policies * (teams // n_policies)
    if population == 0:
        raise ValueError(f"{n_policies} policies need at least {n_policies} teams of {team}, but PLAYER_N="
                         f"{config.PLAYER_N} in {config.name}")
    if population == config.PLAYER_N:
        return config
    return with_horizon(config, config.HORIZON).set("PLAYER_N", population)


def _check_settings(config: Config, n_policies: int, episodes: int, workers: int, time_budget: float) -> None:
    """User-input checks that would otherwise fail deep inside a worker process."""
    if not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    if not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers must be >= 0 (0 runs episodes in this process), got {workers!r}")
    if not time_budget > 0:
        raise ValueError(f"the per-tick time budget must be positive, got {time_budget!r}")
    if n_policies > config.PLAYER_N:
        raise ValueError(f"{n_policies} policies but only PLAYER_N={config.PLAYER_N} agent slots in {config.name}")


def _header(mode: str, config: Config, policies: list[str], seeds: list[int], map_seeds: list[int],
            settings: dict[str, Any]) -> dict[str, Any]:
    """The reproducibility part of a result file, shared by both modes."""
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "mode": mode,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "config": {"name": config.name, "toml": config.to_toml()},
        "settings": settings,
        "policies": policies,
        "seeds": seeds,
        "map_seeds": map_seeds,
        "versions": versions(),
    }


def _tasks(config: Config, policies: list[str], seeds: list[int], map_seeds: list[int], time_budget: float,
           limits: Limits, max_restarts: int, record_dir: str | None = None,
           secret: int | None = None, task_input: str = "own") -> list[EpisodeTask]:
    text = config.to_toml()

    def replay(i: int) -> str | None:
        return None if record_dir is None else str(Path(record_dir) / f"episode_{i:03d}.replay")

    return [EpisodeTask(i, text, config.name, tuple(policies), s, m, time_budget, limits, max_restarts,
                        replay(i), secret, task_input) for i, (s, m) in enumerate(zip(seeds, map_seeds, strict=True))]


def team_metrics(results: list[EpisodeResult], policies: list[str]) -> dict:
    """Team aggregates per policy over every team of every episode (`evaluation.metrics.aggregate_teams`)."""
    matrix = np.concatenate([r.lifetimes for r in results])
    owners = np.concatenate([r.owners for r in results])
    teams = np.concatenate([r.index * 1_000_000 + r.teams for r in results])  # a team id per episode
    return aggregate_teams(matrix, teams, owners, policies)


def _pooled(results: list[EpisodeResult], policies: list[str]) -> tuple[dict, dict[str, Faults]]:
    """Metrics over every lifetime of every episode (`TASK_METRICS` too with tasks on), and fault
    totals, per policy."""
    names = results[0].names if results else METRICS
    matrix = np.concatenate([r.table() for r in results]) if results else np.zeros((0, len(METRICS)))
    owners = np.concatenate([r.owners for r in results]) if results else np.zeros(0, dtype=np.int64)
    faults = {p: Faults() for p in policies}
    for result in results:
        for policy, record in zip(policies, result.faults, strict=True):
            faults[policy] = faults[policy].merge(record)
    return aggregate_by_policy(matrix, owners, policies, names), faults


def with_tasks(config: Config, tasks: str | None, metrics: Sequence[str | None] = ()) -> TaskSet | None:
    """Turn tasks on in `config` (a shipped set's name or a file, made absolute so that worker
    processes find it) and return the set (None: tasks off); a task metric needs tasks."""
    if tasks is not None:
        config.set("TASKS", task_set_key(tasks))
    needs = [m for m in metrics if m in TASK_METRICS]
    if needs and not config.has_tasks():
        raise ValueError(f"the metric {needs[0]!r} needs tasks: pass tasks (--tasks SET) or a config with TASKS")
    if any(m in GAME_METRICS for m in metrics) and not config.GAME:
        raise ValueError("the metric 'win' needs a minigame: pass --game NAME (or a config with GAME)")
    if config.GAME:
        from nmmo.games import GAMES

        return GAMES[config.GAME](config).task_set()
    return load_task_set(config.TASKS) if config.TASKS else None


def _episode_entry(result: EpisodeResult, policies: list[str]) -> dict[str, Any]:
    return {
        "index": result.index,
        "seed": result.seed,
        "map_seed": result.map_seed,
        "ticks": result.ticks,
        "seconds": round(result.seconds, 3),
        "engine_errors": result.engine_errors,
        "metrics": result.metrics(),
        "faults": {p: f.to_dict() for p, f in zip(policies, result.faults, strict=True)},
    }


def evaluate(config: Config | str, policy: str, ticks: int | None = None, episodes: int = 4, seed: int = 0,
             workers: int = 2, time_budget: float = 1.0, progress: bool = True, limits: Limits | None = None,
             max_restarts: int = 5, backend: str = "process", ray_address: str | None = None,
             tasks: str | None = None, task_input: str = "own") -> dict[str, Any]:
    """Self-contained runs: `policy` controls every agent for `ticks` ticks (default: the config's
    HORIZON) in each of `episodes` episodes, episode i on held-out map i. Returns the result dict
    with the metric table pooled over all lifetimes under ``metrics``. ``backend="ray"`` plays the
    episodes on `workers` Ray actors. `tasks` (a task set's name or file; default: the config's
    TASKS) gives every agent a task: the result then holds the task report under ``tasks``
    (`evaluation.task_results`). ``task_input="shuffled"`` has each agent read another task's
    embedding (`evaluation.episode.shuffled_tasks`: does the policy use its own?)."""
    base = config_module.resolve(config)
    config = with_horizon(base, base.HORIZON if ticks is None else ticks)
    task_set = with_tasks(config, tasks)
    if task_input not in TASK_INPUTS:
        raise ValueError(f"task_input must be one of {TASK_INPUTS}, got {task_input!r}")
    if task_input != "own" and task_set is None:
        raise ValueError(f"task_input={task_input!r} needs tasks (tasks=SET or a config with TASKS)")
    policies = tournament_policies([policy], anchor=policy)
    _check_settings(config, 1, episodes, workers, time_budget)
    limits = (limits or Limits()).check()
    check_spec(policy, limits.init_timeout, limits)
    seeds, map_seeds = episode_seeds(seed, episodes), eval_map_seeds(config, episodes)
    settings = {"ticks": config.HORIZON, "episodes": episodes, "seed": seed, "time_budget": time_budget,
                "workers": workers, "limits": limits.to_dict(), "max_restarts": max_restarts,
                "backend": backend, "task_input": task_input}
    results = run_episodes(_tasks(config, policies, seeds, map_seeds, time_budget, limits, max_restarts,
                                  task_input=task_input),
                           workers, progress, desc=f"eval {display_names([policy])[policy]}", backend=backend,
                           ray_address=ray_address)
    metrics, faults = _pooled(results, policies)
    out = _header("eval", config, policies, seeds, map_seeds, settings)
    out["episodes"] = [_episode_entry(r, policies) for r in results]
    out["metrics"] = metrics
    if config.PLAYER_TEAM_SIZE > 1:
        out["team_metrics"] = team_metrics(results, policies)
    out["faults"] = {p: f.to_dict() for p, f in faults.items()}
    if task_set is not None:
        out["tasks"] = task_report(results, task_set)
    return out


class Standings:
    """The rating and payoff table of a tournament, grown one finished episode at a time.

    Episodes may finish in any order (workers, Ray actors, a resumed journal), but TrueSkill is
    applied in episode order so the final ratings never depend on it: the ratings cover the
    finished prefix 0..n-1 (`rated`), while the payoff table (how often each policy out-ranked each
    other, the evaluator table of population-play frameworks) counts every finished episode. An
    episode ranks policies by `metric`, then `tie_break` (None: equal metrics are draws); a policy
    that never ran in an episode (it could not be built) is not ranked in it.
    """

    def __init__(self, policies: list[str], metric: str = METRIC, anchor: str = ANCHOR,
                 tie_break: str | None = TIE_BREAK) -> None:
        self.policies, self.metric, self.tie_break = policies, metric, tie_break
        self.ratings = Ratings(policies, anchor, BETA)
        self.results: dict[int, EpisodeResult] = {}
        self.rated = 0
        self.all_way_ties = 0  # rated episodes in which every policy that played tied
        self.entries: list[dict[str, Any]] = []
        self.history: list[dict[str, Any]] = []
        self._ranks: dict[int, tuple[list, list | None, list[int | None]]] = {}

    def add(self, result: EpisodeResult) -> None:
        """Take one finished episode: count it in the payoff table, rate every episode now in order."""
        if result.index in self.results:
            raise ValueError(f"episode {result.index} was added twice")
        self.results[result.index] = result
        scores = result.scores(self.metric)
        ties = None if self.tie_break is None else result.scores(self.tie_break)
        self._ranks[result.index] = (scores, ties, episode_ranks(scores, ties))
        while self.rated in self.results:
            self._rate(self.results[self.rated])
            self.rated += 1

    def _rate(self, result: EpisodeResult) -> None:
        scores, ties, ranks = self._ranks[result.index]
        self.all_way_ties += all_way_ties([ranks])
        self.ratings.update(ranks)
        table = self.ratings.table()
        entry = _episode_entry(result, self.policies)
        entry["scores"] = dict(zip(self.policies, scores, strict=True))
        if ties is not None:
            entry["tie_break"] = {p: None if s is None else t for p, s, t in zip(self.policies, scores, ties,
                                                                                 strict=True)}
        entry["ranks"] = dict(zip(self.policies, ranks, strict=True))
        entry["sr"] = {row["policy"]: row["sr"] for row in table}
        self.entries.append(entry)
        self.history.append(history_entry(result.index, table))

    def payoff(self) -> dict[str, dict[str, float | None]]:
        """{a: {b: share of the episodes both played in which a ranked above b}} (None: no such episode)."""
        return payoff_table(self.policies, [ranks for _, _, ranks in self._ranks.values()])


def run_tournament(config: Config | str, policies: Sequence[str], episodes: int = 16, ticks: int | None = None,
                   seed: int = 0, workers: int = 2, time_budget: float = 1.0, metric: str = METRIC,
                   anchor: str = ANCHOR, tie_break: str | None = TIE_BREAK, progress: bool = True,
                   limits: Limits | None = None, max_restarts: int = 5,
                   record_dir: str | None = None, backend: str = "process", ray_address: str | None = None,
                   journal: str | Path | None = None, resume: bool = False,
                   on_update: Callable[[Standings], None] | None = None, secret: int | None = None,
                   tasks: str | None = None) -> dict[str, Any]:
    """Play `episodes` episodes of `ticks` ticks (default: the config's HORIZON) with all `policies`
    (plus the anchor) in one world, each an equal share of the population (PLAYER_N is cut to a
    multiple of the number of policies, see `equal_shares`), and rate them with TrueSkill. An
    episode ranks policies by the mean `metric` of their agents, ties by the mean `tie_break`
    (None: ties are draws). Returns the result dict: per-episode scores, ranks and SR, the SR
    history, the payoff table, faults and the final leaderboard (by SR; a policy that never ran
    is listed as failed, unranked).

    With `record_dir`, every episode is also saved there as a replay (``episode_000.replay``, ...).
    ``backend="ray"`` plays the episodes on `workers` Ray actors (`ray_address`: an existing
    cluster); the results are the same as with local processes. With `journal` (a path), each
    finished episode is recorded there at once, and ``resume=True`` continues from that file.
    `on_update` sees the `Standings` after every finished episode (a live table).

    `tasks` (a task set's name or file; default: the config's TASKS) gives every agent a task, the
    same multiset to every policy's agents (`evaluation.task_deal`); `metric="task_reward"` then
    ranks by the task reward of their lifetimes, and the result holds each policy's task report.

    `secret` salts the deal of agents to policies and the seeds policies get in `reset`, so that
    no submission can work out who controls which agent; env and map seeds come from `seed`
    alone. None draws a fresh one (`draw_secret`), or, with `resume`, takes the journal's. It is
    recorded in the journal, never in the results nor sent to a worker; pass it back (with
    `seed`) to re-run a tournament exactly."""
    base = config_module.resolve(config)
    config = with_horizon(base, base.HORIZON if ticks is None else ticks)
    ticks = config.HORIZON
    check_metric(metric)
    if tie_break is not None:
        check_metric(tie_break)
    task_set = with_tasks(config, tasks, (metric, tie_break))
    policies = tournament_policies(policies, anchor)
    _check_settings(config, len(policies), episodes, workers, time_budget)
    config = equal_shares(config, len(policies))
    limits = (limits or Limits()).check()
    check_private(policies)
    for spec in policies:
        check_spec(spec, limits.init_timeout, limits)
    seeds, map_seeds = episode_seeds(seed, episodes), eval_map_seeds(config, episodes)
    settings = {"ticks": ticks, "episodes": episodes, "seed": seed, "metric": metric, "tie_break": tie_break,
                "anchor": anchor, "population": config.PLAYER_N, "beta": BETA, "time_budget": time_budget,
                "workers": workers,
                "limits": limits.to_dict(), "max_restarts": max_restarts, "backend": backend}
    if secret is None and resume and journal is not None:
        from evaluation.journal import recorded_secret

        secret = recorded_secret(journal)
    secret = draw_secret() if secret is None else secret
    policy_seed(0, 0, secret)  # a secret that cannot salt is an error now, not in a worker
    tasks = _tasks(config, policies, seeds, map_seeds, time_budget, limits, max_restarts, record_dir, secret)
    standings = Standings(policies, metric, anchor, tie_break)
    book = None
    if journal is not None:
        from evaluation.journal import Journal

        run = {"mode": "tournament", "config": config.to_toml(), "policies": policies, "seed": seed,
               "secret": secret, "ticks": ticks, "time_budget": time_budget, "limits": limits.to_dict(),
               "max_restarts": max_restarts}
        book = Journal(journal, run, resume=resume)
        for index in sorted(book.results):
            if index < episodes:
                standings.add(book.results[index])

    def finished(result: EpisodeResult) -> None:
        if book is not None:
            book.append(result)
        standings.add(result)
        if on_update is not None:
            on_update(standings)

    todo = [task for task in tasks if task.index not in standings.results]
    run_episodes(todo, workers, progress, desc="tournament", backend=backend, ray_address=ray_address,
                 on_result=finished)
    results = [standings.results[i] for i in range(episodes)]
    metrics, faults = _pooled(results, policies)
    out = _header("tournament", config, policies, seeds, map_seeds, settings)
    out["episodes"] = standings.entries
    out["sr_history"] = standings.history
    out["payoff"] = standings.payoff()
    out["metrics"] = metrics
    if config.PLAYER_TEAM_SIZE > 1:
        out["team_metrics"] = team_metrics(results, policies)
    out["faults"] = {p: f.to_dict() for p, f in faults.items()}
    out["all_way_ties"] = standings.all_way_ties
    out["leaderboard"] = leaderboard(standings.ratings, metrics, faults, episodes)
    if task_set is not None:
        out["tasks"] = {p: task_report(results, task_set, policies.index(p)) for p in policies}
    return out


def leaderboard(ratings: Ratings, metrics: dict[str, dict], faults: dict[str, Faults],
                episodes: int) -> list[dict[str, Any]]:
    """Rows sorted by SR (ties: policy order), with each metric's mean and the fault counts; a
    policy that never ran in any episode is `failed`, has no rank and comes last."""
    rows = sorted(ratings.table(), key=lambda row: (faults[row["policy"]].not_started >= episodes, -row["sr"]))
    out = []
    place = 0
    for row in rows:
        policy = row["policy"]
        record = faults[policy]
        failed = record.not_started >= episodes
        place += not failed
        out.append({
            "rank": None if failed else place, **row, "failed": failed,
            "metrics": {name: cell["mean"] for name, cell in metrics[policy].items()},
            "lifetimes": metrics[policy][METRICS[0]]["count"],
            "faults": {"exception": record.exception, "timeout": record.timeout, "malformed": record.malformed},
        })
    return out
