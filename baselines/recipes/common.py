"""What the recipes share: the settings of the hand-written PPO loops (PufferLib's and TorchRL's),
one GAE (theirs and `baselines.ppo`'s), and the command line every recipe speaks.

The library-driven recipes (SB3, RLlib) keep their library's own settings and estimator: these
settings are for the loops this repository writes out, so that the same numbers mean the same
thing in each of them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from baselines.args import Args, field_docs

#: The PPO hyper-parameters the hand-written loops share with ``nmmo train``: their defaults and help
#: are `baselines.args.Args`'s, one home, so that the same flag means the same number in every loop.
SHARED = ("epochs", "minibatches", "lr", "gamma", "gae_lambda", "clip", "ent_coef", "vf_coef", "max_grad_norm")


@dataclass(frozen=True)
class PPOSettings:
    """CleanRL's PPO hyperparameters, sized for trainers_small on a CPU. `steps` counts env steps
    per world and rollout (each is worlds x seats agent-steps); a rollout is cut into `minibatches`
    for each of `epochs` passes. `hidden` and `layers` size the MLPs. The fields of `SHARED` take
    `Args`'s defaults."""

    steps: int = Args.rollout_len
    epochs: int = Args.epochs
    minibatches: int = Args.minibatches
    lr: float = Args.lr
    gamma: float = Args.gamma
    gae_lambda: float = Args.gae_lambda
    clip: float = Args.clip
    ent_coef: float = Args.ent_coef
    vf_coef: float = Args.vf_coef
    max_grad_norm: float = Args.max_grad_norm
    hidden: int = 128  # the recipes' MLP width (nmmo train's LSTM: Args.hidden, 64)
    layers: int = 2


def gae(rewards: np.ndarray, values: np.ndarray, next_value: np.ndarray, terminal: np.ndarray, done: np.ndarray,
        gamma: float, lam: float) -> np.ndarray:
    """Generalized advantage estimates over time-major (T, rows) arrays.

    Two flags per step, because the loops differ on truncations: ``terminal[t]`` says the state
    after step t ends the row's episode, so no value is bootstrapped from it; ``done[t]`` says the
    row's episode ended there for any reason (a termination, a truncation, a world that reset), so
    the advantage does not run on across it. `baselines.ppo` passes its dones as both (it does not
    bootstrap truncations); the PufferLib loop bootstraps through the horizon's truncations. Flags
    may be bool or float arrays."""
    advantages = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1:], np.float32)
    for t in reversed(range(len(rewards))):
        following = next_value if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + gamma * following * (1.0 - terminal[t]) - values[t]
        last = delta + gamma * lam * (1.0 - done[t]) * last
        advantages[t] = last
    return advantages


@contextmanager
def one_thread_seeded(seed: int) -> Iterator[None]:
    """Torch on one thread with its RNG seeded, both restored afterwards: the recipes' networks are
    small MLPs, for which more threads only contend with the env for the cores, and the same seed
    should give the same run without touching the caller's RNG."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(threads)


def parser(prog: str, description: str, agent_steps: int = 100_000, out_help: str = "") -> argparse.ArgumentParser:
    """The arguments every recipe takes: ``--config``, ``--agent-steps``, ``--seed``, ``--out``,
    ``--tensorboard DIR`` / ``--no-tensorboard``; flags never abbreviated, as the nmmo command's."""
    from nmmo.cli import Parser

    p = Parser(prog=prog, description=description)
    p.add_argument("--config", default="trainers_small", help="a config name or TOML path")
    p.add_argument("--agent-steps", type=int, default=agent_steps, help="train until about this many agent-steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help=out_help or "where to save the trained policy")
    board = p.add_mutually_exclusive_group()
    board.add_argument("--tensorboard", default=None, metavar="DIR",
                       help="write TensorBoard event files here (default: OUT/tensorboard when --out is given)")
    board.add_argument("--no-tensorboard", action="store_true", help="write no TensorBoard files")
    return p


def tensorboard_dir(args: argparse.Namespace) -> Path | None:
    """Where `parser`'s flags put the TensorBoard files: --tensorboard, else OUT/tensorboard, else none."""
    if args.no_tensorboard:
        return None
    if args.tensorboard:
        return Path(args.tensorboard)
    return Path(args.out) / "tensorboard" if args.out else None


def add_settings(p: argparse.ArgumentParser) -> None:
    """One ``--<field>`` option per `PPOSettings` field, defaulting to the dataclass's value; a
    `SHARED` one's help is ``nmmo train``'s (the `Args` field's docstring)."""
    docs = field_docs()
    for field in fields(PPOSettings):
        p.add_argument(f"--{field.name.replace('_', '-')}", type=type(field.default), default=field.default,
                       help=docs[field.name] if field.name in SHARED else None)


def settings_from(args: argparse.Namespace) -> PPOSettings:
    """The `PPOSettings` that `add_settings`' options name."""
    return PPOSettings(**{field.name: getattr(args, field.name) for field in fields(PPOSettings)})


def report(result: dict[str, Any]) -> dict[str, Any]:
    """Print the result as the last line of output, one JSON object (what
    ``benchmarks/bench_trainers.py`` parses), and return it."""
    print(json.dumps(result), flush=True)
    return result
