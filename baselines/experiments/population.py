"""`nmmo experiment population`: does a larger training population explore more (the paper's Fig. 5)?

The paper trained for a day with population caps 4, 32 and 256 (Resource and Progression only,
continuous spawning: ``configs/population_*.toml``) and found that agents trained in larger
populations explore more of the map, while agents trained in small populations starve when the
test-time cap is raised (its Table 4, in the supplement). Here every cap trains on the same
number of agent-steps with several seeds; each checkpoint is evaluated self-contained at its own
training cap and at one common test cap (`TEST_CAP`, the largest: every policy meets the crowd the
largest population trained in), and the visits of its agents at the test cap are pooled into a
heatmap (Fig. 5's picture). The verdict says whether exploration grows with the training cap and
whether the 95 % intervals over seeds separate the smallest cap from the largest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from baselines.experiments.evaluate import eval_config, evaluate_checkpoint
from baselines.experiments.report import fmt, label_agent_steps, pyplot, save_figure
from baselines.experiments.results import by_condition, save_results
from baselines.experiments.run import Budget, Run, condition_config, run_all
from baselines.experiments.stats import condition_stat, iterations_note, smooth
from evaluation.episode import eval_map_seeds

CONFIG = "population_4"
CAPS = (4, 32, 256)
#: The common test cap every checkpoint is also evaluated at: the largest training cap.
TEST_CAP = 256
SEEDS = (0, 1, 2)
#: Agent-steps per run of the default budget: 3 caps x 3 seeds x 500k agent-steps. Measured end to
#: end on the 2-core VM (docs/experiments.md, Budgets): 15 minutes in a fast sitting (13 of them
#: training), about twice that in a slow one.
DEFAULT_STEPS = 500_000
EVAL_EPISODES = 2


def make_runs(config: str = CONFIG, caps: tuple[int, ...] = CAPS, seeds: tuple[int, ...] = SEEDS) -> list[Run]:
    """One run per (seed, cap), seeds outermost: an interrupted experiment already compares every cap."""
    if not caps or any(cap < 1 for cap in caps):
        raise ValueError(f"--caps must be positive population caps, got {list(caps)}")
    return [Run(f"cap{cap}-seed{seed}", str(cap), cap, seed,
                condition_config(config, f"population_{cap}", PLAYER_N=cap)) for seed in seeds for cap in caps]


def evaluator(budget: Budget, test_cap: int):
    """The evaluation of one run: at its training cap, and at the common test cap with visits."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        if not budget.eval_episodes:
            return {}
        own = eval_config(run.config, budget.eval_ticks)
        maps = eval_map_seeds(own, budget.eval_episodes)
        at_train = evaluate_checkpoint(own, entry["checkpoint"], maps, budget, f"eval {run.key} at cap {run.value}",
                                       visits=run.value == test_cap)
        if run.value == test_cap:
            return {"train_cap": at_train, "test_cap": at_train}
        common = eval_config(run.config, budget.eval_ticks, PLAYER_N=test_cap)
        at_test = evaluate_checkpoint(common, entry["checkpoint"], maps, budget, f"eval {run.key} at cap {test_cap}",
                                      visits=True)
        return {"train_cap": at_train, "test_cap": at_test}

    return evaluate


def run_population(config: str = CONFIG, caps: tuple[int, ...] = CAPS, seeds: tuple[int, ...] = SEEDS,
                   test_cap: int = TEST_CAP, budget: Budget | None = None,
                   out: str | Path = "out/experiments/population", resume: bool = False,
                   command: str | None = None, on_run=None) -> dict[str, Any]:
    """Train and evaluate every (cap, seed), then add the summary and verdict; writes
    OUT/population.json and OUT/population.png and returns the results."""
    budget = (budget or Budget(DEFAULT_STEPS, eval_episodes=EVAL_EPISODES)).check()
    if test_cap < 1:
        raise ValueError(f"--test-cap must be a positive population cap, got {test_cap}")
    eval_config(condition_config(config, f"population_{test_cap}", PLAYER_N=test_cap), budget.eval_ticks)
    runs = make_runs(config, tuple(caps), tuple(seeds))
    out = Path(out)
    settings = {"config": config, "test_cap": test_cap}
    results = run_all("population", runs, budget, out, settings, evaluator(budget, test_cap), resume, command, on_run)
    results["summary"] = summarize(results, runs, test_cap)
    save_results(out / "population.json", results)
    plot(results, runs, out / "population.png")
    return results


