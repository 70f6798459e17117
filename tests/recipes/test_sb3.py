"""The SB3 recipe (baselines/recipes/sb3.py): PPO through SuperSuit's vector envs and SB3's
VecMonitor, and on the native SeatVecEnv; the saved model playing the raw env as ``sb3:PATH``,
in-process and in the submission sandbox, read without unpickling."""

import io
import json
import tempfile
import zipfile

import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3", reason="the SB3 tests need the [sb3] extra")
pytest.importorskip("supersuit", reason="the SB3 tests need the [sb3] extra")

import nmmo  # noqa: E402
from baselines.recipes import sb3 as recipe  # noqa: E402
from nmmo.config import resolve  # noqa: E402
from nmmo.integrations import parallel_env, policy_interface, sb3  # noqa: E402
from nmmo.policy import load_policy_class  # noqa: E402
from tests.recipes.helpers import scalars  # noqa: E402

CONFIG = "trainers_small"
AGENT_STEPS = 2048  # two rollouts of 128 steps x 8 seats: 16 seat-episodes reach the horizon


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Small MLPs: one torch thread is faster on 2 cores (restored for the other test modules)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def config():
    return resolve(CONFIG)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("sb3")
    scratch, before = tmp_path_factory.mktemp("tempdir"), tempfile.tempdir
    tempfile.tempdir = str(scratch)  # where SB3's default logger would make its SB3-* folder
    try:
        model, result = recipe.train_model(CONFIG, AGENT_STEPS, seed=0, out=out, n_steps=128, batch_size=512,
                                           n_epochs=1, progress=False, route="supersuit")
    finally:
        tempfile.tempdir = before
    result["left_in_tempdir"] = sorted(p.name for p in scratch.glob("SB3-*"))
    return model, result, str(out / "model.zip")


def test_ppo_learns_through_supersuit_and_vecmonitor(trained, config):
    """On the old main this failed three ways: SB3 read our "episode" infos (KeyError 'r'),
    MlpPolicy refused the Dict observation, and respawn changed the agent set under SuperSuit."""
    model, result, path = trained
    assert result["agent_steps"] == model.num_timesteps == AGENT_STEPS
    assert result["agent_steps_per_s"] > 0 and result["model"] == path
    episodes = list(model.ep_info_buffer)  # VecMonitor's {r, l, t}: a seat's episode runs to the horizon
    assert len(episodes) == result["episodes"] == 2 * config.PLAYER_N
    # through deaths and respawns (a life without food lasts 14 ticks); the env skips the rare tick
    # in which every agent died at once, so a few ticks may be missing
    assert all(config.HORIZON - 4 <= e["l"] <= config.HORIZON for e in episodes)
    assert result["mean_seat_return"] == pytest.approx(np.mean([e["r"] for e in episodes]))
    assert zipfile.ZipFile(path).testzip() is None
    assert result.pop("left_in_tempdir") == []  # no empty SB3-* log folder per run in the user's /tmp


def test_trained_actions_are_accepted_by_the_trainer_form(trained, config):
    model = trained[0]
    env = parallel_env(CONFIG, seed=5, mask=False)
    obs, _ = env.reset()
    space = env.action_space("player_0")
    invalid = died = 0
    for _ in range(24):
        rows, _ = model.predict(np.stack([obs[a] for a in env.agents]))
        assert rows.shape == (config.PLAYER_N, 3) and all(space.contains(row) for row in rows)
        obs, _, _, _, infos = env.step(dict(zip(env.agents, rows, strict=True)))
        invalid += sum(info["invalid_actions"] for info in infos.values())
        died += sum(info["died"] for info in infos.values())
        assert env.agents == env.possible_agents  # seats stay through deaths and respawns
    assert died > 0  # lives ended (and were replaced) inside the slice
    assert invalid > 0  # without masks some sub-actions are masked: dropped and counted, never raised


