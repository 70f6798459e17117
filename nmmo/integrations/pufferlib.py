"""PufferLib on nmmo: its own PettingZoo emulation over the trainer form, its vector envs, and a
CleanRL-style PPO loop over them (docs: trainers/pufferlib.md).

- `make` / `env_creator`: ``pufferlib.emulation.PettingZooPufferEnv`` around `parallel_env` (8
  seats, ``infos="sparse"``); `unpack` turns PufferLib's packed bytes back into the observation
  vector and the action mask. `vec_env`: ``pufferlib.vector.make`` (Serial or Multiprocessing),
  one seed per env copy.
- `train`: PPO written out (``pufferlib.pufferl``, the trainer pufferlib-core 3.0.19 ships, imports
  a compiled CUDA extension and cannot load on a CPU-only torch), sampling with
  ``pufferlib.pytorch.sample_logits``; `policy_class`: its checkpoint as a policy ``Cls(config)``.
  Run: ``python -m nmmo.integrations.pufferlib --config trainers_small --agent-steps 1000000``.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from nmmo.config import Config, from_toml
from nmmo.integrations import choose, parallel_env, policy_interface, require, resolve, save_weights, stack_views
from nmmo.interfaces import InterfaceAgent

require("pufferlib", "pufferlib")
import pufferlib  # noqa: E402
import pufferlib.emulation  # noqa: E402
import pufferlib.pytorch  # noqa: E402
import pufferlib.vector  # noqa: E402

from nmmo.integrations.pufferlib_ppo import (  # noqa: E402
    Policy,
    PPOSettings,
    info_numbers,
    native_layout,
    run_ppo,
    unpack,
)

__all__ = ["PPOSettings", "Policy", "PufferNmmoEnv", "env_creator", "episode_seeds", "info_numbers", "make",
           "native_layout", "policy_class", "train", "unpack", "vec_env"]

#: The trainer form's infos for PufferLib: only the numbers that apply (PufferLib averages every
#: number it is given, so "fixed" infos' zeros for lives that did not end would drag the means).
INFOS = "sparse"
CHECKPOINT_FORMAT = "nmmo.integrations.pufferlib/1"


# ------------------------------------------------------------ env
class PufferNmmoEnv(pufferlib.emulation.PettingZooPufferEnv):
    """PufferLib's PettingZoo emulation with a reset-seed offset: Multiprocessing with several env
    copies per worker resets copy j of worker i with ``seed + i + j``, so copies of neighbouring
    workers share seeds; `vec_env` sets `seed_offset` so that copy k resets with ``seed + k``."""

    def __init__(self, env: Any, buf: dict | None = None, seed: int | None = 0, seed_offset: int = 0) -> None:
        super().__init__(env=env, buf=buf, seed=seed)
        self.seed_offset = int(seed_offset)

    def reset(self, seed: int | None = None) -> tuple[dict, dict]:
        return super().reset(seed=None if seed is None else int(seed) + self.seed_offset)


def make(config: Config | str = "trainers_small", buf: dict | None = None, seed: int | None = 0, *,
         infos: str = INFOS, mask: bool = True, seed_offset: int = 0) -> PufferNmmoEnv:
    """One emulated env: PufferLib's creator signature (``buf``, ``seed``) over the trainer form."""
    return PufferNmmoEnv(parallel_env(config, seed=seed, mask=mask, infos=infos), buf=buf, seed=seed,
                         seed_offset=seed_offset)


def env_creator(config: Config | str = "trainers_small", **kwargs: Any) -> Callable[..., PufferNmmoEnv]:
    """`make` bound to a config, picklable as PufferLib's process backends want even under the
    "spawn" start method (which importing TorchRL sets): the config travels as its TOML text."""
    cfg = resolve(config)
    return functools.partial(_make_from_toml, cfg.to_toml(), cfg.name, **kwargs)


def _make_from_toml(config_toml: str, config_name: str, buf: dict | None = None, seed: int | None = 0,
                    **kwargs: Any) -> PufferNmmoEnv:
    return make(from_toml(config_toml, config_name), buf, seed, **kwargs)


