"""`nmmo experiment tasks`: does an agent that reads its task complete tasks it never trained on?

The directed benchmark's protocol (docs/tasks.md): two arms train on its train split (``directed``)
in the tournament's world (``train_tournament_tasks``, where agents live long enough for their
tasks), from the same start (``--init``, `baseline:small`'s weights), with the same draws of tasks,
the same budget of agent-steps and the same teacher: `scripted:Follower`, which reads each agent's
task from its observation and pursues it. For the first ``--teacher-play-steps`` (by default the
whole budget) the follower plays and both arms learn its labels (behaviour cloning, no policy
loss); after them the learner plays, the follower labels its states and PPO joins, the imitation
weight falling from 1 toward 0 over ``--teacher-steps``. The *conditioned* arm reads each agent's
task embedding; the *blind* one (``nmmo train --task-blind``) gets none, so it sees the teacher's
labels without what explains them. Each final checkpoint then controls every agent of
``--eval-episodes`` episodes of the held-out split (``heldout``: argument values and combinations
the train split lacks) in the canonical tournament world (``--eval-config``), played as ``nmmo eval
--tasks heldout`` plays them (the same seeds, maps, spawns and task draws for every run); the
conditioned checkpoint plays them a second time reading another agent's task (``--task-input
shuffled``). An episode's score is the completion rate of its lives. Reported: each arm's
completion with a 95 % t interval over seeds; conditioned - blind and own - shuffled paired episode
by episode, per seed (interval over episodes) and pooled over seeds x episodes; the teacher and
`baseline:small` on the same episodes; the imitation loss at the end of training (the last tenth
of the iterations) and the training split's completion where the learner played.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from baselines.experiments.report import fmt, label_agent_steps, pyplot, save_figure
from baselines.experiments.results import by_condition, save_results
from baselines.experiments.run import Budget, Run, run_all
from baselines.experiments.stats import clean, seed_interval
from evaluation.task_results import episode_completion, paired
from nmmo import config as config_module
from nmmo.tasks import load_task_set

CONFIG = "train_tournament_tasks"
TRAIN_TASKS = "directed"
HELDOUT_TASKS = "heldout"
#: The world the held-out episodes are played in: the canonical tournament's (`nmmo eval`'s).
EVAL_CONFIG = "tournament"
#: Ticks of an evaluation episode: the directed benchmark's (`benchmarks/bench_directed.py`).
EVAL_TICKS = 256
CURRICULUM = ""
#: Both arms imitate the task follower (which reads the task from the observation) while the
#: imitation weight falls from 1 toward 0 over TEACHER_STEPS agent-steps: the blind arm is shown
#: the same labels without the input that explains them.
TEACHER = "scripted:Follower"
TEACHER_STEPS = 1_200_000
#: The follower plays the whole default budget (behaviour cloning on its own play): learning its
#: labels on the states the learner visits, beside PPO, left the task input unused
#: (docs/experiments.md "What did not work"), while an offline clone of its play read it.
TEACHER_PLAY_STEPS = 600_000
#: The learning rate of the offline clone that read its task (cloning at the earlier protocol's
#: 3e-4 was not tried).
LR = 1e-3
#: Both arms start from the survival baseline (its weights; the task input at zero weight).
INIT = "baseline:small"
SEEDS = (0, 1, 2)
ARMS = ("conditioned", "blind")
#: Agent-steps of the default budget: about 30 CPU-minutes per run (2026-11-28 on this 2-core VM;
#: the follower's labels take about two thirds; late in an episode few agents are alive, so a tick
#: costs more per agent-step); the six runs side by side on the 2 cores took 96 minutes.
DEFAULT_STEPS = 600_000
#: Agent slots stepped per tick: 5 worlds of 100.
ROWS = 512
#: One minibatch per this many live agent-steps: about 15 an epoch, the shipped recipes' number.
MINIBATCH_AGENT_STEPS = 1024
EVAL_EPISODES = 8
#: Run seed of the held-out episodes: the directed benchmark's table's (docs/tasks.md), not tuned on.
EVAL_SEED = 11
#: Episodes of the held-out evaluation played at once.
EVAL_WORKERS = 2
#: Played on the same held-out episodes: the teacher (what imitation aims at) and the survival
#: baseline both arms start from (never shown a task).
REFERENCES = ("scripted:Follower", "baseline:small")
#: The share of the last iterations whose ended lives give the training-set completion.
TAIL = 0.1


def task_reward_recipe(config: str = CONFIG, teacher: str = TEACHER, teacher_steps: int = TEACHER_STEPS,
                       teacher_play_steps: int = 0) -> str:
    """The training reward of both arms, in words."""
    from baselines.args import Args

    world = config_module.resolve(config)
    survival = (f"TASK_SURVIVAL_REWARD {world.TASK_SURVIVAL_REWARD:g} times the survival reward (-1 at death)"
                if world.TASK_SURVIVAL_REWARD else "TASK_SURVIVAL_REWARD 0, so no -1 at death, as in nmmo 2.x")
    imitation = (f"; imitation of {teacher} with a weight falling linearly from 1 (0 at {teacher_steps:,} "
                 "agent-steps)" if teacher and teacher_steps else "")
    if teacher and teacher_steps and teacher_play_steps:
        imitation += (f", {teacher} playing the first {teacher_play_steps:,} agent-steps (the learner learns its "
                      "labels and the value of its play, no policy loss)")
    return (f"tasks: the reward of the agent's task (TASK_REWARD {world.TASK_REWARD:g}; {survival}), plus "
            f"{Args().resource_reward} per unit of food or water an agent gains by eating or drinking "
            f"(baselines.args.Args.resource_reward; not on ticks it attacks, not from loot){imitation}")


def make_runs(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS) -> list[Run]:
    """Both arms for every seed, in the same world (`value`: 1 for the conditioned arm)."""
    world = config_module.resolve(config)
    return [Run(f"{arm}-seed{seed}", arm, int(arm == "conditioned"), seed, world) for seed in seeds for arm in ARMS]


def trainer(tasks: str, curriculum: str, teacher: str = TEACHER, teacher_steps: int = TEACHER_STEPS,
            init: str = INIT, teacher_play_steps: int = TEACHER_PLAY_STEPS, lr: float = LR):
    """Each run's trainer settings: the tasks, the curriculum, the teacher (and how long it plays),
    the weights it starts from, the learning rate, and for the blind arm no embedding."""
    return lambda run: {"tasks": tasks, "task_curriculum": curriculum, "task_blind": run.condition == "blind",
                        "teacher": teacher or None, "teacher_steps": teacher_steps if teacher else 0,
                        "teacher_play_steps": teacher_play_steps if teacher else 0, "init": init, "lr": lr}


def heldout_play(spec: str, budget: Budget, heldout: str, eval_config: str, task_input: str = "own") -> dict[str, Any]:
    """`spec` controls every agent of the held-out episodes, as `nmmo eval --tasks HELDOUT` plays
    them (the same episodes for every run and input): per episode its lives, completion and
    progress, and the report per task and tag."""
    from evaluation.tournament import evaluate

    ticks = budget.eval_ticks
    result = evaluate(eval_config, spec, ticks=ticks, episodes=budget.eval_episodes, seed=budget.eval_seed,
                      workers=EVAL_WORKERS, progress=False, tasks=heldout, task_input=task_input)
    report = result["tasks"]
    return {"config": result["config"]["name"],
            "ticks": result["settings"]["ticks"], "tasks": heldout, "task_input": task_input,
            "seeds": result["seeds"], "map_seeds": result["map_seeds"],
            "lives": [e["lives"] for e in report["episodes"]], "completion": episode_completion(report),
            "progress": [e["progress"] for e in report["episodes"]], "report": report}


def evaluator(budget: Budget, heldout: str, eval_config: str):
    """Each final checkpoint on the held-out episodes (the conditioned one also reading shuffled
    tasks); the training split's completion from its log."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        from baselines.ppo import read_log

        spec = f"ckpt:{entry['checkpoint']}"
        out = heldout_play(spec, budget, heldout, eval_config)
        if run.condition == "conditioned":
            out["shuffled"] = heldout_play(spec, budget, heldout, eval_config, "shuffled")
        log = read_log(Path(entry["checkpoint"]).parent)
        return {**out, "train_completion": clean(tail_completion(log)), "imitation_end": clean(tail_imitation(log)),
                "train_curve": [[row["step"], clean(row.get("task_completion")), row.get("task_lives")] for row in log],
                "imitation_curve": [[row["step"], clean(row.get("imitation_loss"))] for row in log],
                "teacher_played": [row["step"] for row in log if row.get("teacher_plays")]}

    return evaluate


