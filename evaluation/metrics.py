"""Per-lifetime metrics grouped by policy: mean, std and count of the paper's Table 1 metrics.

A lifetime is one agent's metrics dict as the engine reports it in ``infos[agent]["life"]``
(keys ``lifetime``, ``achievement``, ``player_kills``, ``equipment``, ``explore``, ``forage``).
Aggregation works on a float matrix with one row per lifetime and one column per metric, so
grouping by policy is a handful of `np.bincount` calls whatever the number of agents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nmmo.core.metrics import LABELS, METRICS  # noqa: F401 - re-exported: evaluation's tables use them

#: With tasks on, each lifetime also has these (`EpisodeResult.tasks`): its task reward (the task's
#: own, before TASK_REWARD) and whether it completed its task. They rank tournaments like the others.
TASK_METRICS: tuple[str, ...] = ("task_reward", "task_completion")
#: What a policy's task input holds in evaluation: each agent's own task, or another task (an
#: ablation: `evaluation.episode.shuffled_tasks`).
TASK_INPUTS: tuple[str, ...] = ("own", "shuffled")
#: In a minigame (config GAME), each lifetime also has whether its team won the episode.
GAME_METRICS: tuple[str, ...] = ("win",)
RANKING_METRICS: tuple[str, ...] = (*METRICS, *TASK_METRICS, *GAME_METRICS)
TASK_LABELS = {"task_reward": "Task Reward", "task_completion": "Task Done", "win": "Win"}


def present_metrics(row: Mapping[str, Any]) -> list[str]:
    """The metrics a {metric: cell} row of a result holds, in table order: `METRICS`, then the task
    and game metrics it has (a run with tasks, a minigame)."""
    return [*METRICS, *(name for name in (*TASK_METRICS, *GAME_METRICS) if name in row)]

#: Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom (beyond: 30's).
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """Mean of independent values (one per episode or seed) and its 95 % Student t interval (None
    bounds for fewer than two values; NaN mean for none)."""
    kept = np.asarray(values, dtype=np.float64)
    if not kept.size:
        return float("nan"), None, None
    mean = float(kept.mean())
    if kept.size < 2:
        return mean, None, None
    half = T_975[min(kept.size - 1, len(T_975)) - 1] * float(kept.std(ddof=1)) / float(np.sqrt(kept.size))
    return mean, mean - half, mean + half


def check_metric(name: str, names: Sequence[str] = RANKING_METRICS) -> str:
    """Return `name` if it is a metric key; a ValueError lists the choices (it comes from user input)."""
    if name not in names:
        raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(names)}")
    return name


def lifetime_matrix(lifetimes: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Stack lifetime dicts into an (n, len(METRICS)) float matrix; extra keys (from `log_fn`) are
    ignored so custom logging never breaks aggregation."""
    if not lifetimes:
        return np.zeros((0, len(METRICS)))
    return np.array([[life[name] for name in METRICS] for life in lifetimes], dtype=np.float64)


def _stats(count: float, total: float, squares: float) -> dict[str, float | int | None]:
    """Mean and population std from running sums; None when there is nothing to average (JSON-safe)."""
    if count == 0:
        return {"mean": None, "std": None, "count": 0}
    mean = total / count
    variance = max(squares / count - mean * mean, 0.0)  # clamp rounding below zero
    return {"mean": float(mean), "std": float(np.sqrt(variance)), "count": int(count)}


