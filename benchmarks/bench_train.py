"""PPO throughput on this machine: rollout collection and end-to-end training, by model size.

Usage: python benchmarks/bench_train.py [--iterations 4] [--hidden 32 64 128]

Each row trains a fresh model for a few iterations on train_small (8 envs x 64 agent slots, 64-tick
rollouts) and reports agent-steps/s for rollouts alone (env + inference) and end to end (rollout +
PPO updates), with the seconds per iteration spent in the env, in inference and in learning. The
first iteration is dropped (warm-up).
"""

from __future__ import annotations

import argparse
import json
import tempfile

from rich.console import Console
from rich.table import Table

from baselines.ppo import Args, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the trainer's)")
    parser.add_argument("--bptt", type=int, default=None, help="LSTM replay length (default: the trainer's; "
                        "64 = the whole rollout, as before chunked replay)")
    parser.add_argument("--json", action="store_true", help="print one JSON line of figures per size instead "
                        "of the table (for benchmarks/compare_commits.py)")
    args = parser.parse_args()
    table = Table(title=f"PPO on train_small, {args.num_envs} envs (2 CPU cores)")
    for column in ("hidden", "parameters", "rollout agent-steps/s", "end-to-end agent-steps/s", "env s/it",
                   "inference s/it", "learn s/it"):
        table.add_column(column, justify="right")
    for hidden in args.hidden:
        with tempfile.TemporaryDirectory() as out:
            options = {} if args.threads is None else {"threads": args.threads}
            if args.bptt is not None:
                options["bptt"] = args.bptt
            summary = train(Args(hidden=hidden, iterations=args.iterations, out=out, progress=False,
                                 workers=args.workers, num_envs=args.num_envs, **options))
        rows = summary["history"][1:] or summary["history"]
        steps = sum(r["step"] - p["step"] for p, r in zip(summary["history"], summary["history"][1:], strict=False))
        steps = steps or summary["steps"]
        env = sum(r["env_s"] for r in rows)
        inference = sum(r["inference_s"] for r in rows)
        learn = sum(r["learn_s"] for r in rows)
        figures = {"hidden": hidden, "rollout_agent_steps_per_s": steps / (env + inference),
                   "agent_steps_per_s": steps / (env + inference + learn), "env_s": env / len(rows),
                   "inference_s": inference / len(rows), "learn_s": learn / len(rows)}
        if args.json:
            print(json.dumps(figures), flush=True)
        table.add_row(str(hidden), f"{summary['parameters']:,}", f"{steps / (env + inference):,.0f}",
                      f"{steps / (env + inference + learn):,.0f}", f"{env / len(rows):.2f}",
                      f"{inference / len(rows):.2f}", f"{learn / len(rows):.2f}")
    if not args.json:
        Console(width=140).print(table)


if __name__ == "__main__":
    main()
