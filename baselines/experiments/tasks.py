"""`nmmo experiment tasks`: does a task-conditioned agent complete tasks it never trained on?

Two arms train on the same training task set (``train``: the union of foraging, exploration,
combat and npc_hunting) in ``train_tasks`` (train_small with the survival reward's -1 at death
beside the task reward) with the same reward (the task reward, the survival reward and the
trainer's foraging shaping), the same teacher for the first ``--teacher-steps`` (scripted Combat
labels the states, as `baseline:small`'s recipe does: both arms start from a policy that stays
alive), the same curriculum (``--curriculum``, default ``edge``: `nmmo.tasks.sampling.EdgeSampler`)
and the same budget of agent-steps: the *conditioned* agent reads each agent's task embedding, the
*blind* one (``nmmo train --task-blind``) gets none. Each final checkpoint then controls every agent
of ``--eval-episodes`` episodes on held-out maps where every agent holds a task of the held-out set
(``heldout``: the same families with other arguments and combinations, drawn by the specs'
weights), played in this process (`play_task_episode`; the report is
`evaluation.task_results.task_report`'s, per task and per tag). A run's score is the completion
rate of its held-out lives (the mean over episodes of each episode's rate); each arm gets a 95 %
Student t interval over seeds; the verdict says whether the arms' intervals are disjoint. The
training set's completion at the end of training (the last tenth of the iterations' ended lives,
from the trainer's log) is reported beside it: an agent that does not beat the blind one on its
own training tasks is not expected to on held-out ones. Beside them: the completion with every
held-out task weighted equally (`task_mean`: the per-life score favours whatever lives most often),
and `baseline:small` (trained to survive, never shown a task) on the same held-out episodes.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from rich.table import Table

from baselines.experiments.evaluate import eval_config
from baselines.experiments.report import fmt, label_agent_steps, pyplot, save_figure
from baselines.experiments.results import by_condition, save_results
from baselines.experiments.run import Budget, Run, run_all
from baselines.experiments.stats import clean, seed_interval
from evaluation.episode import episode_seeds, eval_map_seeds, policy_seed
from evaluation.task_results import task_report
from nmmo import config as config_module
from nmmo.core.actions import NO_OP_ROW
from nmmo.tasks import load_task_set

CONFIG = "train_tasks"
TRAIN_TASKS = "train"
HELDOUT_TASKS = "heldout"
CURRICULUM = "edge"
#: Both arms imitate this bot while the imitation weight falls to 0 over TEACHER_STEPS agent-steps.
TEACHER = "scripted:Combat"
TEACHER_STEPS = 1_000_000
SEEDS = (0, 1, 2)
ARMS = ("conditioned", "blind")
#: Agent-steps of the default budget: about 20 minutes per run alone on a core of this 2-core VM.
#: Measured on 2026-11-26 at the experiments' settings (8 envs, one minibatch per 256 live
#: agent-steps, one torch thread): 2.6k to 3.6k agent-steps/s without the teacher, about 1.9k/s
#: while it labels (its first 1M); with three runs sharing the 2 cores, 36 to 48 minutes a run.
DEFAULT_STEPS = 3_000_000
EVAL_EPISODES = 4
#: What task training is measured against: the shipped survival baseline, which never saw a task.
REFERENCE = "baseline:small"
#: The share of the last iterations whose ended lives give the training-set completion.
TAIL = 0.1


def task_reward_recipe(config: str = CONFIG, teacher: str = TEACHER, teacher_steps: int = TEACHER_STEPS) -> str:
    """The training reward of both arms, in words."""
    from baselines.args import Args

    world = config_module.resolve(config)
    survival = (f"TASK_SURVIVAL_REWARD {world.TASK_SURVIVAL_REWARD:g} times the survival reward (-1 at death)"
                if world.TASK_SURVIVAL_REWARD else "TASK_SURVIVAL_REWARD 0, so no -1 at death, as in nmmo 2.x")
    imitation = (f"; imitation of {teacher} with a weight falling from 1 to 0 over the first {teacher_steps:,} "
                 "agent-steps" if teacher and teacher_steps else "")
    return (f"tasks: the reward of the agent's task (TASK_REWARD {world.TASK_REWARD:g}; {survival}), plus "
            f"{Args().resource_reward} per unit of food or water an agent gains by eating or drinking "
            f"(baselines.args.Args.resource_reward; not on ticks it attacks, not from loot){imitation}")


def make_runs(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS) -> list[Run]:
    """Both arms for every seed, in the same world (`value`: 1 for the conditioned arm)."""
    world = config_module.resolve(config)
    return [Run(f"{arm}-seed{seed}", arm, int(arm == "conditioned"), seed, world) for seed in seeds for arm in ARMS]


def trainer(tasks: str, curriculum: str, teacher: str = TEACHER, teacher_steps: int = TEACHER_STEPS):
    """Each run's trainer settings: the tasks, the curriculum, the teacher, and for the blind arm no embedding."""
    return lambda run: {"tasks": tasks, "task_curriculum": curriculum, "task_blind": run.condition == "blind",
                        "teacher": teacher or None, "teacher_steps": teacher_steps if teacher else 0}


