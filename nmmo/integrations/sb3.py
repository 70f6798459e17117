"""Stable-Baselines3 on nmmo: the envs SB3 trains on (the native `SeatVecEnv`, and SuperSuit's
documented PettingZoo recipe on the trainer form) and the way back (``sb3:PATH`` policies for
``nmmo eval`` and ``nmmo tournament``). PPO over them is ``baselines/recipes/sb3.py``.

SuperSuit's route (`vec_env`) is on `nmmo.integrations.parallel_env` with ``mask=False``:

    env = parallel_env(config, seed, mask=False)
    venv = supersuit.pettingzoo_env_to_vec_env_v1(env)     # one SB3 sub-env per seat
    venv = supersuit.concat_vec_envs_v1(venv, n_envs, num_cpus=0, base_class="stable_baselines3")
    venv = VecMonitor(SuperSuitFix(venv, seats=PLAYER_N))   # seeds, truncation; episode returns

- ``mask=False``: SB3's PPO has no action masks, so the observation is the flat vector alone and
  the env drops a masked sub-action (counted in ``infos["invalid_actions"]``).
- No ``black_death_v3``: the trainer form's seats (`nmmo.interfaces.Slots`) live from reset to the
  horizon under respawn, which is what ``pettingzoo_env_to_vec_env_v1`` requires. Configs without
  respawn are refused: SuperSuit 3.11.0's ``black_death_v3`` never ends their episodes.
- `SuperSuitFix`: seeds each copy of the env (SuperSuit 3.11.0's vector env has no ``seed()``,
  which ``PPO(seed=...)`` calls) and tells SB3 which ends are truncations (the horizon), so PPO
  bootstraps them as it does gymnasium time limits.
"""

from __future__ import annotations

import json
import re
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from nmmo.config import Config
from nmmo.integrations import parallel_env, policy_interface, require, resolve
from nmmo.interfaces import InterfaceAgent, slots
from nmmo.io import torchzip

require("stable_baselines3", "sb3")
require("supersuit", "sb3")

import supersuit  # noqa: E402
from stable_baselines3.common.policies import ActorCriticPolicy  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecMonitor  # noqa: E402

from nmmo.integrations.sb3_env import SeatVecEnv  # noqa: E402 - the native VecEnv, re-exported

__all__ = ["SB3Policy", "SeatVecEnv", "SuperSuitFix", "build_policy", "policy_class", "read_model", "vec_env"]

#: The SB3 zip member holding the policy's state dict (tensors only, read weights-only).
POLICY_MEMBER = "policy.pth"
#: Activations `read_model` accepts by name from the zip's ``data`` (``policy_kwargs``).
ACTIVATIONS = ("Tanh", "ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Softplus", "Mish")
DEFAULT_ACTIVATION = "Tanh"  # SB3's default for ActorCriticPolicy


