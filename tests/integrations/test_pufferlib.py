"""PufferLib (pufferlib-core 3.0.19): the native env over the engine's vector env, its PettingZoo
emulation and vector envs on the trainer form, and the ``pufferlib:`` loader's refusals. The PPO
loop (baselines/recipes/pufferlib.py) is tested in tests/recipes/test_pufferlib.py."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

pytest.importorskip("pufferlib")
torch = pytest.importorskip("torch")

import pufferlib  # noqa: E402

import nmmo  # noqa: E402
from nmmo.integrations import pufferlib as puffer  # noqa: E402

CONFIG = nmmo.config.resolve("trainers_small")
SEATS = CONFIG.PLAYER_N


def masks_of(vecenv, obs: np.ndarray) -> np.ndarray:
    """The action masks inside PufferLib's packed observation bytes."""
    return np.asarray(obs).view(vecenv.driver_env.obs_dtype)["action_mask"].reshape(len(obs), -1)


def test_serial_vector_env_runs_masked_random_actions_and_aggregates_infos():
    vecenv = puffer.vec_env(2, CONFIG, backend="Serial", seed=7)
    assert vecenv.num_agents == 2 * SEATS
    space = vecenv.single_action_space
    space.seed(0)
    obs, _ = vecenv.reset(seed=7)
    assert puffer.episode_seeds(vecenv) == [7, 8]  # each copy its own seed
    copies = np.asarray(obs).reshape(2, SEATS, -1)
    assert not np.array_equal(copies[0], copies[1])

    stats, agent_steps, truncated_at = defaultdict(list), 0, []
    for step in range(150):  # 2400 agent-steps, through the horizon (128) and PufferLib's auto-reset
        actions = np.stack([space.sample(mask=m) for m in masks_of(vecenv, obs)]).astype(np.int32)
        obs, rewards, terminals, truncations, infos = vecenv.step(actions)
        agent_steps += len(actions)
        assert np.isfinite(rewards).all() and not terminals.any()  # respawn: seats never terminate
        if truncations.all():
            truncated_at.append(step)
        for key, values in puffer.info_numbers(infos).items():
            stats[key].extend(values)
        # PufferLib's own averaging (Serial does it on every send; pufferl logs the unrolled means)
        for info in infos:
            for key, value in pufferlib.unroll_nested_dict(info):
                assert math.isfinite(float(np.mean(value))), key
    vecenv.close()

    assert agent_steps >= 2400
    # every seat of both copies truncated together at the horizon, once (a tick with nobody alive
    # passes without a step, so the step count can fall short of HORIZON)
    assert len(truncated_at) == 1 and truncated_at[0] < CONFIG.HORIZON
    seeds = puffer.episode_seeds(vecenv)
    assert seeds[0] != seeds[1] and not set(seeds) & {7, 8}  # the auto-reset drew fresh, distinct episodes
    assert sum(stats.get("invalid_actions", [])) == 0  # the masks survived the emulation and were respected
    # sparse infos: lifetime numbers only for lives that ended, so their means are means over lives
    assert stats["life_ended"] and set(stats["life_ended"]) == {1.0}
    assert len(stats["life_lifetime"]) == len(stats["life_ended"])
    assert all(1 <= lifetime <= CONFIG.HORIZON for lifetime in stats["life_lifetime"])


def test_unmasked_random_actions_are_reported_invalid():
    """The control for the zero count above: sampling without the mask gives invalid actions."""
    vecenv = puffer.vec_env(1, CONFIG, backend="Serial", seed=3)
    vecenv.reset(seed=3)
    space, invalid = vecenv.single_action_space, 0
    space.seed(0)
    for _ in range(5):
        *_, infos = vecenv.step(np.stack([space.sample() for _ in range(SEATS)]).astype(np.int32))
        invalid += sum(puffer.info_numbers(infos).get("invalid_actions", []))
    vecenv.close()
    assert invalid > 0


def test_multiprocessing_copies_get_their_own_seeds():
    """Two workers with two copies each: without `seed_offset` copies 1 and 2 would share a seed."""
    serial = puffer.vec_env(4, CONFIG, backend="Serial", seed=5)
    serial.async_reset(5)
    expected = np.array(serial.recv()[0]).reshape(4, SEATS, -1)
    serial.close()
    multi = puffer.vec_env(4, CONFIG, backend="Multiprocessing", seed=5, num_workers=2, overwork=True)
    try:
        multi.async_reset(5)
        got = np.array(multi.recv()[0]).reshape(4, SEATS, -1)
    finally:
        multi.close()
    assert np.array_equal(got, expected)
    assert len({copy.tobytes() for copy in got}) == 4


