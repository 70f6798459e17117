"""The paper's Table 1 as a command, with its sensitivity to population cap and forest abundance.

`run_table1` plays each scripted bot self-contained (it controls every agent) on the paper's
small maps (`small_maps`: 128² playable, cap 256, continuous respawn, 1024 ticks, all systems) on
held-out maps, and reports the mean of each metric over every lifetime with a 95 % interval over
maps (a bootstrap over the maps, with the same pooling as the mean). Then it repeats the chosen
bots with other population caps and more forest, and lists the material fractions of the maps
played, beside nmmo 2.1.1's generator when its interpreter is given.

Forest abundance is varied through MAP_GRASS_THRESHOLD, not MAP_FOREST_THRESHOLD: lowering the
grass threshold turns grass into forest and leaves water and stone as they are, while moving the
forest threshold trades forest for stone (which also changes where agents can walk). At the
default thresholds our maps hold nmmo 2.1.1's fractions (forest 16 %, stone 10 %). Every run is a
call to `evaluation.evaluate`, journaled so `resume` skips finished ones.

Sanity checks that would catch the table lying are part of the result (`orderings`): the paper's
orderings (Lifetime, Achievement, Explore, Forage: Forage > Combat > Meander; Player Kills and
Equipment: Combat > Forage = 0), each marked as holding or not.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.metrics import METRICS
from evaluation.tournament import evaluate, versions
from nmmo import config as config_module
from nmmo import console
from nmmo.core import world
from nmmo.io.files import atomic_write_bytes

BOTS = ("scripted:Forage", "scripted:Combat", "scripted:Meander")
CAPS = (8, 32, 128, 256)
#: MAP_GRASS_THRESHOLD values whose held-out small maps hold about 12 %, 16 % (the default 0.70,
#: which gives nmmo 2.1.1's fraction), 20 % and 27 % forest; the command prints what it measured.
FOREST_THRESHOLDS = (0.73, 0.70, 0.655, 0.597)
#: The paper's Table 1 (small maps, every column as printed there), for the plot and the docs:
#: {bot: {metric: value}}.
PAPER = {
    "scripted:Forage": {"lifetime": 252.38, "achievement": 7.56, "player_kills": 0.0, "equipment": 0.0,
                        "explore": 37.07, "forage": 26.18},
    "scripted:Combat": {"lifetime": 76.52, "achievement": 3.45, "player_kills": 0.69, "equipment": 0.11,
                        "explore": 14.81, "forage": 16.15},
    "scripted:Meander": {"lifetime": 28.62, "achievement": 0.08, "player_kills": 0.0, "equipment": 0.0,
                         "explore": 4.46, "forage": 11.49},
}
#: (metric, bots in the order the paper has them, whether the last must be exactly 0)
ORDERINGS = (
    ("lifetime", ("scripted:Forage", "scripted:Combat", "scripted:Meander"), False),
    ("achievement", ("scripted:Forage", "scripted:Combat", "scripted:Meander"), False),
    ("explore", ("scripted:Forage", "scripted:Combat", "scripted:Meander"), False),
    ("forage", ("scripted:Forage", "scripted:Combat", "scripted:Meander"), False),
    ("player_kills", ("scripted:Combat", "scripted:Forage"), True),
    ("equipment", ("scripted:Combat", "scripted:Forage"), True),
)
RESULTS_FILE = "table1.json"
REFERENCE_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "ref_map_fractions.py"


def summarize(result: dict[str, Any], policy: str, seed: int = 0, draws: int = 2000) -> dict[str, dict[str, float]]:
    """{metric: {mean, low, high}}: the mean over every lifetime of `policy` in an `evaluate`
    result, with a 95 % bootstrap interval over its episodes (maps), each resample pooled the
    same way (sum of lifetime values / number of lifetimes)."""
    cells = [episode["metrics"][policy] for episode in result["episodes"]]
    counts = np.array([cell[METRICS[0]]["count"] for cell in cells], dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(len(cells), size=(draws, len(cells)))
    out = {}
    for name in METRICS:
        sums = np.array([(cell[name]["mean"] or 0.0) * cell[name]["count"] for cell in cells])
        total = counts.sum()
        mean = float(sums.sum() / total) if total else float("nan")
        resampled = sums[picks].sum(axis=1) / np.maximum(counts[picks].sum(axis=1), 1)
        low, high = np.percentile(resampled, [2.5, 97.5]) if total else (float("nan"), float("nan"))
        out[name] = {"mean": mean, "low": float(low), "high": float(high)}
    out["lifetimes"] = {"mean": float(counts.sum()), "low": float(counts.min()), "high": float(counts.max())}
    return out


def orderings(main: dict[str, dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    """The paper's orderings checked on our means (each says which bots it compares and if it holds)."""
    out = []
    for metric, full_order, last_zero in ORDERINGS:
        order = [bot for bot in full_order if bot in main]  # the bots this table has, in the paper's order
        if len(order) < 2:
            continue
        last_zero = last_zero and order[-1] == full_order[-1]
        values = [main[bot][metric]["mean"] for bot in order]
        holds = all(a > b for a, b in zip(values, values[1:], strict=False))
        if last_zero:
            holds = holds and values[-1] == 0
        relation = " > ".join(bot.split(":")[-1] for bot in order) + (" = 0" if last_zero else "")
        out.append({"metric": metric, "relation": relation, "values": values, "holds": bool(holds)})
    return out