def play_task_episode(config, policy: Any, seed: int, map_seed: int) -> np.ndarray:
    """One self-contained episode where `policy` controls every agent and every agent holds a task
    of the config's TASKS: (lives, 4) rows of task index, progress, completed, task reward of every
    life that ended (deaths, and everyone alive at the end), as `nmmo eval --tasks` counts them."""
    import nmmo

    env = nmmo.Env(config, seed=seed)
    env.reset(seed=seed, options={"map_seed": map_seed})
    policy.reset(policy_seed(seed, 0))
    rows: dict[int, np.ndarray] = {}
    while not env.done and (env.agents or config.PLAYER_RESPAWN):
        actions = np.tile(np.array(NO_OP_ROW, dtype=np.int64), (env.n_slots, 1))
        batch = env.observations()
        if batch.n:
            actions[env.live_players()[1]] = policy.act_arrays(batch)
        step = env.step_arrays(actions)
        if step.episode_slots is not None:
            rows.update(zip(step.agent_ids[step.episode_slots].tolist(), env.task_status(step.episode_slots),
                            strict=True))
    return np.array(list(rows.values())).reshape(-1, 4)


def evaluator(budget: Budget, heldout: str):
    """Each final checkpoint on the held-out tasks and maps; the training-set completion from its log."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        import torch

        from baselines.policy import CheckpointPolicy
        from baselines.ppo import read_log

        torch.set_num_threads(budget.threads)
        config = eval_config(run.config, budget.eval_ticks, TASKS=heldout, TASK_CURRICULUM="")
        out = heldout_episodes(config, CheckpointPolicy(config, path=entry["checkpoint"]), budget, heldout)
        log = read_log(Path(entry["checkpoint"]).parent)
        return {**out, "train_completion": clean(tail_completion(log)),
                "train_curve": [[row["step"], clean(row.get("task_completion")), row.get("task_lives")] for row in log]}

    return evaluate


def heldout_episodes(config, policy: Any, budget: Budget, heldout: str) -> dict[str, Any]:
    """`policy` controls every agent of the evaluation episodes (the same seeds and maps for every
    run): lives, completion and progress per episode, and the report per task and tag."""
    n = budget.eval_episodes
    seeds, maps = episode_seeds(budget.eval_seed, n), eval_map_seeds(config, n)
    episodes = [SimpleNamespace(tasks=play_task_episode(config, policy, s, m))
                for s, m in zip(seeds, maps, strict=True)]
    rates = [float(e.tasks[:, 2].mean()) for e in episodes if len(e.tasks)]
    progress = [float(e.tasks[:, 1].mean()) for e in episodes if len(e.tasks)]
    return {"config": config.name, "ticks": config.HORIZON, "tasks": heldout, "map_seeds": maps,
            "lives": [len(e.tasks) for e in episodes], "completion": [clean(r) for r in rates],
            "progress": [clean(p) for p in progress], "report": task_report(episodes, load_task_set(heldout))}


def reference_eval(config: str, budget: Budget, heldout: str, spec: str = REFERENCE) -> dict[str, Any]:
    """The reference policy (`baseline:small`: trained to survive, never saw a task, ignores the
    embedding) on the same held-out episodes as the runs: what task training adds."""
    import torch

    from nmmo.policy import load_policy_class

    torch.set_num_threads(budget.threads)
    world = eval_config(config_module.resolve(config), budget.eval_ticks, TASKS=heldout, TASK_CURRICULUM="")
    return {"spec": spec, **heldout_episodes(world, load_policy_class(spec)(world), budget, heldout)}


def tail_completion(log: list[dict]) -> float:
    """The completion rate of the lives that ended in the last `TAIL` of the iterations (pooled)."""
    tail = log[-max(1, round(len(log) * TAIL)):] if log else []
    lives = sum(row.get("task_lives") or 0.0 for row in tail)
    done = sum((row.get("task_completion") or 0.0) * (row.get("task_lives") or 0.0) for row in tail)
    return done / lives if lives else float("nan")


def run_tasks(config: str = CONFIG, seeds: tuple[int, ...] = SEEDS, budget: Budget | None = None,
              out: str | Path = "out/experiments/tasks", resume: bool = False, command: str | None = None,
              on_run=None, train_tasks: str = TRAIN_TASKS, heldout: str = HELDOUT_TASKS,
              curriculum: str = CURRICULUM, teacher: str = TEACHER,
              teacher_steps: int = TEACHER_STEPS) -> dict[str, Any]:
    """Train both arms for every seed, evaluate on the held-out set, summarize; writes OUT/tasks.json
    and OUT/tasks.png and returns the results."""
    budget = (budget or Budget(DEFAULT_STEPS, eval_episodes=EVAL_EPISODES)).check()
    if budget.eval_episodes < 1:
        raise ValueError("the tasks experiment evaluates on held-out tasks: --eval-episodes must be >= 1")
    load_task_set(train_tasks), load_task_set(heldout)  # a bad name fails before any training
    runs = make_runs(config, tuple(seeds))
    out = Path(out)
    settings = {"config": config, "train_tasks": train_tasks, "heldout": heldout, "curriculum": curriculum,
                "teacher": teacher, "teacher_steps": teacher_steps}
    results = run_all("tasks", runs, budget, out, settings, evaluator(budget, heldout), resume, command, on_run,
                      trainer(train_tasks, curriculum, teacher, teacher_steps),
                      task_reward_recipe(config, teacher, teacher_steps))
    results["reference"] = reference_eval(config, budget, heldout)  # no training: measured again on a resume
    results["summary"] = summarize(results, runs)
    save_results(out / "tasks.json", results)
    plot(results, runs, out / "tasks.png")
    return results


def _arm_cells(entries: list[dict], key: str) -> dict[str, Any]:
    """A t interval over seeds of each run's mean of an eval list (`completion` or `progress`)."""
    return seed_interval([float(np.mean(e["eval"][key])) if e["eval"][key] else None for e in entries])


