"""RLlib (new API stack) trains on the trainer form through its own ParallelPettingZooEnv wrapper
(nmmo.integrations.rllib), with respawn on (trainers_small)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="the RLlib tests need the [rllib] extra")

from gymnasium import spaces  # noqa: E402
from ray.rllib.env.env_context import EnvContext  # noqa: E402

from nmmo.integrations import rllib as nmmo_rllib  # noqa: E402

# RLlib registers its env under one gymnasium id on every build_algo(); a second build warns.
pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-multi-agent-env-v0")

CONFIG = "trainers_small"
SEATS = {f"player_{i}" for i in range(8)}


@pytest.fixture
def one_torch_thread():
    """RLlib's batches are 8 rows: one torch thread (as `train` uses), restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def check_seats(env) -> None:
    """The wrapper's agents and spaces are the 8 fixed seats."""
    assert set(env.agents) == set(env.possible_agents) == SEATS
    assert set(env.observation_space.spaces) == set(env.action_space.spaces) == SEATS
    for seat in SEATS:
        assert isinstance(env.observation_space[seat], spaces.Box) and len(env.observation_space[seat].shape) == 1
        assert env.action_space[seat] == spaces.MultiDiscrete([5, 3, 17])


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


def record_samples(config, samples: list):
    """Keep each seat's (observations, actions) as RLlib samples them (before its learner pads
    the episodes with one extra step for bootstrapping)."""
    def on_sample_end(**kwargs):
        for episode in kwargs["samples"]:
            for seat, agent_episode in episode.agent_episodes.items():
                samples.append((seat, agent_episode.get_observations(), np.asarray(agent_episode.get_actions())))
    return config.callbacks(on_sample_end=on_sample_end)


def test_ppo_iteration_on_the_trainer_form(ray_session, one_torch_thread):
    samples = []
    config = nmmo_rllib.ppo_config(CONFIG, seed=0, train_batch_size=128, minibatch_size=128, num_epochs=1)
    algo = record_samples(config, samples).build_algo()
    try:
        check_seats(algo.env_runner.env.envs[0].unwrapped)
        result = algo.train()
        assert nmmo_rllib.agent_steps_of(result) == 128 * 8  # one full episode of the 8 seats, through respawns
        assert np.isfinite(result["learners"][nmmo_rllib.POLICY_ID]["policy_loss"])  # PPO updated
    finally:
        algo.stop()
    action_space = spaces.MultiDiscrete([5, 3, 17])
    assert {seat for seat, _, _ in samples} == SEATS
    assert sum(len(actions) for _, _, actions in samples) == 128 * 8
    for seat, _, actions in samples:
        assert all(action_space.contains(action.astype(np.int64)) for action in actions), seat


def test_masked_ppo_samples_only_allowed_actions(ray_session, one_torch_thread):
    samples = []
    config = nmmo_rllib.ppo_config(CONFIG, seed=0, train_batch_size=32, minibatch_size=32, num_epochs=1, mask=True)
    algo = record_samples(config, samples).build_algo()
    try:
        space = algo.env_runner.env.envs[0].unwrapped.observation_space["player_0"]
        assert set(space.spaces) == {"observations", "action_mask"} and space["action_mask"].shape == (25,)
        result = algo.train()
        assert nmmo_rllib.agent_steps_of(result) == 32 * 8
    finally:
        algo.stop()
    checked = 0
    for seat, observations, actions in samples:
        masks = np.asarray(observations["action_mask"])[:len(actions)]
        for (direction, style, target), mask in zip(actions, masks, strict=True):
            assert mask[direction] and mask[5 + style] and mask[8 + target], (seat, direction, style, target)
            checked += 1
    assert checked == 32 * 8


def test_train_reports_agent_steps_and_saves_a_checkpoint_that_exports_and_plays_sandboxed(ray_session, tmp_path,
                                                                                          capsys):
    result = nmmo_rllib.train(CONFIG, agent_steps=1, seed=1, out=str(tmp_path / "ckpt"), train_batch_size=32,
                              minibatch_size=32, num_epochs=1)
    assert result["agent_steps"] == 32 * 8 and result["iterations"] == 1
    assert result["agent_steps_per_s"] > 0 and result["seconds"] > 0
    json.dumps(result, allow_nan=False)  # the CLI's last line is strict JSON
    assert json.loads((tmp_path / "ckpt" / "rllib_checkpoint.json").read_text())  # RLlib's own checkpoint
    assert "iteration 1 agent_steps 256" in capsys.readouterr().out

    # the way back: the owner exports the actor as weights (checked against the module's own logits)
    import nmmo
    from nmmo.policy import is_data_spec

    from .helpers import plays_in_the_sandbox

    nmmo_rllib.main(["export", str(tmp_path / "ckpt"), str(tmp_path / "actor.pt")])
    spec = f"rllib:{tmp_path / 'actor.pt'}"
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["exported"] == str(tmp_path / "actor.pt")
    assert is_data_spec(spec)
    for infos in plays_in_the_sandbox(spec, nmmo.config.resolve(CONFIG), seed=4):
        assert not any(info.get("invalid_actions") for info in infos.values())  # masked at play
    with pytest.raises(ValueError, match="no module"):
        nmmo_rllib.export(tmp_path / "ckpt", tmp_path / "other.pt", policy="nobody")