def native_actions(env, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random allowed action per row, from the mask inside the native env's observation."""
    mask = np.asarray(obs)[:, env.layout.size:]
    parts = np.split(mask, np.cumsum(env.single_action_space.nvec)[:-1], axis=1)
    return np.stack([np.argmax(part + rng.random(part.shape), axis=1) for part in parts], axis=1).astype(np.int32)


def test_native_env_seats_respawn_horizon_masks_and_life_infos():
    """The native env as `pufferlib.vector.make(..., backend=PufferEnv)` runs it, through the horizon:
    the trainer form's seats (tested as the emulated env above is), its rows the engine's."""
    env = pufferlib.vector.make(puffer.native_creator(CONFIG, 2), env_kwargs={"seed": 7}, backend=pufferlib.PufferEnv)
    assert isinstance(env, puffer.NativeEnv) and env.num_agents == 2 * SEATS
    assert env.single_observation_space.shape == (env.layout.size + 5 + 3 + CONFIG.PLAYER_N_OBS + 1,)
    env.async_reset(7)
    obs = env.recv()[0]
    rng, stats, truncated_at, empty_seen = np.random.default_rng(0), defaultdict(list), [], 0
    for step in range(150):
        env.send(native_actions(env, obs, rng))
        obs, rewards, terminals, truncations, _, infos, _, masks = env.recv()
        assert np.isfinite(rewards).all() and not terminals.any() and masks.all()  # respawn: seats never end
        engine = env.vec.buffers
        flat_mask = np.concatenate([engine["move_mask"], engine["style_mask"], engine["target_mask"]], axis=1)
        alive = engine["alive"]
        assert np.array_equal(obs[alive, env.layout.size:], flat_mask[alive])  # the engine's masks, as they are
        if not alive.all():  # a seat between lives: only "stay", any style, the no-op target; AgentId 0
            empty_seen += 1
            empty_mask = np.r_[[0, 0, 0, 0, 1], [1, 1, 1], [0] * CONFIG.PLAYER_N_OBS, 1]
            assert (obs[~alive, env.layout.size:] == empty_mask).all()
            gone = ~alive & ~engine["terminated"]  # no final observation to show: zeros, AgentId 0
            assert (obs[gone, env.layout.slices["agent_id"]] == 0).all()
            assert (obs[~alive & engine["terminated"], env.layout.slices["agent_id"]] > 0).all()  # the dying: theirs
            assert not obs[gone][:, env.layout.slices["entity"]].any()
        if truncations.all():
            truncated_at.append(step)
            assert (obs[:, env.layout.slices["tick"]] == 0).all()  # the rows hold the new episode
        for key, values in puffer.info_numbers(infos).items():
            stats[key].extend(values)
    env.close()
    assert len(truncated_at) == 1 and truncated_at[0] < CONFIG.HORIZON and empty_seen
    assert stats["life_ended"] and set(stats["life_ended"]) == {1.0}
    assert len(stats["life_lifetime"]) == len(stats["life_ended"])
    assert all(1 <= lifetime <= CONFIG.HORIZON for lifetime in stats["life_lifetime"])


def test_native_env_without_respawn_ends_each_seat_with_its_agent():
    config = nmmo.config.resolve("trainers_small")
    config.set("PLAYER_RESPAWN", False)
    env = puffer.NativeEnv(config, 1, seed=3)
    obs, _ = env.reset(3)
    rng, ended, resets = np.random.default_rng(3), np.zeros(SEATS, bool), 0
    for _ in range(config.HORIZON + 5):
        live = env.masks.copy()
        obs, rewards, terminals, truncations, _ = env.step(native_actions(env, obs, rng))
        assert not (terminals & truncations).any() and not (terminals & ~live).any()  # a seat ends once
        if (obs[:, env.layout.slices["tick"]] == 0).all():  # nobody left (or the horizon): the world reset
            resets += 1
            assert env.masks.all() and (terminals | truncations).all()
            ended[:] = False
        else:
            assert np.array_equal(env.masks, ~ended)  # a seat ending now still counts; then it is out
            ended |= terminals
    env.close()
    assert resets >= 1


def test_no_per_agent_dict_between_the_engine_and_the_native_env(monkeypatch):
    """Neither dict translation runs for the native env; the trainer form needs both (the control)."""
    from nmmo.integrations import parallel_env

    from .helpers import forbid_dict_translations

    forbid_dict_translations(monkeypatch)
    env = puffer.NativeEnv(CONFIG, 2, seed=1)
    obs, _ = env.reset(1)
    rng = np.random.default_rng(1)
    for _ in range(10):
        obs, *_ = env.step(native_actions(env, obs, rng))
    env.close()
    with pytest.raises(AssertionError, match="per-agent dict"):
        parallel_env(CONFIG, seed=1).reset(seed=1)


def test_policy_class_refuses_other_files(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"model": {}}, path)
    with pytest.raises(ValueError, match="not a checkpoint"):
        puffer.policy_class(str(path))
