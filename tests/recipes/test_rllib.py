"""The RLlib recipe (baselines/recipes/rllib.py): PPO with one shared policy on RLlib's
ParallelPettingZooEnv over the trainer form (masked and not), its command's result line and
checkpoint, and that checkpoint exported (``python -m nmmo.integrations.rllib export``) playing as
``rllib:PATH`` in the submission sandbox."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="the RLlib tests need the [rllib] extra")

from gymnasium import spaces  # noqa: E402

from baselines.recipes import rllib as recipe  # noqa: E402
from nmmo.integrations import rllib as nmmo_rllib  # noqa: E402
from tests.integrations.helpers import SEATS, check_seats  # noqa: E402
from tests.recipes.helpers import scalars  # noqa: E402

# RLlib registers its env under one gymnasium id on every build_algo(); a second build warns.
pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-multi-agent-env-v0")

CONFIG = "trainers_small"


@pytest.fixture
def one_torch_thread():
    """RLlib's batches are 8 rows: one torch thread (as the recipe uses), restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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
    config = recipe.ppo_config(CONFIG, seed=0, train_batch_size=128, minibatch_size=128, num_epochs=1)
    algo = record_samples(config, samples).build_algo()
    try:
        check_seats(algo.env_runner.env.envs[0].unwrapped)
        result = algo.train()
        assert recipe.agent_steps_of(result) == 128 * 8  # one full episode of the 8 seats, through respawns
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
    config = recipe.ppo_config(CONFIG, seed=0, train_batch_size=32, minibatch_size=32, num_epochs=1, mask=True)
    algo = record_samples(config, samples).build_algo()
    try:
        space = algo.env_runner.env.envs[0].unwrapped.observation_space["player_0"]
        assert set(space.spaces) == {"observations", "action_mask"} and space["action_mask"].shape == (25,)
        result = algo.train()
        assert recipe.agent_steps_of(result) == 32 * 8
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
    returned = recipe.main(["--agent-steps", "1", "--seed", "1", "--out", str(tmp_path / "ckpt"),
                            "--train-batch-size", "32", "--minibatch-size", "32", "--num-epochs", "1",
                            "--tensorboard", str(tmp_path / "tb")])
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])  # the line bench_trainers.py reads
    assert result == returned and "iteration 1 agent_steps 256" in out
    json.dumps(result, allow_nan=False)  # strict JSON: no NaN (no episode ended: None)
    assert result["agent_steps"] == 32 * 8 and result["iterations"] == 1
    assert result["agent_steps_per_s"] > 0 and result["seconds"] > 0
    assert json.loads((tmp_path / "ckpt" / "rllib_checkpoint.json").read_text())  # RLlib's own checkpoint
    assert [e.step for e in scalars(tmp_path / "tb", "learners/shared/policy_loss")] == [256]  # RLlib's names

    # the way back: the owner exports the actor as weights (checked against the module's own logits)
    import nmmo
    from nmmo.policy import is_data_spec
    from tests.integrations.helpers import plays_in_the_sandbox

    nmmo_rllib.main(["export", str(tmp_path / "ckpt"), str(tmp_path / "actor.pt")])
    spec = f"rllib:{tmp_path / 'actor.pt'}"
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["exported"] == str(tmp_path / "actor.pt")
    assert is_data_spec(spec)
    for infos in plays_in_the_sandbox(spec, nmmo.config.resolve(CONFIG), seed=4):
        assert not any(info.get("invalid_actions") for info in infos.values())  # masked at play
    with pytest.raises(ValueError, match="no module"):
        nmmo_rllib.export(tmp_path / "ckpt", tmp_path / "other.pt", policy="nobody")
