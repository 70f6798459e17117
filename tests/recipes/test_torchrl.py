"""The TorchRL recipe (baselines/recipes/torchrl.py) on the native env: the masked actor, TorchRL's
centralised (MAPPO) and per-seat (IPPO) critics, a PPO step with its multi-agent GAE, and the command
whose saved actor plays the raw env as ``torchrl:PATH``."""

import json

import numpy as np
import pytest
import torch

pytest.importorskip("torchrl", reason="the TorchRL tests need the [torchrl] extra")

from tensordict import TensorDict  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402

import nmmo  # noqa: E402
from baselines.recipes import torchrl as recipe  # noqa: E402
from baselines.recipes.common import PPOSettings  # noqa: E402
from nmmo.integrations.torchrl import ACTION, ACTION_MASK, LOG_PROB, OBS, VALUE  # noqa: E402
from nmmo.integrations.torchrl_env import NativeEnv  # noqa: E402
from nmmo.policy import load_policy_class  # noqa: E402
from tests.recipes.helpers import scalars  # noqa: E402

CONFIG = nmmo.config.resolve("trainers_small")
SMALL = PPOSettings(steps=16, epochs=1, minibatches=2, hidden=32, layers=1)


@pytest.fixture(scope="module")
def env():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: one thread is faster on 2 cores
    torch.manual_seed(0)
    native = NativeEnv(CONFIG, num_worlds=2, seed=0)
    yield native
    native.close()
    torch.set_num_threads(threads)


def test_the_actor_keeps_to_the_masks_and_one_ppo_step_moves_actor_and_critic(env):
    actor, critic, _ = recipe.make_modules(env, SMALL)
    collector = Collector(env, actor, frames_per_batch=32, total_frames=32, auto_register_policy_transforms=False)
    data = next(iter(collector))
    collector.shutdown()
    assert data.batch_size == (2, 16)  # [worlds, time]
    mask, action = data[ACTION_MASK], data[ACTION]
    for i, part in enumerate(mask.split([5, 3, mask.shape[-1] - 8], dim=-1)):
        assert part.any(-1).all() and part.gather(-1, action[..., i:i + 1]).all(), f"part {i}"
    assert torch.isfinite(data[LOG_PROB]).all()

    loss = recipe.make_loss(actor, critic, SMALL)
    with torch.no_grad():
        loss.value_estimator(data, params=loss.critic_network_params, target_params=loss.target_critic_network_params)
    assert data["advantage"].shape == (2, 16, CONFIG.PLAYER_N, 1)  # per seat, over time
    before = [p.detach().clone() for p in loss.parameters()]
    parts = loss(data.reshape(-1))
    total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
    assert torch.isfinite(total)
    optim = torch.optim.Adam(loss.parameters(), lr=1e-3)
    total.backward()
    optim.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, loss.parameters(), strict=True))


def test_mappo_s_critic_reads_every_seat_of_its_world_and_ippo_s_its_own(env):
    """TorchRL's convention for a centralised critic: `MultiAgentMLP(centralized=True)` over all
    seats' observations of one world, no global state; worlds stay apart either way."""
    obs = torch.rand(2, CONFIG.PLAYER_N, env.layout.size)
    other = obs.clone()
    other[0, 1] += 1.0  # seat 1 of world 0 sees something else
    for centralized in (True, False):
        critic = recipe.make_modules(env, SMALL, centralized=centralized)[1]
        values = [critic(TensorDict({OBS: o}, batch_size=[2]))[VALUE].squeeze(-1) for o in (obs, other)]
        changed = ~torch.isclose(values[0], values[1])
        assert changed[0, 0].item() is centralized  # seat 0's value moves with seat 1's view under MAPPO only
        assert changed[0, 1] and not changed[1].any()


def test_the_command_trains_and_its_actor_plays_back_as_torchrl_spec(tmp_path, capsys):
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    returned = recipe.main(["--agent-steps", "128", "--out", str(tmp_path), "--steps", "8", "--epochs", "1",
                            "--hidden", "32", "--layers", "1", "--ippo"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # the line bench_trainers.py reads
    assert result == returned and torch.get_num_threads() == threads and torch.equal(torch.get_rng_state(), rng)
    assert result["agent_steps"] == 128 and result["agent_steps_per_s"] > 0 and result["centralized"] is False
    saved = torch.load(tmp_path / "policy.pt", weights_only=True)
    assert saved["agent_steps"] == 128 and saved["arch"]["hidden"] == 32
    agent = load_policy_class(f"torchrl:{result['policy']}")(CONFIG)
    agent.reset(seed=1)
    raw = nmmo.Env(CONFIG, seed=1)
    obs, _ = raw.reset(seed=1)
    for _ in range(8):
        obs, _, _, _, infos = raw.step(agent.act(obs))
        assert not any(info.get("invalid_actions") for info in infos.values())
    assert np.isfinite(result["loss_critic"])
    assert [e.step for e in scalars(tmp_path / "tensorboard", "loss_critic")] == [128]  # TorchRL's own logger