def tail_completion(log: list[dict]) -> float:
    """The completion rate of the lives that ended in the last `TAIL` of the iterations (pooled),
    counting only iterations the learner played (while the teacher plays, the lives are its)."""
    own = [row for row in log if not row.get("teacher_plays")]
    tail = own[-max(1, round(len(log) * TAIL)):] if own else []
    lives = sum(row.get("task_lives") or 0.0 for row in tail)
    done = sum((row.get("task_completion") or 0.0) * (row.get("task_lives") or 0.0) for row in tail)
    return done / lives if lives else float("nan")


def tail_imitation(log: list[dict]) -> float:
    """The mean imitation loss (cross-entropy on the teacher's labels) of the last `TAIL` of the
    iterations: lower in the conditioned arm when its task input explains labels the blind one cannot."""
    values = [row["imitation_loss"] for row in log[-max(1, round(len(log) * TAIL)):]
              if isinstance(row.get("imitation_loss"), float) and np.isfinite(row["imitation_loss"])]
    return float(np.mean(values)) if values else float("nan")


def run_tasks(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS, budget: Budget | None = None,
              out: str | Path = "out/experiments/tasks", resume: bool = False, command: str | None = None,
              on_run=None, train_tasks: str = TRAIN_TASKS, heldout: str = HELDOUT_TASKS,
              curriculum: str = CURRICULUM, teacher: str = TEACHER, teacher_steps: int = TEACHER_STEPS,
              init: str = INIT, eval_config: str = EVAL_CONFIG,
              references: tuple[str, ...] = REFERENCES, teacher_play_steps: int = TEACHER_PLAY_STEPS,
              lr: float = LR) -> dict[str, Any]:
    """Train both arms for every seed, evaluate on the held-out split, summarize; writes OUT/tasks.json
    and OUT/tasks.png and returns the results."""
    budget = (budget or Budget(DEFAULT_STEPS, rows=ROWS, minibatch_agent_steps=MINIBATCH_AGENT_STEPS,
                               eval_episodes=EVAL_EPISODES, eval_ticks=EVAL_TICKS, eval_seed=EVAL_SEED)).check()
    if budget.eval_episodes < 2:
        raise ValueError("the tasks experiment compares runs episode by episode: --eval-episodes must be >= 2")
    if teacher and not 0 <= teacher_play_steps <= teacher_steps:
        raise ValueError(f"--teacher-play-steps ({teacher_play_steps}) must be between 0 and --teacher-steps "
                         f"({teacher_steps})")
    load_task_set(train_tasks), load_task_set(heldout), config_module.resolve(eval_config)  # fail before training
    runs = make_runs(config, tuple(seeds))
    out = Path(out)
    settings = {"config": config, "train_tasks": train_tasks, "heldout": heldout, "curriculum": curriculum,
                "teacher": teacher, "teacher_steps": teacher_steps, "teacher_play_steps": teacher_play_steps,
                "lr": lr, "init": init, "eval_config": eval_config}
    results = run_all("tasks", runs, budget, out, settings, evaluator(budget, heldout, eval_config), resume, command,
                      on_run, trainer(train_tasks, curriculum, teacher, teacher_steps, init, teacher_play_steps, lr),
                      task_reward_recipe(config, teacher, teacher_steps, teacher_play_steps))
    # the references are deterministic: a resume (same settings, checked by run_all) keeps those measured
    kept = previous_references(out / "tasks.json") if resume else {}
    results["references"] = {spec: kept.get(spec) or heldout_play(spec, budget, heldout, eval_config)
                             for spec in references}
    results["summary"] = summarize(results, runs)
    save_results(out / "tasks.json", results)
    plot(results, runs, out / "tasks.png")
    return results


