"""TorchRL on nmmo: the trainer form in TorchRL's own `PettingZooWrapper`, a compact MAPPO/IPPO
loop (`Collector`, `ProbabilisticActor`, `ValueOperator`, `MAPPOLoss`/`IPPOLoss`: ClipPPOLoss with
multi-agent GAE, Adam) and the way back (`torchrl:PATH` policies for ``nmmo eval`` and
``nmmo tournament``).

What TorchRL sees (`env`): one group ``"player"`` (the seats ``player_0`` ... are grouped by
name prefix) holding, per seat, ``("player", "observation", "observation")`` (the flat vector),
``("player", "action_mask")`` (the flat 5 + 3 + targets mask, TorchRL's layout for a
MultiDiscrete action: the concatenated one-hot masks), ``("player", "mask")`` (seats still in the
episode), ``("player", "info", <key>)`` (`nmmo.interfaces.SLOT_INFO_KEYS`, every step) and the
action ``("player", "action")``: 3 integers (direction, style, target index). The global state is
at ``"state"`` (a centralized critic reads it).

TorchRL 0.14 has no masked distribution over a MultiDiscrete action, so `MaskedMultiCategorical`
puts one TorchRL `MaskedCategorical` on each part. The network (`PolicyNet`) is a plain MLP shared
by every seat (what ``MultiAgentMLP(share_params=True, centralized=False)`` computes), so it also
acts for any number of agents when it plays the raw env.

Run: ``python -m nmmo.integrations.torchrl --config trainers_small --agent-steps 1000000 --out out/torchrl``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nmmo import integrations
from nmmo.config import Config
from nmmo.core.actions import flat_action_sizes
from nmmo.integrations import parallel_env, policy_interface, require, resolve
from nmmo.interfaces import agent_class
from nmmo.io import torchzip

require("torchrl", "torchrl")
require("tensordict", "torchrl")

from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.data import LazyTensorStorage, ReplayBuffer  # noqa: E402
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement  # noqa: E402
from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402
from torchrl.modules import MaskedCategorical, ProbabilisticActor, ValueOperator  # noqa: E402
from torchrl.objectives import ValueEstimators  # noqa: E402
from torchrl.objectives.multiagent import IPPOLoss, MAPPOLoss  # noqa: E402

__all__ = ["MaskedMultiCategorical", "PPOSettings", "PolicyNet", "ValueNet", "env", "load_weights", "make_loss",
           "make_modules", "policy_class", "save_weights", "train"]

GROUP = "player"
OBS = (GROUP, "observation", "observation")
ACTION_MASK = (GROUP, "action_mask")
ACTION = (GROUP, "action")
LOGITS = (GROUP, "logits")
LOG_PROB = (GROUP, "action_log_prob")
VALUE = (GROUP, "state_value")
STATE = "state"
#: What the weights file says it is (checked when it is loaded).
FORMAT = "nmmo.integrations.torchrl/1"


# ---------------------------------------------------------------- the env
def env(config: Config | str | None = "trainers_small", seed: int | None = 0, *, return_state: bool = True,
        device: str = "cpu", **env_kwargs: Any) -> PettingZooWrapper:
    """The trainer form (`nmmo.integrations.parallel_env`, with masks) in TorchRL's `PettingZooWrapper`.

    - one group ``"player"`` (default grouping by name prefix);
    - ``use_mask=True``: a ``("player", "mask")`` of the seats still in the episode (with respawn
      every seat stays to the horizon; without it a seat leaves with its agent);
    - ``done_on_any=False``: the episode ends when every seat is done (the parallel default, any,
      would end it at the first seat's end when there is no respawn);
    - ``return_state``: the global state under ``"state"`` for a centralized critic.
    """
    cfg = resolve(config)
    pz = parallel_env(cfg, seed=seed, mask=True, **env_kwargs)
    with warnings.catch_warnings():  # "tested using PettingZoo 1.24.3": we test the version we pin
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested", category=UserWarning)
        return PettingZooWrapper(pz, return_state=return_state, use_mask=True, categorical_actions=True,
                                 done_on_any=False, seed=seed, device=device)


# ---------------------------------------------------------------- the networks
def _symlog(x: torch.Tensor) -> torch.Tensor:
    """sign(x) log(1 + |x|): observations run to tens (levels, coordinates); this keeps them small."""
    return torch.sign(x) * torch.log1p(x.abs())


def _mlp(n_in: int, hidden: int, layers: int) -> nn.Sequential:
    mods: list[nn.Module] = []
    for i in range(layers):
        mods += [nn.Linear(n_in if i == 0 else hidden, hidden), nn.Tanh()]
    return nn.Sequential(*mods)


class PolicyNet(nn.Module):
    """The actor: observation vector -> the logits of the three action parts side by side
    (5 + 3 + targets, the mask's layout). Shared by all seats; rebuilt from the numbers saved beside
    its weights (`arch`)."""

    def __init__(self, obs_dim: int, nvec: Sequence[int], hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.arch = {"obs_dim": int(obs_dim), "nvec": [int(n) for n in nvec], "hidden": int(hidden),
                     "layers": int(layers)}
        self.body = _mlp(int(obs_dim), int(hidden), int(layers))
        self.head = nn.Linear(int(hidden), int(sum(self.arch["nvec"])))
        nn.init.orthogonal_(self.head.weight, 0.01)
        nn.init.zeros_(self.head.bias)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(_symlog(obs)))


class ValueNet(nn.Module):
    """The critic: a seat's value from its observation, and, when `state_dim` > 0 (MAPPO), the
    global state (the same vector for every seat of a step)."""

    def __init__(self, obs_dim: int, state_dim: int = 0, hidden: int = 256, layers: int = 2) -> None:
        super().__init__()
        self.state_dim = int(state_dim)
        self.body = _mlp(int(obs_dim) + self.state_dim, int(hidden), int(layers))
        self.head = nn.Linear(int(hidden), 1)

    def forward(self, obs: torch.Tensor, state: torch.Tensor | None = None) -> torch.Tensor:
        if self.state_dim:
            state = state.unsqueeze(-2).expand(*obs.shape[:-1], state.shape[-1])
            obs = torch.cat([obs, state], dim=-1)
        return self.head(self.body(_symlog(obs)))


class MaskedMultiCategorical(torch.distributions.Distribution):
    """A MultiDiscrete action under a flat mask: one TorchRL `MaskedCategorical` per part (TorchRL
    0.14 has none for MultiDiscrete). Samples are the parts' indices side by side; the log-prob and
    the entropy are the parts' sums."""

    arg_constraints: dict = {}

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor, nvec: Sequence[int]) -> None:
        sizes = [int(n) for n in nvec]
        self.parts = [MaskedCategorical(logits=lg, mask=m.bool())
                      for lg, m in zip(logits.split(sizes, -1), mask.split(sizes, -1), strict=True)]
        super().__init__(batch_shape=logits.shape[:-1], event_shape=torch.Size([len(sizes)]), validate_args=False)

    def sample(self, sample_shape: Sequence[int] = ()) -> torch.Tensor:
        return torch.stack([p.sample(torch.Size(sample_shape)) for p in self.parts], dim=-1)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        return sum(p.log_prob(v) for p, v in zip(self.parts, value.unbind(-1), strict=True))

    def entropy(self) -> torch.Tensor:
        return sum(p.entropy() for p in self.parts)

    @property
    def mode(self) -> torch.Tensor:
        return torch.stack([p.mode for p in self.parts], dim=-1)

    @property
    def deterministic_sample(self) -> torch.Tensor:
        return self.mode


def make_modules(wrapped: PettingZooWrapper, hidden: int = 256, layers: int = 2,
                 centralized: bool = True) -> tuple[ProbabilisticActor, ValueOperator, PolicyNet]:
    """The actor (masked, sampling ``("player", "action")`` with its log-prob) and the critic
    (``("player", "state_value")``; from the global state too when `centralized`, MAPPO) for `wrapped`."""
    obs_dim = wrapped.observation_spec[OBS].shape[-1]
    nvec = [int(n) for n in wrapped.full_action_spec[ACTION].nvec.reshape(-1, 3)[0]]
    net = PolicyNet(obs_dim, nvec, hidden, layers)
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=[OBS], out_keys=[LOGITS]),
        in_keys={"logits": LOGITS, "mask": ACTION_MASK}, out_keys=[ACTION],
        distribution_class=MaskedMultiCategorical, distribution_kwargs={"nvec": nvec},
        return_log_prob=True, log_prob_key=LOG_PROB)
    if centralized and STATE not in wrapped.observation_spec.keys():
        raise ValueError("a centralized critic reads the global state: build the env with return_state=True")
    state_dim = wrapped.observation_spec[STATE].shape[-1] if centralized else 0
    critic = ValueOperator(ValueNet(obs_dim, state_dim, hidden, layers),
                           in_keys=[OBS, STATE] if centralized else [OBS], out_keys=[VALUE])
    return actor, critic, net


