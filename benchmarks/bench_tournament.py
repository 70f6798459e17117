"""Wall time of a short tournament whose policies are submissions: the cost of the sandbox's channel.

Two submission files (written to a temporary directory) wrap scripted Forage and Meander, so
they run in worker processes and every tick's observations and actions cross the channel; the
anchor, scripted Combat, runs in-process. The canonical `tournament` config (99 agents in equal
shares), `--episodes` episodes of `--ticks` ticks, `--workers` episode processes. Prints one JSON
line: wall seconds (spec checks, worker starts and every tick) and agent-ticks per second.

The deal is the one of seed 0 without a secret (`--salted` draws one, as `nmmo tournament` does),
so that every commit, before and after the secret existed, plays exactly the same episodes: the
figures then compare the cost of the same work.

    python benchmarks/bench_tournament.py [--episodes 2] [--ticks 256] [--workers 2]
    python benchmarks/compare_commits.py --refs HEAD . --rounds 5 --key seconds agent_ticks_per_s \\
        -- $PWD/benchmarks/bench_tournament.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

WRAPPER = '''"""A user's agent file: a scripted bot, run as a submission."""
from scripted.bots import {name}


class Agent({name}):
    pass
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--ticks", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--salted", action="store_true", help="a fresh secret deals the agents (another deal)")
    args = parser.parse_args()
    from evaluation import tournament
    from evaluation.tournament import run_tournament

    if hasattr(tournament, "draw_secret") and not args.salted:
        tournament.draw_secret = lambda: None  # episodes then carry no secret: the unsalted deal of seed 0

    with tempfile.TemporaryDirectory() as directory:
        specs = []
        for name in ("Forage", "Meander"):
            path = Path(directory) / f"my_{name.lower()}.py"
            path.write_text(WRAPPER.format(name=name))
            specs.append(f"{path}:Agent")
        start = time.perf_counter()
        results = run_tournament("tournament", specs, episodes=args.episodes, ticks=args.ticks, seed=0,
                                 workers=args.workers, progress=False)
        seconds = time.perf_counter() - start
    faults = sum(results["faults"][spec][kind] for spec in specs for kind in ("exception", "timeout", "malformed"))
    agent_ticks = sum(cell["count"] and cell["mean"] * cell["count"]
                      for policy in results["metrics"].values() for cell in [policy["lifetime"]])
    print(json.dumps({"seconds": round(seconds, 3), "agent_ticks_per_s": round(agent_ticks / seconds, 1),
                      "faults": faults, "episodes": args.episodes, "ticks": args.ticks}))


if __name__ == "__main__":
    main()