def _metric(where: str, name: str):
    return lambda entry: entry["eval"][where]["metrics"][name]


def summarize(results: dict[str, Any], runs: list[Run], test_cap: int) -> dict[str, Any]:
    """Per cap: exploration and lifetime at the training and the test cap over seeds; the verdict."""
    rows = []
    for condition, entries in by_condition(results, runs).items():
        row: dict[str, Any] = {"cap": int(condition), "seeds": [e["seed"] for e in entries],
                               "steps": [e["steps"] for e in entries], "iterations": [e["iterations"] for e in entries],
                               "updates": [e.get("updates", 0) for e in entries]}
        if entries[0]["eval"]:
            for where in ("train_cap", "test_cap"):
                for name in ("explore", "lifetime"):
                    row[f"{name}_{where}"] = condition_stat(entries, _metric(where, name))
        rows.append(row)
    return {"test_cap": test_cap, "rows": rows, "verdict": [*verdict(rows, test_cap), *iterations_note(rows, "cap")]}


def verdict(rows: list[dict], test_cap: int) -> list[str]:
    """Plain sentences: does exploration grow with the training cap, at each evaluation cap, and
    beyond the intervals; does lifetime fall when a small population meets the test cap."""
    rows = sorted((r for r in rows if "explore_test_cap" in r), key=lambda r: r["cap"])
    if len(rows) < 2:
        return ["fewer than two caps evaluated: nothing to compare"]
    out = []
    for where, label in (("train_cap", "its training cap"), ("test_cap", f"the common test cap {test_cap}")):
        cells = [r[f"explore_{where}"] for r in rows]
        values = ", ".join(f"cap {r['cap']}: {fmt(c)}" for r, c in zip(rows, cells, strict=True))
        grows = all(a["mean"] < b["mean"] for a, b in zip(cells, cells[1:], strict=False))
        first, last = cells[0], cells[-1]
        separated = first["high"] is not None and last["low"] is not None and first["high"] < last["low"]
        kind = last.get("kind", "")
        if grows and separated:
            out.append(f"Explore at {label} grows with the training cap and the 95 % intervals ({kind}) of caps "
                       f"{rows[0]['cap']} and {rows[-1]['cap']} do not overlap: the paper's direction ({values}).")
        elif grows:
            out.append(f"Explore at {label} grows with the training cap, but the 95 % intervals ({kind}) of caps "
                       f"{rows[0]['cap']} and {rows[-1]['cap']} overlap: the paper's direction within noise "
                       f"({values}).")
        else:
            out.append(f"Explore at {label} does not rise step by step from each cap to the next at this budget "
                       f"({values}): the paper's monotone growth is not reproduced.")
    smaller = [r for r in rows if r["cap"] < test_cap]
    if smaller:
        drops = [f"cap {r['cap']}: {r['lifetime_train_cap']['mean']:.1f} -> {r['lifetime_test_cap']['mean']:.1f}"
                 for r in smaller]
        fell = all(r["lifetime_test_cap"]["mean"] < r["lifetime_train_cap"]["mean"] for r in smaller)
        out.append(f"Lifetime of the smaller caps' agents moved to the test cap {test_cap} "
                   f"{'falls' if fell else 'does not always fall'} ({'; '.join(drops)}); the paper reports a fall "
                   "(overcrowding and starvation).")
    return out


