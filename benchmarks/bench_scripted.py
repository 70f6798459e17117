"""Scripted bot speed: env steps per second with N agents all driven by one bot, bot time included.

Usage: python benchmarks/bench_scripted.py [--agents 128] [--steps 200] [--bots Meander Forage Combat]

The yardstick is nmmo 2.1.1's scripted Forage: 9.7 env-steps/s with 128 agents on this machine
kind (DESIGN.md); the target is 10x that.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

import nmmo
import scripted


def run(bot: str, agents: int, steps: int, seed: int = 0) -> dict:
    config = nmmo.config.load("small_maps").set("PLAYER_N", agents).set("HORIZON", steps + 1)
    env = nmmo.Env(config, seed=seed)
    policy = getattr(scripted, bot)(config, seed)
    obs, _ = env.reset()
    bot_s = env_s = 0.0
    agent_steps = 0
    for _ in range(steps):
        start = time.perf_counter()
        actions = policy.act({a: o for a, o in obs.items() if a in env.agents})
        middle = time.perf_counter()
        obs, *_ = env.step(actions)
        env_s += time.perf_counter() - middle
        bot_s += middle - start
        agent_steps += len(actions)
    return {"bot": bot, "env_steps_per_s": steps / (bot_s + env_s), "bot_ms": 1e3 * bot_s / steps,
            "env_ms": 1e3 * env_s / steps, "mean_agents": agent_steps / steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--bots", nargs="+", default=["Meander", "Forage", "Combat"])
    args = parser.parse_args()
    table = Table(title=f"scripted bots on small_maps, {args.agents} agents, {args.steps} steps")
    for column in ("bot", "env-steps/s", "bot ms/step", "env ms/step", "mean live agents", "vs nmmo 2.1.1 Forage"):
        table.add_column(column, justify="right")
    for bot in args.bots:
        r = run(bot, args.agents, args.steps)
        table.add_row(bot, f"{r['env_steps_per_s']:.0f}", f"{r['bot_ms']:.2f}", f"{r['env_ms']:.2f}",
                      f"{r['mean_agents']:.0f}", f"{r['env_steps_per_s'] / 9.7:.0f}x")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
