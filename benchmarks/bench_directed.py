"""The directed task benchmark: does reading the task pay? The scripted task follower against its
blind twin (the same bot reading another agent's task) on the held-out split, per task family.

Every arm plays the same episodes (`nmmo eval`'s: the canonical tournament world, episode i on
held-out map i, the same episode seeds, so the same spawns and the same task draws): the follower
reading its own task (``--task-input own``), its blind twin reading the next distinct task of the
batch (``--task-input shuffled``, `evaluation.episode.shuffled_tasks`; completion is scored on its
own task), and reference bots that never read a task. An episode's score is the completion rate of
its lives (per family: of the lives holding a task of that family); the follower's margin is the
per-episode paired difference (follower minus twin) with its 95 % Student t interval over episodes.

    python benchmarks/bench_directed.py                          # held-out split, 8 episodes, seed 11
    python benchmarks/bench_directed.py --tasks directed --seed 7 --episodes 4   # the train split
    python benchmarks/bench_directed.py --references scripted:Combat scripted:Forage random

Writes ``OUT/results.json`` (settings, per-episode rates of every arm and family, the paired
differences) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from evaluation.episode import EpisodeTask, episode_seeds, eval_map_seeds, run_episodes, with_horizon
from evaluation.metrics import t_interval
from evaluation.tournament import with_tasks
from nmmo import config as config_module

FAMILIES = ("style", "hunt", "where", "gather", "composed")
FOLLOWER = "scripted:Follower"


def play(config, policy: str, task_input: str, seeds: list[int], maps: list[int], workers: int) -> list[np.ndarray]:
    """Per episode, the (task index, progress, completed, reward) row of every life."""
    text = config.to_toml()
    tasks = [EpisodeTask(i, text, config.name, (policy,), s, m, task_input=task_input)
             for i, (s, m) in enumerate(zip(seeds, maps, strict=True))]
    results = run_episodes(tasks, workers, progress=False, desc=f"{policy} {task_input}")
    return [r.tasks if r.tasks is not None else np.zeros((0, 4)) for r in results]


def rates(episodes: list[np.ndarray], chosen: np.ndarray) -> list[float | None]:
    """Per episode, the completion rate of the lives whose task is `chosen` (None: no such life)."""
    out: list[float | None] = []
    for rows in episodes:
        mine = rows[chosen[rows[:, 0].astype(np.int64)]] if len(rows) else rows
        out.append(float(mine[:, 2].mean()) if len(mine) else None)
    return out


def stat(values: list[float | None], rate: bool = True) -> dict[str, Any]:
    """Mean and 95 % t interval over the episodes with a value (a rate's interval clipped to [0, 1])."""
    kept = [v for v in values if v is not None]
    mean, low, high = t_interval(kept)
    if rate and low is not None:
        low, high = max(low, 0.0), min(high, 1.0)
    return {"mean": None if np.isnan(mean) else mean, "low": low, "high": high, "n": len(kept)}


def paired(a: list[float | None], b: list[float | None]) -> dict[str, Any]:
    """The per-episode difference a - b over the episodes where both have lives, with its interval."""
    return stat([x - y for x, y in zip(a, b, strict=True) if x is not None and y is not None], rate=False)


def fmt(s: dict[str, Any], signed: bool = False) -> str:
    if s["mean"] is None:
        return "-"
    sign = "+" if signed else ""
    if s["low"] is None:
        return f"{s['mean']:{sign}.3f}"
    return f"{s['mean']:{sign}.3f} [{s['low']:{sign}.3f}, {s['high']:{sign}.3f}]"


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = config_module.resolve(args.config)
    config = with_horizon(base, args.ticks)
    task_set = with_tasks(config, args.tasks)
    seeds, maps = episode_seeds(args.seed, args.episodes), eval_map_seeds(config, args.episodes)
    arms = {"follower": (FOLLOWER, "own"), "blind twin": (FOLLOWER, "shuffled")}
    for ref in args.references:  # POLICY or POLICY@shuffled
        policy, _, task_input = ref.partition("@")
        arms[ref] = (policy, task_input or "own")
    groups = {"all": np.ones(len(task_set), dtype=bool)}
    groups.update({family: np.array([family in spec.tags for spec in task_set]) for family in FAMILIES
                   if any(family in spec.tags for spec in task_set)})
    groups.update({f"task:{spec.name}": np.arange(len(task_set)) == i for i, spec in enumerate(task_set)})
    out: dict[str, Any] = {"settings": {"config": args.config, "tasks": args.tasks, "ticks": args.ticks,
                                        "episodes": args.episodes, "seed": args.seed, "workers": args.workers,
                                        "seeds": seeds, "map_seeds": maps},
                           "machine": f"{platform.node()}: {platform.processor() or platform.machine()}",
                           "groups": {g: [s.name for s, c in zip(task_set, chosen, strict=True) if c]
                                      for g, chosen in groups.items()}, "arms": {}}
    for name, (policy, task_input) in arms.items():
        start = time.perf_counter()
        episodes = play(config, policy, task_input, seeds, maps, args.workers)
        out["arms"][name] = {"policy": policy, "task_input": task_input, "seconds": time.perf_counter() - start,
                             "lives": [len(e) for e in episodes],
                             "rates": {g: rates(episodes, chosen) for g, chosen in groups.items()}}
    follower, twin = out["arms"]["follower"]["rates"], out["arms"]["blind twin"]["rates"]
    out["margin"] = {g: paired(follower[g], twin[g]) for g in groups}
    return out


def table(out: dict[str, Any], tasks: bool = False) -> Table:
    """One row per family (with `tasks`: per task), one column per arm and the paired margin."""
    s = out["settings"]
    title = (f"directed tasks ({s['tasks']}) in {s['config']}: {s['episodes']} episodes of {s['ticks']} ticks, "
             f"seed {s['seed']}; completion per life, mean [95 % t interval over episodes]")
    t = Table(title=title)
    t.add_column("task" if tasks else "family")
    t.add_column("tasks", justify="right")
    for name in out["arms"]:
        t.add_column(name, justify="right")
    t.add_column("follower - twin (paired)", justify="right", style="bold")
    for g in out["margin"]:
        if g.startswith("task:") != tasks:
            continue
        t.add_row(g.removeprefix("task:"), str(len(out["groups"][g])),
                  *(fmt(stat(arm["rates"][g])) for arm in out["arms"].values()), fmt(out["margin"][g], signed=True))
    return t


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tournament", help="the world (default: the canonical tournament's)")
    parser.add_argument("--tasks", default="heldout", help="task set (default: heldout, the held-out split)")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--ticks", type=int, default=256)
    parser.add_argument("--seed", type=int, default=11, help="run seed (episode seeds derive from it)")
    parser.add_argument("--workers", type=int, default=2, help="episodes in parallel (0: in this process)")
    parser.add_argument("--references", nargs="*", default=["scripted:Combat"],
                        help="other arms on the same episodes: POLICY (its own task) or POLICY@shuffled")
    parser.add_argument("--out", default="out/bench_directed")
    parser.add_argument("--per-task", action="store_true", help="also a table with one row per task")
    args = parser.parse_args(argv)
    if args.episodes < 2:
        parser.error("--episodes must be at least 2 (an interval needs two episodes)")
    out = run(args)
    console = Console(width=max(Console().width, 150))
    console.print(table(out))
    if args.per_task:
        console.print(table(out, tasks=True))
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(out, indent=1))
    print(f"results: {folder / 'results.json'}")
    return out


if __name__ == "__main__":
    main()
