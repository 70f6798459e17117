"""Stable-Baselines3's envs on nmmo: SuperSuit's vector envs over the trainer form (truncations,
seeded copies, no-respawn configs refused) and the native `SeatVecEnv` under SB3's VecEnv contract.
PPO on them and the saved model's way back (``sb3:PATH``) are tested with the recipe
(tests/recipes/test_sb3.py)."""

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the SB3 tests need the [sb3] extra")
pytest.importorskip("supersuit", reason="the SB3 tests need the [sb3] extra")

from nmmo.config import resolve  # noqa: E402
from nmmo.integrations import sb3  # noqa: E402

CONFIG = "trainers_small"


@pytest.fixture(scope="module")
def config():
    return resolve(CONFIG)


def test_the_horizon_reaches_sb3_as_a_truncation():
    """SuperSuit folds truncation into done; SB3 bootstraps only what it is told was truncated."""
    venv = sb3.vec_env(CONFIG, n_envs=1, seed=0)
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        _, _, dones, infos = venv.step(rng.integers(0, venv.action_space.nvec, size=(venv.num_envs, 3)))
        if dones.any():
            break
    assert dones.all()
    assert all(info["TimeLimit.truncated"] and info["terminal_observation"].shape == (1206,) for info in infos)
    assert all(set(info["episode"]) == {"r", "l", "t"} for info in infos)  # VecMonitor's, not ours


def test_configs_without_respawn_are_refused():
    with pytest.raises(ValueError, match="has no respawn"):
        sb3.vec_env(resolve(CONFIG).set("PLAYER_RESPAWN", False))


def test_each_copy_gets_its_own_seed_and_seeds_replay():
    first = sb3.vec_env(CONFIG, n_envs=2, seed=7)
    obs = first.reset()
    seats = len(obs) // 2
    assert not np.array_equal(obs[:seats], obs[seats:])  # SuperSuit's clones would start alike
    again = sb3.vec_env(CONFIG, n_envs=2, seed=7)
    assert np.array_equal(again.reset(), obs)
    assert first.seed(3) == [3] * seats + [4] * seats
    assert not np.array_equal(first.reset(), obs)
    with pytest.raises(ValueError, match="num_cpus=2 < n_envs=3"):
        sb3.vec_env(CONFIG, n_envs=3, seed=0, num_cpus=2)


# ---------------------------------------------------------------- the native VecEnv
def test_seat_vec_env_honours_sb3_s_contract(config):
    """Shapes, a life as an episode, the horizon as a truncation, the last observation of every done
    seat, seeds that replay; no per-agent dict on the way (the infos list aside)."""
    venv = sb3.SeatVecEnv(CONFIG, num_worlds=2, seed=3)
    assert venv.num_envs == 2 * config.PLAYER_N and venv.observation_space.shape == (venv.layout.size,)
    venv.seed(3)
    first = venv.reset()
    assert first.shape == (venv.num_envs, venv.layout.size) and first.dtype == np.float32
    tick, agent = venv.layout.slices["tick"].start, venv.layout.slices["agent_id"].start
    rng, deaths, truncations, trajectory = np.random.default_rng(0), 0, 0, []
    for step in range(config.HORIZON + 3):
        before = venv._ids.copy()
        actions = rng.integers(0, venv.action_space.nvec, size=(venv.num_envs, 3))
        obs, rewards, dones, infos = venv.step(actions)
        trajectory.append(obs.copy())
        assert obs.shape == first.shape and rewards.shape == dones.shape == (venv.num_envs,)
        assert len(infos) == venv.num_envs and all(isinstance(info, dict) for info in infos)
        for i in np.flatnonzero(dones).tolist():
            last, truncated = infos[i]["terminal_observation"], infos[i]["TimeLimit.truncated"]
            assert last.shape == (venv.layout.size,) and last[agent] == before[i]  # the ended life's own view
            if truncated:  # the horizon: the last tick's view, then the next episode at tick 0
                truncations += 1
                assert last[tick] == config.HORIZON and obs[i, tick] == 0 and step == config.HORIZON - 1
            else:  # a death: the next episode is the seat's next agent, or zeros until it spawns
                deaths += 1
                assert rewards[i] == -1 and obs[i, agent] != before[i]
                assert obs[i, agent] or not obs[i, venv.layout.slices["entity"]].any()
        assert all(("life" in info) == bool(before[i] and dones[i]) for i, info in enumerate(infos))
    venv.close()
    assert deaths > 0 and truncations > 0
    again = sb3.SeatVecEnv(CONFIG, num_worlds=2, seed=99)
    again.seed(3)  # applied at the reset: the same worlds, the same trajectory
    assert np.array_equal(again.reset(), first)
    rng = np.random.default_rng(0)
    for want in trajectory[:20]:
        got, *_ = again.step(rng.integers(0, again.action_space.nvec, size=(again.num_envs, 3)))
        assert np.array_equal(got, want)
    again.close()