def previous_references(path: Path) -> dict[str, Any]:
    """The references an earlier invocation measured (none when it left no results file)."""
    import json

    return json.loads(path.read_text()).get("references", {}) if path.is_file() else {}


def _arm_cells(entries: list[dict], key: str, part: str | None = None) -> dict[str, Any]:
    """A t interval over seeds of each run's mean of an eval list (`completion` or `progress`; of
    the eval's `part`, e.g. shuffled, when given)."""
    def values(entry: dict) -> list[float]:
        found = (entry["eval"][part] if part else entry["eval"])[key]
        return [v for v in found if v is not None]

    return seed_interval([float(np.mean(v)) if (v := values(e)) else None for e in entries])


def task_mean(entry: dict) -> float | None:
    """A run's held-out completion with every task weighted equally: the mean over the held-out
    tasks (those some life held) of each task's completion rate. The score per life favours
    whatever lives most often, e.g. short lives on a task completed at spawn."""
    rates = [t["completion"]["mean"] for t in entry["eval"]["report"]["tasks"].values()
             if t["completion"]["mean"] is not None]
    return float(np.mean(rates)) if rates else None


def contrast(pairs: list[tuple[int, list, list]]) -> dict[str, Any]:
    """Paired episode by episode: per seed (its interval over episodes) and pooled over seeds x
    episodes; `pairs` holds (seed, a's per-episode completion, b's)."""
    per_seed = {seed: paired(a, b) for seed, a, b in pairs}
    pooled = paired([x for _, a, _ in pairs for x in a], [y for _, _, b in pairs for y in b])
    return {"seeds": per_seed, "pooled": pooled,
            "every_seed_above_0": bool(per_seed) and all((c["mean"] or 0) > 0 for c in per_seed.values())}


