"""Task outcomes of evaluation episodes (`nmmo eval --tasks FILE`): for every task and every tag of
the set, how many lifetimes held it, the completion rate and the mean progress at the end of those
lifetimes, each with a 95 % t interval over episodes (an episode's rate is one sample: lifetimes of
one episode share a map and are not independent)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.table import Table

from evaluation.episode import EpisodeResult
from evaluation.metrics import t_interval
from nmmo.tasks import TaskSet


def _summary(results: Sequence[EpisodeResult], chosen: np.ndarray, owner: int | None) -> dict[str, Any]:
    """Lifetimes (of policy `owner`; None: all) whose task is in `chosen` (a boolean per task
    index): count, completion, progress."""
    rates, progress, count = [], [], 0
    for result in results:
        rows = result.tasks if result.tasks is not None else np.zeros((0, 4))
        if owner is not None:
            rows = rows[result.owners == owner]
        mine = rows[chosen[rows[:, 0].astype(np.int64)]] if len(rows) else rows
        if len(mine):
            count += len(mine)
            rates.append(float(mine[:, 2].mean()))
            progress.append(float(mine[:, 1].mean()))
    out: dict[str, Any] = {"lifetimes": count, "episodes": len(rates)}
    for name, values in (("completion", rates), ("progress", progress)):
        mean, low, high = t_interval(values)  # a rate or a progress: the interval is clipped to [0, 1]
        out[name] = {"mean": None if np.isnan(mean) else mean, "low": None if low is None else max(low, 0.0),
                     "high": None if high is None else min(high, 1.0)}
    return out


def task_report(results: Sequence[EpisodeResult], task_set: TaskSet, owner: int | None = None) -> dict[str, Any]:
    """{"set": name, "tasks": {task: summary}, "tags": {tag: summary}, "episodes": [...]} (see the
    module notes), over the lifetimes of policy index `owner` (None: every lifetime). "episodes" has
    each episode's lifetimes and completion rate (None: no lifetime), in episode order, so two runs
    of the same episodes can be compared episode by episode (`paired`)."""
    n = len(task_set)
    tasks = {spec.name: _summary(results, np.arange(n) == i, owner) for i, spec in enumerate(task_set)}
    tags = sorted({tag for spec in task_set for tag in spec.tags})
    by_tag = {tag: _summary(results, np.array([tag in spec.tags for spec in task_set]), owner) for tag in tags}
    episodes = []
    for result in sorted(results, key=lambda r: r.index):
        rows = result.tasks if result.tasks is not None else np.zeros((0, 4))
        rows = rows[result.owners == owner] if owner is not None and len(rows) else rows
        episodes.append({"lives": len(rows), "completion": float(rows[:, 2].mean()) if len(rows) else None,
                         "progress": float(rows[:, 1].mean()) if len(rows) else None})
    return {"set": task_set.name, "source": task_set.source, "tasks": tasks, "tags": by_tag, "episodes": episodes}


def paired(a: Sequence[float | None], b: Sequence[float | None]) -> dict[str, Any]:
    """Mean and 95 % t interval of a - b over the positions where both have a value: a paired
    comparison of two runs of the same episodes (the same seeds, maps, spawns and task draws), which
    removes what the episodes share from the comparison."""
    if len(a) != len(b):
        raise ValueError(f"paired values need the same episodes: {len(a)} against {len(b)}")
    differences = [x - y for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    mean, low, high = t_interval(differences)
    return {"mean": None if np.isnan(mean) else mean, "low": low, "high": high, "n": len(differences)}


def episode_completion(report: dict[str, Any]) -> list[float | None]:
    """Each episode's completion rate from a `task_report` (None: no lifetime held a task)."""
    return [episode["completion"] for episode in report["episodes"]]


def _cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "-"
    if stat["low"] is None:
        return f"{stat['mean']:.2f}"
    return f"{stat['mean']:.2f} [{stat['low']:.2f}, {stat['high']:.2f}]"


def task_table(report: dict[str, Any]) -> Table:
    """The report as a table: one row per task, then one per tag."""
    table = Table(title=f"tasks of {report['set']}: completion and progress at the end of each lifetime "
                        "(mean [95 % t interval over episodes])")
    for column in ("task / tag", "lifetimes", "completion", "progress"):
        table.add_column(column, justify="left" if column == "task / tag" else "right")
    for kind in ("tasks", "tags"):
        for name, stat in report[kind].items():
            label = name if kind == "tasks" else f"tag: {name}"
            table.add_row(label, str(stat["lifetimes"]), _cell(stat["completion"]), _cell(stat["progress"]))
    return table
