"""PPO with PufferLib on nmmo: CleanRL's clipped PPO written out over a PufferLib vector env (docs:
trainers/pufferlib.md), on the native env (`nmmo.integrations.pufferlib.NativeEnv`, the default) or
on PufferLib's emulation of the trainer form. Written out because the trainer pufferlib-core
3.0.19 ships (``pufferlib.pufferl``) imports a compiled CUDA extension and cannot load on a
CPU-only torch. The network is `nmmo.integrations.pufferlib.Policy`, sampled with
``pufferlib.pytorch.sample_logits``; the checkpoint plays back as ``pufferlib:PATH``.

Run: ``python -m baselines.recipes.pufferlib --config trainers_small --agent-steps 1000000 --out out/pufferlib``.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from baselines.recipes import common
from baselines.recipes.common import PPOSettings
from baselines.tb_log import TensorBoardLog
from nmmo.config import Config
from nmmo.integrations import require, resolve

require("pufferlib", "pufferlib")
import pufferlib  # noqa: E402
import pufferlib.pytorch  # noqa: E402
import pufferlib.vector  # noqa: E402

from nmmo.integrations.pufferlib import Policy, info_numbers, native_creator, native_layout, save, unpack  # noqa: E402
from nmmo.integrations.pufferlib import vec_env as emulated_vec_env  # noqa: E402

__all__ = ["ROUTES", "Collector", "PPOSettings", "Rollout", "main", "run_ppo", "train"]

#: The envs `train` can run on: the native env (`NativeEnv`) or PufferLib's emulation (`vec_env`).
ROUTES = ("native", "emulated")


@dataclass
class Rollout:
    """One rollout's tensors, time-major: (steps, agents, ...)."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor  # reward received after acting
    next_terminal: torch.Tensor  # the next observation ends the seat's episode (no bootstrap)
    next_done: torch.Tensor  # ... or truncates it (the advantage stops there)
    valid: torch.Tensor  # the row is a real transition: an agent acted and its action was used


class Collector:
    """Steps a PufferLib vector env with the policy through its send/recv API."""

    def __init__(self, vecenv: Any, policy: Policy, seed: int) -> None:
        self.vecenv, self.policy, self.layout = vecenv, policy, native_layout(vecenv)
        self.agent_steps = 0
        self.stats: dict[str, list] = defaultdict(list)
        vecenv.async_reset(seed)
        self._receive()

    def _receive(self) -> np.ndarray:
        obs, rewards, terminals, truncations, _, infos, _, masks = self.vecenv.recv()
        self.obs = torch.from_numpy(np.array(obs))
        self.terminal = torch.from_numpy(np.array(terminals, dtype=bool))
        self.done = self.terminal | torch.from_numpy(np.array(truncations, dtype=bool))
        # emulated: a done row's next action is dropped (the copy resets, or the seat is over); native:
        # a truncated world has reset already, so only a terminated seat's next action is not a transition
        ended = self.terminal if isinstance(self.layout, int) else self.done
        self.valid = torch.from_numpy(np.array(masks, dtype=bool)) & ~ended
        for key, values in info_numbers(infos).items():
            self.stats[key].extend(values)
        return np.array(rewards, dtype=np.float32)

    def value(self) -> torch.Tensor:
        with torch.no_grad():
            return self.policy(*unpack(self.obs, self.layout))[1]

    def rollout(self, steps: int) -> Rollout:
        n = self.vecenv.num_agents
        zeros = functools.partial(torch.zeros, steps, n)
        r = Rollout(torch.zeros(steps, *self.obs.shape, dtype=self.obs.dtype),
                    torch.zeros(steps, n, len(self.policy.kwargs["nvec"]), dtype=torch.long), zeros(), zeros(),
                    zeros(), zeros(dtype=torch.bool), zeros(dtype=torch.bool), zeros(dtype=torch.bool))
        for t in range(steps):
            r.obs[t], r.valid[t] = self.obs, self.valid
            with torch.no_grad():
                logits, value = self.policy(*unpack(self.obs, self.layout))
                action, logprob, _ = pufferlib.pytorch.sample_logits(logits)
            r.actions[t], r.logprobs[t], r.values[t] = action, logprob, value
            self.agent_steps += int(self.valid.sum())
            self.vecenv.send(action.numpy().astype(np.int32))
            rewards = self._receive()
            r.rewards[t] = torch.from_numpy(rewards)
            r.next_terminal[t], r.next_done[t] = self.terminal, self.done
        return r


