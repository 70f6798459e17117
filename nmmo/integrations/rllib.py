"""RLlib (new API stack) on the trainer form: RLlib's own ``ParallelPettingZooEnv`` wrapper as an
env creator, and the way back for a trained policy (`export`). PPO with one policy shared by every
seat (``PPOConfig`` over this env) is ``baselines/recipes/rllib.py``.

By default the env RLlib sees is `nmmo.integrations.parallel_env` with ``mask=False``
(observation: one float32 Box vector; action: ``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])``), which
RLlib's default PPO model takes as it is: it has no encoder for a Dict observation. With
``mask=True`` the observation is ``{"observations", "action_mask"}``, the form RLlib's
action-masking example RLModule (``ActionMaskingTorchRLModule``) reads (the recipe's ``--mask``).
The trainer form's seats (`nmmo.interfaces.Slots`) are what make respawn work:
``ParallelPettingZooEnv`` reads its spaces from the agents present at the first reset, so on the
raw env the first respawned agent id has no space and RLlib fails with a KeyError.

Env config keys (RLlib's ``env_config``): ``config`` (a config name, TOML path or Config; default
``trainers_small``), ``seed`` (the base seed: env runner i seeds its env with ``seed + i``) and
``mask`` (default False).

Checkpoints are RLlib's own (`Algorithm.save_to_path`: pickles), for RLlib to restore. To play a
trained policy in ``nmmo eval`` or a tournament, whose submissions load data only, its owner exports
the shared policy's actor as weights (`export`, ``python -m nmmo.integrations.rllib export CKPT
OUT``): ``rllib:OUT`` then plays it, in the sandbox, without Ray (`nmmo.integrations.rllib_weights`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.wrappers import BaseParallelWrapper

from nmmo.config import Config
from nmmo.integrations import parallel_env, require

require("ray.rllib", "rllib")

from ray.rllib.env.env_context import EnvContext  # noqa: E402
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

__all__ = ["ENV_NAME", "POLICY_ID", "MaskedObservations", "env_creator", "env_seed", "export", "register"]

#: The name `register` gives the env in RLlib's registry.
ENV_NAME = "nmmo"
#: The one policy (RLModule) every seat maps to.
POLICY_ID = "shared"
DEFAULT_CONFIG = "trainers_small"


def env_seed(env_config: Mapping) -> int | None:
    """The seed of this env runner's env: the ``seed`` key plus the runner's index (RLlib's
    `EnvContext.worker_index`; 0 for the local runner), so every runner plays other episodes."""
    seed = env_config.get("seed")
    if seed is None:
        return None
    return int(seed) + int(getattr(env_config, "worker_index", 0) or 0)


def env_creator(env_config: Mapping) -> ParallelPettingZooEnv:
    """RLlib's env creator: the trainer form of the ``config`` key's world, seeded by `env_seed`,
    in RLlib's `ParallelPettingZooEnv` wrapper (with ``mask``: through `MaskedObservations`)."""
    config = env_config.get("config", DEFAULT_CONFIG)
    mask = bool(env_config.get("mask", False))
    env = parallel_env(config, seed=env_seed(env_config), mask=mask)
    return ParallelPettingZooEnv(MaskedObservations(env) if mask else env)


class MaskedObservations(BaseParallelWrapper):
    """The form's ``{"observation", "action_mask"}`` under the keys RLlib's action-masking example
    RLModule reads, ``{"observations", "action_mask"}``, the mask as float32 (it takes its log)."""

    def observation_space(self, agent: Any) -> spaces.Dict:
        space = self.env.observation_space(agent)
        mask = spaces.Box(0.0, 1.0, space["action_mask"].shape, np.float32)
        return spaces.Dict({"observations": space["observation"], "action_mask": mask})

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._rename(obs), infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        return self._rename(obs), rewards, terminations, truncations, infos

    @staticmethod
    def _rename(obs: dict) -> dict:
        return {agent: {"observations": ob["observation"], "action_mask": ob["action_mask"].astype(np.float32)}
                for agent, ob in obs.items()}


def register(name: str = ENV_NAME, config: Config | str = DEFAULT_CONFIG, mask: bool = False) -> str:
    """Register `env_creator` under `name` (``PPOConfig().environment(name, env_config=...)``),
    with `config` and `mask` as the defaults of those env_config keys. Returns `name`."""
    defaults = {"config": config, "mask": mask}

    def creator(env_config: Mapping) -> ParallelPettingZooEnv:
        merged = {**defaults, **dict(env_config)}
        return env_creator(EnvContext(merged, worker_index=getattr(env_config, "worker_index", 0) or 0))

    register_env(name, creator)
    return name


