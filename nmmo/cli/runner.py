"""`nmmo run`: simulate one policy driving every agent and print the metric table."""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.table import Table

from nmmo import config as config_module
from nmmo.core.metrics import METRICS


def simulate(config, policy_spec: str, ticks: int, seed: int, progress: bool = True, record: str | None = None,
             value_overlay: bool = False) -> dict:
    """Run one policy for every agent for `ticks` ticks; return per-lifetime metrics and timing.

    `record` saves a replay there; `value_overlay` paints the policy's value estimates into a
    "value" overlay every tick: each tile's mean estimate over the run so far (`ValueMap`), and
    at reset its "value landscape" (`nmmo.envs.landscape`, by an instance of the policy of its own);
    the policy must expose `last_values`, as checkpoints do."""
    import nmmo
    from nmmo import console
    from nmmo.envs.landscape import paint_landscape
    from nmmo.policy import display_names, load_policy_class
    from nmmo.replays.overlays import VALUE_BLANK, ValueMap

    config.set("HORIZON", max(config.HORIZON, ticks))
    env = nmmo.Env(config, seed=seed, record=record is not None)
    policy = load_policy_class(policy_spec)(config)
    if value_overlay and not hasattr(policy, "last_values"):
        raise ValueError(f"{policy_spec} has no value estimates (last_values); value overlays need a checkpoint")
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, _ = env.reset()
    if value_overlay:
        paint_landscape(env, load_policy_class(policy_spec)(config), progress=progress)
        value_map = ValueMap(config.MAP_SIZE)
        env.overlays.register("value", value_map.heatmap(), blank=VALUE_BLANK)
    lifetimes: list[dict] = []
    tasks: list[tuple[int, int, float]] = []  # (task index, completed, progress) of each life that ended
    infos: dict = {}
    step_time = 0.0
    agent_steps = 0
    name = display_names([policy_spec])[policy_spec]
    bar = console.progress(total=ticks, desc=f"{name} on {config.name}", unit="tick", enabled=progress,
                           min_interval=10.0)  # in a log: a line every 10 s, not one per tick
    for _ in range(ticks):
        live = {a: o for a, o in obs.items() if a in env.agents}
        actions = policy.act(live)
        if value_overlay and live:
            value_map.add_observed(live, policy.last_values)
            env.overlays.update("value", value_map.heatmap())
            env.record_values(policy.last_values)  # each agent's own estimate, for the viewer's inspector
        start = time.perf_counter()
        obs, _, terminations, truncations, infos = env.step(actions)
        step_time += time.perf_counter() - start
        agent_steps += len(obs)
        lifetimes += [info["life"] for info in infos.values() if "life" in info]
        tasks += [(info["task"], info["task_completed"], info["task_progress"]) for info in infos.values()
                  if "life" in info and "task" in info]
        bar.update()
        if not env.agents:
            break
    bar.close()
    # agents still alive at the end are reported as if the episode ended here
    if env.agents:
        lifetimes += list(env.metrics_now().values())
        tasks += [(info["task"], info["task_completed"], info["task_progress"]) for agent, info in infos.items()
                  if agent in env.agents and "task" in info]
    if record is not None:
        env.save_replay(record)
    return {"lifetimes": lifetimes, "ticks": env.tick, "step_time": step_time,
            "agent_steps": agent_steps, "issued": env.realm.state.next_player_id - 1,
            "npcs": len(env.realm.npcs), "game": env.game_result(),
            "tasks": task_rows(env.tasks.tasks, tasks) if config.has_tasks() and not config.GAME else []}


def task_rows(task_set, lives: list[tuple[int, int, float]]) -> list[tuple[str, int, float, float]]:
    """Per task of the set that some life held: (name, lives, completed share, mean final progress)."""
    rows = []
    for index, spec in enumerate(task_set):
        held = [(done, progress) for task, done, progress in lives if task == index]
        if held:
            rows.append((spec.name, len(held), float(np.mean([d for d, _ in held])),
                         float(np.mean([p for _, p in held]))))
    return rows


def task_table(title: str, rows: list[tuple[str, int, float, float]]) -> Table:
    table = Table(title=title)
    for column in ("task", "lives", "completed", "progress"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for name, lives, done, progress in rows:
        table.add_row(name, str(lives), f"{done:.2f}", f"{progress:.2f}")
    return table


def metric_table(title: str, lifetimes: list[dict]) -> Table:
    table = Table(title=title)
    table.add_column("metric")
    for column in ("mean", "max"):
        table.add_column(column, justify="right")
    for name in METRICS:
        values = np.array([life[name] for life in lifetimes], dtype=float)
        if values.size:
            table.add_row(name, f"{values.mean():.2f}", f"{values.max():.2f}")
        else:
            table.add_row(name, "-", "-")
    return table


def _cmd_run(args: argparse.Namespace) -> int:
    from nmmo.cli import cli_command, console
    from nmmo.cli.tables import print_table
    from nmmo.policy import display_names

    config = config_module.resolve(args.config)
    if args.tasks:  # every agent draws a task from the set; a recorded replay carries them to the viewer
        from nmmo.tasks.spec import task_set_key

        config.set("TASKS", task_set_key(args.tasks)).validate()
    result = simulate(config, args.policy, args.ticks, args.seed, record=args.record, value_overlay=args.value_overlay)
    if args.record:
        console.print(f"replay: {args.record}  (watch: {cli_command()} serve --replay {args.record})", highlight=False)
    name = display_names([args.policy])[args.policy]
    print_table(console, metric_table(f"{name} on {config.name}: {len(result['lifetimes'])} lifetimes, "
                                      f"{result['ticks']} ticks", result["lifetimes"]))
    if result["tasks"]:  # each task's lives (ended ones, and the living at the end) and how they did
        print_table(console, task_table(f"tasks of {config.TASKS}", result["tasks"]))
    if result["game"]:  # who won and why the game ended (or how it stands)
        console.print(result["game"], highlight=False)
    console.print(f"{result['agent_steps'] / max(result['step_time'], 1e-9):,.0f} agent-steps/s in env.step")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """`nmmo run`."""
    from nmmo.cli import add_command, add_game_flags
    from nmmo.policy import spec_forms

    run = add_command(sub, "run", "simulate a policy for N ticks and print the metric table")
    add_game_flags(run, "small_maps", "config name, preset or TOML path")
    run.add_argument("--policy", default="random", help=f"the policy driving every agent: {spec_forms()}. It runs "
                     "in this process, unsandboxed, with your privileges: name only code you trust (nmmo eval "
                     "sandboxes submissions)")
    run.add_argument("--ticks", type=int, default=256, help="ticks to simulate")
    run.add_argument("--seed", type=int, default=0, help="env and policy seed")
    run.add_argument("--record", default=None, metavar="PATH", help="save the run as a replay")
    run.add_argument("--tasks", default=None, metavar="SET",
                     help="give every agent a task from this task set (a shipped name: nmmo tasks list shows them; "
                          "or a .toml / .json file); the task table follows the metric table, and --record keeps "
                          "the tasks in the replay")
    run.add_argument("--value-overlay", action="store_true",
                     help="paint the policy's value estimates into a 'value' overlay and its critic over the whole map "
                     "into a 'value landscape' one (policies with last_values)")
    run.set_defaults(func=_cmd_run)
