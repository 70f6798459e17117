"""What the recipes share (baselines/recipes/common.py): one GAE for every hand-written loop, and
the settings every such recipe's command line spells out."""

import numpy as np
import pytest

from baselines.recipes import common


def test_gae_bootstraps_through_a_truncation_but_not_a_termination():
    rewards = np.array([[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]], np.float32)  # (T=3, rows=2)
    values = np.array([[0.5, 0.5], [1.0, 1.0], [0.25, 0.25]], np.float32)
    next_value = np.array([4.0, 4.0], np.float32)
    terminal = np.zeros((3, 2), bool)
    done = np.zeros((3, 2), bool)
    terminal[1, 0] = done[1, 0] = True  # row 0: its episode terminates after step 1
    done[1, 1] = True  # row 1: truncated there (the value after it still counts)
    gamma, lam = 0.9, 0.8
    adv = common.gae(rewards, values, next_value, terminal, done, gamma, lam)

    last = 2.0 + gamma * 4.0 - 0.25  # step 2, both rows: bootstraps from next_value
    assert adv[2] == pytest.approx([last, last])
    assert adv[1, 0] == pytest.approx(0.0 - 1.0)  # terminal: no value after it, nothing carried back
    assert adv[1, 1] == pytest.approx(gamma * 0.25 - 1.0)  # truncated: the next value, nothing carried back
    step0 = 1.0 + gamma * 1.0 - 0.5
    assert adv[0] == pytest.approx([step0 + gamma * lam * adv[1, 0], step0 + gamma * lam * adv[1, 1]])
    assert adv.dtype == np.float32


def test_the_same_flags_as_float_or_bool_give_the_same_estimates():
    """`baselines.ppo` passes its dones as both flags; float flags (1.0 = done) mean the same."""
    rng = np.random.default_rng(0)
    rewards, values = rng.random((6, 3), np.float32), rng.random((6, 3), np.float32)
    dones = rng.random((6, 3)) < 0.3
    as_bool = common.gae(rewards, values, values[-1], dones, dones, 0.99, 0.95)
    as_float = common.gae(rewards, values, values[-1], dones.astype(np.float32), dones.astype(np.float32), 0.99, 0.95)
    assert np.allclose(as_bool, as_float)


def test_every_setting_has_an_option_that_round_trips():
    parser = common.parser("recipe", "a recipe")
    common.add_settings(parser)
    args = parser.parse_args(["--steps", "8", "--gae-lambda", "0.5", "--agent-steps", "64"])
    settings = common.settings_from(args)
    assert settings == common.PPOSettings(steps=8, gae_lambda=0.5)
    assert (args.config, args.agent_steps, args.seed, args.out) == ("trainers_small", 64, 0, None)


def test_the_shared_hyperparameters_have_one_home():
    """The hand-written loops' PPO settings shared with ``nmmo train`` take `Args`'s defaults and
    help text (baselines/args.py), so changing one there changes every loop's."""
    from baselines.args import Args, field_docs

    assert {name: getattr(common.PPOSettings(), name) for name in common.SHARED} == {
        name: getattr(Args(), name) for name in common.SHARED}
    parser = common.parser("recipe", "a recipe")
    common.add_settings(parser)
    helps = {action.dest: action.help for action in parser._actions}
    assert all(helps[name] == field_docs()[name] for name in common.SHARED)