def advantages(r: Rollout, next_value: torch.Tensor, s: PPOSettings) -> torch.Tensor:
    """The shared GAE (`common.gae`), bootstrapping through truncations (the horizon truncates every
    seat), not through terminations."""
    return torch.from_numpy(common.gae(r.rewards.numpy(), r.values.numpy(), next_value.numpy(),
                                       r.next_terminal.numpy(), r.next_done.numpy(), s.gamma, s.gae_lambda))


def update(policy: Policy, optimizer: torch.optim.Optimizer, r: Rollout, adv: torch.Tensor, layout: Any,
           s: PPOSettings, generator: torch.Generator) -> dict[str, float]:
    """CleanRL's clipped PPO epochs over the valid rows of one rollout."""
    keep = r.valid.reshape(-1)
    obs, actions = r.obs.reshape(-1, *r.obs.shape[2:])[keep], r.actions.reshape(-1, r.actions.shape[-1])[keep]
    old_logprob, adv = r.logprobs.reshape(-1)[keep], adv.reshape(-1)[keep]
    returns = adv + r.values.reshape(-1)[keep]
    size = len(adv)
    losses: dict[str, list[float]] = defaultdict(list)
    for _ in range(s.epochs):
        order = torch.randperm(size, generator=generator)
        for idx in order.chunk(max(1, min(s.minibatches, size))):
            logits, value = policy(*unpack(obs[idx], layout))
            _, logprob, entropy = pufferlib.pytorch.sample_logits(logits, action=actions[idx])
            a = adv[idx]
            a = (a - a.mean()) / (a.std() + 1e-8) if len(a) > 1 else a
            ratio = (logprob - old_logprob[idx]).exp()
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - s.clip, 1 + s.clip)).mean()
            vf = 0.5 * (value - returns[idx]).pow(2).mean()
            loss = pg + s.vf_coef * vf - s.ent_coef * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), s.max_grad_norm)
            optimizer.step()
            for key, val in (("policy_loss", pg), ("value_loss", vf), ("entropy", entropy.mean())):
                losses[key].append(float(val.detach()))
    return {key: float(np.mean(vals)) for key, vals in losses.items()}


def make_policy(vecenv: Any, s: PPOSettings) -> Policy:
    """A `Policy` sized from the vector env (native or emulated)."""
    native = native_layout(vecenv)
    nvec = [int(n) for n in vecenv.single_action_space.nvec]
    if isinstance(native, int):
        return Policy(native, nvec, s.hidden, s.layers)
    space = vecenv.driver_env.env_single_observation_space
    obs_size = int(np.prod(space["observation"].shape if "observation" in getattr(space, "spaces", {})
                           else space.shape))
    return Policy(obs_size, nvec, s.hidden, s.layers)


def run_ppo(vecenv: Any, agent_steps: int, seed: int, s: PPOSettings, board: TensorBoardLog | None = None) -> dict:
    """PPO updates over `vecenv` until `agent_steps` agent-steps; the result and the trained policy.
    Each update's numbers also go to `board` (TensorBoard) when given."""
    policy = make_policy(vecenv, s)
    optimizer = torch.optim.Adam(policy.parameters(), lr=s.lr, eps=1e-5)
    generator = torch.Generator().manual_seed(seed)
    collector = Collector(vecenv, policy, seed)
    steps = max(1, min(s.steps, math.ceil(agent_steps / vecenv.num_agents)))
    start, losses, updates, means = time.perf_counter(), {}, 0, {}
    while collector.agent_steps < agent_steps:
        r = collector.rollout(steps)
        adv = advantages(r, collector.value(), s)
        losses = update(policy, optimizer, r, adv, collector.layout, s, generator)
        updates += 1
        means = {key: float(np.mean(vals)) for key, vals in collector.stats.items() if vals}
        seconds = time.perf_counter() - start
        print(f"update {updates}: {collector.agent_steps} agent-steps, {collector.agent_steps / seconds:.0f}/s, "
              f"reward/step {float(r.rewards[r.valid].mean()):+.3f}, lives ended {len(collector.stats['life_ended'])}, "
              f"life_lifetime {means.get('life_lifetime', float('nan')):.1f}, entropy {losses['entropy']:.3f}, "
              f"value_loss {losses['value_loss']:.3f}", flush=True)
        if board is not None:
            board.log({"agent_steps_per_s": collector.agent_steps / seconds, "seconds": seconds,
                       "reward": float(r.rewards[r.valid].mean()), **losses, **means}, collector.agent_steps)
        collector.stats.clear()
    seconds = time.perf_counter() - start
    return {"agent_steps": collector.agent_steps, "seconds": seconds,
            "agent_steps_per_s": collector.agent_steps / seconds, "updates": updates, **losses,
            "life_lifetime": means.get("life_lifetime"), "policy": policy}


