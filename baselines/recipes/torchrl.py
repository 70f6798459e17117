"""MAPPO (or IPPO) with TorchRL on nmmo (docs: trainers/torchrl.md), on the native env
(`nmmo.integrations.torchrl_env.NativeEnv`: batch ``[worlds]``, group ``"player"`` of
``[worlds, seats]``, straight from the engine's arrays) with TorchRL's parts: a `Collector`, a
`ProbabilisticActor` with a masked MultiDiscrete distribution, a `ValueOperator` over TorchRL's
`MultiAgentMLP`, `MAPPOLoss` / `IPPOLoss` (ClipPPOLoss with TorchRL's multi-agent GAE) and Adam.

MAPPO's critic is TorchRL's centralised one: ``MultiAgentMLP(centralized=True)`` reads every seat's
observation of a world (the convention of TorchRL's multi-agent examples), so the env needs no
global ``state()``; IPPO's (``--ippo``) reads the seat's own. The actor is
`nmmo.integrations.torchrl.PolicyNet`, one MLP shared by every seat, saved where ``torchrl:PATH``
reads it.

Run: ``python -m baselines.recipes.torchrl --config trainers_small --agent-steps 1000000 --out out/torchrl``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from baselines.recipes import common
from baselines.recipes.common import PPOSettings
from nmmo.config import Config
from nmmo.integrations import require, resolve

require("torchrl", "torchrl")

from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.data import LazyTensorStorage, ReplayBuffer  # noqa: E402
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement  # noqa: E402
from torchrl.envs import EnvBase  # noqa: E402
from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor, ValueOperator  # noqa: E402
from torchrl.objectives import ValueEstimators  # noqa: E402
from torchrl.objectives.multiagent import IPPOLoss, MAPPOLoss  # noqa: E402

from nmmo.integrations.torchrl import (  # noqa: E402
    ACTION,
    ACTION_MASK,
    GROUP,
    LOG_PROB,
    LOGITS,
    OBS,
    VALUE,
    PolicyNet,
    save_weights,
    symlog,
)
from nmmo.integrations.torchrl_env import NativeEnv  # noqa: E402

__all__ = ["MaskedMultiCategorical", "PPOSettings", "main", "make_loss", "make_modules", "train"]


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


class Symlog(nn.Module):
    """The critic's view of the observation: its symlog, as the actor (`PolicyNet`) sees it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return symlog(x)


def make_modules(env: EnvBase, s: PPOSettings, centralized: bool = True
                 ) -> tuple[ProbabilisticActor, ValueOperator, PolicyNet]:
    """The actor (masked, sampling ``("player", "action")`` with its log-prob) and the critic
    (``("player", "state_value")`` from TorchRL's `MultiAgentMLP`: over all of a world's seats when
    `centralized`, MAPPO; over each seat's own observation otherwise, IPPO) for any env with the
    ``"player"`` group's keys (the native env, or the `PettingZooWrapper` form)."""
    obs_spec = env.observation_spec[OBS]
    obs_dim, seats = int(obs_spec.shape[-1]), int(obs_spec.shape[-2])
    nvec = [int(n) for n in env.full_action_spec[ACTION].nvec.reshape(-1, 3)[0]]
    net = PolicyNet(obs_dim, nvec, s.hidden, s.layers)
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=[OBS], out_keys=[LOGITS]),
        in_keys={"logits": LOGITS, "mask": ACTION_MASK}, out_keys=[ACTION],
        distribution_class=MaskedMultiCategorical, distribution_kwargs={"nvec": nvec},
        return_log_prob=True, log_prob_key=LOG_PROB)
    value = MultiAgentMLP(n_agent_inputs=obs_dim, n_agent_outputs=1, n_agents=seats, centralized=centralized,
                          share_params=True, depth=s.layers, num_cells=s.hidden, activation_class=nn.Tanh)
    critic = ValueOperator(nn.Sequential(Symlog(), value), in_keys=[OBS], out_keys=[VALUE])
    return actor, critic, net


def make_loss(actor: ProbabilisticActor, critic: ValueOperator, s: PPOSettings, centralized: bool = True
              ) -> IPPOLoss:
    """TorchRL's `MAPPOLoss` (`centralized`) or `IPPOLoss` on the group's keys, with its multi-agent
    GAE: ClipPPOLoss with advantages normalized per seat (the agent axis, -2, left out)."""
    loss = (MAPPOLoss if centralized else IPPOLoss)(actor, critic, clip_epsilon=s.clip, entropy_coeff=s.ent_coef,
                                                    critic_coeff=s.vf_coef)
    loss.set_keys(reward=(GROUP, "reward"), action=ACTION, sample_log_prob=LOG_PROB, value=VALUE,
                  done=(GROUP, "done"), terminated=(GROUP, "terminated"))
    loss.make_value_estimator(ValueEstimators.MAGAE, gamma=s.gamma, lmbda=s.gae_lambda)
    return loss