def task_mean(entry: dict) -> float | None:
    """A run's held-out completion with every task weighted equally: the mean over the held-out
    tasks (those some life held) of each task's completion rate. The score per life favours
    whatever lives most often, e.g. short lives on a task completed at spawn."""
    rates = [t["completion"]["mean"] for t in entry["eval"]["report"]["tasks"].values()
             if t["completion"]["mean"] is not None]
    return float(np.mean(rates)) if rates else None


def summarize(results: dict[str, Any], runs: list[Run]) -> dict[str, Any]:
    """Per arm: held-out completion (per life, and tasks weighted equally) and progress, the
    training set's completion at the end, and each tag's held-out completion, with t intervals
    over seeds; the verdict."""
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
                     "tags": {tag: seed_interval([tag_mean(e, tag) for e in entries]) for tag in tags}})
    paired = paired_difference(groups)
    summary = {"rows": rows, "tags": tags, "difference": paired,
               "difference_task_mean": paired_difference(groups, task_mean)}
    reference = results.get("reference")
    if reference:
        summary["reference"] = {"spec": reference["spec"], "completion": seed_interval(reference["completion"]),
                                "task_mean": seed_interval([task_mean({"eval": reference})]),
                                "progress": seed_interval(reference["progress"])}
        summary["versus_reference"] = {arm: versus_reference(entries, reference) for arm, entries in groups.items()}
    summary["verdict"] = verdict(rows, paired, summary.get("versus_reference"), reference and reference["spec"])
    return summary


