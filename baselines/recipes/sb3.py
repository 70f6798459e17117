"""PPO with Stable-Baselines3 on nmmo (docs: trainers/sb3.md): SB3's ``PPO("MlpPolicy")``, with its
own rollout buffer and GAE, on the native `nmmo.integrations.sb3.SeatVecEnv` (one SB3 env per seat
of the engine's vector env; the default) or on SuperSuit's recipe over the trainer form
(`nmmo.integrations.sb3.vec_env`). The saved ``model.zip`` plays back as ``sb3:PATH``.

Run: ``python -m baselines.recipes.sb3 --config trainers_small --agent-steps 1000000 --out out/sb3``.
"""

from __future__ import annotations

import io
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baselines.recipes import common
from nmmo.config import Config
from nmmo.integrations import require, resolve
from nmmo.io.files import atomic_write_bytes

require("stable_baselines3", "sb3")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.logger import Logger, configure  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor  # noqa: E402

from nmmo.integrations.sb3_env import SeatVecEnv  # noqa: E402

__all__ = ["ROUTES", "main", "train", "train_model"]

#: The envs `train_model` can run on: `SeatVecEnv` (native) or SuperSuit's recipe (`vec_env`).
ROUTES = ("native", "supersuit")


class Progress(BaseCallback):
    """One plain line per rollout: agent-steps, rate, mean episode return (native route: a life's;
    SuperSuit's: a seat's, to the horizon)."""

    def __init__(self, start: float) -> None:
        super().__init__()
        self.start = start

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        steps = self.model.num_timesteps
        rate = steps / max(time.perf_counter() - self.start, 1e-9)
        returns = [info["r"] for info in self.model.ep_info_buffer]
        mean = f"{np.mean(returns):.2f}" if returns else "n/a"
        print(f"sb3: {steps} agent-steps, {rate:.0f} agent-steps/s, mean episode return {mean}", flush=True)


def make_env(config: Config, route: str, n_envs: int, seed: int, num_cpus: int) -> VecEnv:
    """The route's vector env with SB3's `VecMonitor` (episode returns), seeded."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    if route == "supersuit":
        from nmmo.integrations.sb3 import vec_env  # SuperSuit is only needed on this route

        return vec_env(config, n_envs=n_envs, seed=seed, num_cpus=num_cpus)
    with warnings.catch_warnings():  # VecMonitor asks for render_mode, which rows of one engine do not have
        warnings.filterwarnings("ignore", message="The `render_mode` attribute", category=UserWarning)
        return VecMonitor(SeatVecEnv(config, n_envs, seed, workers=num_cpus))


def train_model(config: Config | str | None = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
                out: str | Path | None = None, *, n_envs: int = 1, n_steps: int = 128, batch_size: int = 512,
                n_epochs: int = 10, num_cpus: int = 0, progress: bool = True,
                route: str = "native", tensorboard: str | Path | None = None) -> tuple[PPO, dict]:
    """`train`, also returning the trained `PPO` model. With `tensorboard`, a directory, SB3's own
    TensorBoard output (its rollout/ and train/ numbers) goes there."""
    cfg = resolve(config)
    venv = make_env(cfg, route, n_envs, seed, num_cpus)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small MLP batches: extra threads only contend with the env
    try:
        model = PPO("MlpPolicy", venv, n_steps=n_steps, batch_size=batch_size, n_epochs=n_epochs, seed=seed,
                    device="cpu", verbose=0)
        # SB3's default makes an empty SB3-* dir in /tmp: none, or its TensorBoard format into the directory asked for
        model.set_logger(configure(str(tensorboard), ["tensorboard"]) if tensorboard is not None
                         else Logger(folder=None, output_formats=[]))
        start = time.perf_counter()
        model.learn(total_timesteps=agent_steps, callback=Progress(start) if progress else None)
        seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
        venv.close()
    result = summary(model, cfg, seconds, n_envs, route)
    if out is not None:
        buffer = io.BytesIO()
        model.save(buffer)  # SB3 writes the zip into the buffer; the file appears whole or not at all
        result["model"] = str(atomic_write_bytes(Path(out) / "model.zip", buffer.getvalue()))
    return model, result


def summary(model: PPO, config: Config, seconds: float, n_envs: int, route: str) -> dict[str, Any]:
    """The run's numbers: agent-steps, rate, episodes and their mean return (SuperSuit's route: an
    episode is a seat's, to the horizon, so its mean is also given as ``mean_seat_return``)."""
    returns = [float(info["r"]) for info in model.ep_info_buffer]
    result: dict[str, Any] = {
        "library": "sb3", "config": config.name, "agent_steps": int(model.num_timesteps), "seconds": seconds,
        "agent_steps_per_s": model.num_timesteps / max(seconds, 1e-9), "n_envs": n_envs,
        "seats": n_envs * config.PLAYER_N, "episodes": len(returns), "route": route,
        "mean_episode_return": float(np.mean(returns)) if returns else None,
    }
    if route == "supersuit":
        result["mean_seat_return"] = result["mean_episode_return"]
    return result


def train(config: Config | str | None = "trainers_small", agent_steps: int = 100_000, seed: int = 0,
          out: str | Path | None = None, **kwargs: Any) -> dict:
    """SB3 ``PPO("MlpPolicy", ...)`` for about `agent_steps` agent-steps (SB3 finishes the rollout it
    is in: ``n_steps * n_envs * PLAYER_N`` agent-steps each). With `out`, saves ``out/model.zip``
    (play it back as ``sb3:out/model.zip``). Keyword arguments: `train_model`'s."""
    return train_model(config, agent_steps, seed, out, **kwargs)[1]


def main(argv: Sequence[str] | None = None) -> dict:
    """``python -m baselines.recipes.sb3``: `train`, then the result as one JSON line."""
    parser = common.parser("python -m baselines.recipes.sb3", __doc__.split("\n\n")[0],
                           out_help="directory for model.zip (play it back as sb3:DIR/model.zip)")
    parser.add_argument("--n-envs", type=int, default=1, help="worlds (each gives PLAYER_N sub-envs)")
    parser.add_argument("--route", default="native", choices=ROUTES,
                        help="native: SeatVecEnv over the engine's vector env; supersuit: SuperSuit's recipe")
    parser.add_argument("--num-cpus", type=int, default=0,
                        help="worker processes (native: the vector env's; supersuit: SuperSuit's; 0: in-process)")
    parser.add_argument("--n-steps", type=int, default=128, help="PPO rollout length per sub-env")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--n-epochs", type=int, default=10)
    args = parser.parse_args(argv)
    return common.report(train(args.config, args.agent_steps, args.seed, args.out, n_envs=args.n_envs,
                               num_cpus=args.num_cpus, n_steps=args.n_steps, batch_size=args.batch_size,
                               n_epochs=args.n_epochs, route=args.route, tensorboard=common.tensorboard_dir(args)))


if __name__ == "__main__":
    main(sys.argv[1:])