def table(results: dict[str, Any]) -> Table:
    """Exploration and lifetime per training cap, at the training cap and at the test cap."""
    summary = results["summary"]
    test_cap = summary["test_cap"]
    budget = results["settings"]
    seeds = max((len(row["seeds"]) for row in summary["rows"]), default=0)
    title = (f"Population size and exploration: {budget['steps']:,} agent-steps per run, {seeds} seed(s) per cap, "
             f"{budget['eval_episodes']} eval episode(s) per cap evaluated at; mean [95 % interval]")
    t = Table(title=title)
    for name in ("cap", "PPO its", "grad steps", "explore @own", f"explore @{test_cap}", "lifetime @own",
                 f"lifetime @{test_cap}"):
        t.add_column(name, justify="right")
    for row in summary["rows"]:
        t.add_row(str(row["cap"]), f"{np.mean(row['iterations']):.0f}", f"{np.mean(row.get('updates') or [0]):.0f}",
                  fmt(row.get("explore_train_cap")),
                  fmt(row.get("explore_test_cap")), fmt(row.get("lifetime_train_cap")),
                  fmt(row.get("lifetime_test_cap")))
    return t


def plot(results: dict[str, Any], runs: list[Run], path: Path) -> Path:
    """Explore and lifetime against the training cap (at both evaluation caps, seeds as dots),
    explore over training per cap, and the visit heatmap of each cap's agents at the test cap."""
    plt = pyplot()
    summary, groups = results["summary"], by_condition(results, runs)
    caps = [row["cap"] for row in summary["rows"]]
    fig, axes = plt.subplots(2, max(3, len(caps)), figsize=(4.2 * max(3, len(caps)), 7.5))
    for ax, name in zip(axes[0, :2], ("explore", "lifetime"), strict=True):
        _cap_panel(ax, summary, name)
    _curves_panel(axes[0, 2], groups, "explore")
    for ax in axes[0, 3:]:
        ax.axis("off")
    for ax, (cap, entries) in zip(axes[1], groups.items(), strict=False):
        _heatmap_panel(ax, entries, f"cap {cap}: visits at test cap {summary['test_cap']}")
    for ax in axes[1, len(groups):]:
        ax.axis("off")
    fig.tight_layout()
    return save_figure(fig, path)


def _cap_panel(ax: Any, summary: dict, name: str) -> None:
    rows = [r for r in summary["rows"] if f"{name}_train_cap" in r]
    for where, label, shift in (("train_cap", "at own cap", 0.95), ("test_cap", f"at cap {summary['test_cap']}", 1.05)):
        caps = np.array([r["cap"] for r in rows], dtype=float) * shift
        cells = [r[f"{name}_{where}"] for r in rows]
        means = np.array([c["mean"] for c in cells], dtype=float)
        low = np.array([c["low"] if c["low"] is not None else c["mean"] for c in cells], dtype=float)
        high = np.array([c["high"] if c["high"] is not None else c["mean"] for c in cells], dtype=float)
        line = ax.errorbar(caps, means, yerr=[means - low, high - means], marker="o", capsize=4, label=label)
        for cap, cell in zip(caps, cells, strict=True):
            ax.scatter([cap] * len(cell["values"]), cell["values"], s=10, alpha=0.5, color=line[0].get_color())
    ax.set_xscale("log", base=2)
    ax.set_xlabel("training population cap")
    ax.set_title(f"{name} (95 % interval; dots: seeds)")
    ax.legend(fontsize=8)


def _curves_panel(ax: Any, groups: dict[str, list[dict]], name: str) -> None:
    for condition, entries in groups.items():
        for k, entry in enumerate(entries):
            history = entry["history"]
            x, y = smooth([h["step"] for h in history], [h[name] for h in history],
                          [h["episodes"] for h in history], max(1, len(history) // 10))
            ax.plot(x, y, color=f"C{list(groups).index(condition)}", alpha=0.8,
                    label=f"cap {condition}" if k == 0 else None)
    label_agent_steps(ax)
    ax.set_title(f"{name} over training (finished agents)")
    ax.legend(fontsize=8)


def _heatmap_panel(ax: Any, entries: list[dict], title: str) -> None:
    grids = [np.array(e["eval"]["test_cap"]["visits"], dtype=float) for e in entries
             if e.get("eval") and "visits" in e["eval"].get("test_cap", {})]
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    if not grids:
        return
    total = np.sum(grids, axis=0)
    ax.imshow(np.log1p(total / max(total.max(), 1e-9) * 1000), cmap="magma")