def versus_reference(entries: list[dict], reference: dict) -> dict[str, Any]:
    """Held-out completion per life minus the reference's on the same episodes: per seed the mean
    over episodes (a t interval over seeds), and for the first seed per episode (the shipped
    baseline's recipe is the conditioned arm's first seed)."""
    def differences(entry: dict) -> list[float]:
        ours, theirs = entry["eval"]["completion"], reference["completion"]
        return [a - b for a, b in zip(ours, theirs, strict=False) if a is not None and b is not None]

    per_seed = [float(np.mean(d)) if (d := differences(e)) else None for e in entries]
    return {"seeds": seed_interval(per_seed), "first_seed_episodes": seed_interval(differences(entries[0]))}


def life_mean(entry: dict) -> float | None:
    """A run's held-out completion per life (the mean over episodes of each episode's rate)."""
    return float(np.mean(entry["eval"]["completion"])) if entry["eval"]["completion"] else None


def paired_difference(groups: dict[str, list[dict]], score=life_mean) -> dict[str, Any]:
    """A held-out score (default: completion per life), conditioned minus blind, per seed (the two
    runs of a seed play the same evaluation episodes: same maps, same task draws), with a t
    interval over seeds."""
    arms = {arm: {e["seed"]: score(e) for e in entries} for arm, entries in groups.items()}
    if set(arms) != set(ARMS):
        return seed_interval([])
    seeds = [s for s in arms["conditioned"] if s in arms["blind"] and None not in (arms["conditioned"][s],
                                                                                 arms["blind"][s])]
    return seed_interval([arms["conditioned"][s] - arms["blind"][s] for s in seeds])


def disjoint(a: dict, b: dict) -> bool | None:
    """Whether two intervals are disjoint (None: one has no interval)."""
    if a.get("low") is None or b.get("low") is None:
        return None
    return a["high"] < b["low"] or b["high"] < a["low"]


def verdict(rows: list[dict], paired: dict | None = None, versus: dict | None = None,
            reference: str | None = None) -> list[str]:
    """Plain sentences: held-out completion of the arms, whether their intervals are disjoint, the
    paired difference per seed, and each arm against the reference policy."""
    arms = {row["arm"]: row for row in rows}
    if set(arms) != set(ARMS):
        return ["Incomplete: both arms are needed for a verdict."]
    out = []
    for key, what in (("completion", "held-out completion"), ("task_mean", "held-out completion, tasks weighted "
                                                                          "equally"), ("progress", "held-out progress"),
                      ("train_completion", "training-set completion at the end of training")):
        a, b = arms["conditioned"][key], arms["blind"][key]
        if a["mean"] is None or b["mean"] is None:
            out.append(f"{what}: not measured.")
            continue
        apart = disjoint(a, b)
        better = "higher" if a["mean"] > b["mean"] else "lower" if a["mean"] < b["mean"] else "equal"
        how = ("intervals disjoint: a difference at 95 %" if apart else "intervals overlap: no difference shown"
               if apart is not None else "one seed per arm: no interval")
        out.append(f"{what}: conditioned {fmt(a, 3)}, blind {fmt(b, 3)}; conditioned is {better} ({how}).")
    if paired and paired.get("low") is not None:
        excludes = paired["low"] > 0 or paired["high"] < 0
        out.append(f"Paired by seed (same evaluation episodes), conditioned - blind held-out completion: "
                   f"{fmt(paired, 3)} ({'excludes' if excludes else 'includes'} 0).")
    for arm, cells in (versus or {}).items():
        cell = cells["seeds"]
        if cell.get("mean") is not None:
            out.append(f"{arm} - {reference} held-out completion on the same episodes: {fmt(cell, 3)} (over seeds"
                       f"; first seed per episode {fmt(cells['first_seed_episodes'], 3)}).")
    main = disjoint(arms["conditioned"]["completion"], arms["blind"]["completion"])
    gain = (arms["conditioned"]["completion"]["mean"] or 0.0) > (arms["blind"]["completion"]["mean"] or 0.0)
    if main and gain:
        out.append("Shown: the task-conditioned agent completes held-out tasks more often than the task-blind one.")
    elif main:
        out.append("Not shown: the task-blind agent completes held-out tasks more often.")
    else:
        out.append("Not shown at this budget: the held-out completion of the two arms cannot be told apart.")
    return out