def batch_sizes(agent_steps: int, worlds: int, seats: int, s: PPOSettings) -> tuple[int, int]:
    """(env steps per batch, all worlds together; total env steps): `s.steps` per world, fewer when
    the whole budget is smaller, and as many whole batches as reach `agent_steps`."""
    per_world = max(1, min(s.steps, math.ceil(agent_steps / (worlds * seats))))
    frames = per_world * worlds
    return frames, math.ceil(agent_steps / (frames * seats)) * frames


def train(config: Config | str | None = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
          out: str | Path | None = None, *, n_envs: int = 2, centralized: bool = True, workers: int = 0,
          settings: PPOSettings | None = None, tensorboard: str | Path | None = None) -> dict:
    """MAPPO (or IPPO, ``centralized=False``) on `n_envs` worlds of the native env, one actor shared
    by every seat, for about `agent_steps` agent-steps (env steps x worlds x seats, whole batches).
    With `out`, the actor's weights go to out/policy.pt (``torchrl:out/policy.pt`` plays them); with
    `tensorboard`, a directory, each batch's numbers go there through TorchRL's `TensorboardLogger`."""
    s = settings or PPOSettings()
    with common.one_thread_seeded(seed):
        env = NativeEnv(resolve(config), num_worlds=n_envs, seed=seed, workers=workers)
        try:
            result, net = _train(env, agent_steps, s, centralized, _logger(tensorboard))
        finally:
            env.close()
    result.update(n_envs=n_envs, centralized=centralized, settings=asdict(s))
    if out is not None:
        result["policy"] = str(save_weights(net, Path(out) / "policy.pt", agent_steps=result["agent_steps"]))
    return result


def _logger(directory: str | Path | None) -> Any:
    """TorchRL's own TensorBoard logger writing into `directory` (None: no logger)."""
    if directory is None:
        return None
    from torchrl.record.loggers.tensorboard import TensorboardLogger

    return TensorboardLogger(exp_name=".", log_dir=str(directory))


def _train(env: NativeEnv, agent_steps: int, s: PPOSettings, centralized: bool,
           logger: Any = None) -> tuple[dict[str, Any], PolicyNet]:
    """The loop: collect a batch, GAE over it once, `s.epochs` passes of `s.minibatches` minibatches
    (world-steps, so a world's seats stay together for the centralised critic)."""
    seats = env.config.PLAYER_N
    frames, total = batch_sizes(agent_steps, env.batch_size[0], seats, s)
    actor, critic, net = make_modules(env, s, centralized)
    collector = Collector(env, actor, frames_per_batch=frames, total_frames=total,
                          auto_register_policy_transforms=False)  # a stateless MLP: no InitTracker needed
    loss = make_loss(actor, critic, s, centralized)
    optim = torch.optim.Adam(loss.parameters(), lr=s.lr)
    buffer = ReplayBuffer(storage=LazyTensorStorage(frames), sampler=SamplerWithoutReplacement(),
                          batch_size=max(1, frames // s.minibatches))
    done_steps, start, stats = 0, time.perf_counter(), {}
    for data in collector:
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        buffer.extend(data.reshape(-1))
        for _ in range(s.epochs * max(1, frames // buffer.batch_size)):
            parts = loss(buffer.sample())
            total_loss = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
            optim.zero_grad()
            total_loss.backward()
            nn.utils.clip_grad_norm_(loss.parameters(), s.max_grad_norm)
            optim.step()
        done_steps += data.numel() * seats
        seconds = time.perf_counter() - start
        stats = {"reward_mean": float(data["next", GROUP, "reward"].mean()),
                 **{key: float(parts[key].detach()) for key in ("entropy", "loss_objective", "loss_critic")}}
        print(f"torchrl: agent_steps={done_steps} ({done_steps / seconds:.0f}/s) "
              + " ".join(f"{k}={v:.4g}" for k, v in stats.items()), flush=True)
        if logger is not None:
            for key, value in {**stats, "agent_steps_per_s": done_steps / seconds}.items():
                logger.log_scalar(key, value, step=done_steps)
    collector.shutdown()
    seconds = time.perf_counter() - start
    return {"agent_steps": done_steps, "seconds": seconds, "agent_steps_per_s": done_steps / seconds, **stats}, net


def main(argv: Sequence[str] | None = None) -> dict:
    """``python -m baselines.recipes.torchrl``: `train`, then the result as one JSON line."""
    parser = common.parser("python -m baselines.recipes.torchrl", __doc__.split("\n\n")[0],
                           out_help="directory for policy.pt (play it back as torchrl:DIR/policy.pt)")
    parser.add_argument("--n-envs", type=int, default=2, help="worlds the native env steps together")
    parser.add_argument("--ippo", action="store_true", help="IPPO: a critic on the seat's own observation only")
    parser.add_argument("--workers", type=int, default=0, help="the vector env's worker processes (0: in-process)")
    common.add_settings(parser)
    args = parser.parse_args(argv)
    return common.report(train(args.config, args.agent_steps, args.seed, args.out, n_envs=args.n_envs,
                               centralized=not args.ippo, workers=args.workers, settings=common.settings_from(args),
                               tensorboard=common.tensorboard_dir(args)))


if __name__ == "__main__":
    main(sys.argv[1:])
