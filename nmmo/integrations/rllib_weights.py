"""An RLlib-trained policy as data: the weights of its actor (``rllib:PATH``), played without RLlib.

RLlib's checkpoints are pickles, which no submission may load. Their owner turns one into a
weights file on their own machine (`nmmo.integrations.rllib.export`, ``python -m
nmmo.integrations.rllib export CKPT OUT``): the actor's layers of the shared policy's default PPO
module (its MLP encoder, then its action head) as tensors, their activations by name, and the
action sizes. This module reads such a file weights-only (`nmmo.io.torchzip`, sized before
anything is inflated) and rebuilds the actor in plain torch: it imports neither Ray nor RLlib, so
it runs in the submission sandbox. The export checks, on random observations, that the rebuilt
actor gives the module's own logits before it writes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from nmmo.config import Config
from nmmo.integrations import ViewActor, policy_interface
from nmmo.interfaces import InterfaceAgent
from nmmo.io import torchzip

FORMAT = "nmmo.integrations.rllib/1"
#: RLlib's activation names (``fcnet_activation``, ``head_fcnet_activation``) the file may name.
ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "silu": torch.nn.functional.silu,
               "swish": torch.nn.functional.silu, "elu": torch.nn.functional.elu, "linear": None, None: None}


def actor_logits(layers: Sequence[dict], obs: torch.Tensor) -> torch.Tensor:
    """The concatenated logits of every action part: each layer ``x = act(x @ W.T + b)``."""
    x = obs
    for layer in layers:
        x = torch.nn.functional.linear(x, layer["weight"], layer["bias"])
        act = ACTIVATIONS[layer["activation"]]
        if act is not None:
            x = act(x)
    return x


def check(data: Any, where: str) -> dict:
    """`data` as an exported actor: the format, the layers' shapes chained from the observation to
    the logits, known activations, finite weights; ValueError naming what is wrong."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: not an export of nmmo.integrations.rllib (python -m nmmo.integrations.rllib "
                         "export CKPT OUT)")
    layers, nvec = data.get("layers"), data.get("nvec")
    if not isinstance(layers, list) or not layers or not isinstance(nvec, list) or len(nvec) != 3:
        raise ValueError(f"{where}: an export holds a list of layers and three action sizes")
    width = data.get("obs_size")
    if not isinstance(width, int) or isinstance(width, bool) or width < 1:
        raise ValueError(f"{where}: obs_size must be a positive int, got {width!r}")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ValueError(f"{where}: layer {i} is not a table of weight, bias and activation")
        weight, bias = layer.get("weight"), layer.get("bias")
        if not (isinstance(weight, torch.Tensor) and isinstance(bias, torch.Tensor) and weight.ndim == 2
                and weight.shape[1] == width and bias.shape == (weight.shape[0],)):
            raise ValueError(f"{where}: layer {i} does not take the {width} values the previous one gives")
        if layer.get("activation") not in ACTIVATIONS:
            raise ValueError(f"{where}: layer {i}: unknown activation {layer.get('activation')!r}")
        if not (torch.isfinite(weight).all() and torch.isfinite(bias).all()):
            raise ValueError(f"{where}: layer {i} holds a NaN or an infinity")
        width = weight.shape[0]
    if width != sum(int(n) for n in nvec):
        raise ValueError(f"{where}: the last layer gives {width} logits, the actions need {sum(nvec)}")
    return data


class _Actor(ViewActor):
    """The exported actor on the trainer form's views: its layers' logits, masked."""

    def __init__(self, data: dict, greedy: bool = False) -> None:
        self.layers = [{k: v.float() if isinstance(v, torch.Tensor) else v for k, v in layer.items()}
                       for layer in data["layers"]]
        self.nvec = [int(n) for n in data["nvec"]]
        self.greedy = greedy
        self.reset(None)

    def parts(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return actor_logits(self.layers, obs).masked_fill(~mask, -1e9).split(self.nvec, dim=-1)


def policy_class(path: str) -> type:
    """The ``rllib:PATH`` policy scheme: an exported actor as a policy class ``Cls(config)``."""
    try:
        data = check(torchzip.load(path, f"rllib:{path}"), f"rllib:{path}")
    except torchzip.ArchiveError:
        raise
    except (OSError, RuntimeError, EOFError) as err:  # missing, corrupt, or a pickle of objects
        raise ValueError(f"rllib:{path}: not a weights-only export ({err})") from None

    def __init__(self: InterfaceAgent, config: Config, greedy: bool = False) -> None:
        from nmmo.interfaces.arrays import FlatLayout

        nvec = [int(n) for n in data["nvec"]]
        if nvec != [5, 3, config.PLAYER_N_OBS + 1]:
            raise ValueError(f"rllib:{path}: exported for actions {nvec}, this config's are "
                             f"[5, 3, {config.PLAYER_N_OBS + 1}] (PLAYER_N_OBS differs)")
        if data["obs_size"] != FlatLayout.of(config).size:
            raise ValueError(f"rllib:{path}: exported for observations of {data['obs_size']} values, this config's "
                             f"have {FlatLayout.of(config).size}")
        InterfaceAgent.__init__(self, _Actor(data, greedy), policy_interface(mask=True))
        self.config = config

    return type("RLlibPolicy", (InterfaceAgent,), {"__init__": __init__, "path": path})


def random_observations(obs_size: int, n: int = 64, seed: int = 0) -> np.ndarray:
    """Observations to compare the rebuilt actor with the module on: the trainer form's values
    are counts, positions and ids, so a spread of magnitudes."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, obs_size)) * rng.choice([1.0, 10.0, 100.0], (n, obs_size))).astype(np.float32)
