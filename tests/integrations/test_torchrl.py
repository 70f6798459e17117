"""TorchRL on the trainer form: TorchRL's PettingZooWrapper (its spec check, and a collector with
random valid actions through respawn to the horizon), and a saved actor playing the raw env as
``torchrl:PATH``. The recipe's modules and loop are tested in tests/recipes/test_torchrl.py."""

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl", reason="the TorchRL tests need the [torchrl] extra")

from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import nmmo  # noqa: E402
from nmmo.config import resolve  # noqa: E402
from nmmo.core.actions import flat_action_sizes  # noqa: E402
from nmmo.integrations import torchrl as trl  # noqa: E402
from nmmo.interfaces import SLOT_INFO_KEYS  # noqa: E402
from nmmo.policy import load_policy_class  # noqa: E402

CONFIG = "trainers_small"
FRAMES = 256  # env steps: 2048 agent-steps, two episodes of 128 ticks


@pytest.fixture(scope="module")
def config():
    return resolve(CONFIG)


@pytest.fixture(scope="module")
def setup(config):
    """The wrapped env and an untrained actor network (what ``torchrl:PATH`` files hold)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: one thread is faster on 2 cores
    torch.manual_seed(0)
    wrapped = trl.env(CONFIG, seed=0)
    net = trl.PolicyNet(wrapped.observation_spec[trl.OBS].shape[-1], flat_action_sizes(config), hidden=64, layers=1)
    yield wrapped, net
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def batch(setup):
    """A collector's batch of the env's own random actions (`rand_action` reads the mask the wrapper
    puts on the action spec each step; TorchRL's `RandomPolicy` keeps a copy of the spec without it)."""
    wrapped = setup[0]
    collector = Collector(wrapped, wrapped.rand_action, frames_per_batch=FRAMES, total_frames=FRAMES,
                          auto_register_policy_transforms=False)
    data = next(iter(collector))
    collector.shutdown()
    return data


def test_wrapper_groups_seats_and_passes_check_env_specs(setup, config):
    wrapped = setup[0]
    assert wrapped.group_map == {"player": [f"player_{i}" for i in range(config.PLAYER_N)]}
    spec = wrapped.observation_spec
    assert spec[trl.OBS].shape[0] == config.PLAYER_N
    assert spec[trl.ACTION_MASK].shape == (config.PLAYER_N, sum(flat_action_sizes(config)))
    assert spec[trl.STATE].shape == wrapped.state_space.shape  # the centralized critic's input
    assert set(spec["player", "info"].keys()) == set(SLOT_INFO_KEYS)
    action = wrapped.full_action_spec[trl.ACTION]
    assert action.nvec[0].tolist() == list(flat_action_sizes(config))
    check_env_specs(wrapped, seed=0)


def test_collector_runs_through_respawn_to_the_horizon(setup, batch, config):
    assert batch.numel() * config.PLAYER_N >= 2000
    done = batch["next", "done"].squeeze(-1).nonzero().flatten().tolist()
    assert done == [config.HORIZON - 1, 2 * config.HORIZON - 1]  # not at the first death
    info = batch["next", "player", "info"]
    assert info["died"].sum() > 0
    assert len(info["agent_id"].unique()) > config.PLAYER_N  # respawned ids kept their seats
    assert batch["player", "mask"].all()  # with respawn every seat stays in the episode
    assert batch["state"].shape == (FRAMES, *setup[0].state_space.shape)
    assert all(v.dtype == torch.float32 for v in info.values())
    mask, action = batch[trl.ACTION_MASK], batch[trl.ACTION]
    for i, part in enumerate(mask.split([5, 3, mask.shape[-1] - 8], dim=-1)):
        assert part.any(-1).all() and part.gather(-1, action[..., i:i + 1]).all(), f"part {i}"
    assert info["invalid_actions"].sum() == 0  # the random actions kept to the masks


def test_saved_actor_plays_the_raw_env_as_torchrl_spec(setup, config, tmp_path):
    path = trl.save_weights(setup[1], tmp_path / "policy.pt")
    cls = load_policy_class(f"torchrl:{path}")
    env = nmmo.Env(config, seed=3)
    obs, _ = env.reset(seed=3)
    a, b = cls(config), cls(config)
    a.reset(seed=5)
    b.reset(seed=5)
    invalid = 0
    for _ in range(48):
        actions = a.act(obs)
        assert set(actions) == set(obs)
        replay = b.act(obs)  # the same seed draws the same actions
        assert all(actions[k] == replay[k] for k in actions)
        obs, _, _, _, infos = env.step(actions)
        invalid += sum(int(info.get("invalid_actions", 0)) for info in infos.values())
    assert invalid == 0
    greedy = trl.policy_class(str(path), greedy=True)(config)
    assert set(greedy.act(obs)) == set(obs)
    with pytest.raises(ValueError, match="PLAYER_N_OBS"):  # weights for another action layout
        cls(resolve(CONFIG).set("PLAYER_N_OBS", 8))


def test_bad_files_are_refused(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a torch file")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weight": torch.zeros(3)}, foreign)
    pickled = tmp_path / "pickled.pt"
    torch.save({"format": trl.FORMAT, "obj": np.random.default_rng(0)}, pickled)
    broken = tmp_path / "broken.pt"
    torch.save({"format": trl.FORMAT, "arch": {"obs_dim": 4, "nvec": [5, 3, 17], "hidden": 8, "layers": 1},
                "state_dict": {}}, broken)
    for path, reason in [(tmp_path / "missing.pt", "no weights file"), (garbage, "weights_only"),
                         (foreign, "no format"), (pickled, "weights_only"), (broken, "do not fit")]:
        with pytest.raises(ValueError, match=reason):
            load_policy_class(f"torchrl:{path}")
