"""Agent-steps per second of each trainer's recipe and ours on one config, and of the envs they step.

The env-side table (first, or alone with ``--env-side``) steps ``--env-config`` (``train_small``,
64 agents a world) with ``--env-worlds`` (4) worlds in this process, a plain loop of random valid
actions, in four forms: the engine's vector env (`nmmo.engines.vector.VectorEnv`, workers=0: the
fused engine), the trainer form (`nmmo.integrations.parallel_env`, one PettingZoo ParallelEnv a
world, stepped one after another), the native PufferLib env (`nmmo.integrations.pufferlib.
NativeEnv`) and PufferLib's emulation of the trainer form (`nmmo.integrations.pufferlib.vec_env`,
Serial). Every arm draws its actions with the same numpy sampler from the flat action masks
(rows, 5 + 3 + PLAYER_N_OBS + 1), and pays for it and for getting its masks into that shape (the
trainer form stacks its per-agent dicts, as a user would). The figure is agent-steps (rows
stepped; the trainer form: the agents in its action dicts) per CPU-second of this process
(`time.process_time`), beside wall agent-steps/s, over ``--env-steps`` steps after
``--env-warmup``; the arms run in alternating order over ``--rounds`` rounds.

Each recipe (`nmmo.integrations.sb3`, `.torchrl`, `.rllib`, `.pufferlib`) trains PPO for the same
number of agent-steps on the same config, in a process of its own, one after the other, so they
never share the CPU. Our trainer (`nmmo train`, recurrent PPO on the batched engine) runs the same
budget. The figure is each run's own count: agent-steps over the seconds of its training loop
(start-up and imports excluded; our trainer's `seconds` in its log, the recipes' `train()` result).

    python benchmarks/bench_trainers.py                          # both tables, 20k agent-steps each
    python benchmarks/bench_trainers.py --agent-steps 50000 --only sb3 ours --no-env-side
    python benchmarks/bench_trainers.py --env-side --env-steps 300 --rounds 2
    python benchmarks/bench_trainers.py --same-network --agent-steps 50000 --rounds 2

``--same-network`` runs only the pair that compares loops: the PufferLib recipe on its native env
and `nmmo train --arch mlp` (`baselines.model.MLPPolicy`, the recipe's network under our loop),
with the same network, PPO batch (64 ticks a rollout, 2 epochs of 4 minibatches), worlds
(``--num-envs``) and one torch thread on both sides (`SAME_NETWORK`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
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


def run_recipe(name: str, config: str, agent_steps: int, seed: int, out: Path, extra: tuple[str, ...] = (),
               label: str | None = None) -> dict:
    command = [sys.executable, "-m", f"baselines.recipes.{name}", "--config", config,
               "--agent-steps", str(agent_steps), "--seed", str(seed), "--out", str(out / (label or name)), *extra]
    return run(command, label or name, lambda stdout: last_json(stdout))


def run_ours(config: str, agent_steps: int, seed: int, out: Path, num_envs: int, extra: tuple[str, ...] = (),
             label: str = "ours") -> dict:
    where = out / label
    command = [sys.executable, "-m", "nmmo", "train", "--config", config, "--total-steps", str(agent_steps),
               "--seed", str(seed), "--num-envs", str(num_envs), "--out", str(where), "--no-progress",
               "--no-wandb", *extra]

    def parse(_stdout: str) -> dict:
        last = json.loads((where / "log.jsonl").read_text().strip().splitlines()[-1])
        # end to end, as the recipes count: every agent-step over the loop's seconds (checkpoints included),
        # not the last iteration's own rate (its log's agent_steps_per_s)
        return {"agent_steps": last["step"], "seconds": last["seconds"],
                "agent_steps_per_s": last["step"] / max(last["seconds"], 1e-9)}

    return run(command, label, parse)


#: The settings both sides of the same-network pair share (``--same-network``): the PufferLib recipe's
#: network (an MLP of two tanh layers of 128 over the flat observation, one masked actor, a critic) and its
#: PPO batch (64 ticks a rollout, 2 epochs of 4 minibatches), one torch thread.
SAME_NETWORK = {"ours_mlp": ("--arch", "mlp", "--hidden", "128", "--rollout-len", "64", "--epochs", "2",
                             "--minibatches", "4", "--threads", "1"),
                "pufferlib": ()}


def same_network(config: str, agent_steps: int, seed: int, out: Path, worlds: int, rounds: int) -> dict:
    """The PufferLib recipe and `nmmo train --arch mlp` on the same network, batch and worlds, in
    alternating order over `rounds`; each side's agent-steps/s per round and the ratio of the means."""
    rows: dict[str, list[dict]] = {name: [] for name in SAME_NETWORK}
    for k in range(rounds):
        for name in (list(SAME_NETWORK) if k % 2 == 0 else list(SAME_NETWORK)[::-1]):
            label = f"{name}_{k}"
            if name == "ours_mlp":
                rows[name].append(run_ours(config, agent_steps, seed, out, worlds, SAME_NETWORK[name], label))
            else:
                rows[name].append(run_recipe(name, config, agent_steps, seed, out, ("--n-envs", str(worlds)), label))
    rates = {name: [r["agent_steps_per_s"] for r in runs if "error" not in r] for name, runs in rows.items()}
    ratio = (float(np.mean(rates["pufferlib"]) / np.mean(rates["ours_mlp"]))
             if all(rates.values()) else None)
    table = Table(title=f"Same network and batch: PufferLib recipe vs nmmo train --arch mlp, {config}, "
                        f"{worlds} worlds, {agent_steps:,} agent-steps a run")
    for column in ("trainer", *(f"round {k + 1}" for k in range(rounds)), "mean agent-steps/s"):
        table.add_column(column, justify="left" if column == "trainer" else "right")
    for name, values in rates.items():
        table.add_row(name, *(f"{v:,.0f}" for v in values), f"{np.mean(values):,.0f}" if values else "-")
    Console(width=120).print(table)
    print(f"pufferlib / ours_mlp: {ratio:.2f}" if ratio is not None else "a run failed: no ratio", flush=True)
    return {"runs": rows, "ratio": ratio}


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


