"""Self-contained evaluation of a trained run: the checkpoint controls every agent (as in `nmmo
eval`), on the same episode seeds and maps for every run. It plays the checkpoint in this process
(it is our own, just trained) rather than in `nmmo eval`'s sandboxed worker process, which costs
about ten times more per tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baselines.experiments.run import Budget
from baselines.experiments.stats import pooled_metrics
from evaluation.episode import episode_seeds, policy_seed, with_horizon
from evaluation.metrics import METRICS, lifetime_matrix, lifetimes_from_infos
from nmmo import console
from nmmo.config import Config

#: Side of the pooled visit heatmaps stored in the results file (the playable square, sum-pooled).
HEATMAP_SIDE = 32


def eval_config(config: Config, ticks: int | None, **keys: Any) -> Config:
    """`config` for evaluation: `ticks` per episode (None: its horizon), the shared map cache (not
    a run's own), and `keys` set (a test population cap)."""
    copy = with_horizon(config, ticks or config.HORIZON).set("PATH_MAPS", "")
    for key, value in keys.items():
        copy.set(key, value)
    return copy.validate()


def evaluate_checkpoint(config: Config, checkpoint: str, map_seeds: Sequence[int], budget: Budget,
                        desc: str = "eval", visits: bool = False) -> dict[str, Any]:
    """Self-contained episodes of a checkpoint (it controls every agent): episode i on map
    ``map_seeds[i]`` with the i-th seed of ``--eval-seed`` (the same for every run). Returns the
    pooled metrics with 95 % bootstrap intervals over episodes, each episode's sums and counts,
    and with `visits` the visit heatmap pooled over the episodes (`pooled_heatmap`)."""
    import torch

    from baselines.policy import CheckpointPolicy

    torch.set_num_threads(budget.threads)
    policy = CheckpointPolicy(config, path=checkpoint)
    seeds = episode_seeds(budget.eval_seed, len(map_seeds))
    episodes, heat = [], None
    # an inner loop of a run: a terminal shows its bar, a log only the runs' lines
    shown = budget.progress and console.is_terminal()
    episodes_bar = console.progress(total=len(seeds), desc=desc, unit="episode", enabled=shown)
    for seed, map_seed in zip(seeds, map_seeds, strict=True):
        matrix, tiles = play_episode(config, policy, seed, int(map_seed))
        episodes.append({"seed": seed, "map_seed": int(map_seed), "count": len(matrix),
                         "sums": {m: float(matrix[:, j].sum()) for j, m in enumerate(METRICS)}})
        heat = tiles if heat is None else heat + tiles
        episodes_bar.update()
    episodes_bar.close()
    out: dict[str, Any] = {"config": config.name, "population_cap": config.PLAYER_N, "ticks": config.HORIZON,
                           "metrics": pooled_metrics(episodes, budget.eval_seed), "episodes": episodes}
    if visits and heat is not None:
        out["visits"] = pooled_heatmap(heat, config)
    return out


def play_episode(config: Config, policy: Any, seed: int, map_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One self-contained episode to its horizon: every lifetime's metrics (one row each, columns
    `METRICS`, as `nmmo eval` counts them: deaths and everyone alive at the end) and the visit counts."""
    import nmmo

    env = nmmo.Env(config, seed=seed)
    obs, _ = env.reset(seed=seed, options={"map_seed": map_seed})
    policy.reset(policy_seed(seed, 0))
    reported: dict[int, dict] = {}
    while env.agents:
        obs, _, _, _, infos = env.step(policy.act({a: obs[a] for a in env.agents if a in obs}))
        reported.update(lifetimes_from_infos(infos))
    return lifetime_matrix(list(reported.values())), env.overlays.get("visits")


def pooled_heatmap(heat: np.ndarray, config: Config) -> list[list[int]]:
    """Visit counts of the playable square, sum-pooled to about `HEATMAP_SIDE` cells a side."""
    border, center = config.MAP_BORDER, config.MAP_CENTER
    factor = max(1, center // HEATMAP_SIDE)
    side = center // factor
    square = heat[border:border + side * factor, border:border + side * factor]
    return square.reshape(side, factor, side, factor).sum(axis=(1, 3)).round().astype(int).tolist()
