"""TorchRL's `EnvBase` over the engine's vector env (`NativeEnv`): batched TensorDicts straight from
the engine's arrays, with no PettingZoo and no per-agent dict on the way.

The batch is ``[worlds]`` with one group ``"player"`` of ``[worlds, seats]`` (TorchRL's multi-agent
convention, and the keys of the recipe's `PettingZooWrapper` env: ``("player", "observation",
"observation")``, ``("player", "action_mask")``, ``("player", "action")`` rows of (direction, style,
target), ``("player", "reward")``, and the done flags per seat and per world). The seats behave as
the trainer form's (`nmmo.interfaces.Slots`): with respawn a seat is never terminated, and at the
horizon every seat of the world is truncated; without respawn a seat terminates with its agent.
A world whose episode ended reports its last observations (the engine's final ones,
`VecStep.final_obs`) under ``"next"``; the engine has already begun its next episode, which the
following ``reset`` (TorchRL's ``step_and_maybe_reset`` asks for it) hands out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nmmo.config import Config
from nmmo.core.actions import flat_action_sizes
from nmmo.engines.vector import VectorEnv
from nmmo.integrations import require, resolve
from nmmo.interfaces.arrays import FlatLayout

require("torchrl", "torchrl")

from tensordict import TensorDict  # noqa: E402
from torchrl.data import Binary, Categorical, Composite, MultiCategorical, Unbounded  # noqa: E402
from torchrl.envs import EnvBase  # noqa: E402

__all__ = ["NativeEnv"]

GROUP = "player"


class NativeEnv(EnvBase):
    """`num_worlds` worlds of `config` as one TorchRL env (see the module notes); `workers` and
    `engine` go to `VectorEnv`."""

    batch_locked = True

    def __init__(self, config: Config | str | None = "trainers_small", num_worlds: int = 4, seed: int = 0, *,
                 device: str = "cpu", workers: int = 0, engine: str | None = None) -> None:
        self.config = resolve(config)
        self.layout = FlatLayout.of(self.config)
        self._vec_kwargs = {"workers": workers, "engine": engine}
        self.vec = VectorEnv(self.config, num_worlds, seed, **self._vec_kwargs)
        self._seed = int(seed)
        super().__init__(batch_size=torch.Size([num_worlds]), device=device)
        w, s = num_worlds, self.config.PLAYER_N
        self.respawn = bool(self.config.PLAYER_RESPAWN and self.config.PLAYER_SPAWN_ATTEMPTS > 0)
        nvec = list(flat_action_sizes(self.config))
        seat = (w, s)
        self.observation_spec = Composite({GROUP: Composite({
            "observation": Composite(observation=Unbounded((*seat, self.layout.size), dtype=torch.float32),
                                     shape=seat),
            "action_mask": Binary(self.layout.mask_size, (*seat, self.layout.mask_size), dtype=torch.bool),
        }, shape=seat)}, shape=(w,))
        self.action_spec = Composite({GROUP: Composite(action=MultiCategorical(nvec, (*seat, 3)), shape=seat)},
                                     shape=(w,))
        self.reward_spec = Composite({GROUP: Composite(reward=Unbounded((*seat, 1)), shape=seat)}, shape=(w,))
        flag = Categorical(2, (w, 1), dtype=torch.bool)
        seat_flag = Categorical(2, (*seat, 1), dtype=torch.bool)
        self.done_spec = Composite({"done": flag, "terminated": flag.clone(), "truncated": flag.clone(),
                                    GROUP: Composite(done=seat_flag, terminated=seat_flag.clone(),
                                                     truncated=seat_flag.clone(), shape=seat)}, shape=(w,))
        self._obs = np.zeros((w * s, self.layout.size), np.float32)  # the running episodes' observations
        self._mask = np.zeros((w * s, self.layout.mask_size), bool)
        self._ticks = np.zeros(w, np.int64)
        self._alive = np.zeros(w * s, bool)
        self._ids = np.zeros(w * s, np.int64)
        self._started = False

    # ------------------------------------------------------------ writing rows
    def _write(self, obs: np.ndarray, mask: np.ndarray, arrays: dict, agent_id: np.ndarray, alive: np.ndarray,
               ticks: np.ndarray) -> None:
        """Rows as the trainer form shows them: a seat without an agent sees zeros, only "stay",
        any style and the no-op target."""
        self.layout.write(obs, arrays, np.where(alive, agent_id, 0), ticks)
        mask[:] = np.concatenate([arrays[name] for name in self.layout.mask_fields], axis=1)
        if not alive.all():
            mask[~alive] = self._empty_mask(int((~alive).sum()))

    def _empty_mask(self, n: int) -> np.ndarray:
        """`n` rows of the mask a seat without an agent gets: "stay", any style, the no-op target."""
        move, style, target = flat_action_sizes(self.config)
        mask = np.zeros((n, self.layout.mask_size), bool)
        mask[:, [move - 1, *range(move, move + style), move + style + target - 1]] = True
        return mask

    def _seat_ticks(self) -> np.ndarray:
        return np.repeat(self._ticks, self.config.PLAYER_N)

    def _out(self, obs: np.ndarray, mask: np.ndarray, **flags: np.ndarray) -> TensorDict:
        w, s = self.batch_size[0], self.config.PLAYER_N
        player = {"observation": TensorDict({"observation": torch.from_numpy(obs.reshape(w, s, -1).copy())},
                                            batch_size=(w, s)),
                  "action_mask": torch.from_numpy(mask.reshape(w, s, -1).copy())}
        root = {}
        for name, values in flags.items():
            if values.ndim == 1 and len(values) == w * s:
                player[name] = torch.from_numpy(values.reshape(w, s, 1).copy())
            else:
                root[name] = torch.from_numpy(values.reshape(w, 1).copy())
        return TensorDict({GROUP: TensorDict(player, batch_size=(w, s)), **root}, batch_size=(w,), device=self.device)

    # ------------------------------------------------------------ the EnvBase API
    def _reset(self, tensordict: TensorDict | None = None, **kwargs: Any) -> TensorDict:
        """The first call starts every world's episode; after that, the worlds whose episode ended
        began their next one inside that step already, and reset hands out their rows."""
        partial = self._started and tensordict is not None and "_reset" in tensordict.keys()
        if not partial:
            arrays = self.vec.reset()
            self._ticks[:] = 0
            b = self.vec.buffers
            self._alive = b["alive"].copy()
            self._ids = np.where(self._alive, b["agent_id"], 0)
            self._write(self._obs, self._mask, arrays, b["agent_id"], self._alive, self._seat_ticks())
            self._started = True
        w = self.batch_size[0]
        return self._out(self._obs, self._mask, done=np.zeros(w, bool), terminated=np.zeros(w, bool),
                         truncated=np.zeros(w, bool))

    def _step(self, tensordict: TensorDict) -> TensorDict:
        actions = tensordict[GROUP, "action"].reshape(-1, 3).cpu().numpy().astype(np.int64)
        out = self.vec.step(actions)
        self._ticks += 1
        w, s = self.batch_size[0], self.config.PLAYER_N
        ended = out.reset  # the seats of worlds that reset (the engine says which)
        over = ended.reshape(w, s)[:, 0]
        nobody_left = over & (self._ticks < self.config.HORIZON)  # the world's episode terminated
        terminated = np.zeros(w * s, bool) if self.respawn else out.terminated & self._alive
        truncated = ended & ~terminated
        ticks_now = self._seat_ticks()
        next_obs, next_mask = np.empty_like(self._obs), np.empty_like(self._mask)
        died = out.terminated & self._alive  # their last view keeps their id, as the trainer form's does
        self._write(next_obs, next_mask, out.obs, np.where(died, self._ids, out.agent_id), out.alive | died,
                    ticks_now)
        next_mask[died] = self._empty_mask(died.sum())
        if over.any():  # worlds that reset: "next" holds their last observations, reset their new episode
            rows = np.flatnonzero(ended)
            final_obs = np.zeros((len(rows), self.layout.size), np.float32)
            final_mask = np.zeros((len(rows), self.layout.mask_size), bool)
            self._write(final_obs, final_mask, {k: v[rows] for k, v in out.final_obs.items()}, self._ids[rows],
                        self._ids[rows].astype(bool), ticks_now[rows])
            self._ticks[over] = 0
            self._obs, self._mask = next_obs.copy(), next_mask.copy()
            self._obs[rows, self.layout.slices["tick"].start] = 0
            next_obs[rows], next_mask[rows] = final_obs, final_mask
        else:
            self._obs, self._mask = next_obs, next_mask
        self._alive = out.alive.copy()
        self._ids = np.where(out.alive, out.agent_id, 0)
        td = self._out(next_obs, next_mask, done=over, terminated=nobody_left, truncated=over & ~nobody_left)
        td[GROUP, "done"] = torch.from_numpy((terminated | truncated).reshape(w, s, 1))
        td[GROUP, "terminated"] = torch.from_numpy(terminated.reshape(w, s, 1))
        td[GROUP, "truncated"] = torch.from_numpy(truncated.reshape(w, s, 1))
        td[GROUP, "reward"] = torch.from_numpy(out.reward.reshape(w, s, 1).copy())
        return td

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None and int(seed) != self._seed:
            self.vec.close()
            self._seed = int(seed)
            self.vec = VectorEnv(self.config, self.batch_size[0], self._seed, **self._vec_kwargs)
            self._started = False

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.vec.close()
        super().close(raise_if_closed=raise_if_closed)