# ------------------------------------------------------------ the env-side table
ENV_ARMS = ("vector", "trainer form", "native", "emulated", "sb3", "torchrl")
ENV_ARM_NOTES = {
    "vector": "VectorEnv(workers=0), fused engine",
    "trainer form": "parallel_env x worlds, dict actions",
    "native": "pufferlib NativeEnv (send/recv)",
    "emulated": "pufferlib vec_env Serial (send/recv)",
    "sb3": "sb3 SeatVecEnv (step; masks from the engine)",
    "torchrl": "torchrl NativeEnv (step_and_maybe_reset)",
}


class Sampler:
    """Random valid actions from flat action masks (rows, 5 + 3 + PLAYER_N_OBS + 1): per row and part
    (direction, style, target) a uniformly random allowed entry (uniform noise plus the 0/1 mask,
    argmax per part); the same one, with its own seeded generator, in every arm."""

    def __init__(self, config, seed: int = 0) -> None:
        cut = (0, 5, 8, 8 + config.PLAYER_N_OBS + 1)
        self.parts = [slice(a, b) for a, b in zip(cut, cut[1:], strict=False)]
        self.width = cut[-1]
        self.rng = np.random.default_rng(seed)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        if masks.shape[1] != self.width:
            raise ValueError(f"masks have {masks.shape[1]} columns, expected {self.width}")
        score = self.rng.random(masks.shape, dtype=np.float32)
        score += masks  # allowed entries in [1, 2), the others in [0, 1)
        return np.stack([score[:, part].argmax(axis=1) for part in self.parts], axis=1)


def arm_vector(config, worlds: int, sample: Sampler):
    from nmmo.engines.vector import VectorEnv

    vec = VectorEnv(config, num_envs=worlds, seed=0, workers=0)
    obs = vec.reset()  # views of the buffers, rewritten in place by every step

    def step() -> int:
        masks = np.concatenate([obs["move_mask"], obs["style_mask"], obs["target_mask"]], axis=1)
        actions = sample(masks)
        vec.step(actions)
        return len(actions)

    return step, vec.close


def arm_trainer_form(config, worlds: int, sample: Sampler):
    from nmmo.integrations import parallel_env

    envs = [parallel_env(config, seed=k) for k in range(worlds)]
    obs = [env.reset()[0] for env in envs]

    def step() -> int:
        for k, env in enumerate(envs):
            if not env.agents:  # the horizon: this world's next episode
                obs[k] = env.reset()[0]
        agents = [list(views) for views in obs]
        masks = np.stack([views[a]["action_mask"] for views, names in zip(obs, agents, strict=True) for a in names])
        actions = sample(masks)
        start = 0
        for k, (env, names) in enumerate(zip(envs, agents, strict=True)):
            obs[k] = env.step(dict(zip(names, actions[start:start + len(names)], strict=True)))[0]
            start += len(names)
        return start

    return step, lambda: [env.close() for env in envs]