def make_loss(actor: ProbabilisticActor, critic: ValueOperator, centralized: bool = True, *, clip: float = 0.2,
              entropy: float = 0.01, gamma: float = 0.99, lmbda: float = 0.95) -> IPPOLoss:
    """TorchRL's `MAPPOLoss` (`centralized`) or `IPPOLoss` on the group's keys, with its multi-agent
    GAE: ClipPPOLoss with advantages normalized per seat (the agent axis, -2, left out)."""
    loss = (MAPPOLoss if centralized else IPPOLoss)(actor, critic, clip_epsilon=clip, entropy_coeff=entropy)
    loss.set_keys(reward=(GROUP, "reward"), action=ACTION, sample_log_prob=LOG_PROB, value=VALUE,
                  done=(GROUP, "done"), terminated=(GROUP, "terminated"))
    loss.make_value_estimator(ValueEstimators.MAGAE, gamma=gamma, lmbda=lmbda)
    return loss


# ---------------------------------------------------------------- weights on disk
def save_weights(net: PolicyNet, path: str | Path, **extra: int | float | str) -> Path:
    """The actor's weights and the numbers that rebuild it, in one file `torch.load(weights_only=True)` reads."""
    return integrations.save_weights({"format": FORMAT, "arch": dict(net.arch), "state_dict": net.state_dict(),
                                      **extra}, path)  # atomic: a crash never leaves half a file