def summarize(results: dict[str, Any], runs: list[Run]) -> dict[str, Any]:
    """Per arm: held-out completion (per life, and tasks weighted equally) and progress, the
    training split's completion at the end, each tag's completion, with t intervals over seeds;
    the paired contrasts (conditioned - blind, own - shuffled); the references; the verdict."""
    groups = by_condition(results, runs)
    tags = sorted({tag for entries in groups.values() for tag in entries[0]["eval"]["report"]["tags"]})
    rows = []
    for arm, entries in groups.items():
        def tag_mean(entry: dict, tag: str) -> float | None:
            return entry["eval"]["report"]["tags"][tag]["completion"]["mean"]

        rows.append({"arm": arm, "seeds": [e["seed"] for e in entries], "steps": [e["steps"] for e in entries],
                     "completion": _arm_cells(entries, "completion"), "progress": _arm_cells(entries, "progress"),
                     "task_mean": seed_interval([task_mean(e) for e in entries]),
                     "train_completion": seed_interval([e["eval"]["train_completion"] for e in entries]),
                     "imitation_end": seed_interval([e["eval"].get("imitation_end") for e in entries]),
                     "tags": {tag: seed_interval([tag_mean(e, tag) for e in entries]) for tag in tags}})
    conditioned = {e["seed"]: e["eval"] for e in groups.get("conditioned", [])}
    blind = {e["seed"]: e["eval"] for e in groups.get("blind", [])}
    shuffled = [e for e in groups.get("conditioned", []) if "shuffled" in e["eval"]]
    if shuffled:
        rows.append({"arm": "conditioned, shuffled input", "seeds": [e["seed"] for e in shuffled],
                     "completion": _arm_cells(shuffled, "completion", "shuffled"),
                     "progress": _arm_cells(shuffled, "progress", "shuffled"),
                     "task_mean": seed_interval([]), "train_completion": seed_interval([]),
                     "imitation_end": seed_interval([]),
                     "tags": {tag: seed_interval([e["eval"]["shuffled"]["report"]["tags"][tag]["completion"]["mean"]
                                                  for e in shuffled]) for tag in tags}})
    summary: dict[str, Any] = {
        "rows": rows, "tags": tags,
        "conditioned_minus_blind": contrast([(seed, conditioned[seed]["completion"], blind[seed]["completion"])
                                             for seed in conditioned if seed in blind]),
        "own_minus_shuffled": contrast([(e["seed"], e["eval"]["completion"], e["eval"]["shuffled"]["completion"])
                                        for e in shuffled])}
    summary["references"] = {spec: {"completion": seed_interval(ref["completion"]),
                                    "progress": seed_interval(ref["progress"]),
                                    "task_mean": seed_interval([task_mean({"eval": ref})])}
                             for spec, ref in results.get("references", {}).items()}
    summary["verdict"] = verdict(summary)
    return summary


