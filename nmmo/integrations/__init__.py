"""The env in the shapes the trainers researchers already use want (SB3, TorchRL, RLlib, PufferLib;
docs: "Use your own trainer"), and the way back for the policies they train.

The core imports none of these libraries. This package holds what they share, the *trainer form*
of the env, and one module per library with its env forms and its policy scheme's loader
(``nmmo.integrations.sb3``, ``.torchrl`` and ``.torchrl_env``, ``.rllib`` and ``.rllib_weights``,
``.pufferlib``), each importing its library only when imported itself. The training recipes that
use them are not part of the engine: ``baselines/recipes/`` (``python -m baselines.recipes.sb3``...).

The trainer form (`parallel_env`) is `nmmo.Env` seen through three interfaces:

- `nmmo.interfaces.Slots`: PLAYER_N agents named ``player_0`` ... that live from reset to the
  horizon whatever respawn does (trainers size their buffers from `possible_agents`), with the
  same numbers in every agent's infos every step;
- `nmmo.interfaces.FlatActions`: actions as ``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])`` rows, the
  masks as one flat ``action_mask`` (or none, `mask=False`);
- `nmmo.interfaces.Flatten`: the observation as one float32 vector.

`policy_interface` is the same form for one policy acting in the raw env (no slots), which is how
a trained policy comes back to play in ``nmmo eval`` and ``nmmo tournament``.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any

from nmmo import config as config_module
from nmmo.config import Config
from nmmo.envs.env import Env
from nmmo.interfaces import FlatActions, Flatten, InterfaceEnv, Stack, slots, stack
from nmmo.io.files import atomic_write_bytes

__all__ = ["ViewActor", "choose", "make_interface", "parallel_env", "policy_interface", "require", "save_weights",
           "stack_views"]


def make_interface(config: Config, mask: bool = True, infos: str = "fixed", name: str | None = "player_{}") -> Stack:
    """Slots, then FlatActions, then Flatten: the trainer form's interface for `config`."""
    return stack(slots(config, name=name, infos=infos), FlatActions(mask=mask), Flatten())


def policy_interface(mask: bool = True) -> Stack:
    """The trainer form without seats: what a trained policy sees when it plays the raw env (the
    same observation vector and action rows as in training)."""
    return stack(FlatActions(mask=mask), Flatten())


def parallel_env(config: Config | str | None = None, seed: int | None = None, *, mask: bool = True,
                 infos: str = "fixed", name: str | None = "player_{}", **env_kwargs: Any) -> InterfaceEnv:
    """The trainer form of ``nmmo.Env(config, seed, **env_kwargs)``: a PettingZoo ParallelEnv with
    a fixed set of agents, flat observations, MultiDiscrete actions, numeric infos and `state()`."""
    env = Env(config, seed=seed, **env_kwargs)
    return InterfaceEnv(env, make_interface(env.config, mask=mask, infos=infos, name=name))


def save_weights(data: Any, path: str | Path) -> Path:
    """`torch.save` of tensors and plain data, written atomically (a crash leaves the old file or
    the new one, never half of one); read back with ``torch.load(path, weights_only=True)``."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(data, buffer)
    return atomic_write_bytes(path, buffer.getvalue())


def stack_views(views: dict) -> tuple[list, Any, Any]:
    """The trainer form's observations of several agents (``{"observation", "action_mask"}`` each)
    as (agents, float32 observations, bool masks) tensors, for a policy network."""
    import numpy as np
    import torch

    agents = list(views)
    obs = torch.as_tensor(np.stack([views[a]["observation"] for a in agents]), dtype=torch.float32)
    mask = torch.as_tensor(np.stack([views[a]["action_mask"] for a in agents])).bool()
    return agents, obs, mask


def choose(parts: Any, generator: Any, greedy: bool = False) -> Any:
    """One flat action row per agent from per-part masked logits (masked entries at -inf or a large
    negative): a sample of each part with `generator` (replays exactly), or its argmax."""
    import numpy as np
    import torch

    if greedy:
        picks = [part.argmax(-1) for part in parts]
    else:
        picks = [torch.multinomial(part.softmax(-1), 1, generator=generator).squeeze(-1) for part in parts]
    return torch.stack(picks, dim=-1).numpy().astype(np.int64)


class ViewActor(abc.ABC):
    """A trained actor acting on the trainer form's views (``{"observation", "action_mask"}`` per
    agent): subclasses give `parts`, each action part's masked logits for stacked observations; the
    actor samples each part with a generator `reset` seeds (or takes its argmax when `greedy`)."""

    greedy: bool = False

    def reset(self, seed: int | None = None) -> None:
        import torch

        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))

    @abc.abstractmethod
    def parts(self, obs: Any, mask: Any) -> Any:
        """The masked logits of each action part, for (agents, features) observations and masks."""

    def act(self, views: dict) -> dict:
        if not views:
            return {}
        import torch

        ids, obs, mask = stack_views(views)
        with torch.no_grad():
            parts = self.parts(obs, mask)
        return dict(zip(ids, choose(parts, self.generator, self.greedy), strict=True))


def resolve(config: Config | str | None) -> Config:
    """A config object from a config, a canonical name or a TOML path."""
    return config_module.resolve(config).validate()


def require(module: str, extra: str) -> Any:
    """Import a trainer library, or fail saying which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{module} is not installed: pip install 'flatmmo[{extra}]' (the versions we test; "
                          f"docs: Use your own trainer) [{err}]") from err
