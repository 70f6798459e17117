"""Agent-steps per second of each trainer's recipe on one config, beside our own trainer.

Each recipe (`nmmo.integrations.sb3`, `.torchrl`, `.rllib`, `.pufferlib`) trains PPO for the same
number of agent-steps on the same config, in a process of its own, one after the other, so they
never share the CPU. Our trainer (`nmmo train`, recurrent PPO on the batched engine) runs the same
budget. The figure is each run's own count: agent-steps over the seconds of its training loop
(start-up and imports excluded; our trainer's `seconds` in its log, the recipes' `train()` result).

    python benchmarks/bench_trainers.py                          # all, 20k agent-steps each
    python benchmarks/bench_trainers.py --agent-steps 50000 --only sb3 ours
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

RECIPES = ("sb3", "torchrl", "rllib", "pufferlib")
VERSIONS = {"sb3": ("stable_baselines3", "supersuit"), "torchrl": ("torchrl", "tensordict"), "rllib": ("ray",),
            "pufferlib": ("pufferlib",), "ours": ("torch",)}


def last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON result line in the output:\n{text[-2000:]}")


def run_recipe(name: str, config: str, agent_steps: int, seed: int, out: Path) -> dict:
    command = [sys.executable, "-m", f"nmmo.integrations.{name}", "--config", config,
               "--agent-steps", str(agent_steps), "--seed", str(seed), "--out", str(out / name)]
    return run(command, name, lambda stdout: last_json(stdout))


def run_ours(config: str, agent_steps: int, seed: int, out: Path, num_envs: int) -> dict:
    where = out / "ours"
    command = [sys.executable, "-m", "nmmo", "train", "--config", config, "--total-steps", str(agent_steps),
               "--seed", str(seed), "--num-envs", str(num_envs), "--out", str(where), "--no-progress",
               "--no-wandb"]

    def parse(_stdout: str) -> dict:
        last = json.loads((where / "log.jsonl").read_text().strip().splitlines()[-1])
        return {"agent_steps": last["step"], "seconds": last["seconds"], "agent_steps_per_s": last["agent_steps_per_s"]}

    return run(command, "ours", parse)


def run(command: list[str], name: str, parse) -> dict:
    print(f"{name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        print(f"{name}: failed (exit {done.returncode})\n{done.stderr[-3000:]}", flush=True)
        return {"error": f"exit {done.returncode}", "wall_s": wall}
    result = parse(done.stdout)
    result["wall_s"] = wall
    print(f"{name}: {result['agent_steps']:,} agent-steps in {result['seconds']:.1f} s of training "
          f"({result['agent_steps_per_s']:,.0f}/s), {wall:.1f} s with start-up", flush=True)
    return result


def versions(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for module in VERSIONS[name]:
        dist = {"stable_baselines3": "stable-baselines3", "pufferlib": "pufferlib-core"}.get(module, module)
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="trainers_small")
    parser.add_argument("--agent-steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-envs", type=int, default=8, help="env copies our trainer steps together")
    parser.add_argument("--only", nargs="+", choices=[*RECIPES, "ours"], default=[*RECIPES, "ours"])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_trainers_") as tmp:
        for name in args.only:
            if name == "ours":
                results[name] = run_ours(args.config, args.agent_steps, args.seed, Path(tmp), args.num_envs)
            else:
                results[name] = run_recipe(name, args.config, args.agent_steps, args.seed, Path(tmp))
    table = Table(title=f"PPO on {args.config}, {args.agent_steps:,} agent-steps, seed {args.seed}")
    for column in ("trainer", "versions", "agent-steps", "training s", "agent-steps/s", "wall s"):
        table.add_column(column, justify="left" if column in ("trainer", "versions") else "right")
    for name, r in results.items():
        if "error" in r:
            table.add_row(name, versions(name), "-", "-", r["error"], f"{r['wall_s']:.1f}")
        else:
            table.add_row(name, versions(name), f"{r['agent_steps']:,}", f"{r['seconds']:.1f}",
                          f"{r['agent_steps_per_s']:,.0f}", f"{r['wall_s']:.1f}")
    Console(width=120).print(table)  # a log or a pipe gets the whole table too
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
