"""Where the per-step floor is: a step's fixed cost (independent of how many agents) against its
cost per agent, and how many calls a step makes.

A numpy engine pays for each call it makes (argument parsing, dispatch, a new array) whatever the
array's length, and then for each element. Running the same game with 1, 8, 32 and 128 agents (as
many NPCs) separates the two: a least-squares line through the per-step times gives the fixed
cost (its value at zero agents) and the marginal cost of one more agent (its slope). A goal such
as "20x nmmo 2.1.1 at 128 agents" is a time budget per step; if the fixed cost alone eats most of
it, only fewer calls (not faster element work) can meet it.

Rows: the single-env dict API on bench_env.py's Medium case (`Env.step`, random valid moves drawn
outside the timed region), and the fused engine on 8 such worlds (`VectorEnv(engine="fused")`,
the bench_nmmo3.py case, n agents in each world). Each size runs in a fresh process, the sizes
interleaved over --rounds rounds (the order alternates); a run's figure is the median CPU time
(this thread's) of its steps after a warm-up; the table shows the fastest round and the slowest, and
the line is fitted through the fastest rounds (this VM's other core's load slows runs by up to 2x
in bursts: a floor is what the code allows, the fastest round the closest to it). One more run per
size counts the calls of a step with `sys.setprofile`: Python function calls and calls of C functions
(numpy's functions and methods, builtins; operators such as `a + b` and indexing are not seen, so
this undercounts the numpy work a step asks for).

`--budget-dict MS` / `--budget-fused MS` (e.g. the step time a goal implies, from figures measured
side by side) add what is left of that budget per agent once the fixed cost is paid.

    python benchmarks/bench_floor.py                       # both rows, 5 rounds
    python benchmarks/bench_floor.py --rows dict --rounds 3 --budget-dict 1.16
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_env, beside this script

SIZES = {"dict": [1, 8, 32, 128], "fused": [1, 16, 64, 128]}
FUSED_WORLDS = 8
WARMUP = 10


def _config(agents: int):
    from bench_env import make_config

    return make_config("medium").update({"PLAYER_N": agents, "NPC_N": agents})


def time_row(row: str, agents: int, steps: int) -> list[float]:
    """CPU seconds (this thread) of each step after the warm-up."""
    return [seconds for seconds, _ in _run(row, agents, steps, count=False)][WARMUP:]


def count_row(row: str, agents: int, steps: int) -> tuple[float, float]:
    """(Python calls, C calls) per step, means over the steps after the warm-up."""
    counts = [c for _, c in _run(row, agents, steps, count=True)][WARMUP:]
    return float(np.mean([c[0] for c in counts])), float(np.mean([c[1] for c in counts]))


def _run(row: str, agents: int, steps: int, count: bool):
    rng = np.random.default_rng(0)
    calls = [0, 0]

    def profiler(_frame, event, _arg):
        if event == "call":
            calls[0] += 1
        elif event == "c_call":
            calls[1] += 1

    def timed(step):
        calls[0] = calls[1] = 0
        start = time.thread_time()
        if count:
            sys.setprofile(profiler)
        try:
            result = step()
        finally:
            if count:
                sys.setprofile(None)
        return time.thread_time() - start, (calls[0], calls[1]), result

    out = []
    if row == "dict":
        from bench_env import random_moves

        import nmmo

        env = nmmo.Env(_config(agents), seed=1)
        obs, _ = env.reset(seed=1)
        for _ in range(steps + WARMUP):
            actions = random_moves(obs, rng)
            seconds, counted, result = timed(lambda actions=actions: env.step(actions))
            obs = result[0]
            out.append((seconds, counted))
        return out
    from nmmo.engines.vector import VectorEnv

    with VectorEnv(_config(agents), num_envs=FUSED_WORLDS, seed=0, workers=0, backend="process",
                   engine="fused") as vec:
        obs = vec.reset()
        actions = np.full((vec.rows, 3), -1)
        for _ in range(steps + WARMUP):
            actions[:, 0] = np.argmax(rng.random((vec.rows, 5)) * obs["move_mask"], axis=1)
            seconds, counted, result = timed(lambda: vec.step(actions))
            obs = result.obs
            out.append((seconds, counted))
    return out


def child(row: str, agents: int, steps: int, count: bool) -> None:
    if count:
        python_calls, c_calls = count_row(row, agents, steps)
        print(json.dumps({"python_calls": python_calls, "c_calls": c_calls}))
    else:
        print(json.dumps({"ms": 1e3 * float(np.median(time_row(row, agents, steps)))}))


def _spawn(row: str, agents: int, steps: int, count: bool = False) -> dict:
    command = [sys.executable, __file__, "--child", row, str(agents), str(steps)] + (["--count"] if count else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_floor: the {row} run with {agents} agents failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fit(sizes: list[int], ms: list[float]) -> tuple[float, float]:
    """(fixed ms, marginal us per agent) of the least-squares line through (agents, ms)."""
    slope, intercept = np.polyfit(np.asarray(sizes, float), np.asarray(ms, float), 1)
    return float(intercept), 1e3 * float(slope)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", nargs="+", choices=sorted(SIZES), default=["dict", "fused"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--budget-dict", type=float, help="ms per step a goal allows at 128 agents")
    parser.add_argument("--budget-fused", type=float, help="ms per fused step a goal allows at 8 x 128")
    parser.add_argument("--child", nargs=3, metavar=("ROW", "AGENTS", "STEPS"), help=argparse.SUPPRESS)
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        row, agents, steps = args.child
        child(row, int(agents), int(steps), args.count)
        return

    from rich.console import Console
    from rich.table import Table

    runs = [(row, n) for row in args.rows for n in SIZES[row]]
    times: dict[tuple[str, int], list[float]] = {run: [] for run in runs}
    for round_index in range(args.rounds):
        order = runs if round_index % 2 == 0 else runs[::-1]
        for row, n in order:
            times[(row, n)].append(_spawn(row, n, args.steps)["ms"])
        print(f"round {round_index + 1}/{args.rounds} done", flush=True)
    counts = {run: _spawn(*run, steps=30, count=True) for run in runs}

    console = Console()
    for row in args.rows:
        sizes = SIZES[row]
        agents_per_step = [n * (FUSED_WORLDS if row == "fused" else 1) for n in sizes]
        fastest = [float(np.min(times[(row, n)])) for n in sizes]
        fixed, marginal = fit(agents_per_step, fastest)
        title = ("single-env dict API, Medium case" if row == "dict"
                 else f"fused engine, {FUSED_WORLDS} Medium worlds") + f", fastest of {args.rounds} rounds"
        table = Table(title=title)
        columns = ("agents per step", "ms per step, fastest (slowest)", "agent-steps per CPU-s", "Python calls",
                   "C-function calls")
        for name in columns:
            table.add_column(name, justify="right")
        for n, total, best in zip(sizes, agents_per_step, fastest, strict=True):
            spread = times[(row, n)]
            table.add_row(f"{total:,}", f"{best:.3f} ({max(spread):.3f})",
                          f"{1e3 * total / best:,.0f}", f"{counts[(row, n)]['python_calls']:,.0f}",
                          f"{counts[(row, n)]['c_calls']:,.0f}")
        console.print(table)
        print(f"{row}: fixed cost {fixed:.3f} ms per step; "
              f"marginal {marginal:.2f} us per agent-step; "
              f"at {agents_per_step[-1]:,} agents the fixed cost is {100 * fixed / fastest[-1]:.0f} % of the step")
        budget = args.budget_dict if row == "dict" else args.budget_fused
        if budget:
            left = (budget - fixed) * 1e3 / agents_per_step[-1]
            print(f"{row}: a {budget:.3f} ms budget at {agents_per_step[-1]:,} agents leaves {left:.2f} us "
                  f"per agent-step "
                  f"after the fixed cost (now {marginal:.2f}); with no per-agent cost at all the fixed cost alone "
                  f"is {100 * fixed / budget:.0f} % of the budget")


if __name__ == "__main__":
    main()
