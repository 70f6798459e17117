"""`nmmo experiment progression`: do agents trained to survive learn a progression of skills (Fig. 4)?

The paper trained on small maps (128x128, cap 256, every system: ``configs/small_maps.toml``) with
only a survival reward and saw foraging and exploration learned first, then combat against other
agents (while lifetime and foraging fell: the task got harder), then hunting passive NPCs for
equipment. Here the curves come from the trainer's history (the metrics of the agents that
finished in each iteration, smoothed by a centred window a tenth of the run wide); for each metric
the summary gives its start (the first iteration: the untrained policy), peak and end
and the agent-step at which it first covered half of its rise (`RISE_FLOOR` says how much counts
as a rise), and the verdict compares the order of those steps with the paper's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from baselines.experiments.evaluate import eval_config, evaluate_checkpoint
from baselines.experiments.report import label_agent_steps, pyplot, save_figure
from baselines.experiments.results import save_results
from baselines.experiments.run import Budget, Run, run_all
from baselines.experiments.stats import clean, smooth
from evaluation.episode import eval_map_seeds
from nmmo import config as config_module

CONFIG = "small_maps"
SEEDS = (0,)
#: Agent-steps of the default budget: one seed, 4M agent-steps. Measured end to end on the 2-core
#: VM (docs/experiments.md, Budgets): 17 minutes in a fast sitting, about twice that in a slow one.
DEFAULT_STEPS = 4_000_000
CURVES = ("lifetime", "forage", "explore", "player_kills", "equipment", "achievement")
#: The paper's order: foraging and exploration first, then fighting agents, then NPCs for equipment.
PAPER_ORDER = (("forage", "explore"), ("player_kills",), ("equipment",))
#: Least rise (smoothed peak over the smoothed start) that counts as a skill learned, per metric, in its
#: own units: ticks, levels (forage starts at the base level 10), tiles, kills, equipment levels, points.
RISE_FLOOR = {"lifetime": 2.0, "forage": 0.5, "explore": 1.0, "player_kills": 0.02, "equipment": 0.05,
              "achievement": 0.2}
#: Points of the common grid the seeds' curves are averaged on.
GRID = 60


def make_runs(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS) -> list[Run]:
    """One run per seed, all in the same world."""
    world = config_module.resolve(config)
    return [Run(f"seed{seed}", world.name, 0, seed, world) for seed in seeds]


def evaluator(budget: Budget):
    """Optional (``--eval-episodes``): the final checkpoint on held-out maps, as a check on the curves."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        if not budget.eval_episodes:
            return {}
        config = eval_config(run.config, budget.eval_ticks)
        heldout = eval_map_seeds(config, budget.eval_episodes)
        return {"heldout": evaluate_checkpoint(config, entry["checkpoint"], heldout, budget,
                                               f"eval {run.key} held-out")}

    return evaluate


def run_progression(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS, budget: Budget | None = None,
                    out: str | Path = "out/experiments/progression", resume: bool = False, command: str | None = None,
                    on_run=None) -> dict[str, Any]:
    """Train every seed, then summarize the curves; writes OUT/progression.json and
    OUT/progression.png and returns the results."""
    budget = (budget or Budget(DEFAULT_STEPS, eval_episodes=0)).check()
    runs = make_runs(config, tuple(seeds))
    out = Path(out)
    results = run_all("progression", runs, budget, out, {"config": config}, evaluator(budget), resume, command, on_run)
    results["summary"] = summarize(results, runs)
    save_results(out / "progression.json", results)
    plot(results, runs, out / "progression.png")
    return results