def table(results: dict[str, Any]) -> Table:
    """One row per arm: held-out completion and progress, training-set completion, each tag's completion."""
    settings, summary = results["settings"], results["summary"]
    t = Table(title=f"Task generalization: train on {settings['train_tasks']} ({settings['curriculum'] or 'no'} "
                    f"curriculum), evaluate on {settings['heldout']}; {settings['steps']:,} agent-steps per run, "
                    f"{len(results['seeds'])} seed(s); mean [95 % t interval over seeds]")
    for name in ("arm", "held-out completion", "tasks weighted equally", "held-out progress",
                 "train-set completion (end)",
                 *(f"tag {tag}" for tag in summary["tags"] if tag != "heldout")):
        t.add_column(name, justify="left" if name == "arm" else "right")
    for row in summary["rows"]:
        t.add_row(row["arm"], fmt(row["completion"], 3), fmt(row.get("task_mean", {}), 3), fmt(row["progress"], 3),
                  fmt(row["train_completion"], 3),
                  *(fmt(row["tags"][tag], 3) for tag in summary["tags"] if tag != "heldout"))
    reference = summary.get("reference")
    if reference:  # its interval is over episodes, not seeds
        t.add_row(f"{reference['spec']} (reference; over episodes)", fmt(reference["completion"], 3),
                  fmt(reference["task_mean"], 3), fmt(reference["progress"], 3), "-",
                  *("-" for tag in summary["tags"] if tag != "heldout"))
    return t


def plot(results: dict[str, Any], runs: list[Run], path: Path) -> Path:
    """Held-out completion and progress per arm (seeds as dots, 95 % t intervals), each tag's
    completion, and the training-set completion over training."""
    plt = pyplot()
    summary, groups = results["summary"], by_condition(results, runs)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [1, 2, 1.6]})
    colours = {"conditioned": "C0", "blind": "C1"}
    rows = {row["arm"]: row for row in summary["rows"]}
    ax = axes[0]
    for i, key in enumerate(("completion", "task_mean", "progress")):
        for j, arm in enumerate(rows):
            cell, x = rows[arm].get(key, {}), i + (j - 0.5) * 0.35
            _bar(ax, x, cell, colours.get(arm, "C2"), arm if i == 0 else None)
    ax.set_xticks([0, 1, 2], ["completion\n(per life)", "completion\n(tasks equal)", "progress"])
    ax.set_title(f"held-out set ({results['settings']['heldout']})")
    ax.legend(fontsize=8)
    ax = axes[1]
    tags = [tag for tag in summary["tags"] if tag != "heldout"]
    for j, arm in enumerate(rows):
        for i, tag in enumerate(tags):
            _bar(ax, i + (j - 0.5) * 0.35, rows[arm]["tags"][tag], colours.get(arm, "C2"), None)
    ax.set_xticks(range(len(tags)), tags, rotation=20)
    ax.set_title("held-out completion by tag")
    ax = axes[2]
    for arm, entries in groups.items():
        for k, entry in enumerate(entries):
            curve = [(s, c) for s, c, _ in entry["eval"]["train_curve"] if c is not None]
            if curve:
                x, y = zip(*curve, strict=True)
                ax.plot(x, y, color=colours.get(arm, "C2"), alpha=0.6, label=arm if k == 0 else None)
    ax.legend(fontsize=8)
    ax.set_title("training-set completion (each arm's curriculum draws)")
    label_agent_steps(ax)
    fig.tight_layout()
    return save_figure(fig, path)


def _bar(ax: Any, x: float, cell: dict, colour: str, label: str | None) -> None:
    if cell.get("mean") is None:
        return
    low, high = cell.get("low"), cell.get("high")
    error = None if low is None else [[cell["mean"] - low], [high - cell["mean"]]]
    ax.bar(x, cell["mean"], width=0.33, color=colour, alpha=0.6, label=label, yerr=error, capsize=3)
    values = [v for v in cell.get("values", []) if v is not None]
    ax.scatter([x] * len(values), values, color=colour, s=12, zorder=3)