def verdict(summary: dict[str, Any]) -> list[str]:
    """Plain sentences: each arm's held-out completion, the two paired contrasts per seed and
    pooled, the references, and whether the agent reads its task."""
    arms = {row["arm"]: row for row in summary["rows"]}
    if not {"conditioned", "blind"} <= set(arms):
        return ["Incomplete: both arms are needed for a verdict."]
    out = [f"held-out completion: conditioned {fmt(arms['conditioned']['completion'], 3)}, blind "
           f"{fmt(arms['blind']['completion'], 3)}"
           + (f", conditioned reading shuffled tasks {fmt(arms['conditioned, shuffled input']['completion'], 3)}"
              if "conditioned, shuffled input" in arms else "") + " (95 % t intervals over seeds)."]
    for key, what in (("conditioned_minus_blind", "conditioned - blind"), ("own_minus_shuffled", "own - shuffled")):
        c = summary[key]
        if not c["seeds"]:
            continue
        seeds = "; ".join(f"seed {seed} {fmt(cell, 3)}" for seed, cell in c["seeds"].items())
        out.append(f"{what}, paired episode by episode: {seeds}; pooled over seeds x episodes "
                   f"{fmt(c['pooled'], 3)} (n={c['pooled']['n']}).")
    for spec, ref in summary["references"].items():
        out.append(f"{spec} on the same episodes: {fmt(ref['completion'], 3)} (interval over episodes).")
    blind, shuffled = summary["conditioned_minus_blind"], summary["own_minus_shuffled"]
    reads = (blind["every_seed_above_0"] and (blind["pooled"]["low"] or 0) > 0
             and (shuffled["pooled"]["low"] or 0) > 0)
    out.append("Shown: the conditioned agent reads its task (above the blind twin on every seed, both pooled "
               "intervals above 0)." if reads else
               "Not shown at this budget: a pooled interval includes 0 or a seed's difference is not above 0.")
    return out


def table(results: dict[str, Any]) -> Table:
    """One row per arm: held-out completion and progress, training-split completion, each tag's completion."""
    settings, summary = results["settings"], results["summary"]
    t = Table(title=f"Task generalization: train on {settings['train_tasks']} (teacher {settings['teacher'] or 'none'}"
                    f"), evaluate on {settings['heldout']} in {settings.get('eval_config', '?')}; "
                    f"{settings['steps']:,} agent-steps per run, {len(results['seeds'])} seed(s); mean [95 % t "
                    "interval over seeds]")
    tags = [tag for tag in summary["tags"] if tag not in (settings["heldout"],)]
    for name in ("arm", "held-out completion", "tasks weighted equally", "held-out progress",
                 "train-split completion (end, learner playing)", "imitation loss (end)",
                 *(f"tag {tag}" for tag in tags)):
        t.add_column(name, justify="left" if name == "arm" else "right")
    for row in summary["rows"]:
        t.add_row(row["arm"], fmt(row["completion"], 3), fmt(row.get("task_mean", {}), 3), fmt(row["progress"], 3),
                  fmt(row["train_completion"], 3), fmt(row.get("imitation_end", {}), 3),
                  *(fmt(row["tags"][tag], 3) for tag in tags))
    for key, what in (("conditioned_minus_blind", "conditioned - blind"), ("own_minus_shuffled", "own - shuffled")):
        pooled = summary[key]["pooled"]
        if pooled["n"]:
            t.add_row(f"{what} (paired, pooled over seeds x episodes)", fmt(pooled, 3), "", "", "", "",
                      *("" for _ in tags))
    for spec, ref in summary.get("references", {}).items():  # intervals over episodes, not seeds
        t.add_row(f"{spec} (reference; over episodes)", fmt(ref["completion"], 3), fmt(ref["task_mean"], 3),
                  fmt(ref["progress"], 3), "-", "-", *("-" for _ in tags))
    return t


