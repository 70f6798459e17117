"""Vector-env throughput by engine, backend, workers and K (envs), and Ray's overhead over local processes.

Usage: python benchmarks/bench_scale.py [--config train_small] [--envs 2 8 16] [--workers 1 2] [--steps 100]
                                        [--repeats 3] [--engine fused loop] [--backends in-process process ray]
                                        [--ray-address ADDR] [--tournament-episodes 8] [--tournament-ticks 128]
       python benchmarks/bench_scale.py --config bench-medium --envs 16 --backends in-process --repeats 5 \\
                                        --tournament-episodes 0      # the fused engine's acceptance case

Every row steps a `VectorEnv` of K envs with random valid moves for --steps steps after a
10-step warm-up and reports env-steps/s (K x steps / seconds) and agent-steps/s (rows x steps /
seconds), best and median of --repeats, the repeats of all rows interleaved (this VM drifts).
Engines: "fused" (K worlds in one set of tables, `nmmo.engines.fused`) and "loop" (K `Env`s one after
another); the last column is a fused row's throughput over the loop row's with the same K,
backend and workers (medians). Backends: in-process (workers 0), worker processes with shared
memory, and Ray actors (local Ray with this machine's cores unless --ray-address); the "Ray /
process" column is the Ray row's time per step over the process row's. In-process rows also
report agent-steps per second of this process's CPU time (the machine is shared: that is what
one core gives). Actions are drawn outside the timed region, so the figures are the env's, not
the policy's.

`--config bench-medium` is bench_env.py's Medium case (128 agents, 128 NPCs, all four systems,
immortal agents). `--child CONFIG K ENGINE STEPS` runs one in-process case and prints its figures
as JSON (for compare_commits.py; ENGINE "default" passes none, for commits before the engines).

A second table times a tournament (--tournament-episodes episodes of --tournament-ticks ticks of
scripted:Forage, scripted:Meander and scripted:Combat on small_maps) on local worker processes and
on Ray actors, with Ray's start-up (ray.init) timed apart from the run (0 episodes: skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_env, when run from anywhere


def load_config(name: str):
    """A config by name; "bench-medium" is bench_env.py's Medium case."""
    from nmmo import config as config_module

    if name == "bench-medium":
        from bench_env import make_config

        return make_config("medium")
    return config_module.resolve(name)


def time_steps(config, num_envs: int, workers: int, backend: str, steps: int, ray_address: str | None,
               engine: str | None) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one `VectorEnv.step`, means over `steps` steps
    after a warm-up."""
    from nmmo.engines.vector import VectorEnv

    rng = np.random.default_rng(0)
    engine_arg = {} if engine is None else {"engine": engine}
    with VectorEnv(config, num_envs=num_envs, seed=0, workers=workers, backend=backend,
                   ray_address=ray_address, **engine_arg) as vec:
        obs = vec.reset()
        moves = [rng.random((vec.rows, 5)) for _ in range(steps + 10)]
        actions = np.full((vec.rows, 3), -1)
        for t in range(steps + 10):
            if t == 10:
                start, cpu = time.perf_counter(), time.process_time()
            actions[:, 0] = np.argmax(moves[t] * obs["move_mask"], axis=1)
            obs = vec.step(actions).obs
        return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def child(config_name: str, k: str, engine: str, steps: str) -> None:
    config = load_config(config_name)
    wall, cpu = time_steps(config, int(k), 0, "process", int(steps), None, None if engine == "default" else engine)
    rows = int(k) * config.PLAYER_N
    print(json.dumps({"agent_steps_per_s": rows / wall, "cpu_agent_steps_per_s": rows / cpu,
                      "ms_per_step": 1e3 * wall}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="train_small")
    parser.add_argument("--envs", type=int, nargs="+", default=[2, 8, 16])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine", nargs="+", choices=["fused", "loop"], default=["fused", "loop"])
    parser.add_argument("--backends", nargs="+", choices=["in-process", "process", "ray"],
                        default=["in-process", "process", "ray"])
    parser.add_argument("--ray-address", default=None)
    parser.add_argument("--tournament-episodes", type=int, default=8)
    parser.add_argument("--tournament-ticks", type=int, default=128)
    parser.add_argument("--child", nargs=4, metavar=("CONFIG", "K", "ENGINE", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from rich.console import Console
    from rich.table import Table
    from tqdm import tqdm

    config = load_config(args.config)
    startup = None
    if "ray" in args.backends or args.tournament_episodes:
        from nmmo.engines import distributed

        start = time.perf_counter()
        distributed.init(args.ray_address)  # once, timed apart: every Ray row below reuses it
        startup = time.perf_counter() - start
    cases = [(k, 0, "process", e) for k in args.envs for e in args.engine if "in-process" in args.backends]
    cases += [(k, w, b, e) for k in args.envs for w in args.workers for b in ("process", "ray") for e in args.engine
              if w <= k and b in args.backends]
    runs: dict[tuple, list[tuple[float, float]]] = {case: [] for case in cases}
    for case in tqdm(cases * args.repeats, desc="bench_scale", unit="run"):
        k, workers, backend, engine = case
        runs[case].append(time_steps(config, k, workers, backend, args.steps, args.ray_address, engine))
    table = Table(title=f"VectorEnv on {args.config} ({config.PLAYER_N} agent slots per env), {args.steps} steps, "
                        f"best (median) of {args.repeats} interleaved runs")
    for name in ("K envs", "engine", "backend", "workers", "ms/step", "env-steps/s", "agent-steps/s",
                 "agent-steps/CPU-s", "fused / loop", "Ray / process"):
        table.add_column(name, justify="left" if name in ("backend", "engine") else "right")
    median = {case: float(np.median([wall for wall, _ in r])) for case, r in runs.items()}
    for case in cases:
        k, workers, backend, engine = case
        best = min(wall for wall, _ in runs[case])
        cpu = float(np.median([c for _, c in runs[case]]))
        rows = k * config.PLAYER_N
        loop = (k, workers, backend, "loop")
        versus = f"{median[loop] / median[case]:.2f}x" if engine == "fused" and loop in median else ""
        ray = f"{best / min(w for w, _ in runs[(k, workers, 'process', engine)]):.2f}x" if backend == "ray" and (
            (k, workers, "process", engine) in runs) else ""
        table.add_row(str(k), engine, "in-process" if workers == 0 else backend, str(workers),
                      f"{1e3 * best:.1f} ({1e3 * median[case]:.1f})", f"{k / best:,.0f}",
                      f"{rows / best:,.0f} ({rows / median[case]:,.0f})",
                      f"{rows / cpu:,.0f}" if workers == 0 else "", versus, ray)
    Console(width=170).print(table)
    if args.tournament_episodes:
        tournament_table(args, startup)


def tournament_table(args: argparse.Namespace, startup: float) -> None:
    """Wall time of one tournament per backend (2 workers; Ray's includes starting its 2 actors)."""
    from rich.console import Console
    from rich.table import Table

    from evaluation.tournament import run_tournament

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