def train(config: Config | str = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
          out: str | Path | None = None, *, n_envs: int = 2, backend: str = "Serial", route: str = "native",
          settings: PPOSettings | None = None, tensorboard: str | Path | None = None, **vec_kwargs: Any) -> dict:
    """PPO on `n_envs` worlds until `agent_steps` agent-steps (seats stepped, the rows of auto-reset
    steps not counted) are collected: on the native env (``route="native"``: `NativeEnv`, its
    worlds stepped by the engine's vector env; `vec_kwargs` are its ``workers``, ``engine``...)
    or on PufferLib's emulation of the trainer form (``route="emulated"``: `n_envs` copies in a
    ``backend`` vector env; `vec_kwargs` go to the backend). Returns the agent-steps, seconds,
    agent-steps/s and the last losses and lifetime means; with `out`, writes ``out/policy.pt``
    (``pufferlib:out/policy.pt`` plays it; the same file from either route); with `tensorboard`, a
    directory, TensorBoard event files of every update there."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    s = settings or PPOSettings()
    cfg = resolve(config)
    if route == "native":
        vecenv = pufferlib.vector.make(native_creator(cfg, n_envs, **vec_kwargs), env_kwargs={"seed": seed},
                                       backend=pufferlib.PufferEnv)
    else:
        vecenv = emulated_vec_env(n_envs, cfg, backend=backend, seed=seed, **vec_kwargs)
    board = TensorBoardLog(tensorboard) if tensorboard is not None else None
    try:
        with common.one_thread_seeded(seed):  # one thread: faster for this MLP, and the cores go to the envs
            result = run_ppo(vecenv, agent_steps, seed, s, board)
    finally:
        vecenv.close()
        if board is not None:
            board.close()
    trainer = "CleanRL-style PPO over " + ("the native PufferLib env" if route == "native" else "pufferlib.vector")
    result.update(route=route, backend="native" if route == "native" else backend, n_envs=n_envs,
                  settings=asdict(s), trainer=trainer)
    policy = result.pop("policy")
    if out is not None:
        result["checkpoint"] = save(policy, out, cfg, result["agent_steps"])
    return result


def main(argv: Sequence[str] | None = None) -> dict:
    """``python -m baselines.recipes.pufferlib``: `train`, then the result as one JSON line."""
    parser = common.parser("python -m baselines.recipes.pufferlib", __doc__.split("\n\n")[0],
                           out_help="directory for policy.pt (play it back as pufferlib:DIR/policy.pt)")
    parser.add_argument("--n-envs", type=int, default=2, help="worlds (native) or env copies (emulated)")
    parser.add_argument("--route", default="native", choices=ROUTES,
                        help="native: NativeEnv over the engine's vector env; emulated: PufferLib's emulation")
    parser.add_argument("--backend", default="Serial", choices=["Serial", "Multiprocessing"],
                        help="emulated: PufferLib's vector backend")
    parser.add_argument("--num-workers", type=int, default=None,
                        help="emulated: Multiprocessing workers (default: n-envs); native: the vector env's worker "
                             "processes (default: 0, in this process)")
    common.add_settings(parser)
    args = parser.parse_args(argv)
    if args.route == "native":
        vec_kwargs = {"workers": args.num_workers or 0}
    else:
        multi = args.backend == "Multiprocessing"
        vec_kwargs = {"num_workers": args.num_workers or args.n_envs, "overwork": True} if multi else {}
    return common.report(train(args.config, args.agent_steps, args.seed, args.out, n_envs=args.n_envs,
                               backend=args.backend, route=args.route, settings=common.settings_from(args),
                               tensorboard=common.tensorboard_dir(args), **vec_kwargs))


if __name__ == "__main__":
    main(sys.argv[1:])
