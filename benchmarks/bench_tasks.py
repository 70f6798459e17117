"""Time the event log and task evaluation against the tick, with their own code timers (issue 37).

The acceptance case is `bench_env.py`'s batched Medium case (the Medium preset with all four
systems, 128 immortal agents, one map, a random valid move per agent from its mask, `step_arrays`)
with each agent holding a different task: 128 distinct specs, every shipped task set's specs then
variants of them with other numbers, so every built-in predicate, combination and task type is in
play. ``--fight`` adds random attacks and makes agents mortal (deaths, respawns, kills, loot).
Timed separately:

- the env's step (`Env.step_arrays`, everything a tick does today, the event log included),
- the event log's writers (`state.event_seconds`, accumulated by `nmmo.core.systems.events`),
- `TaskState.evaluate` (`TaskState.seconds`), which skips what only completed tasks read (as nmmo
  2.x stops evaluating a completed task); ``--evaluate-completed`` evaluates everything every tick.

It prints per-tick means and the share (events + tasks) / (step + tasks), the tick as it will be
once the env evaluates tasks. ``--team-size 4`` assigns per team instead (32 teams, 32 distinct).
``--in-env`` runs the env itself with the tasks on (`nmmo.Env(config, tasks=...)`, the same
assignment): the share of its whole step, and that step beside the same env's without tasks (what
tasks on costs in all: evaluation, rewards, embeddings, the overlays' counts; the event log is
written either way).

    python benchmarks/bench_tasks.py                 # 300 ticks after 50 of warm-up
    python benchmarks/bench_tasks.py --fight --team-size 4
    python benchmarks/bench_tasks.py --sets foraging exploration combat npc_hunting   # agents' tasks only
    python benchmarks/bench_tasks.py --in-env
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from time import perf_counter

import numpy as np

import nmmo
from nmmo import config as cfg
from nmmo.tasks import TaskSet, TaskState, every_shipped_spec, load_task_set


def distinct_tasks(n: int, sets: list[str] | None = None) -> TaskSet:
    """`n` distinct specs: the shipped ones (of `sets`, default all), then copies whose numeric
    arguments are scaled."""
    if sets:
        base = list({spec.name: spec for name in sets for spec in load_task_set(name)}.values())
    else:
        base = list(every_shipped_spec())  # each name once: train repeats the families' specs
    specs, round_ = list(base), 1
    while len(specs) < n:
        for spec in base:
            specs.append(replace(spec, name=f"{spec.name}_x{round_ + 1}", node=_scaled(spec.node, round_ + 1)))
        round_ += 1
    return TaskSet(tuple(specs[:n]), "distinct", "<bench>")


def _scaled(node, factor: int):
    if node.op != "predicate":
        return replace(node, children=tuple(_scaled(child, factor) for child in node.children))
    scalable = {"N", "dist", "experience", "num_tick", "num_ticks", "hold"}
    return replace(node, args=tuple((k, v * factor if k in scalable else v) for k, v in node.args))


def random_actions(obs, rng: np.random.Generator, fight: bool) -> np.ndarray:
    """A random valid move per slot from its mask; with `fight`, a random style and target too."""
    rows = obs.move_mask.shape[0]
    actions = np.full((rows, 3), -1, dtype=np.int64)
    actions[:, 0] = np.argmax(rng.random((rows, 5)) * obs.move_mask, axis=1)
    if fight:
        actions[:, 1] = rng.integers(0, 3, rows)
        actions[:, 2] = np.argmax(rng.random(obs.target_mask.shape) * obs.target_mask, axis=1)
    return actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--agents", type=int, default=128)
    parser.add_argument("--team-size", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fight", action="store_true", help="random attacks too, and mortal agents")
    parser.add_argument("--sets", nargs="+", help="shipped task sets to draw from (default: all)")
    parser.add_argument("--evaluate-completed", action="store_true", help="evaluate completed tasks every tick too "
                        "(TaskState(skip_completed=False): what skipping them saves)")
    parser.add_argument("--in-env", action="store_true", help="time the env with the tasks on, and without")
    args = parser.parse_args()
    if args.in_env:
        return in_env(args)

    config = _config(args)
    env = nmmo.Env(config, seed=args.seed)
    env.reset()
    assign = "agent" if args.team_size == 1 else "team"
    tasks_state = TaskState(distinct_tasks(args.agents // args.team_size, args.sets), config, assign=assign,
                            skip_completed=not args.evaluate_completed)
    tasks_state.reset(env.realm.state, assignment=np.arange(tasks_state.units))
    rng = np.random.default_rng(args.seed)
    obs, step_s = env._obs, 0.0
    for tick in range(args.warmup + args.ticks):
        if tick == args.warmup:
            events0, tasks0, step_s = env.realm.state.event_seconds, tasks_state.seconds, 0.0
        start = perf_counter()
        out = env.step_arrays(random_actions(obs, rng, args.fight))
        step_s += perf_counter() - start
        step = tasks_state.evaluate(env.realm.state)
        obs = out.obs
    ticks = args.ticks
    events_s = env.realm.state.event_seconds - events0
    tasks_s = tasks_state.seconds - tasks0
    print(f"{args.agents} agents, {len(tasks_state.tasks)} distinct tasks ({assign}), {ticks} ticks; per tick:")
    print(f"  env step        {step_s / ticks * 1e3:8.3f} ms   (event log included)")
    print(f"  event log       {events_s / ticks * 1e3:8.3f} ms")
    print(f"  task evaluation {tasks_s / ticks * 1e3:8.3f} ms")
    print(f"  share of the tick (events + tasks) / (step + tasks): {(events_s + tasks_s) / (step_s + tasks_s):.1%}")
    print(f"  live agents at the end: {int(env.realm.state.entities.alive[: args.agents].sum())}; "
          f"tasks completed: {int(step.completed.sum())} of {len(step.completed)}")


def _config(args):
    return cfg.Default().update({"PLAYER_N": args.agents, "PLAYER_TEAM_SIZE": args.team_size,
                                 "IMMORTAL": not args.fight, "MAP_N": 1})


def in_env(args) -> None:
    """The env with the tasks on, then the same env and actions without them."""
    config = _config(args)
    tasks = distinct_tasks(args.agents, args.sets)  # one per agent (the env's default assignment)
    steps = {}
    for label, on in (("tasks on", True), ("tasks off", False)):
        env = nmmo.Env(config, tasks=tasks if on else None, seed=args.seed)
        env.reset(seed=args.seed, options={"tasks": np.arange(args.agents)} if on else None)
        rng, obs, step_s, timing = np.random.default_rng(args.seed), env._obs, 0.0, {}
        for tick in range(args.warmup + args.ticks):
            if tick == args.warmup:
                step_s, timing = 0.0, env.task_timing()
            start = perf_counter()
            obs = env.step_arrays(random_actions(obs, rng, args.fight)).obs
            step_s += perf_counter() - start
        steps[label] = step_s / args.ticks
        if on:
            end = env.task_timing()
            timed = sum(end[key] - timing[key] for key in end) / args.ticks
    print(f"{args.agents} agents, {args.agents} distinct tasks in the env, {args.ticks} ticks; per tick:")
    print(f"  env step, tasks on   {steps['tasks on'] * 1e3:8.3f} ms")
    print(f"  env step, tasks off  {steps['tasks off'] * 1e3:8.3f} ms")
    print(f"  event log + tasks    {timed * 1e3:8.3f} ms (their timers): {timed / steps['tasks on']:.1%} of the step")
    extra = steps["tasks on"] - steps["tasks off"]  # the event log is written either way
    print(f"  tasks on cost in all {extra * 1e3:8.3f} ms: {extra / steps['tasks on']:.1%} of the step")


if __name__ == "__main__":
    main()
