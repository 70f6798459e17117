"""Vector-env throughput by backend, workers and K (envs), and Ray's overhead over local processes.

Usage: python benchmarks/bench_scale.py [--config train_small] [--envs 2 8 16] [--workers 1 2] [--steps 100]
                                        [--repeats 3] [--ray-address ADDR] [--tournament-episodes 8]
                                        [--tournament-ticks 128]

Every row steps a `VectorEnv` of K envs with random valid moves for --steps steps after a
10-step warm-up and reports env-steps/s (K x steps / seconds) and agent-steps/s (rows x steps /
seconds), best of --repeats. Backends: in-process (workers 0, the reference), worker processes
with shared memory, and Ray actors (local Ray with this machine's cores unless --ray-address).
The last column is the Ray row's time per step over the process row's with the same K and workers.
Actions are drawn outside the timed region, so the figures are the env's, not the policy's.

A second table times a tournament (--tournament-episodes episodes of --tournament-ticks ticks of
scripted:Forage, scripted:Meander and scripted:Combat on small_maps) on local worker processes and
on Ray actors, with Ray's start-up (ray.init) timed apart from the run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evaluation.tournament import run_tournament
from nmmo import config as config_module
from nmmo import distributed
from nmmo.vector import VectorEnv


def seconds_per_step(config, num_envs: int, workers: int, backend: str, steps: int, ray_address: str | None) -> float:
    """Mean wall seconds of one `VectorEnv.step` over `steps` steps (after a warm-up)."""
    rng = np.random.default_rng(0)
    with VectorEnv(config, num_envs=num_envs, seed=0, workers=workers, backend=backend,
                   ray_address=ray_address) as vec:
        obs = vec.reset()
        moves = [rng.random((vec.rows, 5)) for _ in range(steps + 10)]
        actions = np.full((vec.rows, 3), -1)
        for t in range(steps + 10):
            if t == 10:
                start = time.perf_counter()
            actions[:, 0] = np.argmax(moves[t] * obs["move_mask"], axis=1)
            obs = vec.step(actions).obs
        return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="train_small")
    parser.add_argument("--envs", type=int, nargs="+", default=[2, 8, 16])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray-address", default=None)
    parser.add_argument("--tournament-episodes", type=int, default=8)
    parser.add_argument("--tournament-ticks", type=int, default=128)
    args = parser.parse_args()
    config = config_module.resolve(args.config)
    start = time.perf_counter()
    distributed.init(args.ray_address)  # once, timed apart: every Ray row below reuses it
    startup = time.perf_counter() - start
    cases = [(k, 0, "process") for k in args.envs]
    cases += [(k, w, b) for k in args.envs for w in args.workers for b in ("process", "ray") if w <= k]
    best: dict[tuple, float] = {}
    for case in tqdm(cases * args.repeats, desc="bench_scale", unit="run"):
        k, workers, backend = case
        elapsed = seconds_per_step(config, k, workers, backend, args.steps, args.ray_address)
        best[case] = min(best.get(case, float("inf")), elapsed)
    table = Table(title=f"VectorEnv on {config.name} ({config.PLAYER_N} agent slots per env), best of "
                        f"{args.repeats} x {args.steps} steps")
    for name in ("K envs", "backend", "workers", "ms/step", "env-steps/s", "agent-steps/s", "Ray / process"):
        table.add_column(name, justify="left" if name == "backend" else "right")
    for case in cases:
        k, workers, backend = case
        ratio = f"{best[case] / best[(k, workers, 'process')]:.2f}x" if backend == "ray" else ""
        label = "in-process" if workers == 0 else backend
        table.add_row(str(k), label, str(workers), f"{1000 * best[case]:.1f}", f"{k / best[case]:,.0f}",
                      f"{k * config.PLAYER_N / best[case]:,.0f}", ratio)
    Console(width=140).print(table)
    tournament_table(args, startup)


def tournament_table(args: argparse.Namespace, startup: float) -> None:
    """Wall time of one tournament per backend (2 workers; Ray's includes starting its 2 actors)."""
    table = Table(title=f"Tournament: {args.tournament_episodes} episodes x {args.tournament_ticks} ticks on "
                        "small_maps, 3 scripted policies, 2 workers (best of --repeats)")
    for name in ("backend", "seconds", "episodes/s"):
        table.add_column(name, justify="right")
    for backend in ("process", "ray"):
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            run_tournament("small_maps", ["scripted:Forage", "scripted:Meander"], episodes=args.tournament_episodes,
                           ticks=args.tournament_ticks, workers=2, backend=backend, progress=False,
                           ray_address=args.ray_address)
            best = min(best, time.perf_counter() - start)
        table.add_row(backend, f"{best:.2f}", f"{args.tournament_episodes / best:.2f}")
    table.add_row("ray.init (once)", f"{startup:.2f}", "")
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
