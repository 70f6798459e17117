"""What the three learning experiments share: runs, training, evaluation, statistics, the results file.

A *run* is one condition (a population cap, a map pool, ...) with one seed. `run_all` trains and
evaluates every run in order and saves the results file after each, so ``--resume`` skips the runs
already in it and a run killed mid-training continues from its own checkpoint (each run trains in
``OUT/runs/KEY/``, which keeps its checkpoint, logs and curves).

Every run trains with the settings of the shipped recipe (``--preset small``: minibatches, threads;
not its scripted teacher) and its survival reward (`reward_recipe`), on the same budget of
agent-steps (``--steps``). The number of envs is chosen so that every condition steps about the
same number of agent slots per tick (``--rows``), whatever its population cap. Each run's maps go
to a map cache of its own (``OUT/runs/KEY/maps``), so the maps it actually trained on can be read
back from there: the episodes' maps are drawn from each episode's seed, which the trainer does not
report.

Evaluation is self-contained (the checkpoint controls every agent, as in `nmmo eval`), on the same
episode seeds and maps for every run; it plays the checkpoint in this process (it is our own, just
trained) rather than in `nmmo eval`'s sandboxed worker process, which costs about ten times more
per tick.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.args import PRESETS, Args
from evaluation.episode import episode_seeds, policy_seed, with_horizon
from evaluation.metrics import METRICS, lifetime_matrix, lifetimes_from_infos
from nmmo import config as config_module
from nmmo import console
from nmmo.config import Config
from nmmo.files import atomic_write_bytes, atomic_write_json, atomic_write_text

FORMAT = "flatmmo-experiment"
FORMAT_VERSION = 1
#: Wall-clock cap of a run trained on a step budget alone (the trainer needs one): a day.
NO_TIME_LIMIT_MINUTES = 24 * 60.0
#: History columns kept in the results file (the rest of each row stays in the run's log.jsonl).
HISTORY_KEYS = ("iteration", "step", "seconds", "episodes", "reward", *METRICS)
#: Side of the pooled visit heatmaps stored in the results file (the playable square, sum-pooled).
HEATMAP_SIDE = 32
#: Student t quantiles (0.975) for 1..30 degrees of freedom: 95 % intervals over a few seeds.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


# ------------------------------------------------------------------ settings
def recipe_args() -> dict[str, Any]:
    """The trainer settings of the shipped recipe (``--preset small``) that every run keeps: all but
    its world, time budget and directory, which the experiment sets per run, and its scripted
    teacher: the paper's agents learn from the reward alone, and so do these."""
    dropped = ("config", "minutes", "out", "teacher", "teacher_steps", "teacher_coef")
    return {k: v for k, v in PRESETS["small"]["args"].items() if k not in dropped}


def reward_recipe() -> str:
    """The training reward in words (the baseline's survival reward), for the results and the tables."""
    shaping = Args().resource_reward
    return (f"survival: the env's -1 at death, plus {shaping} per unit of food or water an agent gains by "
            "eating or drinking (baselines.args.Args.resource_reward; not on ticks it attacks, not from loot)")


