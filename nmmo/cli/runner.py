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
    from nmmo.envs.overlays import VALUE_BLANK, ValueMap
    from nmmo.policy import display_names, load_policy_class

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
        bar.update()
        if not env.agents:
            break
    bar.close()
    # agents still alive at the end are reported as if the episode ended here
    if env.agents:
        lifetimes += list(env.metrics_now().values())
    if record is not None:
        env.save_replay(record)
    return {"lifetimes": lifetimes, "ticks": env.tick, "step_time": step_time,
            "agent_steps": agent_steps, "issued": env.realm.state.next_player_id - 1,
            "npcs": len(env.realm.npcs), "game": env.game_result()}


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
    result = simulate(config, args.policy, args.ticks, args.seed, record=args.record, value_overlay=args.value_overlay)
    if args.record:
        console.print(f"replay: {args.record}  (watch: {cli_command()} serve --replay {args.record})", highlight=False)
    name = display_names([args.policy])[args.policy]
    print_table(console, metric_table(f"{name} on {config.name}: {len(result['lifetimes'])} lifetimes, "
                                      f"{result['ticks']} ticks", result["lifetimes"]))
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
    run.add_argument("--value-overlay", action="store_true",
                     help="paint the policy's value estimates into a 'value' overlay and its critic over the whole map "
                     "into a 'value landscape' one (policies with last_values)")
    run.set_defaults(func=_cmd_run)
