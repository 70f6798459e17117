"""RLlib's env on nmmo: its own ParallelPettingZooEnv wrapper around the trainer form
(nmmo.integrations.rllib.env_creator), with respawn on (trainers_small). PPO on it, and the export
of its checkpoint that plays as ``rllib:PATH``, are tested with the recipe (tests/recipes/test_rllib.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("ray.rllib", reason="the RLlib tests need the [rllib] extra")

from ray.rllib.env.env_context import EnvContext  # noqa: E402

from nmmo.integrations import rllib as nmmo_rllib  # noqa: E402

from .helpers import SEATS, check_seats  # noqa: E402

CONFIG = "trainers_small"


def test_env_creator_keeps_the_seats_through_deaths_and_seeds_each_runner():
    env = nmmo_rllib.env_creator(EnvContext({"config": CONFIG, "seed": 5}, worker_index=0))
    check_seats(env)
    obs, _ = env.reset(seed=3)
    env.action_space.seed(3)
    assert set(obs) == SEATS
    deaths, steps = 0, 0
    while True:
        actions = {seat: env.action_space[seat].sample() for seat in obs}
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        steps += 1
        deaths += sum(info["died"] for info in infos.values())
        if truncateds["__all__"]:
            break
        assert set(obs) == set(rewards) == SEATS  # the respawned lives come back in the same 8 seats
        assert not any(terminateds[seat] for seat in SEATS)
    assert steps == 128 and deaths > 0  # the horizon, after lives ended (the raw env's KeyError case)

    seeds = [nmmo_rllib.env_creator(EnvContext({"config": CONFIG, "seed": 5}, worker_index=i)).par_env.unwrapped
             .episode_seed for i in (0, 1, 2)]
    assert seeds == [5, 6, 7]  # env_config's seed, one per env runner