def arm_native(config, worlds: int, sample: Sampler):
    import pufferlib
    import pufferlib.vector

    from nmmo.integrations import pufferlib as puffer

    env = pufferlib.vector.make(puffer.native_creator(config, worlds), env_kwargs={"seed": 0},
                                backend=pufferlib.PufferEnv)
    env.async_reset(0)
    start = env.layout.size

    def step() -> int:
        obs = env.recv()[0]
        actions = sample(obs[:, start:])
        env.send(actions.astype(np.int32))
        return len(actions)

    return step, env.close


def arm_emulated(config, worlds: int, sample: Sampler):
    from nmmo.integrations import pufferlib as puffer

    vecenv = puffer.vec_env(worlds, config, backend="Serial", seed=0)
    vecenv.async_reset(0)
    dtype = vecenv.driver_env.obs_dtype

    def step() -> int:
        obs = vecenv.recv()[0]
        actions = sample(np.asarray(obs).view(dtype)["action_mask"].reshape(len(obs), -1))
        vecenv.send(actions.astype(np.int32))
        return len(actions)

    return step, vecenv.close


def arm_sb3(config, worlds: int, sample: Sampler):
    from nmmo.integrations import sb3

    venv = sb3.SeatVecEnv(config, num_worlds=worlds, seed=0)
    venv.reset()
    b = venv.vec.buffers  # SB3's PPO has no masks: the sampler reads the engine's, as in the vector arm

    def step() -> int:
        actions = sample(np.concatenate([b["move_mask"], b["style_mask"], b["target_mask"]], axis=1))
        venv.step(actions)
        return len(actions)

    return step, venv.close


def arm_torchrl(config, worlds: int, sample: Sampler):
    import torch

    from nmmo.integrations.torchrl_env import GROUP, NativeEnv

    env = NativeEnv(config, num_worlds=worlds, seed=0)
    state = {"td": env.reset()}

    def step() -> int:
        td = state["td"]
        mask = td[GROUP, "action_mask"]
        actions = sample(mask.reshape(-1, mask.shape[-1]).numpy())
        td[GROUP, "action"] = torch.from_numpy(actions.reshape(*mask.shape[:2], 3))
        _, state["td"] = env.step_and_maybe_reset(td)
        return len(actions)

    return step, env.close


ENV_ARM_BUILDERS = {"vector": arm_vector, "trainer form": arm_trainer_form, "native": arm_native,
                    "emulated": arm_emulated, "sb3": arm_sb3, "torchrl": arm_torchrl}


def run_env_arm(name: str, config, worlds: int, steps: int, warmup: int) -> dict:
    """One arm: build it, `warmup` steps, then `steps` timed steps (CPU time of this process and wall)."""
    try:
        step, close = ENV_ARM_BUILDERS[name](config, worlds, Sampler(config, seed=0))
    except ImportError as err:
        return {"error": f"not installed ({err.name})"}
    try:
        for _ in range(warmup):
            step()
        agent_steps = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(steps):
            agent_steps += step()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    except Exception as err:  # noqa: BLE001 - one broken arm leaves the others' figures
        traceback.print_exc()
        return {"error": f"failed: {type(err).__name__}"}
    finally:
        close()
    return {"agent_steps": agent_steps, "cpu_s": cpu, "wall_s": wall, "per_cpu_s": agent_steps / cpu,
            "per_wall_s": agent_steps / wall}