def vec_env(n_envs: int = 2, config: Config | str = "trainers_small", backend: str | type = "Serial",
            seed: int = 0, *, infos: str = INFOS, mask: bool = True, **vec_kwargs: Any) -> Any:
    """``pufferlib.vector.make`` over `n_envs` copies; reset it with the same seed
    (``vecenv.async_reset(seed)``) and copy k plays ``seed + k``. `vec_kwargs` go to the backend
    (Multiprocessing: num_workers, overwork=True past one worker per physical core)."""
    backend_cls = getattr(pufferlib.vector, backend) if isinstance(backend, str) else backend
    per_worker = 1
    if backend_cls is pufferlib.vector.Multiprocessing:
        per_worker = n_envs // int(vec_kwargs.get("num_workers") or n_envs)
    creators = [env_creator(config, infos=infos, mask=mask, seed_offset=(k // per_worker) * (per_worker - 1))
                for k in range(n_envs)]
    return pufferlib.vector.make(creators, env_args=[[] for _ in creators], env_kwargs=[{} for _ in creators],
                                 backend=backend_cls, num_envs=n_envs, seed=seed, **vec_kwargs)


def episode_seeds(vecenv: Any) -> list[int | None]:
    """The seed of each env copy's current episode (Serial backend: the copies live here)."""
    return [env.env.unwrapped.episode_seed for env in vecenv.envs]


def train(config: Config | str = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
          out: str | Path | None = None, *, n_envs: int = 2, backend: str = "Serial",
          settings: PPOSettings | None = None, **vec_kwargs: Any) -> dict:
    """PPO on `n_envs` copies of the trainer form in a PufferLib vector env, until `agent_steps`
    agent-steps (seats stepped, the rows of PufferLib's auto-reset steps not counted) are collected. Returns the
    agent-steps, seconds, agent-steps/s and the last losses and lifetime means; with `out`,
    writes ``out/policy.pt`` (tensors and plain data, for `policy_class`)."""
    s = settings or PPOSettings()
    cfg = resolve(config)
    vecenv = vec_env(n_envs, cfg, backend=backend, seed=seed, **vec_kwargs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small MLP batches: one thread is faster, and leaves the other cores to the envs
    with torch.random.fork_rng(devices=[]):  # seeded sampling without touching the caller's RNG
        torch.manual_seed(seed)
        try:
            result = run_ppo(vecenv, agent_steps, seed, s)
        finally:
            vecenv.close()
            torch.set_num_threads(threads)
    result.update(backend=backend if isinstance(backend, str) else backend.__name__, n_envs=n_envs,
                  settings=asdict(s))
    policy = result.pop("policy")
    if out is not None:
        result["checkpoint"] = save(policy, out, cfg, result["agent_steps"])
    return result


# ------------------------------------------------------------ checkpoints
def save(policy: Policy, out: str | Path, config: Config, agent_steps: int) -> str:
    """``out/policy.pt``: the weights and plain data only (loads with ``weights_only=True``)."""
    data = {"format": CHECKPOINT_FORMAT, "model": policy.state_dict(), "model_kwargs": policy.kwargs,
            "config": config.name, "agent_steps": int(agent_steps)}
    return str(save_weights(data, Path(out) / "policy.pt"))


class _Actor:
    """A loaded `Policy` acting on the trainer form's views (``{"observation", "action_mask"}``)."""

    def __init__(self, policy: Policy, greedy: bool = False) -> None:
        self.policy, self.greedy = policy, greedy
        self.reset(None)

    def reset(self, seed: int | None = None) -> None:
        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))

    def act(self, views: dict) -> dict:
        if not views:
            return {}
        ids, obs, mask = stack_views(views)
        with torch.no_grad():
            logits, _ = self.policy(obs, mask)
        return dict(zip(ids, choose(logits, self.generator, self.greedy), strict=True))


def policy_class(path: str) -> type:
    """A checkpoint of `train` as a policy class ``Cls(config)`` for the raw env (data-only load)."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - missing, corrupt or pickled files: one clear refusal
        raise ValueError(f"pufferlib:{path}: not a weights-only checkpoint of this recipe ({err})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"pufferlib:{path}: not a checkpoint of nmmo.integrations.pufferlib.train")

    def __init__(self: InterfaceAgent, config: Config, greedy: bool = False) -> None:
        kwargs = data.get("model_kwargs") or {}
        if list(kwargs.get("nvec", [])) != [5, 3, config.PLAYER_N_OBS + 1]:
            raise ValueError(f"pufferlib:{path}: trained for actions {kwargs.get('nvec')}, this config's are "
                             f"[5, 3, {config.PLAYER_N_OBS + 1}] (PLAYER_N_OBS differs)")
        policy = Policy(**kwargs)
        policy.load_state_dict(data["model"])
        policy.eval()
        InterfaceAgent.__init__(self, _Actor(policy, greedy), policy_interface(mask=True))
        self.config = config

    return type("PufferLibPolicy", (InterfaceAgent,), {"__init__": __init__, "path": path})


# ------------------------------------------------------------ CLI
def main(argv: Sequence[str] | None = None) -> dict:
    """``python -m nmmo.integrations.pufferlib``: train, then print the result as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="trainers_small")
    parser.add_argument("--agent-steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--n-envs", type=int, default=2)
    parser.add_argument("--backend", default="Serial", choices=["Serial", "Multiprocessing"])
    parser.add_argument("--num-workers", type=int, default=None, help="Multiprocessing workers (default: n-envs)")
    args = parser.parse_args(argv)
    multi = args.backend == "Multiprocessing"
    vec_kwargs = {"num_workers": args.num_workers or args.n_envs, "overwork": True} if multi else {}
    result = train(args.config, args.agent_steps, args.seed, args.out, n_envs=args.n_envs, backend=args.backend,
                   **vec_kwargs)
    print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
