"""Before/after of two commits by each tick's fastest CPU time: robust to a busy, drifting VM.

Runs the same workload (the same actions every run) in a `git worktree` of each ref, alternating
refs for --runs runs; each run times every step with `time.thread_time`. For each tick it keeps the
fastest run, and reports the mean of those minima per ref, with the median of the runs' means
beside it. A tick's minimum over runs is what the code costs when nothing else takes the core;
rare stalls (a full garbage collection every few dozen steps) drop out with the other process's
bursts, so for the dict API read it beside bench_env's "charged" medians, which keep them.

    python benchmarks/paired_ticks.py --refs bb1853b HEAD --runs 5 fused 300
    python benchmarks/paired_ticks.py --refs bb1853b HEAD --runs 5 large 100 --api batched

Workloads: `fused` (8 worlds of bench_env's Medium case in one fused engine, as bench_nmmo3.py
drives it), `medium` and `large` (bench_env's cases through `Env.step`, or `Env.step_arrays` with
--api batched).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_env and compare_commits, beside this script


def tick_times(workload: str, ticks: int, api: str) -> list[float]:
    """CPU seconds of each step of one run (in this process, against the nmmo on PYTHONPATH)."""
    from bench_env import make_config, random_moves

    rng, times, clock = np.random.default_rng(0), [], time.thread_time
    if workload == "fused":
        from nmmo.engines.vector import VectorEnv

        with VectorEnv(make_config("medium"), num_envs=8, seed=0, workers=0, backend="process",
                       engine="fused") as vec:
            obs = vec.reset()
            actions = np.full((vec.rows, 3), -1)
            for _ in range(ticks + 10):
                actions[:, 0] = np.argmax(rng.random((vec.rows, 5)) * obs["move_mask"], axis=1)
                start = clock()
                obs = vec.step(actions).obs
                times.append(clock() - start)
        return times[10:]
    import nmmo
    from nmmo.core import world

    config = make_config(workload)
    world.get_map(config, 0)
    env = nmmo.Env(config, seed=1)
    obs, _ = env.reset(seed=1)
    for _ in range(ticks):
        if api == "dict":
            actions = random_moves(obs, rng)
            start = clock()
            obs, *_ = env.step(actions)
        else:
            actions = np.full((env.n_slots, 3), -1)
            actions[:, 0] = np.argmax(rng.random((env.n_slots, 5)) * env._obs.move_mask, axis=1)
            start = clock()
            env.step_arrays(actions)
        times.append(clock() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=["fused", "medium", "large"])
    parser.add_argument("ticks", type=int)
    parser.add_argument("--refs", nargs=2, default=["HEAD", "."], help="before and after (\".\": this checkout)")
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per ref")
    parser.add_argument("--api", choices=["dict", "batched"], default="dict", help="for medium and large")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(tick_times(args.workload, args.ticks, args.api)))
        return
    from compare_commits import worktree

    trees = [worktree(ref) for ref in args.refs]
    runs: dict[str, list[list[float]]] = {sha: [] for sha, _ in trees}
    command = [sys.executable, str(Path(__file__).resolve()), args.workload, str(args.ticks), "--api", args.api,
               "--child"]
    for run in range(args.runs):
        for sha, path in trees if run % 2 == 0 else trees[::-1]:
            done = subprocess.run(command, cwd=path, env={**os.environ, "PYTHONPATH": str(path)},
                                  capture_output=True, text=True, check=True)
            runs[sha].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"run {run + 1} {sha}: {1e3 * np.mean(runs[sha][-1]):.3f} ms a tick", flush=True)
    base = None
    for sha, times in runs.items():
        table = np.array(times)
        floor = 1e3 * table.min(axis=0).mean()
        base = base or floor
        print(f"{sha}: per-tick minimum {floor:.3f} ms ({base / floor:.3f}x of the first), median of the runs' "
              f"means {1e3 * np.median(table.mean(axis=1)):.3f} ms")


if __name__ == "__main__":
    main()
