"""The PPO loop of the PufferLib recipe (`nmmo.integrations.pufferlib.train`): CleanRL's clipped
PPO written out over a PufferLib vector env, since the trainer pufferlib-core 3.0.19 ships
(``pufferlib.pufferl``) imports a compiled CUDA extension and cannot load on a CPU-only torch.
The policy is an MLP over the flat observation with one masked categorical head per action part,
sampled with ``pufferlib.pytorch.sample_logits``."""

from __future__ import annotations

import functools
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from nmmo.integrations import require

require("pufferlib", "pufferlib")
import pufferlib  # noqa: E402
import pufferlib.pytorch  # noqa: E402


def info_numbers(infos: Sequence[dict]) -> dict[str, list]:
    """Numbers from the vector env's infos (one dict per copy, keyed by seat) by key, seats merged."""
    stats: dict[str, list] = defaultdict(list)
    for key, value in (kv for info in infos for kv in pufferlib.unroll_nested_dict(info)):
        stats[key.rsplit("/", 1)[-1]].append(float(value))
    return stats


# ------------------------------------------------------------ policy
def native_layout(vecenv_or_env: Any) -> dict | int | None:
    """Where each part of the observation lies, for `unpack`: for the native env (`NativeEnv`) the
    length of the flat vector, after which its action mask starts; for PufferLib's emulation where
    it packed each part (for `pufferlib.pytorch.nativize_tensor`), or None when it did not pack it
    (``mask=False``: the observation is the float32 Box itself)."""
    flat = getattr(vecenv_or_env, "layout", None)
    if flat is not None and hasattr(flat, "mask_size"):
        return int(flat.size)
    layout = pufferlib.pytorch.nativize_dtype(vecenv_or_env.emulated)
    return layout if isinstance(layout, dict) else None


class Policy(nn.Module):
    """An MLP over the flat observation with a value head and one categorical head per
    MultiDiscrete part, masked by the env's action mask."""

    def __init__(self, obs_size: int, nvec: Sequence[int], hidden: int = 128) -> None:
        super().__init__()
        self.kwargs = {"obs_size": int(obs_size), "nvec": [int(n) for n in nvec], "hidden": int(hidden)}
        init = pufferlib.pytorch.layer_init
        self.trunk = nn.Sequential(init(nn.Linear(obs_size, hidden)), nn.Tanh(), init(nn.Linear(hidden, hidden)),
                                   nn.Tanh())
        self.actor = init(nn.Linear(hidden, sum(self.kwargs["nvec"])), std=0.01)
        self.critic = init(nn.Linear(hidden, 1), std=1.0)

    def forward(self, observation: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        """Logits per action part (masked entries at -1e9) and the value."""
        x = observation.float()
        hidden = self.trunk(torch.sign(x) * torch.log1p(x.abs()))  # symlog: counts, positions and ids alike
        logits = self.actor(hidden)
        if mask is not None:
            logits = logits.masked_fill(mask == 0, -1e9)
        return logits.split(self.kwargs["nvec"], dim=-1), self.critic(hidden).squeeze(-1)


def unpack(observations: torch.Tensor, layout: dict | int | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The env's observations -> (observation vector, action mask or None): the native env's rows
    split where the mask starts (`layout` an int), PufferLib's packed bytes unpacked (a dict)."""
    if layout is None:
        return observations, None
    if isinstance(layout, int):
        return observations[..., :layout], observations[..., layout:]
    parts = pufferlib.pytorch.nativize_tensor(observations, layout)
    return parts["observation"], parts["action_mask"]


# ------------------------------------------------------------ PPO
@dataclass
class PPOSettings:
    """CleanRL's PPO hyperparameters, sized for trainers_small on a CPU."""

    steps: int = 64  # env steps per rollout and copy (x 8 seats x n_envs agent-steps)
    epochs: int = 2
    minibatches: int = 4
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 128


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
    """GAE: bootstrap through truncations (Slots truncates every seat at the horizon), not terminals."""
    adv = torch.zeros_like(r.rewards)
    last = torch.zeros_like(next_value)
    for t in reversed(range(len(r.rewards))):
        following = next_value if t == len(r.rewards) - 1 else r.values[t + 1]
        delta = r.rewards[t] + s.gamma * following * (~r.next_terminal[t]) - r.values[t]
        last = delta + s.gamma * s.gae_lambda * (~r.next_done[t]) * last
        adv[t] = last
    return adv


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


def make_policy(vecenv: Any, hidden: int) -> Policy:
    """A `Policy` sized from the vector env (native or emulated)."""
    native = native_layout(vecenv)
    if isinstance(native, int):
        return Policy(native, [int(n) for n in vecenv.single_action_space.nvec], hidden)
    space = vecenv.driver_env.env_single_observation_space
    obs_size = int(np.prod(space["observation"].shape if "observation" in getattr(space, "spaces", {})
                           else space.shape))
    return Policy(obs_size, [int(n) for n in vecenv.single_action_space.nvec], hidden)


def run_ppo(vecenv: Any, agent_steps: int, seed: int, s: PPOSettings) -> dict:
    """PPO updates over `vecenv` until `agent_steps` agent-steps; the result and the trained policy."""
    policy = make_policy(vecenv, s.hidden)
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
        collector.stats.clear()
    seconds = time.perf_counter() - start
    return {"agent_steps": collector.agent_steps, "seconds": seconds,
            "agent_steps_per_s": collector.agent_steps / seconds, "updates": updates, **losses,
            "life_lifetime": means.get("life_lifetime"), "trainer": "CleanRL-style PPO over pufferlib.vector",
            "policy": policy}