def aggregate(values: np.ndarray | Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    """{metric: {"mean", "std", "count"}} over lifetimes (a matrix or a list of lifetime dicts)."""
    matrix = values if isinstance(values, np.ndarray) else lifetime_matrix(values)
    owners = np.zeros(len(matrix), dtype=np.int64)
    return aggregate_by_policy(matrix, owners, ["all"])["all"]


def aggregate_by_policy(matrix: np.ndarray, owners: np.ndarray, policies: Sequence[str],
                        names: Sequence[str] = METRICS) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """{policy: {metric: {"mean", "std", "count"}}}, where row i of `matrix` (columns `names`) is a
    lifetime of policy ``policies[owners[i]]``; a policy without lifetimes gets count 0 and None stats."""
    matrix = np.asarray(matrix, dtype=np.float64).reshape(-1, len(names))
    owners = np.asarray(owners, dtype=np.int64)
    n = len(policies)
    counts = np.bincount(owners, minlength=n)[:n]
    # one bincount per column: sums and sums of squares for every (policy, metric) pair at once
    sums = np.stack([np.bincount(owners, weights=matrix[:, j], minlength=n)[:n] for j in range(len(names))], 1)
    squares = np.stack([np.bincount(owners, weights=matrix[:, j] ** 2, minlength=n)[:n]
                        for j in range(len(names))], 1)
    return {
        policy: {name: _stats(counts[p], sums[p, j], squares[p, j]) for j, name in enumerate(names)}
        for p, policy in enumerate(policies)
    }


def policy_means(matrix: np.ndarray, owners: np.ndarray, n_policies: int, metric: str,
                 names: Sequence[str] = METRICS) -> list[float | None]:
    """Mean of one metric per policy (None for a policy without lifetimes): the episode score."""
    column = np.asarray(matrix, dtype=np.float64).reshape(-1, len(names))[:, list(names).index(
        check_metric(metric, names))]
    owners = np.asarray(owners, dtype=np.int64)
    counts = np.bincount(owners, minlength=n_policies)[:n_policies]
    sums = np.bincount(owners, weights=column, minlength=n_policies)[:n_policies]
    return [float(s / c) if c else None for s, c in zip(sums.tolist(), counts.tolist(), strict=True)]


#: Team aggregates: a team lasts as long as its longest-lived member; its achievement is its
#: members' mean, its kills their total.
TEAM_METRICS: tuple[str, ...] = ("team_lifetime", "team_achievement", "team_kills", "members")


def team_rows(matrix: np.ndarray, teams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per team (ids in `teams`, e.g. episode * 10**6 + team): the team's lifetime (its
    longest member lifetime), mean achievement, total player kills and lifetimes counted. Returns
    (team ids, rows in TEAM_METRICS order)."""
    matrix = np.asarray(matrix, dtype=np.float64).reshape(-1, len(METRICS))
    ids, index = np.unique(np.asarray(teams, dtype=np.int64), return_inverse=True)
    members = np.bincount(index, minlength=len(ids)).astype(np.float64)
    lifetime = np.zeros(len(ids))
    np.maximum.at(lifetime, index, matrix[:, METRICS.index("lifetime")])
    achievement = np.bincount(index, weights=matrix[:, METRICS.index("achievement")], minlength=len(ids))
    kills = np.bincount(index, weights=matrix[:, METRICS.index("player_kills")], minlength=len(ids))
    return ids, np.stack([lifetime, achievement / np.maximum(members, 1), kills, members], axis=1)


def aggregate_teams(matrix: np.ndarray, teams: np.ndarray, owners: np.ndarray,
                    policies: Sequence[str]) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """{policy: {team metric: {"mean", "std", "count"}}} over the teams each policy played (a team
    belongs to one policy: tournaments hand out whole teams)."""
    ids, rows = team_rows(matrix, teams)
    first = np.unique(np.asarray(teams, dtype=np.int64), return_index=True)[1]
    team_owner = np.asarray(owners, dtype=np.int64)[first]
    n = len(policies)
    counts = np.bincount(team_owner, minlength=n)[:n]
    out = {}
    for p, policy in enumerate(policies):
        mine = rows[team_owner == p]
        out[policy] = {name: _stats(counts[p], mine[:, j].sum(), (mine[:, j] ** 2).sum())
                       for j, name in enumerate(TEAM_METRICS)}
    return out


def lifetimes_from_infos(infos: Mapping[int, Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """Lifetimes the engine reported in one step's infos: agents that died, and at the horizon
    every agent still alive (truncated)."""
    return {agent: info["life"] for agent, info in infos.items() if "life" in info}


def alive_lifetimes(env: Any) -> dict[int, dict[str, Any]]:
    """Lifetimes of the agents still alive, as if the episode ended now: for runs stopped before
    the horizon, where the engine has not reported them yet."""
    return {agent: {name: life[name] for name in METRICS} for agent, life in env.metrics_now().items()}


def collect_lifetimes(env: Any, step_infos: Sequence[Mapping[int, Mapping[str, Any]]]) -> dict[int, dict[str, Any]]:
    """Every lifetime of an episode: those reported in the infos of each step, plus the agents
    alive at the end (already in the last infos when the horizon truncated them)."""
    found: dict[int, dict[str, Any]] = {}
    for infos in step_infos:
        found.update(lifetimes_from_infos(infos))
    if not env.done:
        found.update({agent: life for agent, life in alive_lifetimes(env).items() if agent not in found})
    return found