def plot(results: dict[str, Any], runs: list[Run], path: Path) -> Path:
    """Held-out completion per arm and reference (seeds as dots, 95 % t intervals), the paired
    contrasts per seed and pooled, each family's completion, and the imitation loss over training
    (the conditioned arm's lower when it reads its task)."""
    plt = pyplot()
    summary, groups = results["summary"], by_condition(results, runs)
    fig, axes = plt.subplots(1, 4, figsize=(21, 5), gridspec_kw={"width_ratios": [1.3, 1, 2, 1.6]})
    colours = {"conditioned": "C0", "blind": "C1", "conditioned, shuffled input": "C2"}
    cells = [(row["arm"], row["completion"], colours.get(row["arm"], "C3")) for row in summary["rows"]]
    cells += [(spec, ref["completion"], "C7") for spec, ref in summary.get("references", {}).items()]
    ax = axes[0]
    for i, (_, cell, colour) in enumerate(cells):
        _bar(ax, i, cell, colour, None)
    ax.set_xticks(range(len(cells)), [name.replace(", ", ",\n").replace(":", ":\n") for name, _, _ in cells],
                  fontsize=7)
    ax.set_title(f"held-out completion ({results['settings']['heldout']})")
    ax = axes[1]
    for i, key in enumerate(("conditioned_minus_blind", "own_minus_shuffled")):
        contrast_ = summary[key]
        for j, cell in enumerate(contrast_["seeds"].values()):
            _whisker(ax, i - 0.2 + 0.1 * j, cell, "C0")
        _whisker(ax, i + 0.25, contrast_["pooled"], "k")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks([0, 1], ["conditioned\n- blind", "own\n- shuffled"])
    ax.set_title("paired differences: per seed, pooled (black)")
    ax = axes[2]
    tags = [tag for tag in summary["tags"] if tag != results["settings"]["heldout"]]
    for j, row in enumerate(summary["rows"]):
        for i, tag in enumerate(tags):
            _bar(ax, i + (j - 1) * 0.28, row["tags"][tag], colours.get(row["arm"], "C3"),
                 row["arm"] if i == 0 else None, width=0.26)
    ax.set_xticks(range(len(tags)), tags, rotation=20)
    ax.legend(fontsize=8)
    ax.set_title("held-out completion by family")
    ax = axes[3]
    for arm, entries in groups.items():
        for k, entry in enumerate(entries):
            curve = [(s, c) for s, c in entry["eval"].get("imitation_curve", []) if c is not None]
            if curve:
                x, y = zip(*curve, strict=True)
                ax.plot(x, y, color=colours.get(arm, "C3"), alpha=0.6, label=arm if k == 0 else None)
    ax.legend(fontsize=8)
    ax.set_title(f"imitation loss on {results['settings']['teacher'] or 'no teacher'}'s labels")
    label_agent_steps(ax)
    fig.tight_layout()
    return save_figure(fig, path)


def _whisker(ax: Any, x: float, cell: dict, colour: str) -> None:
    if cell.get("mean") is None:
        return
    low, high = cell.get("low"), cell.get("high")
    error = None if low is None else [[cell["mean"] - low], [high - cell["mean"]]]
    ax.errorbar([x], [cell["mean"]], yerr=error, fmt="o", color=colour, capsize=3)


def _bar(ax: Any, x: float, cell: dict, colour: str, label: str | None, width: float = 0.6) -> None:
    if cell.get("mean") is None:
        return
    low, high = cell.get("low"), cell.get("high")
    error = None if low is None else [[cell["mean"] - low], [high - cell["mean"]]]
    ax.bar(x, cell["mean"], width=width, color=colour, alpha=0.6, label=label, yerr=error, capsize=3)
    values = [v for v in cell.get("values", []) if v is not None]
    ax.scatter([x] * len(values), values, color=colour, s=12, zorder=3)