# ------------------------------------------------------------ the way back
def export(checkpoint: str | os.PathLike, out: str | os.PathLike, policy: str = POLICY_ID) -> str:
    """The actor of `policy` in an RLlib checkpoint (the recipe's, RLlib's default PPO module) as a
    weights file ``rllib:OUT`` plays (`nmmo.integrations.rllib_weights`). Run by the checkpoint's
    owner: restoring it unpickles, as RLlib does. Refuses a module it cannot rebuild exactly (the
    rebuilt actor must give the module's logits on random observations)."""
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    from nmmo.integrations import rllib_weights, save_weights

    where = os.path.join(os.path.abspath(checkpoint), "learner_group", "learner", "rl_module", policy)
    if not os.path.isdir(where):
        raise ValueError(f"{checkpoint}: no module {policy!r} in this RLlib checkpoint (looked for {where})")
    module = RLModule.from_checkpoint(where)
    layers = _actor_layers(module)
    obs_size = int(layers[0]["weight"].shape[1])
    nvec = [int(n) for n in module.action_space.nvec]
    data = {"format": rllib_weights.FORMAT, "layers": layers, "nvec": nvec, "obs_size": obs_size,
            "checkpoint": os.path.basename(os.path.abspath(checkpoint))}
    rllib_weights.check(data, str(out))
    obs = torch.from_numpy(rllib_weights.random_observations(obs_size))
    with torch.no_grad():
        expected = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
        got = rllib_weights.actor_logits(layers, obs)
    if not torch.allclose(got, expected, rtol=1e-4, atol=1e-4):
        raise ValueError(f"{checkpoint}: module {policy!r} is not the default PPO MLP this export rebuilds "
                         f"(logits differ by {float((got - expected).abs().max()):.3g})")
    return str(save_weights(data, out))


def _actor_layers(module: Any) -> list[dict]:
    """The Linear layers of the module's actor, in order (its encoder's, then its action head's),
    each with the activation after it (RLlib's MLPs: every encoder layer activated; the head's hidden
    layers too, its output not)."""
    import torch

    encoder = getattr(module.encoder, "actor_encoder", None) or getattr(module.encoder, "encoder", None)
    if encoder is None or not hasattr(module, "pi"):
        raise ValueError(f"the module ({type(module).__name__}) has no MLP actor encoder and action head")
    config = getattr(module, "model_config", None) or {}
    layers = []
    for part, activation, last_plain in ((encoder, config.get("fcnet_activation", "tanh"), False),
                                         (module.pi, config.get("head_fcnet_activation", "relu"), True)):
        linears = [m for m in part.modules() if isinstance(m, torch.nn.Linear)]
        others = [m for m in part.modules() if not list(m.children()) and not isinstance(
            m, (torch.nn.Linear, torch.nn.Tanh, torch.nn.ReLU, torch.nn.SiLU, torch.nn.ELU, torch.nn.Identity))]
        if not linears or others:
            names = [type(m).__name__ for m in others]
            raise ValueError(f"the module's {type(part).__name__} is not a plain MLP ({names})")
        for i, linear in enumerate(linears):
            plain = last_plain and i == len(linears) - 1
            layers.append({"weight": linear.weight.detach().clone(), "bias": linear.bias.detach().clone(),
                           "activation": None if plain else activation})
    return layers


def main(argv: list[str] | None = None) -> None:
    """``python -m nmmo.integrations.rllib export CKPT OUT``: `export`, then ``{"exported": OUT}`` as
    one JSON line. (Training is ``python -m baselines.recipes.rllib``.)"""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m nmmo.integrations.rllib", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    exporter = commands.add_parser("export", description=export.__doc__.split("\n\n")[0],
                                   help="an RLlib checkpoint's shared actor as a weights file (rllib:OUT)")
    exporter.add_argument("checkpoint", help="an RLlib checkpoint directory (the recipe's --out)")
    exporter.add_argument("out", help="the weights file to write (play it as rllib:OUT)")
    exporter.add_argument("--policy", default=POLICY_ID, help="the module to export")
    args = parser.parse_args(argv)
    print(json.dumps({"exported": export(args.checkpoint, args.out, args.policy)}), flush=True)


if __name__ == "__main__":
    main()
