"""PufferLib on nmmo: a native PufferLib env over the engine's vector env, PufferLib's own
PettingZoo emulation over the trainer form, the recipe's network and the way back (docs:
trainers/pufferlib.md). The training loop is ``baselines/recipes/pufferlib.py``.

- `NativeEnv`: ``pufferlib.PufferEnv`` over `nmmo.envs.VectorEnv` (any engine, worker processes or
  Ray), ``num_agents`` = worlds x seats, writing the trainer form's flat vector and its action mask
  (one float32 Box) straight into PufferLib's buffers from the engine's arrays
  (`nmmo.interfaces.arrays.FlatLayout`): no per-agent dict anywhere. Run it with
  ``pufferlib.vector.make(native_creator(...), backend=pufferlib.PufferEnv)``.
- `make` / `env_creator`: ``pufferlib.emulation.PettingZooPufferEnv`` around `parallel_env` (8
  seats, ``infos="sparse"``); `unpack` turns PufferLib's packed bytes back into the observation
  vector and the action mask. `vec_env`: ``pufferlib.vector.make`` (Serial or Multiprocessing),
  one seed per env copy.
- `Policy`: the recipe's network (an MLP with one masked categorical head per action part, sampled
  with ``pufferlib.pytorch.sample_logits``); `save` writes its checkpoint, `policy_class` plays one
  as a policy ``Cls(config)`` (``pufferlib:PATH``).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from nmmo.config import Config, from_toml
from nmmo.core.actions import flat_action_sizes
from nmmo.engines.vector import VectorEnv
from nmmo.integrations import ViewActor, parallel_env, policy_interface, require, resolve, save_weights
from nmmo.interfaces import InterfaceAgent
from nmmo.interfaces.arrays import FlatLayout
from nmmo.io import torchzip

require("pufferlib", "pufferlib")
import pufferlib  # noqa: E402
import pufferlib.emulation  # noqa: E402
import pufferlib.pytorch  # noqa: E402
import pufferlib.vector  # noqa: E402

__all__ = ["CHECKPOINT_FORMAT", "NativeEnv", "Policy", "PufferNmmoEnv", "env_creator", "episode_seeds",
           "info_numbers", "make", "native_creator", "native_layout", "policy_class", "save", "unpack", "vec_env"]

#: The trainer form's infos for PufferLib: only the numbers that apply (PufferLib averages every
#: number it is given, so "fixed" infos' zeros for lives that did not end would drag the means).
INFOS = "sparse"
CHECKPOINT_FORMAT = "nmmo.integrations.pufferlib/1"


# ------------------------------------------------------------ the native env
class NativeEnv(pufferlib.PufferEnv):
    """PufferLib's native env over `VectorEnv`: row ``k * PLAYER_N + s`` is seat s of world k.

    Each row's observation is one float32 vector: the trainer form's flat observation (the layout
    `Flatten` gives `parallel_env`, so checkpoints of either form play on the other) followed by
    its flat action mask (move, style, target; `native_layout` says where it starts). The seats
    behave as the trainer form's (`nmmo.interfaces.Slots`): with respawn no seat terminates before
    the horizon, where every seat is truncated and its world resets at once (the row then holds
    the new episode); without respawn a seat terminates with its agent and stays masked out
    (``masks``) until its world resets. A seat whose agent died sees only "stay" and the no-op
    target allowed, and its action is ignored. `infos` holds one dict per life that ended this
    step: ``life_ended`` and its lifetime metrics ``life_<metric>`` (the trainer form's sparse
    infos). `buf` is PufferLib's shared buffers when it passes them."""

    def __init__(self, config: Config | str = "trainers_small", num_envs: int = 4, seed: int = 0,
                 buf: dict | None = None, *, workers: int = 0, backend: str = "process", engine: str | None = None,
                 ray_address: str | None = None) -> None:
        self.config = resolve(config)
        self.layout = FlatLayout.of(self.config)
        self._vec_kwargs = {"num_envs": num_envs, "workers": workers, "backend": backend, "engine": engine,
                            "ray_address": ray_address}
        self.seed = int(seed)
        self.vec = VectorEnv(self.config, seed=self.seed, **self._vec_kwargs)
        self.num_agents = self.vec.rows
        size = self.layout.size + self.layout.mask_size
        self.single_observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self.single_action_space = gymnasium.spaces.MultiDiscrete(list(flat_action_sizes(self.config)))
        super().__init__(buf)
        self.respawn = bool(self.config.PLAYER_RESPAWN and self.config.PLAYER_SPAWN_ATTEMPTS > 0)
        self._ticks = np.zeros(num_envs, dtype=np.int64)
        self._ids = np.zeros(self.num_agents, dtype=np.int64)
        self._mask = self.observations[:, self.layout.size:]
        move, style, target = flat_action_sizes(self.config)
        self._empty_mask = np.zeros(self.layout.mask_size, dtype=np.float32)  # stay, any style, no target
        self._empty_mask[[move - 1, *range(move, move + style), move + style + target - 1]] = 1
        self.infos: list[dict] = []

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict]]:
        """Every world's new episode; a `seed` other than the env's rebuilds its worlds from it."""
        if seed is not None and int(seed) != self.seed:
            self.vec.close()
            self.seed = int(seed)
            self.vec = VectorEnv(self.config, seed=self.seed, **self._vec_kwargs)
        obs = self.vec.reset()
        self._ticks[:] = 0
        self._write(obs, self.vec.buffers["agent_id"], self.vec.buffers["alive"])
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        self.infos = []
        return self.observations, self.infos

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Step every world with (rows, 3) integer actions (PufferLib's own action buffer)."""
        out = self.vec.step(np.asarray(actions).reshape(self.num_agents, 3))
        self._ticks += 1
        ended = out.reset  # every seat of a world that reset (its rows now hold the new episode)
        self._ticks[ended.reshape(len(self._ticks), -1)[:, 0]] = 0
        self._write(out.obs, out.agent_id, out.alive, out.terminated)
        self.rewards[:] = out.reward
        if self.respawn:
            self.terminals[:] = False
            self.masks[:] = True
        else:
            self.terminals[:] = out.terminated
            self.masks[:] = out.alive | out.terminated | ended
        np.logical_and(ended, ~self.terminals, out=self.truncations)
        self.infos = life_infos(out.episodes)
        return self.observations, self.rewards, self.terminals, self.truncations, self.infos

    def _write(self, obs: dict[str, np.ndarray], agent_id: np.ndarray, alive: np.ndarray,
               died: np.ndarray | None = None) -> None:
        """The rows' vectors and masks; a seat without an agent as the trainer form shows it: zeros
        (the final observation on the step its agent died) and the empty seat's mask."""
        ids = np.where(alive, agent_id, 0) if died is None else np.where(died, self._ids, np.where(alive, agent_id, 0))
        self._ids = np.where(alive, agent_id, 0)
        self.layout.write(self.observations, obs, ids, np.repeat(self._ticks, self.vec.slots))  # the dying: their id
        self.layout.write_mask(self._mask, obs)
        if not alive.all():
            empty = ~alive
            self._mask[empty] = self._empty_mask
            gone = empty if died is None else empty & ~died
            self.observations[gone, :self.layout.size] = 0
            self.observations[gone, self.layout.slices["tick"].start] = np.repeat(self._ticks, self.vec.slots)[gone]

    def close(self) -> None:
        self.vec.close()


def life_infos(episodes: np.ndarray) -> list[dict]:
    """One dict per finished life (a row of `VecStep.episodes`): ``life_ended`` and its metrics."""
    from nmmo.engines.buffers import METRIC_NAMES

    return [{"life_ended": 1, **{f"life_{name}": float(v) for name, v in zip(METRIC_NAMES, row, strict=False)}}
            for row in episodes.tolist()]


def native_creator(config: Config | str = "trainers_small", num_envs: int = 4,
                   **kwargs: Any) -> Callable[..., NativeEnv]:
    """`NativeEnv` bound to a config, with PufferLib's creator signature (``buf``, ``seed``), for
    ``pufferlib.vector.make(native_creator(...), backend=pufferlib.PufferEnv)``."""
    cfg = resolve(config)
    return functools.partial(_native_from_toml, cfg.to_toml(), cfg.name, num_envs, **kwargs)


def _native_from_toml(config_toml: str, config_name: str, num_envs: int, buf: dict | None = None, seed: int = 0,
                      **kwargs: Any) -> NativeEnv:
    return NativeEnv(from_toml(config_toml, config_name), num_envs, seed, buf, **kwargs)


# ------------------------------------------------------------ the emulated env
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


# ------------------------------------------------------------ the recipe's network
def info_numbers(infos: Sequence[dict]) -> dict[str, list]:
    """Numbers from the vector env's infos (one dict per copy, keyed by seat) by key, seats merged."""
    stats: dict[str, list] = defaultdict(list)
    for key, value in (kv for info in infos for kv in pufferlib.unroll_nested_dict(info)):
        stats[key.rsplit("/", 1)[-1]].append(float(value))
    return stats


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


def unpack(observations: torch.Tensor, layout: dict | int | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The env's observations -> (observation vector, action mask or None): the native env's rows
    split where the mask starts (`layout` an int), PufferLib's packed bytes unpacked (a dict)."""
    if layout is None:
        return observations, None
    if isinstance(layout, int):
        return observations[..., :layout], observations[..., layout:]
    parts = pufferlib.pytorch.nativize_tensor(observations, layout)
    return parts["observation"], parts["action_mask"]


class Policy(nn.Module):
    """An MLP over the flat observation (`layers` tanh layers of `hidden` units, over its symlog)
    with a value head and one categorical head per MultiDiscrete part, masked by the env's action
    mask. Here, not in the recipe, because ``pufferlib:PATH`` rebuilds it from a checkpoint."""

    def __init__(self, obs_size: int, nvec: Sequence[int], hidden: int = 128, layers: int = 2) -> None:
        super().__init__()
        self.kwargs = {"obs_size": int(obs_size), "nvec": [int(n) for n in nvec], "hidden": int(hidden),
                       "layers": int(layers)}
        init = pufferlib.pytorch.layer_init
        trunk: list[nn.Module] = []
        for i in range(int(layers)):
            trunk += [init(nn.Linear(int(obs_size) if i == 0 else int(hidden), int(hidden))), nn.Tanh()]
        self.trunk = nn.Sequential(*trunk)
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


# ------------------------------------------------------------ checkpoints
def save(policy: Policy, out: str | Path, config: Config, agent_steps: int) -> str:
    """``out/policy.pt``: the weights and plain data only (loads with ``weights_only=True``)."""
    data = {"format": CHECKPOINT_FORMAT, "model": policy.state_dict(), "model_kwargs": policy.kwargs,
            "config": config.name, "agent_steps": int(agent_steps)}
    return str(save_weights(data, Path(out) / "policy.pt"))


class _Actor(ViewActor):
    """A loaded `Policy` on the trainer form's views: its masked logits per part."""

    def __init__(self, policy: Policy, greedy: bool = False) -> None:
        self.policy, self.greedy = policy, greedy
        self.reset(None)

    def parts(self, obs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.policy(obs, mask)[0]


def policy_class(path: str) -> type:
    """A checkpoint of the recipe (`save`) as a policy class ``Cls(config)`` for the raw env (data-only
    load): the ``pufferlib:PATH`` scheme."""
    try:
        data = torchzip.load(path, f"pufferlib:{path}")  # sized before torch inflates anything
    except torchzip.ArchiveError:
        raise
    except Exception as err:  # noqa: BLE001 - missing, corrupt or pickled files: one clear refusal
        raise ValueError(f"pufferlib:{path}: not a weights-only checkpoint of this recipe ({err})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"pufferlib:{path}: not a checkpoint of the PufferLib recipe (baselines.recipes.pufferlib)")

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
