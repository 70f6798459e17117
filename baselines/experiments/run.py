"""Running an experiment: what a run is, its budget, training it, and the loop over every run.

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
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.args import PRESETS, Args
from baselines.experiments.results import FORMAT, FORMAT_VERSION, previous_runs, save_results, versions
from baselines.experiments.stats import clean
from evaluation.metrics import METRICS
from nmmo import config as config_module
from nmmo import console
from nmmo.config import Config
from nmmo.io.files import atomic_write_text

#: Wall-clock cap of a run trained on a step budget alone (the trainer needs one): a day.
NO_TIME_LIMIT_MINUTES = 24 * 60.0
#: History columns kept in the results file (the rest of each row stays in the run's log.jsonl).
HISTORY_KEYS = ("iteration", "step", "seconds", "episodes", "reward", *METRICS)


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
def train_run(run: Run, budget: Budget, root: Path, resume: bool, experiment: str,
              trainer: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train one run in ``ROOT/runs/KEY`` (continuing its checkpoint when `resume`); returns the
    steps, iterations, the command that repeats it, the maps it saw and its compact history.
    `trainer`: `Args` fields this run sets on top of the recipe (the tasks experiment's tasks)."""
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
                   "progress": budget.progress, "extra": {"experiment": experiment, "run": run.key},
                   **(trainer or {})})
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


# ------------------------------------------------------------------ every run
def run_all(experiment: str, runs: list[Run], budget: Budget, out: Path, settings: dict[str, Any],
            evaluate: Callable[[Run, dict], dict], resume: bool = False, command: str | None = None,
            on_run: Callable[[str], None] | None = None,
            trainer: Callable[[Run], dict[str, Any]] | None = None, reward: str | None = None) -> dict[str, Any]:
    """Train and evaluate every run not finished yet, saving the results file after each one;
    returns the results (``runs``: key -> entry), ready for the experiment's summary. `trainer`
    gives each run's own trainer settings (`train_run`); `reward` describes the training reward when it
    is not `reward_recipe`'s."""
    path = out / f"{experiment}.json"
    settings = {**settings, **budget.settings()}
    done = previous_runs(path, settings) if resume else {}
    results = {"format": FORMAT, "version": FORMAT_VERSION, "experiment": experiment, "settings": settings,
               "seeds": sorted({run.seed for run in runs}), "reward": reward or reward_recipe(),
               "trainer": recipe_args(),
               "command": command, "versions": versions(), "runs": done}
    with console.progress(total=len(runs), initial=sum(r.key in done for r in runs), desc=experiment, unit="run",
                          enabled=budget.progress) as bar:
        for run in runs:
            if run.key in done:
                continue
            bar.set_postfix_str(run.key)
            trained = train_run(run, budget, out, resume, experiment, trainer(run) if trainer else None)
            entry = {"condition": run.condition, "value": run.value, "seed": run.seed, "config": run.config.name,
                     "config_toml": run.config.to_toml(), **trained}
            entry["eval"] = evaluate(run, entry)
            done[run.key] = entry
            save_results(path, results)
            if on_run is not None:
                on_run(run.key)
            bar.update()
    return results
