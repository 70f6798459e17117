"""Before/after figures of two commits, measured interleaved in one sitting (this VM drifts ±25 %).

Each ref is checked out once into a git worktree under /tmp; then, round after round, the same
benchmark command runs in every worktree in turn (the order alternates between rounds), with
PYTHONPATH pointing at that worktree so it measures that commit's code with this interpreter. The
command must print a JSON object as its last line; `--key` picks the figures to compare. Prints the
median over rounds per ref, its range (the spread) and the ratio to the first ref. A script given
by an absolute path runs as it is in this checkout, against each ref's packages (for flags an old
script lacks).

    python benchmarks/compare_commits.py --refs 051e41b HEAD --rounds 3 \\
        -- benchmarks/bench_env.py --child medium dict 1000
    python benchmarks/compare_commits.py --refs HEAD . -- $PWD/benchmarks/bench_train.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def worktree(ref: str) -> tuple[str, Path]:
    """(short sha, a worktree of `ref` under /tmp), made once per sha; "." is this checkout as it
    is now, uncommitted changes included (named "working")."""
    if ref == ".":
        return "working", ROOT
    sha = subprocess.run(["git", "rev-parse", "--short=10", ref], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    path = Path("/tmp/nmmo_worktrees") / sha
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True,
                       capture_output=True)
    return sha, path


def run(path: Path, command: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(path)}
    done = subprocess.run([sys.executable, *command], cwd=path, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{path}: {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", nargs="+", required=True, help="git refs to compare (the first is the baseline)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--key", nargs="+", default=["agent_steps_per_s", "median_agent_steps_per_s"],
                        help="figures of the command's JSON output to compare")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the benchmark script and its arguments")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    trees = [worktree(ref) for ref in args.refs]
    figures: dict[str, dict[str, list[float]]] = {sha: {k: [] for k in args.key} for sha, _ in trees}
    for round_ in range(args.rounds):
        order = trees if round_ % 2 == 0 else trees[::-1]
        for sha, path in order:
            out = run(path, command)
            for key in args.key:
                figures[sha][key].append(float(out[key]))
            print(f"round {round_ + 1} {sha}: " + ", ".join(f"{k} {out[k]:,.1f}" for k in args.key), flush=True)
    base = trees[0][0]
    for sha, _ in trees:
        cells = []
        for key in args.key:
            values = figures[sha][key]
            median = float(np.median(values))
            ratio = median / float(np.median(figures[base][key]))
            cells.append(f"{key} median {median:,.1f} (range {min(values):,.1f}-{max(values):,.1f}; "
                         f"{ratio:.3f}x of {base})")
        print(f"{sha}: " + "; ".join(cells))
    print(json.dumps({sha: {k: float(np.median(v)) for k, v in f.items()} for sha, f in figures.items()}))


if __name__ == "__main__":
    main()