def test_saved_model_plays_back_as_sb3_spec(trained, config):
    """``sb3:PATH`` rebuilds the same network from the zip's weights alone: its argmax actions are
    SB3's deterministic predictions; sampled actions replay for a seed."""
    model, _, path = trained
    greedy = sb3.policy_class(path, deterministic=True)(config)
    env = nmmo.Env(config, seed=1)
    obs, _ = env.reset()
    live = {a: o for a, o in obs.items() if a in env.agents}
    flat = policy_interface(mask=False).observations(live)
    expected, _ = model.predict(np.stack(list(flat.values())), deterministic=True)
    actions = greedy.act(live)
    got = np.array([[a["Move"]["Direction"], a["Attack"]["Style"], a["Attack"]["Target"]] for a in actions.values()])
    assert list(actions) == list(live) and np.array_equal(got, expected)
    assert set(greedy.last_values) == set(live)

    cls = load_policy_class(f"sb3:{path}")
    one, two = cls(config), cls(config)
    one.reset(4)
    two.reset(4)
    for _ in range(12):
        live = {a: o for a, o in obs.items() if a in env.agents}
        actions = one.act(live)
        assert actions == two.act(live)
        obs, *_ = env.step(actions)


def test_saved_model_plays_in_the_submission_sandbox(trained, config):
    from tests.integrations.helpers import plays_in_the_sandbox

    plays_in_the_sandbox(f"sb3:{trained[2]}", config, seed=9)


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def _saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


class _Boom:
    """Unpickling it would create a file."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_files_that_are_not_sb3_models_are_refused(trained, tmp_path, config):
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    with pytest.raises(ValueError, match=f"sb3:{text}: not a zip"):
        sb3.policy_class(str(text))
    with pytest.raises(ValueError, match="no such file"):
        load_policy_class(f"sb3:{tmp_path / 'missing.zip'}")
    empty = _zip(tmp_path / "empty.zip", {"data": "{}"})
    with pytest.raises(ValueError, match=f"sb3:{empty}: the zip has no policy.pth"):
        sb3.policy_class(empty)
    pickled = _zip(tmp_path / "pickled.zip", {"policy.pth": _saved({"action_net.weight": _Boom(tmp_path / "ran")})})
    with pytest.raises(ValueError, match="not a weights-only state dict"):
        sb3.policy_class(pickled)
    assert not (tmp_path / "ran").exists()

    state = dict(sb3.read_model(trained[2])["state"])
    state["action_net.weight"] = torch.zeros(7, state["action_net.weight"].shape[1])  # actions for another config
    state["action_net.bias"] = torch.zeros(7)
    wrong = _zip(tmp_path / "wrong.zip", {"policy.pth": _saved(state)})
    cls = sb3.policy_class(wrong)  # the file is well-formed; the config decides whether it fits
    with pytest.raises(ValueError, match=f"sb3:{wrong}: the weights do not fit config 'trainers_small'"):
        cls(config)


def test_the_command_learns_on_the_seat_vec_env_and_its_model_plays_back(tmp_path, config, capsys):
    """``python -m baselines.recipes.sb3`` (its `main`): the native route by default, one progress
    line per rollout, the result as the last line of output (what bench_trainers.py parses)."""
    returned = recipe.main(["--agent-steps", "1024", "--out", str(tmp_path), "--n-steps", "64", "--batch-size", "256",
                            "--n-epochs", "1"])
    lines = capsys.readouterr().out.strip().splitlines()
    result = json.loads(lines[-1])
    assert result == returned and [line.split(" agent-steps")[0] for line in lines[:-1]] == ["sb3: 512", "sb3: 1024"]
    assert result["route"] == "native" and result["agent_steps"] >= 1024 and result["episodes"] > 0  # a life each
    assert [e.step for e in scalars(tmp_path / "tensorboard", "train/entropy_loss")] == [1024]  # SB3's own output
    agent = load_policy_class(f"sb3:{result['model']}")(config)
    env = nmmo.Env(config, seed=1)
    obs, _ = env.reset()
    actions = agent.act(obs)
    assert set(actions) == set(obs)
