"""TorchRL on nmmo: the trainer form in TorchRL's own `PettingZooWrapper` (`env`), the recipe's
actor network (`PolicyNet`) and the way back (`torchrl:PATH` policies for ``nmmo eval`` and
``nmmo tournament``). The native env, an `EnvBase` over the engine's vector env, is
`nmmo.integrations.torchrl_env.NativeEnv`; the MAPPO/IPPO recipe that trains on it is
``baselines/recipes/torchrl.py``.

What TorchRL sees (`env`): one group ``"player"`` (the seats ``player_0`` ... are grouped by
name prefix) holding, per seat, ``("player", "observation", "observation")`` (the flat vector),
``("player", "action_mask")`` (the flat 5 + 3 + targets mask, TorchRL's layout for a
MultiDiscrete action: the concatenated one-hot masks), ``("player", "mask")`` (seats still in the
episode), ``("player", "info", <key>)`` (`nmmo.interfaces.SLOT_INFO_KEYS`, every step) and the
action ``("player", "action")``: 3 integers (direction, style, target index). The global state is
at ``"state"``. The native env has the same group keys (batch ``[worlds]``, the group
``[worlds, seats]``), so modules built on one run on the other.

The actor network (`PolicyNet`) is a plain MLP shared by every seat (what
``MultiAgentMLP(share_params=True, centralized=False)`` computes), so it also acts for any number
of agents when it plays the raw env; it lives here, not in the recipe, because ``torchrl:PATH``
rebuilds it from its weights file.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
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

from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402

__all__ = ["FORMAT", "GROUP", "PolicyNet", "env", "load_weights", "policy_class", "save_weights", "symlog"]

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
def symlog(x: torch.Tensor) -> torch.Tensor:
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
        return self.head(self.body(symlog(obs)))


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
                         f"(no format {FORMAT!r}; the TorchRL recipe, baselines.recipes.torchrl, or "
                         "save_weights write one)")
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
