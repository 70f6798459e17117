"""The PufferLib recipe (baselines/recipes/pufferlib.py): its command trains on the native env,
leaves the caller's torch settings alone, prints its result as one JSON line, and saves a
checkpoint that plays as ``pufferlib:PATH`` in-process and as a sandboxed submission."""

import json
import math

import pytest

pytest.importorskip("pufferlib")
torch = pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines.recipes import pufferlib as recipe  # noqa: E402
from nmmo.integrations import pufferlib as puffer  # noqa: E402
from tests.recipes.helpers import scalars  # noqa: E402

CONFIG = nmmo.config.resolve("trainers_small")
SEATS = CONFIG.PLAYER_N


def test_the_command_trains_a_tiny_budget_to_a_playable_checkpoint(tmp_path, capsys):
    threads, rng_state = torch.get_num_threads(), torch.get_rng_state()
    returned = recipe.main(["--agent-steps", "512", "--seed", "0", "--out", str(tmp_path), "--steps", "16"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # the line bench_trainers.py reads
    assert result == returned and result["route"] == "native" and result["settings"]["steps"] == 16
    assert torch.get_num_threads() == threads and torch.equal(torch.get_rng_state(), rng_state)
    assert 512 <= result["agent_steps"] <= 512 + 16 * 2 * SEATS  # whole rollouts of 16 steps x 16 seats
    assert result["seconds"] > 0
    assert result["agent_steps_per_s"] == pytest.approx(result["agent_steps"] / result["seconds"])
    max_entropy = sum(math.log(n) for n in (5, 3, CONFIG.PLAYER_N_OBS + 1))
    assert 0 < result["entropy"] <= max_entropy
    assert all(math.isfinite(result[key]) for key in ("policy_loss", "value_loss"))
    assert [e.step for e in scalars(tmp_path / "tensorboard", "loss/entropy")][-1] == result["agent_steps"]

    cls = puffer.policy_class(result["checkpoint"])
    agent = cls(CONFIG)
    agent.reset(0)
    env = nmmo.Env(CONFIG, seed=1)
    obs, _ = env.reset()
    for _ in range(5):
        actions = agent.act(obs)
        assert set(actions) == set(obs)
        obs, _, _, _, infos = env.step(actions)
        assert not any(info.get("invalid_actions") for info in infos.values())

    from evaluation.submission import SubprocessPolicy, make_handle  # a checkpoint file is a submission

    handle = make_handle(f"pufferlib:{result['checkpoint']}", CONFIG)
    assert isinstance(handle, SubprocessPolicy)
    handle.reset(0)
    try:
        handle.submit({a: o for a, o in obs.items() if a in env.agents})
        assert set(handle.collect()) == set(env.agents)
    finally:
        handle.close()
    assert handle.faults.messages == []


def test_a_checkpoint_of_the_two_layer_network_without_a_layers_key_still_plays(tmp_path):
    """Checkpoints written before `Policy` took `layers` name no such key: they load as two layers."""
    policy = puffer.Policy(10, [5, 3, CONFIG.PLAYER_N_OBS + 1], hidden=8)
    data = {"format": puffer.CHECKPOINT_FORMAT, "model": policy.state_dict(),
            "model_kwargs": {k: v for k, v in policy.kwargs.items() if k != "layers"}}
    torch.save(data, tmp_path / "old.pt")
    agent = puffer.policy_class(str(tmp_path / "old.pt"))(CONFIG)
    assert [type(m).__name__ for m in agent.policy.policy.trunk] == ["Linear", "Tanh", "Linear", "Tanh"]
