"""Per-stage time of one env step (dict API), to see where the time goes.

Wraps each system and each env stage with a timer, drives the env like bench_env.py and prints
milliseconds per step for each stage (stages nest: `_dict_outputs` contains `_obs_dicts`).

Usage: python benchmarks/profile_step.py [medium|large] [--steps N]
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np
from bench_env import CASES, make_config, random_moves
from rich.console import Console
from rich.table import Table

import nmmo
from nmmo.core.obs import ObservationBuilder
from nmmo.core.systems import combat, movement, npc, resource, spawn
from nmmo.envs import env as env_module

STAGES = [
    (npc, "decide"), (resource, "update"), (resource, "regrow_forests"), (combat, "resolve"),
    (movement, "resolve"), (spawn, "respawn_players"), (spawn, "spawn_npcs"), (spawn, "remove_dead"),
    (env_module.Env, "_parse_actions"), (ObservationBuilder, "observe"), (env_module.Env, "_dict_outputs"),
    (env_module.Env, "_obs_dicts"),
]


def instrument(totals: collections.Counter) -> None:
    for owner, name in STAGES:
        original = getattr(owner, name)
        label = f"{getattr(owner, '__name__', owner).split('.')[-1]}.{name}"

        def timed(*args, _original=original, _label=label, **kwargs):
            start = time.perf_counter()
            result = _original(*args, **kwargs)
            totals[_label] += time.perf_counter() - start
            return result

        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", nargs="?", default="large", choices=list(CASES))
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()
    steps = args.steps or CASES[args.case][1]
    totals: collections.Counter = collections.Counter()
    instrument(totals)
    env = nmmo.Env(make_config(args.case), seed=1)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    totals.clear()
    total = 0.0
    for _ in range(steps):
        actions = random_moves(obs, rng)
        start = time.perf_counter()
        obs, *_ = env.step(actions)
        total += time.perf_counter() - start
    table = Table(title=f"{args.case}: {1e3 * total / steps:.2f} ms per env.step ({len(env.agents)} agents)")
    table.add_column("stage")
    table.add_column("ms/step", justify="right")
    for label, seconds in totals.most_common():
        table.add_row(label, f"{1e3 * seconds / steps:.3f}")
    Console().print(table)


if __name__ == "__main__":
    main()
