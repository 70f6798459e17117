"""SB3's `VecEnv` over the engine's vector env (`SeatVecEnv`): the env the SB3 recipe
(``baselines/recipes/sb3.py``) trains on by default, with no SuperSuit and no per-agent dict between
the engine and SB3 (re-exported by `nmmo.integrations.sb3`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.engines.buffers import METRIC_NAMES
from nmmo.integrations import require, resolve

require("stable_baselines3", "sb3")

from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

__all__ = ["SeatVecEnv"]


class SeatVecEnv(VecEnv):
    """SB3's `VecEnv` over the engine's vector env (`nmmo.envs.VectorEnv`): one SB3 env per seat,
    ``num_envs`` = worlds x PLAYER_N (env ``k * PLAYER_N + s`` is seat s of world k), observations
    the trainer form's flat vector written from the engine's arrays (`FlatLayout`: the layout of
    ``parallel_env(mask=False)``, so models trained on either play on the other), actions
    ``MultiDiscrete([5, 3, PLAYER_N_OBS + 1])`` rows. No per-agent dict: SB3's list of infos, one
    dict per seat, is the only per-agent Python object.

    SB3's contract: a seat's episode is one life. When its agent dies the seat is done
    (``TimeLimit.truncated`` False) and the next episode starts at once: the seat sees zeros until
    its next agent spawns (its actions ignored, reward 0). When a world's episode ends (the horizon,
    or nobody left without respawn) every seat of it is done, truncated unless its agent died then,
    and the world resets. Each done seat's ``infos[i]["terminal_observation"]`` is its last
    observation (the engine's final observations at a world's end, `VecStep.final_obs`), and
    ``infos[i]["life"]`` the ended life's metrics when one ended. ``seed(s)`` takes effect at the
    next ``reset()`` (the worlds rebuilt from seed s, as ``VectorEnv(seed=s)``)."""

    render_mode = None  # rows of one engine: nothing to render per seat

    def __init__(self, config: Config | str | None = "trainers_small", num_worlds: int = 1, seed: int = 0, *,
                 workers: int = 0, engine: str | None = None) -> None:
        from nmmo.core.actions import flat_action_sizes
        from nmmo.engines.vector import VectorEnv
        from nmmo.interfaces.arrays import FlatLayout

        self.config = resolve(config)
        self.layout = FlatLayout.of(self.config)
        self._vec_args = (VectorEnv, num_worlds, {"workers": workers, "engine": engine})
        self._seed = int(seed)
        self.vec = VectorEnv(self.config, num_worlds, self._seed, workers=workers, engine=engine)
        observation = spaces.Box(-np.inf, np.inf, (self.layout.size,), np.float32)
        super().__init__(self.vec.rows, observation, spaces.MultiDiscrete(list(flat_action_sizes(self.config))))
        self._obs = np.zeros((self.num_envs, self.layout.size), np.float32)
        self._ticks = np.zeros(num_worlds, np.int64)
        self._ids = np.zeros(self.num_envs, np.int64)
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        if seed is not None and int(seed) != self._seed:
            cls, worlds, kwargs = self._vec_args
            self.vec.close()
            self._seed = int(seed)
            self.vec = cls(self.config, worlds, self._seed, **kwargs)
        self._reset_seeds()
        obs = self.vec.reset()
        self._ticks[:] = 0
        b = self.vec.buffers
        self._write(self._obs, obs, b["agent_id"], b["alive"], self._ticks)
        self._ids = np.where(b["alive"], b["agent_id"], 0)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._obs.copy()

    def _write(self, out: np.ndarray, obs: dict, ids: np.ndarray, alive: np.ndarray, ticks: np.ndarray) -> None:
        self.layout.write(out, obs, np.where(alive, ids, 0), np.repeat(ticks, self.vec.slots))

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        out = self.vec.step(self._actions.reshape(self.num_envs, 3).astype(np.int64))
        ended = out.reset  # the seats of worlds that reset: their episode ended (the engine says which)
        over = ended.reshape(len(self._ticks), -1)[:, 0]
        died = out.terminated
        dones = died | ended
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        if dones.any():
            last = np.zeros((self.num_envs, self.layout.size), np.float32)  # each done seat's last observation
            self._write(last, out.obs, self._ids, died & ~ended, self._ticks + 1)
            if over.any():  # the worlds that reset: their seats' last observations are the engine's final ones
                rows = np.flatnonzero(ended)
                final = np.zeros((len(rows), self.layout.size), np.float32)
                self.layout.write(final, {k: v[rows] for k, v in out.final_obs.items()}, self._ids[rows],
                                  np.repeat(self._ticks[over] + 1, self.vec.slots))
                last[rows] = final
            for i in np.flatnonzero(dones).tolist():
                infos[i]["terminal_observation"] = last[i]
                infos[i]["TimeLimit.truncated"] = bool(ended[i] and not died[i])
        for metrics, row in zip(out.episodes.tolist(), out.episode_rows.tolist(), strict=True):
            infos[row]["life"] = dict(zip(METRIC_NAMES, metrics, strict=False))
        self._ticks += 1
        self._ticks[over] = 0
        b = self.vec.buffers
        self._write(self._obs, out.obs, out.agent_id, out.alive, self._ticks)
        self._obs[~out.alive] = 0  # a seat between lives: zeros (its last agent's final view went to its info)
        self._obs[~out.alive, self.layout.slices["tick"].start] = np.repeat(self._ticks, self.vec.slots)[~out.alive]
        self._ids = np.where(b["alive"], b["agent_id"], 0)
        return self._obs.copy(), out.reward.copy(), dones, infos

    def close(self) -> None:
        self.vec.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"SeatVecEnv's seats share one engine: there is no per-seat {attr_name!r} to set")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"SeatVecEnv's seats are rows of one engine, not envs with a {method_name!r} method")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))