@dataclass
class Budget:
    """What every run of an experiment gets: agent-steps (and optionally minutes) of training,
    agent slots per tick, and the evaluation episodes; plus where and how it runs."""

    steps: int
    minutes: float | None = None
    rows: int = 512
    #: One minibatch per this many live agent-steps (`Args.minibatch_agent_steps`): every condition
    #: makes the same gradient steps per agent-step, however many of its slots hold live agents.
    #: 256 is about the shipped recipe's (2,800 agent-steps an iteration in 16 minibatches).
    minibatch_agent_steps: int = 256
    eval_episodes: int = 2
    eval_ticks: int | None = None
    eval_seed: int = 0
    threads: int = 1
    workers: int = 0
    backend: str = "process"
    ray_address: str | None = None
    progress: bool = True

    def check(self) -> Budget:
        """Reject nonsense before any run starts (ValueError naming the flag)."""
        if self.steps < 1:
            raise ValueError(f"--steps must be a positive number of agent-steps, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"--minutes must be positive, got {self.minutes}")
        for flag, value, low in (("--rows", self.rows, 1), ("--minibatch-agent-steps", self.minibatch_agent_steps, 1),
                                 ("--eval-episodes", self.eval_episodes, 0),
                                 ("--threads", self.threads, 1), ("--workers", self.workers, 0),
                                 ("--eval-seed", self.eval_seed, 0)):
            if value < low:
                raise ValueError(f"{flag} must be >= {low}, got {value}")
        if self.eval_ticks is not None and self.eval_ticks < 1:
            raise ValueError(f"--eval-ticks must be positive, got {self.eval_ticks}")
        return self

    def settings(self) -> dict[str, Any]:
        """The settings that change results (a resumed experiment must keep them)."""
        return {"steps": self.steps, "minutes": self.minutes, "rows": self.rows,
                "minibatch_agent_steps": self.minibatch_agent_steps, "eval_episodes": self.eval_episodes,
                "eval_ticks": self.eval_ticks, "eval_seed": self.eval_seed}


@dataclass
class Run:
    """One condition with one seed: `config` is its training world, `value` the setting varied."""

    key: str
    condition: str
    value: int
    seed: int
    config: Config

    def num_envs(self, rows: int) -> int:
        """Envs stepped together: about `rows` agent slots per tick whatever the population cap."""
        return max(1, rows // self.config.PLAYER_N)


def condition_config(base: str, canonical: str, **keys: Any) -> Config:
    """`base` with `keys` set, named after the canonical config it equals (``population_32``) or
    else after its base and keys (the name travels into checkpoints, file names and tables)."""
    source = config_module.resolve(base)
    name = source.name + "".join(f"_{key.lower()}{value}" for key, value in keys.items())
    config = config_module.from_toml(source.to_toml(), name)
    for key, value in keys.items():
        config.set(key, value)
    config.validate()
    if canonical in config_module.available() and config_module.load(canonical) == config:
        return config_module.load(canonical)
    return config


# ------------------------------------------------------------------ training
def train_run(run: Run, budget: Budget, root: Path, resume: bool, experiment: str) -> dict[str, Any]:
    """Train one run in ``ROOT/runs/KEY`` (continuing its checkpoint when `resume`); returns the
    steps, iterations, the command that repeats it, the maps it saw and its compact history."""
    from baselines.ppo import read_log, train

    directory = root / "runs" / run.key
    maps = (directory / "maps").resolve()
    carry_on = resume and (directory / "checkpoint.pt").is_file()
    if not carry_on and maps.exists():
        shutil.rmtree(maps)  # a fresh run counts only the maps it loads itself
    config = config_module.from_toml(run.config.to_toml(), run.config.name).set("PATH_MAPS", str(maps))
    config_path = atomic_write_text(directory / f"{run.config.name}.toml", config.to_toml())
    args = Args(**{**recipe_args(), "config": str(config_path), "seed": run.seed, "total_steps": budget.steps,
                   "minutes": budget.minutes or NO_TIME_LIMIT_MINUTES, "num_envs": run.num_envs(budget.rows),
                   "minibatch_agent_steps": budget.minibatch_agent_steps,
                   "threads": budget.threads, "workers": budget.workers, "backend": budget.backend,
                   "ray_address": budget.ray_address, "out": str(directory), "resume": carry_on,
                   "progress": budget.progress, "extra": {"experiment": experiment, "run": run.key}})
    started = time.perf_counter()
    summary = train(args)
    seen = maps_seen(maps)
    history = read_log(directory)
    updates = sum(int(row.get("updates") or 0) for row in history)
    return {"steps": int(summary["steps"]), "iterations": int(summary["iterations"]), "updates": updates,
            "num_envs": args.num_envs,
            "wall_seconds": round(time.perf_counter() - started, 1), "resumed": carry_on,
            "checkpoint": summary["checkpoint"], "train_command": train_command(args),
            "maps_seen": len(seen) if seen else None, "map_seeds_seen": seen,
            "history": compact_history(history)}


def maps_seen(directory: Path) -> list[int]:
    """Seeds of the maps in a run's own map cache (each entry's JSON header names its seed): the
    maps its training episodes played on. Empty when the envs ran elsewhere (a remote Ray cluster)."""
    seeds = set()
    for header in directory.glob("*.json") if directory.is_dir() else []:
        try:
            seeds.add(int(json.loads(header.read_text())["seed"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(seeds)


def train_command(args: Args) -> str:
    """The `nmmo train` command line that repeats a run: every setting that differs from the defaults."""
    default = Args()
    parts = ["nmmo", "train"]
    for f in dataclasses.fields(Args):
        value = getattr(args, f.name)
        if f.name in ("extra", "progress", "backend", "ray_address") or value == getattr(default, f.name):
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            parts.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, tuple):
            parts += [flag, *map(str, value)]
        else:
            parts += [flag, str(value)]
    if args.backend == "ray":
        parts += ["--ray-address", args.ray_address] if args.ray_address else ["--ray"]
    return shlex.join(parts)


def compact_history(rows: list[dict]) -> list[dict]:
    """The history columns the experiments plot, rounded, NaN as None (JSON has no NaN)."""
    return [{k: clean(row.get(k)) for k in HISTORY_KEYS} for row in rows]


def clean(value: Any, digits: int = 4) -> Any:
    """A JSON-safe number: floats rounded, NaN and infinities as None."""
    if isinstance(value, float | np.floating):
        return round(float(value), digits) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


# ---------------------------------------------------------------- evaluation
def eval_config(config: Config, ticks: int | None, **keys: Any) -> Config:
    """`config` for evaluation: `ticks` per episode (None: its horizon), the shared map cache (not
    a run's own), and `keys` set (a test population cap)."""
    copy = with_horizon(config, ticks or config.HORIZON).set("PATH_MAPS", "")
    for key, value in keys.items():
        copy.set(key, value)
    return copy.validate()


def evaluate_checkpoint(config: Config, checkpoint: str, map_seeds: Sequence[int], budget: Budget,
                        desc: str = "eval", visits: bool = False) -> dict[str, Any]:
    """Self-contained episodes of a checkpoint (it controls every agent): episode i on map
    ``map_seeds[i]`` with the i-th seed of ``--eval-seed`` (the same for every run). Returns the
    pooled metrics with 95 % bootstrap intervals over episodes, each episode's sums and counts,
    and with `visits` the visit heatmap pooled over the episodes (`pooled_heatmap`)."""
    import torch

    from baselines.policy import CheckpointPolicy

    torch.set_num_threads(budget.threads)
    policy = CheckpointPolicy(config, path=checkpoint)
    seeds = episode_seeds(budget.eval_seed, len(map_seeds))
    episodes, heat = [], None
    # an inner loop of a run: a terminal shows its bar, a log only the runs' lines
    shown = budget.progress and console.is_terminal()
    episodes_bar = console.progress(total=len(seeds), desc=desc, unit="episode", enabled=shown)
    for seed, map_seed in zip(seeds, map_seeds, strict=True):
        matrix, tiles = play_episode(config, policy, seed, int(map_seed))
        episodes.append({"seed": seed, "map_seed": int(map_seed), "count": len(matrix),
                         "sums": {m: float(matrix[:, j].sum()) for j, m in enumerate(METRICS)}})
        heat = tiles if heat is None else heat + tiles
        episodes_bar.update()
    episodes_bar.close()
    out: dict[str, Any] = {"config": config.name, "population_cap": config.PLAYER_N, "ticks": config.HORIZON,
                           "metrics": pooled_metrics(episodes, budget.eval_seed), "episodes": episodes}
    if visits and heat is not None:
        out["visits"] = pooled_heatmap(heat, config)
    return out


def play_episode(config: Config, policy: Any, seed: int, map_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One self-contained episode to its horizon: every lifetime's metrics (one row each, columns
    `METRICS`, as `nmmo eval` counts them: deaths and everyone alive at the end) and the visit counts."""
    import nmmo

    env = nmmo.Env(config, seed=seed)
    obs, _ = env.reset(seed=seed, options={"map_seed": map_seed})
    policy.reset(policy_seed(seed, 0))
    reported: dict[int, dict] = {}
    while env.agents:
        obs, _, _, _, infos = env.step(policy.act({a: obs[a] for a in env.agents if a in obs}))
        reported.update(lifetimes_from_infos(infos))
    return lifetime_matrix(list(reported.values())), env.overlays.get("visits")


def pooled_heatmap(heat: np.ndarray, config: Config) -> list[list[int]]:
    """Visit counts of the playable square, sum-pooled to about `HEATMAP_SIDE` cells a side."""
    border, center = config.MAP_BORDER, config.MAP_CENTER
    factor = max(1, center // HEATMAP_SIDE)
    side = center // factor
    square = heat[border:border + side * factor, border:border + side * factor]
    return square.reshape(side, factor, side, factor).sum(axis=(1, 3)).round().astype(int).tolist()


# ---------------------------------------------------------------- statistics
def pooled_metrics(episodes: list[dict], seed: int = 0, draws: int = 2000) -> dict[str, dict[str, float | None]]:
    """{metric: {mean, low, high}}: the mean over every lifetime of the episodes, with a 95 %
    bootstrap interval over episodes (each resample pooled the same way; None from one episode)."""
    counts = np.array([e["count"] for e in episodes], dtype=np.float64)
    picks = np.random.default_rng(seed).integers(len(episodes), size=(draws, len(episodes)))
    out = {}
    for name in METRICS:
        sums = np.array([e["sums"][name] for e in episodes])
        if not counts.sum():
            out[name] = {"mean": None, "low": None, "high": None}
            continue
        resampled = sums[picks].sum(axis=1) / np.maximum(counts[picks].sum(axis=1), 1)
        low, high = np.percentile(resampled, [2.5, 97.5]) if len(episodes) > 1 else (None, None)
        out[name] = {"mean": clean(sums.sum() / counts.sum()), "low": clean(low), "high": clean(high)}
    return out


def seed_interval(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean of per-seed values with a 95 % Student t interval (None bounds for a single seed)."""
    kept = np.array([v for v in values if v is not None], dtype=np.float64)
    if not len(kept):
        return {"mean": None, "low": None, "high": None, "n": 0, "values": []}
    mean = float(kept.mean())
    if len(kept) < 2:
        return {"mean": clean(mean), "low": None, "high": None, "n": 1, "values": [clean(v) for v in kept]}
    half = T_975[min(len(kept) - 1, len(T_975)) - 1] * kept.std(ddof=1) / math.sqrt(len(kept))
    return {"mean": clean(mean), "low": clean(mean - half), "high": clean(mean + half), "n": int(len(kept)),
            "values": [clean(v) for v in kept]}


def condition_stat(entries: list[dict], value: Callable[[dict], dict]) -> dict[str, Any]:
    """One condition's statistic over its seeds: a t interval over the seeds' means when there are
    several, else the single run's bootstrap interval over episodes (`kind` says which)."""
    cells = [value(e) for e in entries]
    if len(cells) == 1:
        return {**cells[0], "n": 1, "values": [cells[0]["mean"]], "kind": "bootstrap over episodes"}
    return {**seed_interval([c["mean"] for c in cells]), "kind": "t over seeds"}


def iterations_note(rows: list[dict], key: str) -> list[str]:
    """A warning when the runs made very different numbers of gradient steps per agent-step.

    The trainer's batch is a rollout of fixed ticks, so a condition whose slots hold few live agents
    (a large cap filling at two spawns a tick) runs more iterations for the same agent-steps; with a
    fixed minibatch count it would also make more gradient steps per agent-step, which alone can make
    it learn faster early. The experiments size minibatches by live agent-steps
    (`Budget.minibatch_agent_steps`) so that this holds; the note says when it does not."""
    rates = {}
    for row in rows:
        steps, updates = row.get("steps"), row.get("updates")
        if steps and updates and all(updates):
            rates[row[key]] = 1000 * float(np.sum(updates)) / float(np.sum(steps))
    if len(rates) < 2 or max(rates.values()) < 1.5 * min(rates.values()):
        return []
    spread = ", ".join(f"{key} {k}: {v:.2f}" for k, v in rates.items())
    return [f"Caution: the runs made very different numbers of gradient steps per 1,000 agent-steps ({spread}), "
            "which confounds the comparison at this budget."]


def fmt(cell: dict | None, digits: int = 1) -> str:
    """'mean [low, high]' of a statistic ('-' where missing)."""
    if not cell or cell.get("mean") is None:
        return "-"
    if cell.get("low") is None:
        return f"{cell['mean']:.{digits}f}"
    return f"{cell['mean']:.{digits}f} [{cell['low']:.{digits}f}, {cell['high']:.{digits}f}]"


def smooth(steps: list, values: list, weights: list, window: int) -> tuple[np.ndarray, np.ndarray]:
    """A moving average of a history column, weighted by the lifetimes each row averaged (rows
    without finished lifetimes are skipped), with a point for every row. The window is centred, so
    a rise is placed where it happened, not half a window late; it shrinks to the first row at the
    start (the untrained policy's level is not averaged with what came after) and keeps its full
    width at the end (a last iteration with few finished agents does not swing the curve)."""
    data = [(s, v, w or 0) for s, v, w in zip(steps, values, weights, strict=True) if v is not None and w]
    if not data:
        return np.zeros(0), np.zeros(0)
    x, y, w = (np.array(c, dtype=np.float64) for c in zip(*data, strict=True))
    reach, rows = max(1, window) // 2, np.arange(len(y))
    half = np.minimum(reach, rows)
    high = np.minimum(len(y), rows + half + 1)
    low = np.minimum(rows - half, np.maximum(0, high - (2 * reach + 1)))
    sums, mass = np.concatenate(([0.0], np.cumsum(y * w))), np.concatenate(([0.0], np.cumsum(w)))
    return x, (sums[high] - sums[low]) / np.maximum(mass[high] - mass[low], 1e-9)


# -------------------------------------------------------------- results file
def versions() -> dict[str, str]:
    """Versions that can change results (the evaluation's, and torch's)."""
    from evaluation.tournament import versions as evaluation_versions

    out = evaluation_versions()
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover - the trainer needs it anyway
        pass
    return out


def previous_runs(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The finished runs of an earlier invocation, for ``--resume``; ValueError when it was made
    with other settings (its runs would not be comparable with new ones)."""
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    if saved.get("settings") != settings:
        raise ValueError(f"cannot resume {path}: it was made with other settings ({saved.get('settings')}); "
                         f"this run has {settings}")
    return saved.get("runs", {})


def run_all(experiment: str, runs: list[Run], budget: Budget, out: Path, settings: dict[str, Any],
            evaluate: Callable[[Run, dict], dict], resume: bool = False, command: str | None = None,
            on_run: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train and evaluate every run not finished yet, saving the results file after each one;
    returns the results (``runs``: key -> entry), ready for the experiment's summary."""
    path = out / f"{experiment}.json"
    settings = {**settings, **budget.settings()}
    done = previous_runs(path, settings) if resume else {}
    results = {"format": FORMAT, "version": FORMAT_VERSION, "experiment": experiment, "settings": settings,
               "seeds": sorted({run.seed for run in runs}), "reward": reward_recipe(), "trainer": recipe_args(),
               "command": command, "versions": versions(), "runs": done}
    with console.progress(total=len(runs), initial=sum(r.key in done for r in runs), desc=experiment, unit="run",
                          enabled=budget.progress) as bar:
        for run in runs:
            if run.key in done:
                continue
            bar.set_postfix_str(run.key)
            entry = {"condition": run.condition, "value": run.value, "seed": run.seed, "config": run.config.name,
                     "config_toml": run.config.to_toml(), **train_run(run, budget, out, resume, experiment)}
            entry["eval"] = evaluate(run, entry)
            done[run.key] = entry
            save_results(path, results)
            if on_run is not None:
                on_run(run.key)
            bar.update()
    return results


def save_results(path: Path, results: dict[str, Any]) -> Path:
    """Write the results file atomically (a kill leaves the previous version)."""
    return atomic_write_json(path, results)


def by_condition(results: dict[str, Any], runs: list[Run]) -> dict[str, list[dict]]:
    """The finished entries of `runs` grouped by condition, in the order of `runs`."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        groups.setdefault(run.condition, []).append(results["runs"][run.key])
    return groups


def save_figure(fig: Any, path: Path) -> Path:
    """A matplotlib figure as PNG, written atomically, then closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return atomic_write_bytes(path, buffer.getvalue())


def label_agent_steps(ax: Any) -> None:
    """An x axis of agent-steps, ticks written short (250k, 1.5M) so that they never run together."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    def short(x: float, _pos: int) -> str:
        if abs(x) >= 1e6:
            return f"{x / 1e6:g}M"
        return f"{x / 1e3:g}k" if abs(x) >= 1e3 else f"{x:g}"

    ax.set_xlabel("agent-steps")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(short))


def pyplot() -> Any:
    """Pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
