"""A short league run: the pool grows with snapshots of the learner and the ratings move.

Usage: python benchmarks/bench_league.py [--minutes 5] [--snapshot-every 5] [--sampling rating]
                                         [--out out/bench_league] [--plot docs/league.png]

Trains the PPO baseline on train_small with `--league` for a fixed wall-clock budget, then prints
the pool size and the learner's SR every few iterations and the final league table, and copies the
league plot (SR of every member over the iterations) to --plot.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from rich.console import Console
from rich.table import Table

from baselines.cli import league_table
from baselines.ppo import Args, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--snapshot-every", type=int, default=5)
    parser.add_argument("--sampling", default="rating", choices=["uniform", "latest", "rating"])
    parser.add_argument("--out", default="out/bench_league")
    parser.add_argument("--plot", default="docs/league.png")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    summary = train(Args(config="train_small", minutes=args.minutes, league=True, league_sampling=args.sampling,
                         league_snapshot_every=args.snapshot_every, out=str(out)))
    history = json.loads((out / "league.json").read_text())["history"]
    console = Console(width=140)
    growth = Table(title=f"League growth ({args.sampling} sampling, a snapshot every {args.snapshot_every} iterations)")
    for name in ("iteration", "pool size", "learner SR", "best member", "best SR"):
        growth.add_column(name, justify="right")
    step = max(1, len(history) // 12)
    for entry in history[::step] + ([history[-1]] if (len(history) - 1) % step else []):
        members = {k: v for k, v in entry["sr"].items() if k != "learner"}
        best = max(members, key=members.get)
        growth.add_row(str(entry["iteration"]), str(len(members)), f"{entry['sr']['learner']:.0f}",
                       Path(best).name if best.startswith("ckpt:") else best, f"{members[best]:.0f}")
    console.print(growth)
    console.print(league_table(summary["league"]))
    shutil.copyfile(out / "league.png", args.plot)
    console.print(f"{summary['iterations']} iterations, {summary['steps']:,} learner agent-steps; plot: {args.plot}")


if __name__ == "__main__":
    main()