# ---------------------------------------------------------------- the env
class SuperSuitFix(VecEnvWrapper):
    """What SuperSuit 3.11.0's SB3 vector env loses on the way to SB3, put back.

    - Seeds: its concatenated env has no ``seed()``, which ``PPO(seed=...)`` calls (AttributeError),
      and its copies are cloudpickled clones of one env, so unseeded they all play the same first
      episode. Here ``seed(s)`` takes effect at the next ``reset()``, where copy i starts from
      ``s + i`` (SuperSuit's ``reset(seed=...)``); later episodes draw their seeds from each
      copy's own stream (`nmmo.Env.reset`).
    - Truncation: it folds truncation into SB3's ``done``, so SB3 would treat the horizon as a
      terminal state. Here a sub-env that was truncated, not terminated, gets SB3's
      ``info["TimeLimit.truncated"]``, and PPO bootstraps from SuperSuit's
      ``info["terminal_observation"]`` as it does for gymnasium time limits."""

    def __init__(self, venv: VecEnv, seats: int = 1) -> None:
        super().__init__(venv)
        self.seats = max(1, int(seats))  # SB3 sub-envs per copy of the env
        self._pending: int | None = None

    def seed(self, seed: int | None = None) -> list[int | None]:
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        self._pending = int(seed)
        return [self._pending + i // self.seats for i in range(self.num_envs)]

    def reset(self) -> np.ndarray:
        if self._pending is None:
            return self.venv.reset()
        seed, self._pending = self._pending, None
        obs, infos = self.venv.venv.reset(seed=seed)  # SuperSuit's own env: copy i gets seed + i
        self.venv.reset_infos = self.reset_infos = list(infos)
        return obs

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminations, truncations, infos = self.venv.venv.step_wait()
        dones = np.logical_or(terminations, truncations)
        for i in np.flatnonzero(dones).tolist():
            infos[i]["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
        return obs, rewards, dones, infos


def vec_env(config: Config | str | None = "trainers_small", n_envs: int = 1, seed: int | None = 0,
            num_cpus: int = 0) -> VecMonitor:
    """SuperSuit's SB3 recipe on the trainer form (``mask=False``): `n_envs` copies of the env,
    each seat one SB3 sub-env (``n_envs * PLAYER_N`` in all), with SB3's `VecMonitor`.

    `num_cpus` > 1 runs the copies in SuperSuit's worker processes; it must then be at least
    `n_envs` (one copy per process), because SuperSuit seeds process i with ``seed + i`` and the
    copies inside it with ``seed + i + j``, so two copies in one process would share seeds with
    the next process. `seed` is applied at the first reset (`SuperSuitFix`)."""
    if n_envs < 1:
        raise ValueError(f"n_envs must be at least 1, got {n_envs}")
    cfg = resolve(config)
    if not slots(cfg).respawn:
        raise ValueError(f"config {cfg.name!r} has no respawn: SuperSuit's pettingzoo_env_to_vec_env_v1 needs every "
                         "agent until the episode ends, and seats end with their agent without respawn (its "
                         "black_death_v3, which would pad them, never ends an episode in SuperSuit 3.11.0)")
    if 1 < num_cpus < n_envs:
        raise ValueError(f"num_cpus={num_cpus} < n_envs={n_envs}: SuperSuit would give copies in different "
                         "processes the same seeds; use num_cpus=0 (in-process) or num_cpus >= n_envs")
    env = parallel_env(cfg, seed=seed, mask=False)
    venv = supersuit.pettingzoo_env_to_vec_env_v1(env)
    venv = supersuit.concat_vec_envs_v1(venv, n_envs, num_cpus=num_cpus, base_class="stable_baselines3")
    with warnings.catch_warnings():  # SB3 asks SuperSuit's env for render_mode, which it cannot answer
        warnings.filterwarnings("ignore", message="The `render_mode` attribute is not defined", category=UserWarning)
        seeded = SuperSuitFix(venv, seats=len(env.possible_agents))
        monitored = VecMonitor(seeded)
    if seed is not None:
        seeded.seed(seed)
    return monitored


# ---------------------------------------------------------------- the way back
def _refuse(path: str, why: str) -> ValueError:
    return ValueError(f"sb3:{path}: {why}")


def _layers(state: dict[str, torch.Tensor], prefix: str) -> list[int]:
    """Widths of the Linear layers under `prefix` (SB3 numbers them 0, 2, 4, ...: activations between)."""
    index = sorted(int(m.group(1)) for key in state if (m := re.fullmatch(rf"{re.escape(prefix)}\.(\d+)\.weight", key)))
    return [int(state[f"{prefix}.{i}.weight"].shape[0]) for i in index]


def _activation_name(data: dict, path: str) -> str:
    """The activation the zip's ``data`` names in ``policy_kwargs`` (read as JSON, not unpickled)."""
    kwargs = data.get("policy_kwargs") or {}
    text = kwargs.get("activation_fn") if isinstance(kwargs, dict) else None
    if text is None:
        return DEFAULT_ACTIVATION
    name = str(text).rstrip("'>").rsplit(".", 1)[-1]
    if name not in ACTIVATIONS:
        raise _refuse(path, f"activation_fn {text!r} is not one of torch.nn's {', '.join(ACTIVATIONS)}")
    return name


def read_model(path: str | Path) -> dict[str, Any]:
    """What an SB3 ``model.zip`` holds for playing it: the policy's state dict (loaded weights-only:
    nothing in the zip is unpickled), the MLP widths inferred from its shapes and the activation's
    name. ValueError naming the path for a file that is not such a zip."""
    path = str(path)
    if not Path(path).is_file():
        raise _refuse(path, "no such file")
    if not zipfile.is_zipfile(path):
        raise _refuse(path, "not a zip file (an SB3 model is the .zip that model.save writes)")
    # a stranger's zip: every member, and those of policy.pth (itself a torch zip), sized before inflating
    with torchzip.open_checked(path, f"sb3:{path}") as handle, zipfile.ZipFile(handle) as archive:
        names = set(archive.namelist())
        if POLICY_MEMBER not in names:
            raise _refuse(path, f"the zip has no {POLICY_MEMBER} (is it a model SB3 saved?)")
        try:
            state = torchzip.load(archive.read(POLICY_MEMBER), f"sb3:{path}: {POLICY_MEMBER}")
        except torchzip.ArchiveError:
            raise
        except Exception as err:  # noqa: BLE001 - any unreadable member is the same refusal
            raise _refuse(path, f"{POLICY_MEMBER} is not a weights-only state dict ({err})") from None
        try:
            data = json.loads(archive.read("data")) if "data" in names else {}
        except (ValueError, UnicodeDecodeError):
            data = {}
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise _refuse(path, f"{POLICY_MEMBER} is not a state dict of tensors")
    for key in ("action_net.weight", "value_net.weight"):
        if key not in state:
            raise _refuse(path, f"{POLICY_MEMBER} has no {key}: not an SB3 ActorCriticPolicy (MlpPolicy)")
    return {"state": state, "pi": _layers(state, "mlp_extractor.policy_net"),
            "vf": _layers(state, "mlp_extractor.value_net"),
            "activation": _activation_name(data if isinstance(data, dict) else {}, path)}


def _spaces(config: Config) -> tuple[spaces.Box, spaces.MultiDiscrete]:
    """The trainer form's spaces (``mask=False``) for `config`: what the model was trained on."""
    env = parallel_env(config, mask=False)
    agent = env.possible_agents[0]
    return env.observation_space(agent), env.action_space(agent)


def build_policy(model: dict[str, Any], config: Config, path: str = "?") -> ActorCriticPolicy:
    """SB3's `ActorCriticPolicy` for `config`'s trainer form with `read_model`'s weights loaded;
    ValueError naming the path when the shapes do not fit the config."""
    obs_space, action_space = _spaces(config)
    policy = ActorCriticPolicy(obs_space, action_space, lambda _: 0.0, net_arch={"pi": model["pi"], "vf": model["vf"]},
                               activation_fn=getattr(torch.nn, model["activation"]), ortho_init=False)
    try:
        policy.load_state_dict(model["state"], strict=True)
    except RuntimeError as err:
        expected = f"observation ({obs_space.shape[0]},), actions {action_space.nvec.tolist()}"
        raise _refuse(path, f"the weights do not fit config {config.name!r} ({expected}): "
                            f"{str(err).splitlines()[-1].strip()}") from None
    return policy.eval()


class _Actor:
    """The SB3 policy over flat observation rows: samples each categorical with its own seeded
    generator (deterministic replays; the global torch RNG is untouched), or takes the argmax."""

    def __init__(self, policy: ActorCriticPolicy, deterministic: bool) -> None:
        self.policy = policy
        self.deterministic = deterministic
        self.nvec = [int(n) for n in policy.action_space.nvec]
        self.generator = torch.Generator()
        self.last_values: dict[Any, float] = {}

    def reset(self, seed: int | None = None) -> None:
        self.generator.manual_seed(0 if seed is None else int(seed))

    def act(self, view: dict[Any, np.ndarray]) -> dict[Any, np.ndarray]:
        if not view:
            return {}
        agents = list(view)
        obs = torch.as_tensor(np.stack([view[a] for a in agents]), dtype=torch.float32)
        with torch.no_grad():
            features = self.policy.extract_features(obs)
            latent_pi, latent_vf = self.policy.mlp_extractor(features)
            logits = self.policy.action_net(latent_pi)
            values = self.policy.value_net(latent_vf).squeeze(-1)
            parts = torch.split(logits, self.nvec, dim=-1)
            if self.deterministic:
                rows = torch.stack([part.argmax(-1) for part in parts], dim=-1)
            else:
                rows = torch.stack([torch.multinomial(torch.softmax(part, -1), 1, generator=self.generator)[:, 0]
                                    for part in parts], dim=-1)
        self.last_values = dict(zip(agents, values.tolist(), strict=True))
        return dict(zip(agents, rows.numpy().astype(np.int64), strict=True))


class SB3Policy(InterfaceAgent):
    """A saved SB3 PPO model playing the raw env (``sb3:PATH``): raw observations go through the
    trainer form without seats (`policy_interface`, ``mask=False``), the model's actions come back
    as raw actions. Stochastic by default (sampled as in training, seeded by ``reset(seed)``);
    `deterministic` takes each categorical's argmax. Subclasses set `path` (see `policy_class`)."""

    path: str = ""
    deterministic: bool = False
    _model: dict[str, Any] | None = None

    def __init__(self, config: Config, seed: int | None = None) -> None:
        model = self._model if self._model is not None else read_model(self.path)
        actor = _Actor(build_policy(model, config, self.path), self.deterministic)
        super().__init__(actor, policy_interface(mask=False))
        self.config = config
        self.reset(seed)

    @property
    def last_values(self) -> dict[Any, float]:
        """The value estimates of the last call ({agent: value}): what a value overlay paints."""
        return self.policy.last_values


def policy_class(path: str, deterministic: bool = False) -> type:
    """The ``sb3:PATH`` policy scheme: an `SB3Policy` class bound to the model SB3 saved at PATH.

    The zip is read without unpickling (only ``policy.pth``, weights-only, and the JSON ``data``).
    Assumed, since only data is read: an ``MlpPolicy`` (`ActorCriticPolicy` with the default flatten
    features extractor) trained on the trainer form with ``mask=False`` and no observation
    normalization (``VecNormalize``'s statistics are not in the zip); the pi and vf widths come from
    the state dict's shapes, the activation from ``policy_kwargs`` when it names a torch.nn one
    (default Tanh)."""
    model = read_model(path)  # fail now, with the reason, rather than at the first game
    return type("SB3Model", (SB3Policy,), {"path": str(path), "deterministic": bool(deterministic), "_model": model})
