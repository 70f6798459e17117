"""`nmmo experiment maps`: does training on more maps generalize better (the paper's Table 2, Fig. 6)?

The paper trained on pools of 1, 32, 256 and 16384 procedurally generated 128x128 maps with every
system on (``configs/domain_rand_*.toml``) and found a generalization gap (lifetime on the
training maps above lifetime on unseen maps) only for the 1-map pool. Here every pool trains on
the same number of agent-steps; each checkpoint is evaluated self-contained on held-out maps and,
with the same episode seeds, on the training maps the run actually saw (read back from its own map
cache). A short run sees far fewer maps than a large pool holds, so the table reports how many:
a 16384-map pool trained for a few million agent-steps is, in effect, a pool of a few dozen.
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
from baselines.experiments.stats import condition_stat, iterations_note, seed_interval, smooth
from evaluation.episode import eval_map_seeds
from nmmo.core import world

CONFIG = "domain_rand_1"
POOLS = (1, 32, 256, 16384)
SEEDS = (0,)
#: Agent-steps per run of the default budget: 4 pools x 800k agent-steps. Measured end to end on the
#: 2-core VM (docs/experiments.md, Budgets): 16 minutes in a fast sitting (15 of them training),
#: about twice that in a slow one.
DEFAULT_STEPS = 800_000
EVAL_EPISODES = 2
#: The paper's Table 2: mean lifetime during training and on unseen maps, and its training epochs.
PAPER = {1: {"train": 66.08, "test": 52.73, "epochs": 67868}, 32: {"train": 61.93, "test": 61.56, "epochs": 109868},
         256: {"train": 62.67, "test": 61.91, "epochs": 58568}, 16384: {"train": 52.30, "test": 53.25, "epochs": 99868}}
#: The fraction of the training history that counts as "during training" (its last quarter).
TRAIN_TAIL = 0.25


def make_runs(config: str = CONFIG, pools: tuple[int, ...] = POOLS, seeds: tuple[int, ...] = SEEDS) -> list[Run]:
    """One run per (seed, pool size), seeds outermost."""
    if not pools or any(n < 1 for n in pools):
        raise ValueError(f"--maps must be positive pool sizes, got {list(pools)}")
    return [Run(f"maps{n}-seed{seed}", str(n), n, seed, condition_config(config, f"domain_rand_{n}", MAP_N=n))
            for seed in seeds for n in pools]


def training_maps(entry: dict[str, Any], config: Any, episodes: int) -> tuple[list[int], str]:
    """Map seeds of the training-map episodes: spread over the maps the run saw (its map cache),
    or the pool's first maps when none were recorded (envs on a remote Ray cluster)."""
    seen = entry.get("map_seeds_seen") or []
    if seen:
        return [seen[(i * len(seen)) // episodes] if episodes <= len(seen) else seen[i % len(seen)]
                for i in range(episodes)], "maps the run saw"
    return [world.map_seed(config, i % config.MAP_N, "train") for i in range(episodes)], "the pool's first maps"


def evaluator(budget: Budget):
    """The evaluation of one run: on held-out maps and on its training maps, same episode seeds."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        if not budget.eval_episodes:
            return {}
        config = eval_config(run.config, budget.eval_ticks)
        seen, source = training_maps(entry, config, budget.eval_episodes)
        heldout = eval_map_seeds(config, budget.eval_episodes)
        return {"heldout": evaluate_checkpoint(config, entry["checkpoint"], heldout, budget,
                                               f"eval {run.key} held-out"),
                "train_maps": evaluate_checkpoint(config, entry["checkpoint"], seen, budget,
                                                  f"eval {run.key} training maps"),
                "train_maps_source": source}

    return evaluate


def run_maps(config: str = CONFIG, pools: tuple[int, ...] = POOLS, seeds: tuple[int, ...] = SEEDS,
             budget: Budget | None = None, out: str | Path = "out/experiments/maps", resume: bool = False,
             command: str | None = None, on_run=None) -> dict[str, Any]:
    """Train and evaluate every (pool, seed), then add the summary and verdict; writes OUT/maps.json
    and OUT/maps.png and returns the results."""
    budget = (budget or Budget(DEFAULT_STEPS, eval_episodes=EVAL_EPISODES)).check()
    runs = make_runs(config, tuple(pools), tuple(seeds))
    out = Path(out)
    results = run_all("maps", runs, budget, out, {"config": config}, evaluator(budget), resume, command, on_run)
    results["summary"] = summarize(results, runs)
    save_results(out / "maps.json", results)
    plot(results, runs, out / "maps.png")
    return results


def train_lifetime(entry: dict[str, Any]) -> float | None:
    """Mean lifetime of the agents that finished in the last `TRAIN_TAIL` of training (the paper's
    "Train" column is lifetime during training)."""
    history = entry["history"]
    tail = [h for h in history[int(len(history) * (1 - TRAIN_TAIL)):] if h["episodes"] and h["lifetime"] is not None]
    weights = sum(h["episodes"] for h in tail)
    return sum(h["lifetime"] * h["episodes"] for h in tail) / weights if weights else None


def gap(entry: dict[str, Any], seed: int = 0, draws: int = 2000) -> dict[str, Any]:
    """Lifetime on the training maps minus on held-out maps, with a 95 % bootstrap interval over
    both sets of episodes (resampled independently; None bounds unless both have two or more)."""
    rng = np.random.default_rng(seed)

    def resampled(episodes: list[dict]) -> np.ndarray:
        sums = np.array([e["sums"]["lifetime"] for e in episodes])
        counts = np.array([e["count"] for e in episodes], dtype=float)
        picks = rng.integers(len(episodes), size=(draws, len(episodes)))
        return sums[picks].sum(axis=1) / np.maximum(counts[picks].sum(axis=1), 1)

    train, held = entry["eval"]["train_maps"], entry["eval"]["heldout"]
    mean = round(train["metrics"]["lifetime"]["mean"] - held["metrics"]["lifetime"]["mean"], 4)
    if min(len(train["episodes"]), len(held["episodes"])) < 2:
        return {"mean": mean, "low": None, "high": None}
    low, high = np.percentile(resampled(train["episodes"]) - resampled(held["episodes"]), [2.5, 97.5])
    return {"mean": mean, "low": round(float(low), 4), "high": round(float(high), 4)}


def summarize(results: dict[str, Any], runs: list[Run]) -> dict[str, Any]:
    """Per pool: maps seen, lifetime during training, on training maps and held-out maps, the gap."""
    rows = []
    for condition, entries in by_condition(results, runs).items():
        row: dict[str, Any] = {"pool": int(condition), "seeds": [e["seed"] for e in entries],
                               "steps": [e["steps"] for e in entries], "maps_seen": [e["maps_seen"] for e in entries],
                               "iterations": [e["iterations"] for e in entries],
                               "updates": [e.get("updates", 0) for e in entries],
                               "train_lifetime": seed_interval([train_lifetime(e) for e in entries])}
        if entries[0]["eval"]:
            row["train_maps"] = condition_stat(entries, lambda e: e["eval"]["train_maps"]["metrics"]["lifetime"])
            row["heldout"] = condition_stat(entries, lambda e: e["eval"]["heldout"]["metrics"]["lifetime"])
            row["gap"] = condition_stat(entries, gap)
        row["paper"] = PAPER.get(int(condition))
        rows.append(row)
    return {"rows": rows, "verdict": [*verdict(rows), *iterations_note(rows, "pool")]}


def verdict(rows: list[dict]) -> list[str]:
    """Plain sentences: is there a gap at 1 map, is it the largest, do the other pools have one."""
    rows = [r for r in rows if "gap" in r]
    if not rows:
        return ["no evaluation: nothing to compare"]
    gaps = ", ".join(f"{r['pool']} maps: {fmt(r['gap'])}" for r in rows)
    seen = ", ".join(f"{r['pool']}: {'/'.join(str(s) for s in r['maps_seen'])}" for r in rows)
    out = [f"Generalization gap (lifetime on training maps minus held-out, 95 % interval): {gaps}.",
           f"Distinct maps each run trained on (pool: seen): {seen}."]
    single = next((r for r in rows if r["pool"] == 1), None)
    others = [r for r in rows if r["pool"] != 1]
    if single is None or not others:
        return [*out, "The paper's claim needs the 1-map pool and at least one larger pool."]
    largest = all(single["gap"]["mean"] > r["gap"]["mean"] for r in others)
    clear = single["gap"]["low"] is not None and single["gap"]["low"] > 0
    others_small = all(r["gap"]["low"] is None or r["gap"]["low"] <= 0 <= r["gap"]["high"] for r in others)
    if largest and clear and others_small:
        out.append("Reproduced: only the 1-map pool shows a gap (its interval excludes 0, the others' include it).")
    elif largest:
        out.append("The 1-map pool has the largest gap, the paper's direction, but "
                   + ("its interval includes 0." if not clear else "some larger pools show a gap too."))
    else:
        out.append("Not reproduced at this budget: the 1-map pool does not have the largest gap.")
    return out


def table(results: dict[str, Any]) -> Table:
    """Table 2 with the maps each run saw, beside the paper's lifetimes."""
    settings = results["settings"]
    t = Table(title=f"Map pools and generalization: {settings['steps']:,} agent-steps per run, "
                    f"{settings['eval_episodes']} eval episode(s) per map set; mean lifetime [95 % interval] "
                    "during training (its last quarter), on the training maps each run saw and on held-out maps; "
                    "paper: Table 2's train / test")
    for name in ("maps", "seen", "training", "training maps", "held-out maps", "gap", "paper"):
        t.add_column(name, justify="right")
    for row in results["summary"]["rows"]:
        paper = row["paper"]
        t.add_row(str(row["pool"]), "/".join(str(s) for s in row["maps_seen"]), fmt(row["train_lifetime"]),
                  fmt(row.get("train_maps")), fmt(row.get("heldout")), fmt(row.get("gap")),
                  f"{paper['train']:.0f} / {paper['test']:.0f}" if paper else "-")
    return t


def plot(results: dict[str, Any], runs: list[Run], path: Path) -> Path:
    """Lifetime per pool (during training, training maps, held-out; the paper's as markers), maps
    seen against pool size, and lifetime over training per pool (the paper's Fig. 6)."""
    plt = pyplot()
    rows = results["summary"]["rows"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    _lifetime_panel(axes[0], rows)
    _seen_panel(axes[1], rows)
    groups = by_condition(results, runs)
    for index, (condition, entries) in enumerate(groups.items()):
        for k, entry in enumerate(entries):
            history = entry["history"]
            x, y = smooth([h["step"] for h in history], [h["lifetime"] for h in history],
                          [h["episodes"] for h in history], max(1, len(history) // 10))
            axes[2].plot(x, y, color=f"C{index}", label=f"{condition} maps" if k == 0 else None)
    label_agent_steps(axes[2])
    axes[2].set_title("lifetime over training (finished agents)")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def _lifetime_panel(ax: Any, rows: list[dict]) -> None:
    x = np.arange(len(rows))
    for offset, key, label in ((-0.27, "train_lifetime", "during training"), (0.0, "train_maps", "training maps"),
                               (0.27, "heldout", "held-out maps")):
        cells = [r.get(key) or {"mean": None} for r in rows]
        means = np.array([c["mean"] if c["mean"] is not None else np.nan for c in cells], dtype=float)
        low = np.array([c.get("low") if c.get("low") is not None else m for c, m in zip(cells, means, strict=True)])
        high = np.array([c.get("high") if c.get("high") is not None else m for c, m in zip(cells, means, strict=True)])
        ax.bar(x + offset, means, width=0.27, yerr=[means - low, high - means], capsize=3, label=label)
    for name, marker in (("train", "^"), ("test", "v")):
        paper = [r["paper"][name] if r["paper"] else np.nan for r in rows]
        ax.scatter(x, paper, color="black", marker=marker, zorder=3, label=f"paper {name}")
    ax.set_xticks(x, [str(r["pool"]) for r in rows])
    ax.set_xlabel("training maps in the pool")
    ax.set_title("mean lifetime (95 % interval)")
    ax.legend(fontsize=7)


def _seen_panel(ax: Any, rows: list[dict]) -> None:
    pools = [r["pool"] for r in rows]
    for r in rows:
        seen = [s for s in r["maps_seen"] if s is not None]
        ax.scatter([r["pool"]] * len(seen), seen, color="C0")
    ax.plot(pools, pools, color="gray", linestyle="--", label="the whole pool")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training maps in the pool")
    ax.set_ylabel("distinct maps the run trained on")
    ax.set_title("maps seen")
    ax.legend(fontsize=8)
