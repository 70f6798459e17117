"""Env throughput, reset time and memory, driven like the reference nmmo 2.1.1 benchmark.

Reports the best of --repeats runs: agent-steps/s over the total step time (as the reference
script does), "charged" (the step time plus the garbage collections that ran outside the step:
ours pauses the collector during a dict step, `nmmo.envs.gc_pause`, and is charged for what it
left; nmmo 2.1.1 gets the same accounting) and at the median step time (robust to this VM's
stalls), with mean/median ms.

Random valid moves drawn from the masks, observations built every step, all four systems on,
agents immortal (constant load); only the time inside `env.step` (or `env.step_arrays`) counts.
Each case runs in its own process so its peak RSS is its own.

`--reference` measures the published nmmo 2.1.1 in the same sitting, driven the same way by
`benchmarks/reference_driver.py` in its own virtual environment: `benchmarks/reference.py` builds
that environment on first use (a few minutes, a C compile; `python benchmarks/reference.py` does it
ahead of time) and reuses it afterwards. If the build fails the table is printed without it.

Usage:
    python benchmarks/bench_env.py                 # medium + large, dict and batched APIs
    python benchmarks/bench_env.py --reference     # also run nmmo 2.1.1 side by side (built on first use)
    python benchmarks/bench_env.py --case medium --steps 500
    python benchmarks/compare_commits.py --refs bb1853b HEAD --rounds 5 --key charged_agent_steps_per_s \
        gc_ms_per_step -- $PWD/benchmarks/bench_env.py --child large dict 100 --with-torch
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from gc_outside import GcOutside  # beside this script

HERE = Path(__file__).resolve().parent
CASES = {"medium": (128, 1000), "large": (1024, 150)}  # agents, default steps


def make_config(case: str):
    from nmmo import config

    base = config.Large if case == "large" else config.Medium

    class Bench(base, config.Resource, config.Combat, config.Progression, config.NPC):
        """Benchmark config: the preset with all four systems."""

    agents, _ = CASES[case]
    return Bench().update({"PLAYER_N": agents, "IMMORTAL": True, "MAP_N": 1})


def random_moves(obs: dict, rng: np.random.Generator) -> dict:
    """A random valid move per agent, drawn from its mask (the reference benchmark's action stream)."""
    actions = {}
    for agent, ob in obs.items():
        valid = np.flatnonzero(ob["ActionTargets"]["Move"]["Direction"])
        actions[agent] = {"Move": {"Direction": int(valid[rng.integers(len(valid))])}}
    return actions


def run_case(case: str, api: str, steps: int) -> dict:
    """Run one case in this process and return its figures."""
    import nmmo
    from nmmo.core import world

    conf = make_config(case)
    world.get_map(conf, 0)  # make sure the map is cached: reset time is measured on a cached map
    env = nmmo.Env(conf, seed=1)
    start = time.perf_counter()
    obs, _ = env.reset(seed=1)
    reset_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    step_s, agent_steps, step_times, cpu_s = 0.0, 0, [], 0.0
    outside = GcOutside()
    for _ in range(steps):
        if api == "dict":
            actions = random_moves(obs, rng)
            outside.stepping = True
            cpu, start = time.process_time(), time.perf_counter()
            obs, *_ = env.step(actions)
            step_times.append(time.perf_counter() - start)
            cpu_s += time.process_time() - cpu
            agent_steps += len(obs)
        else:
            masks = env._obs.move_mask.astype(bool)  # last observation's move masks, one row per slot
            scores = rng.random(masks.shape) * masks
            actions = np.full((env.n_slots, 3), -1, dtype=np.int64)
            actions[:, 0] = scores.argmax(axis=1)
            outside.stepping = True
            cpu, start = time.process_time(), time.perf_counter()
            batch = env.step_arrays(actions)
            step_times.append(time.perf_counter() - start)
            cpu_s += time.process_time() - cpu
            agent_steps += int(batch.alive.sum())
        outside.stepping = False
    outside.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step_s = sum(step_times)
    median = float(np.median(step_times))
    return {"case": case, "api": api, "agents": len(env.agents), "steps": steps,
            "agent_steps_per_s": agent_steps / step_s, "ms_per_step": 1e3 * step_s / steps,
            "cpu_agent_steps_per_s": agent_steps / max(cpu_s, 1e-9),  # what other processes move least
            # charged for the collections it left to the caller's code (nmmo.envs.gc_pause)
            "charged_agent_steps_per_s": agent_steps / (step_s + outside.seconds),
            "gc_outside_ms_per_step": 1e3 * outside.seconds / steps,
            "gc_ms_per_step": 1e3 * outside.total / steps,  # every collection, in the step or out
            "median_agent_steps_per_s": agent_steps / steps / median, "median_ms": 1e3 * median,
            "reset_s": reset_s, "rss_mb": rss_mb}


def _reference_module():
    """benchmarks/reference.py (a script beside this one, not a package module)."""
    sys.path.insert(0, str(HERE))
    try:
        import reference
    finally:
        sys.path.remove(str(HERE))
    return reference


def build_reference() -> Path | None:
    """nmmo 2.1.1's interpreter, built on first use; None (having said why) when the build fails."""
    reference = _reference_module()
    try:
        return reference.ensure(log=lambda line: print(line, file=sys.stderr, flush=True))
    except reference.ReferenceBuildError as error:
        print(f"nmmo {reference.VERSION} could not be built, so the table has no reference column:\n{error}",
              file=sys.stderr, flush=True)
        return None


def run_reference(python: Path | None, case: str, steps: int) -> dict | None:
    """nmmo 2.1.1's figures (benchmarks/reference_driver.py: ``agent-steps/s`` inside its step and
    ``charged agent-steps/s`` with the collections outside it), or None without it or when it fails."""
    if python is None:
        return None
    try:
        return _reference_module().measure(case, steps, python)
    except Exception as error:  # the reference is a yardstick: our figures still print
        print(f"nmmo 2.1.1 failed on {case}: {error}", file=sys.stderr, flush=True)
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=list(CASES), action="append", help="default: all cases")
    parser.add_argument("--api", choices=["dict", "batched"], action="append", help="default: both")
    parser.add_argument("--steps", type=int, default=None, help="steps per case (default per case)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per case; the best is reported (the VM is noisy)")
    parser.add_argument("--reference", action="store_true", help="also measure nmmo 2.1.1 side by side")
    parser.add_argument("--with-torch", action="store_true",
                        help="import torch first, as a training script has (a full garbage collection then scans "
                             "~5x more objects); ours only, the reference never imports it")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.with_torch:
        import torch  # noqa: F401 - only its objects on the heap matter
    if args.child:
        print(json.dumps(run_case(args.child[0], args.child[1], int(args.child[2]))))
        return

    from rich.console import Console
    from rich.table import Table

    table = Table(title="nmmo env throughput (env.step only, random valid moves, immortal agents); "
                        "'charged': also the garbage collections that ran outside the step")
    for column in ("case", "api", "agents", "agent-steps/s", "charged", "at median step", "ms/step (mean / median)",
                   "reset s", "peak RSS MB", "nmmo 2.1.1 (charged)", "ratio (charged)"):
        table.add_column(column, justify="right")
    reference_python = build_reference() if args.reference else None
    for case in args.case or list(CASES):
        steps = args.steps or CASES[case][1]
        reference = run_reference(reference_python, case, min(steps, 200))
        for api in args.api or ["dict", "batched"]:
            runs = []
            for _ in range(args.repeats):
                out = subprocess.run([sys.executable, __file__, "--child", case, api, str(steps),
                                      *(["--with-torch"] if args.with_torch else [])],
                                     capture_output=True, text=True, check=True).stdout
                runs.append(json.loads(out.strip().splitlines()[-1]))
            r = max(runs, key=lambda run: run["agent_steps_per_s"])
            ref, ref_charged = (None, None) if reference is None else (
                reference["agent-steps/s"], reference.get("charged agent-steps/s"))
            table.add_row(case, api, str(r["agents"]), f"{r['agent_steps_per_s']:,.0f}",
                          f"{r['charged_agent_steps_per_s']:,.0f}",
                          f"{r['median_agent_steps_per_s']:,.0f}", f"{r['ms_per_step']:.2f} / {r['median_ms']:.2f}",
                          f"{r['reset_s']:.3f}", f"{r['rss_mb']:.0f}",
                          "-" if ref is None else f"{ref:,.0f} ({ref_charged or 0:,.0f})",
                          "-" if ref is None else f"{r['agent_steps_per_s'] / ref:.1f}x "
                          f"({r['charged_agent_steps_per_s'] / (ref_charged or ref):.1f}x)")
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