def material_fractions(config, maps: int) -> dict[str, float]:
    """Mean material fractions of the playable square over the first `maps` held-out maps."""
    totals: dict[str, float] = {}
    for index in range(maps):
        game_map = world.get_map(config, world.map_seed(config, index % config.MAP_N_EVAL, "eval"))
        for name, value in game_map.fractions().items():
            totals[name] = totals.get(name, 0.0) + value / maps
    return totals


def reference_fractions(python: str, maps: int, center: int = 128) -> dict[str, float]:
    """Material fractions of nmmo 2.1.1's generator, run in its own interpreter (`python`, the
    reference virtualenv's: `python benchmarks/reference.py` builds it and prints its path)."""
    done = subprocess.run([python, str(REFERENCE_SCRIPT), "--maps", str(maps), "--center", str(center)],
                          capture_output=True, text=True, timeout=3600, cwd="/tmp")
    if done.returncode != 0:
        raise ValueError(f"the reference generator failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_key(kind: str, bot: str, value: Any) -> str:
    return f"{kind}:{bot}:{value}"


def run_table1(config: str = "small_maps", bots: Sequence[str] = BOTS, maps: int = 8, seed: int = 0,
               caps: Sequence[int] = CAPS, forest: Sequence[float] = FOREST_THRESHOLDS,
               sensitivity_bots: Sequence[str] = ("scripted:Forage",), workers: int = 2,
               out: str | Path | None = None, resume: bool = False, reference_python: str | None = None,
               progress: bool = True, on_run: Callable[[str], None] | None = None, **evaluate_options: Any,
               ) -> dict[str, Any]:
    """Play Table 1 and its sensitivity; returns the result dict (and saves it under `out`).
    `evaluate_options` go to every `evaluate` call (time_budget, backend, ray_address)."""
    base = config_module.resolve(config)
    if maps < 1:
        raise ValueError(f"maps must be >= 1, got {maps}")
    for cap in caps:  # a bad cap or threshold fails now, naming the key, not after an hour of runs
        config_module.resolve(config).set("PLAYER_N", cap).validate()
    for threshold in forest:
        config_module.resolve(config).set("MAP_GRASS_THRESHOLD", threshold).validate()
    runs: list[tuple[str, str, Any]] = [("main", bot, None) for bot in bots]
    runs += [("cap", bot, int(cap)) for cap in caps for bot in sensitivity_bots]
    runs += [("forest", bot, float(t)) for t in forest for bot in sensitivity_bots]
    path = None if out is None else Path(out) / RESULTS_FILE
    settings = {"config": base.name, "maps": maps, "seed": seed, "bots": list(bots), "caps": list(caps),
                "forest": list(forest), "sensitivity_bots": list(sensitivity_bots)}
    done: dict[str, Any] = {}
    if resume and path is not None and path.is_file():
        saved = json.loads(path.read_text())
        if saved.get("settings") != settings:
            raise ValueError(f"cannot resume {path}: it was made with other settings ({saved.get('settings')})")
        done = saved.get("runs", {})
    results: dict[str, Any] = {"format": "flatmmo-table1", "version": 1, "settings": settings,
                               "config_toml": base.to_toml(), "versions": versions(), "runs": done}
    with console.progress(total=len(runs), initial=sum(_run_key(*r) in done for r in runs), desc="table1",
                          unit="run", enabled=progress) as bar:
        for kind, bot, value in runs:
            key = _run_key(kind, bot, value)
            if key in done:
                continue
            bar.set_postfix_str(key)
            conf = config_module.resolve(config)
            if kind == "cap":
                conf.set("PLAYER_N", value)
            elif kind == "forest":
                conf.set("MAP_GRASS_THRESHOLD", value)
            result = evaluate(conf, bot, episodes=maps, seed=seed, workers=workers, progress=False,
                              **evaluate_options)
            entry = {"kind": kind, "bot": bot, "value": value, "metrics": summarize(result, bot, seed),
                     "seeds": result["seeds"], "map_seeds": result["map_seeds"]}
            if kind == "forest":
                entry["forest_fraction"] = material_fractions(conf, maps)["forest"]
            done[key] = entry
            if path is not None:
                atomic_write_bytes(path, json.dumps(results, indent=1).encode())
            if on_run is not None:
                on_run(key)
            bar.update()
    main = {bot: done[_run_key("main", bot, None)]["metrics"] for bot in bots}
    results["main"] = main
    results["orderings"] = orderings(main)
    results["materials"] = {"ours": material_fractions(base, maps)}
    if reference_python:
        results["materials"]["nmmo 2.1.1"] = reference_fractions(reference_python, maps, base.MAP_CENTER)
    # where the main rows sit on the sensitivity axes (the config's own cap and forest)
    results["defaults"] = {"cap": base.PLAYER_N, "forest_fraction": results["materials"]["ours"]["forest"]}
    if path is not None:
        atomic_write_bytes(path, json.dumps(results, indent=1).encode())
        plot_table1(results, Path(out) / "table1.png")
    return results


def plot_table1(results: dict[str, Any], path: Path) -> Path:
    """One PNG: the main metrics per bot with intervals and the paper's values, then lifetime
    against population cap and against forest fraction for the sensitivity bots (their main run
    is the point at the config's own cap and forest)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = results["main"]
    bots = list(main)
    metrics = ("lifetime", "achievement", "explore", "forage", "player_kills", "equipment")
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, metric in zip(axes.ravel()[:6], metrics, strict=True):
        means = [main[b][metric]["mean"] for b in bots]
        errors = [[m - main[b][metric]["low"] for b, m in zip(bots, means, strict=True)],
                  [main[b][metric]["high"] - m for b, m in zip(bots, means, strict=True)]]
        x = np.arange(len(bots))
        ax.bar(x, means, yerr=errors, capsize=4, color="#4c78a8", label="flatmmo (95 % interval over maps)")
        paper = [PAPER.get(b, {}).get(metric, np.nan) for b in bots]
        ax.scatter(x, paper, color="#e45756", zorder=3, marker="D", label="paper")
        ax.set_xticks(x, [b.split(":")[-1] for b in bots])
        ax.set_title(metric)
    axes[0, 0].legend(fontsize=7)
    runs = list(results["runs"].values())
    for ax, kind, label in ((axes[1, 2], "cap", "population cap"), (axes[1, 3], "forest", "forest fraction")):
        for bot in results["settings"]["sensitivity_bots"]:
            points = [(r["forest_fraction"] if kind == "forest" else r["value"], r["metrics"]["lifetime"])
                      for r in runs if r["kind"] == kind and r["bot"] == bot]
            default = results.get("defaults", {}).get("cap" if kind == "cap" else "forest_fraction")
            if default is not None and bot in main:
                points.append((default, main[bot]["lifetime"]))
            points.sort(key=lambda point: point[0])
            if not points:
                continue
            means = [p[1]["mean"] for p in points]
            spread = [[m - p[1]["low"] for m, p in zip(means, points, strict=True)],
                      [p[1]["high"] - m for m, p in zip(means, points, strict=True)]]
            ax.errorbar([p[0] for p in points], means, yerr=spread, marker="o", capsize=3, label=bot.split(":")[-1])
        if kind == "cap":
            ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_title(f"lifetime vs {label}")
        if ax.lines:
            ax.legend(fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return path