def env_side(config_name: str, worlds: int, steps: int, warmup: int, rounds: int, arms: list[str]) -> dict:
    from nmmo import config as config_module

    config = config_module.resolve(config_name).validate()
    results: dict[str, list[dict]] = {name: [] for name in arms}
    for r in range(rounds):
        order = arms if r % 2 == 0 else arms[::-1]  # alternate, so drift hits every arm alike
        for name in order:
            result = run_env_arm(name, config, worlds, steps, warmup)
            results[name].append(result)
            if "error" in result:
                print(f"env-side round {r + 1} {name}: {result['error']}", flush=True)
            else:
                print(f"env-side round {r + 1} {name}: {result['agent_steps']:,} agent-steps, "
                      f"{result['cpu_s']:.2f} CPU s ({result['per_cpu_s']:,.0f}/CPU-s), "
                      f"{result['wall_s']:.2f} wall s ({result['per_wall_s']:,.0f}/s)", flush=True)
    agents = config.PLAYER_N
    table = Table(title=f"Env side: {config_name} ({agents} agents a world) x {worlds} worlds, in this process, "
                        f"random valid actions, {steps} steps after {warmup} of warm-up, {rounds} round(s)")
    columns = ["arm", "what", *(f"round {r + 1} /CPU-s" for r in range(rounds)), "mean agent-steps/CPU-s",
               "mean wall agent-steps/s", "x vector (CPU)", "x vector (wall)"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("arm", "what") else "right")

    def mean(rows: list[dict], key: str) -> float | None:
        good = [row[key] for row in rows if "error" not in row]
        return sum(good) / len(good) if good else None

    base_cpu, base_wall = mean(results.get("vector", []), "per_cpu_s"), mean(results.get("vector", []), "per_wall_s")
    summary = {}
    for name, rows in results.items():
        cpu, wall = mean(rows, "per_cpu_s"), mean(rows, "per_wall_s")
        per_round = [row.get("error", "-") if "error" in row else f"{row['per_cpu_s']:,.0f}" for row in rows]
        ratio_cpu = f"{cpu / base_cpu:.2f}" if cpu and base_cpu else "-"
        ratio_wall = f"{wall / base_wall:.2f}" if wall and base_wall else "-"
        table.add_row(name, ENV_ARM_NOTES[name], *per_round, f"{cpu:,.0f}" if cpu else "-",
                      f"{wall:,.0f}" if wall else "-", ratio_cpu, ratio_wall)
        summary[name] = {"rounds": rows, "per_cpu_s": cpu, "per_wall_s": wall,
                         "ratio_cpu": cpu / base_cpu if cpu and base_cpu else None}
    Console(width=180).print(table)  # one line a row, in a log or a pipe too
    return summary


def machine() -> str:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, nproc {usable} "
            f"(cpu_count {os.cpu_count()}), Python {platform.python_version()}, numpy {np.__version__}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="trainers_small")
    parser.add_argument("--agent-steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-envs", type=int, default=8, help="env copies our trainer steps together")
    parser.add_argument("--only", nargs="+", choices=[*RECIPES, "ours"], default=[*RECIPES, "ours"])
    parser.add_argument("--json", type=Path, help="also write the results here")
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--env-side", action="store_true", help="only the env-side table (no training)")
    side.add_argument("--no-env-side", action="store_true", help="only the training table")
    parser.add_argument("--env-config", default="train_small", help="the env-side table's config")
    parser.add_argument("--env-worlds", type=int, default=4, help="worlds each env-side arm steps")
    parser.add_argument("--env-steps", type=int, default=300, help="timed steps of each env-side arm")
    parser.add_argument("--env-warmup", type=int, default=20, help="untimed steps before them")
    parser.add_argument("--rounds", type=int, default=2, help="env-side rounds (the arms' order alternates)")
    parser.add_argument("--env-arms", nargs="+", choices=ENV_ARMS, default=list(ENV_ARMS))
    parser.add_argument("--same-network", action="store_true",
                        help="only the PufferLib recipe against nmmo train --arch mlp: same network, batch and "
                             "worlds (--num-envs), --rounds rounds in alternating order")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}", flush=True)
    print(f"command: {shlex.join([sys.executable, *sys.argv])}", flush=True)
    if args.same_network:
        with tempfile.TemporaryDirectory(prefix="bench_trainers_") as tmp:
            result = same_network(args.config, args.agent_steps, args.seed, Path(tmp), args.num_envs, args.rounds)
        if args.json:
            args.json.write_text(json.dumps({"same_network": result}, indent=2))
        return
    env_results = None
    if not args.no_env_side:
        env_results = env_side(args.env_config, args.env_worlds, args.env_steps, args.env_warmup, args.rounds,
                               args.env_arms)
    if args.env_side:
        if args.json:
            args.json.write_text(json.dumps({"env_side": env_results}, indent=2))
        return
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
        args.json.write_text(json.dumps({**results, "env_side": env_results} if env_results else results, indent=2))


if __name__ == "__main__":
    main()