def mean_curve(entries: list[dict], name: str, grid: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """The smoothed curve of a metric averaged over seeds, on a grid of agent-steps the seeds share."""
    curves = []
    for entry in entries:
        history = entry["history"]
        curves.append(smooth([h["step"] for h in history], [h[name] for h in history],
                             [h["episodes"] for h in history], max(1, len(history) // 10)))
    curves = [(x, y) for x, y in curves if len(x)]
    if not curves:
        return np.zeros(0), np.zeros(0)
    start, stop = max(x[0] for x, _ in curves), min(x[-1] for x, _ in curves)
    # even steps for the long stretch, geometric ones for the first iterations, where the first
    # skills rise within a few percent of a long run
    steps = (np.unique(np.concatenate([np.linspace(start, stop, grid), np.geomspace(start, stop, grid)]))
             if stop > start > 0 else np.array([start]))
    return steps, np.mean([np.interp(steps, x, y) for x, y in curves], axis=0)


def describe(steps: np.ndarray, values: np.ndarray, name: str) -> dict[str, Any]:
    """Start (the curve's first point: the untrained policy's first iteration, which the smoothing
    leaves alone and which holds hundreds of finished agents in a crowded world), peak (and its
    step), end, whether it rose, and the step at which it first covered half of its rise."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    if not len(values):
        return {"metric": name, "rises": False}
    start, peak_at = float(values[0]), int(np.argmax(values))
    peak = float(values[peak_at])
    rises = peak - start >= RISE_FLOOR[name]
    half = int(np.argmax(values >= start + 0.5 * (peak - start)))
    return {"metric": name, "start": clean(start), "peak": clean(peak), "peak_step": int(steps[peak_at]),
            "end": clean(float(values[-1])), "rises": bool(rises), "rise_step": int(steps[half]) if rises else None}


def summarize(results: dict[str, Any], runs: list[Run]) -> dict[str, Any]:
    """Each metric's description on the seed-averaged curve, the order of the rises, the verdict."""
    entries = [results["runs"][run.key] for run in runs]
    rows = [describe(*mean_curve(entries, name), name) for name in CURVES]
    rising = sorted((r for r in rows if r["rises"]), key=lambda r: r["rise_step"])
    return {"rows": rows, "order": [r["metric"] for r in rising], "verdict": verdict(rows)}


def verdict(rows: list[dict]) -> list[str]:
    """Plain sentences: which skills rose and in what order, against the paper's order."""
    described = {r["metric"]: r for r in rows}
    stages = []
    for stage in PAPER_ORDER:
        steps = [described[m]["rise_step"] for m in stage if described[m]["rises"]]
        stages.append(min(steps) if steps else None)
    names = [" / ".join(stage) for stage in PAPER_ORDER]
    seen = ", ".join(f"{n} at {s:,}" if s is not None else f"{n}: no rise" for n, s in zip(names, stages, strict=True))
    reached = [s for s in stages if s is not None]
    out = [f"Rise (half-way to the peak) per stage of the paper's progression: {seen}."]
    if len(reached) == len(stages) and reached == sorted(reached):
        out.append("Reproduced: the stages rise in the paper's order (foraging and exploration, then player kills, "
                   "then equipment).")
    elif not reached:
        out.append("Not reproduced at this budget: no stage of the progression rose.")
    elif stages[:len(reached)] == reached and reached == sorted(reached):
        out.append(f"Partly reproduced: the first {len(reached)} of {len(stages)} stages rose, in the paper's order; "
                   "the later ones did not rise at this budget.")
    else:
        out.append("Not reproduced at this budget: the stages did not rise in the paper's order.")
    falls = [r["metric"] for r in rows if r["rises"] and r["end"] is not None and r["end"] < r["peak"] - 0.5 *
             (r["peak"] - r["start"])]
    if falls:
        out.append(f"Fell back by more than half of their rise after the peak: {', '.join(falls)} (the paper saw "
                   "lifetime and foraging fall once agents learned to fight).")
    return out


def table(results: dict[str, Any]) -> Table:
    """Each metric's start, peak, end and rise step, in the order the metrics rose."""
    settings = results["settings"]
    t = Table(title=f"Skill progression: {settings['steps']:,} agent-steps per seed, "
                    f"{len(results['seeds'])} seed(s); curves smoothed, averaged over seeds")
    for name in ("metric", "start", "peak", "at agent-step", "end", "rises at agent-step"):
        t.add_column(name, justify="left" if name == "metric" else "right")
    for row in results["summary"]["rows"]:
        if "start" not in row:
            t.add_row(row["metric"], "-", "-", "-", "-", "-")
            continue
        t.add_row(row["metric"], f"{row['start']:.2f}", f"{row['peak']:.2f}", f"{row['peak_step']:,}",
                  f"{row['end']:.2f}", f"{row['rise_step']:,}" if row["rises"] else "no rise")
    return t


def plot(results: dict[str, Any], runs: list[Run], path: Path) -> Path:
    """The metric curves over training (Fig. 4): each seed faint, their mean bold, the rise marked."""
    plt = pyplot()
    entries = [results["runs"][run.key] for run in runs]
    described = {r["metric"]: r for r in results["summary"]["rows"]}
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    for ax, name in zip(axes.ravel(), CURVES, strict=True):
        for entry in entries:
            x, y = mean_curve([entry], name)
            ax.plot(x, y, color="C0", alpha=0.3)
        x, y = mean_curve(entries, name)
        ax.plot(x, y, color="C0", linewidth=2)
        if described[name].get("rise_step") is not None:
            ax.axvline(described[name]["rise_step"], color="C3", linestyle="--", label="half of the rise")
            ax.legend(fontsize=8)
        ax.set_title(name)
        label_agent_steps(ax)
    fig.tight_layout()
    return save_figure(fig, path)