def load_weights(path: str | Path) -> PolicyNet:
    """The `PolicyNet` saved at `path` (data only: no pickle); ValueError for anything else."""
    try:
        saved = torchzip.load(path, f"torchrl: {str(path)!r}")  # sized before torch inflates anything
    except FileNotFoundError:
        raise ValueError(f"torchrl: no weights file at {str(path)!r}") from None
    except torchzip.ArchiveError:
        raise
    except Exception as err:  # a corrupt file, a pickle of objects, not a torch file
        raise ValueError(f"torchrl: {str(path)!r} is not a weights file of nmmo.integrations.torchrl "
                         f"(torch.load(weights_only=True) failed: {err})") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(f"torchrl: {str(path)!r} is not a weights file of nmmo.integrations.torchrl "
                         f"(no format {FORMAT!r}; save one with train(out=...) or save_weights)")
    arch = saved.get("arch", {})
    try:
        net = PolicyNet(arch["obs_dim"], arch["nvec"], arch["hidden"], arch["layers"])
        net.load_state_dict(saved["state_dict"])
    except (KeyError, TypeError, RuntimeError) as err:
        raise ValueError(f"torchrl: {str(path)!r} holds weights that do not fit its architecture {arch}: "
                         f"{err}") from None
    return net.eval()


# ---------------------------------------------------------------- the way back
class _FlatPolicy(integrations.ViewActor):
    """The saved actor acting on the trainer form's observations (``{"observation", "action_mask"}``
    per agent): a masked sample per part (seeded by `reset`), or the masked argmax when `greedy`."""

    path: str = ""

    def __init__(self, config: Config) -> None:
        self.net = load_weights(self.path)
        expected = list(flat_action_sizes(config))
        if self.net.arch["nvec"] != expected:
            raise ValueError(f"torchrl: {self.path!r} was trained for actions {self.net.arch['nvec']}, this config "
                             f"has {expected} (PLAYER_N_OBS differs)")
        self.reset(None)

    def parts(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if obs.shape[-1] != self.net.arch["obs_dim"]:
            raise ValueError(f"torchrl: {self.path!r} reads observations of {self.net.arch['obs_dim']} numbers, "
                             f"this config gives {obs.shape[-1]} (trained on another config)")
        return self.net(obs).masked_fill(~mask, -math.inf).split(self.net.arch["nvec"], dim=-1)


def policy_class(path: str, greedy: bool = False) -> type:
    """The ``torchrl:PATH`` policy scheme: a class built as ``Cls(config)`` that plays the raw env
    with the actor saved at PATH (`save_weights`), through `policy_interface` (mask on)."""
    load_weights(path)  # fail now, with the reason, rather than at the first game
    bound = type("TorchRLNet", (_FlatPolicy,), {"path": str(path), "greedy": bool(greedy)})
    return agent_class(bound, lambda config: policy_interface(mask=True), name="TorchRLPolicy")


# ---------------------------------------------------------------- training
def _info_means(data: Any) -> dict[str, float]:
    """Per-batch numbers from the seats' infos: lives ended and their mean lifetime metrics."""
    info = data["next", GROUP, "info"]
    ended = info["life_ended"]
    n = float(ended.sum())
    out = {"lives_ended": n, "invalid_actions": float(info["invalid_actions"].sum())}
    if n:
        for key in ("life_lifetime", "life_achievement"):
            out[key] = float((info[key] * ended).sum() / n)
    return out


@dataclass(frozen=True)
class PPOSettings:
    """The loop's knobs. `frames_per_batch` and `minibatch` count env steps (each holds every seat)."""

    frames_per_batch: int = 256
    minibatch: int = 64
    epochs: int = 4
    lr: float = 3e-4
    gamma: float = 0.99
    lmbda: float = 0.95
    clip: float = 0.2
    entropy: float = 0.01
    max_grad_norm: float = 0.5
    hidden: int = 256
    layers: int = 2
    centralized: bool = True  # MAPPO: the critic reads the global state too; False: IPPO
    threads: int | None = 1  # torch threads while training (restored after); None: leave them


def train(config: Config | str | None = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
          out: str | Path | None = None, settings: PPOSettings | None = None) -> dict:
    """MAPPO (or IPPO) with TorchRL's parts on the `env` of `config`, one network shared by every
    seat, for about `agent_steps` agent-steps (env steps x seats). With `out`, the actor's weights
    go to out/policy.pt (``torchrl:out/policy.pt`` plays them back)."""
    settings = settings or PPOSettings()
    old_threads = torch.get_num_threads()
    if settings.threads:
        torch.set_num_threads(int(settings.threads))
    try:
        with torch.random.fork_rng():  # the same seed gives the same run; the caller's RNG is left alone
            torch.manual_seed(seed)
            return _train(config, agent_steps, seed, out, settings)
    finally:
        torch.set_num_threads(old_threads)


def _train(config: Config | str | None, agent_steps: int, seed: int, out: str | Path | None,
           s: PPOSettings) -> dict:
    wrapped = env(config, seed=seed, return_state=s.centralized)
    n_seats = len(wrapped.group_map[GROUP])
    steps = max(1, math.ceil(agent_steps / n_seats))
    frames = max(1, min(s.frames_per_batch, steps))
    actor, critic, net = make_modules(wrapped, s.hidden, s.layers, s.centralized)
    collector = Collector(wrapped, actor, frames_per_batch=frames, total_frames=math.ceil(steps / frames) * frames,
                          auto_register_policy_transforms=False)  # a stateless MLP: no InitTracker needed
    loss = make_loss(actor, critic, s.centralized, clip=s.clip, entropy=s.entropy, gamma=s.gamma, lmbda=s.lmbda)
    optim = torch.optim.Adam(loss.parameters(), lr=s.lr)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames), sampler=SamplerWithoutReplacement(),
                          batch_size=max(1, min(s.minibatch, frames)))
    done_steps, start, stats = 0, time.perf_counter(), {}
    for data in collector:
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        buffer.extend(data.reshape(-1))
        for _ in range(s.epochs * max(1, frames // buffer.batch_size)):
            parts = loss(buffer.sample())
            total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
            optim.zero_grad()
            total.backward()
            nn.utils.clip_grad_norm_(loss.parameters(), s.max_grad_norm)
            optim.step()
        collector.update_policy_weights_()
        done_steps += data.numel() * n_seats
        seconds = time.perf_counter() - start
        stats = {"reward_mean": float(data["next", GROUP, "reward"].mean()), **_info_means(data),
                 "loss": float(total.detach())}
        print(f"torchrl: agent_steps={done_steps} ({done_steps / seconds:.0f}/s) "
              + " ".join(f"{k}={v:.4g}" for k, v in stats.items()), flush=True)
    collector.shutdown()
    wrapped.close()
    seconds = time.perf_counter() - start
    result = {"agent_steps": done_steps, "seconds": seconds, "agent_steps_per_s": done_steps / seconds, **stats}
    if out is not None:
        result["policy"] = str(save_weights(net, Path(out) / "policy.pt", agent_steps=done_steps))
    return result


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m nmmo.integrations.torchrl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="trainers_small")
    parser.add_argument("--agent-steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="directory for policy.pt (play it back as torchrl:DIR/policy.pt)")
    parser.add_argument("--ippo", action="store_true", help="a critic on the seat's observation only")
    args = parser.parse_args(argv)
    result = train(args.config, args.agent_steps, args.seed, args.out, PPOSettings(centralized=not args.ippo))
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
