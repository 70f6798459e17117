"""The fused engine (`nmmo.engines.fused`): K worlds in one set of tables give, byte for byte, what K lone
envs give for the same seeds and actions, through resets, combat, NPCs, respawns and deaths."""

import numpy as np
import pytest

import nmmo
from nmmo import config as cfg
from nmmo.core.rules import nobody_returns
from nmmo.engines import fused
from nmmo.engines.buffers import FINAL_PREFIX
from nmmo.engines.vector import VectorEnv
from nmmo.testing import check_state


class World(cfg.Small, cfg.Resource, cfg.Combat, cfg.Progression, cfg.NPC):
    """A small world with all four systems, where fights and deaths are frequent."""


def respawning() -> cfg.Config:
    return World().update({"PLAYER_N": 16, "NPC_N": 16, "HORIZON": 45, "MAP_N": 3, "NPC_SPAWN_ATTEMPTS": 4})


def dying() -> cfg.Config:
    """No respawns and hungry agents: worlds empty out (and restart) at different ticks; teams
    with team spirit, no friendly fire, achievement rewards."""
    return World().update({"PLAYER_N": 16, "NPC_N": 12, "HORIZON": 90, "MAP_N": 3, "PLAYER_RESPAWN": False,
                           "RESOURCE_FOOD_DECAY": 3, "REWARD_ACHIEVEMENT": True, "PLAYER_TEAM_SIZE": 2,
                           "PLAYER_TEAM_SPIRIT": 0.3, "COMBAT_FRIENDLY_FIRE": False})


def random_actions(obs: dict, rng: np.random.Generator) -> np.ndarray:
    """Random moves and attacks, each drawn from its mask (the style sometimes out of reach)."""
    rows = obs["move_mask"].shape[0]
    actions = np.empty((rows, 3), dtype=np.int64)
    actions[:, 0] = np.argmax(rng.random((rows, 5)) * obs["move_mask"], axis=1)
    actions[:, 1] = rng.integers(0, 3, rows)
    actions[:, 2] = np.argmax(rng.random(obs["target_mask"].shape) * obs["target_mask"], axis=1)
    return actions


def outputs(out) -> list[np.ndarray]:
    return [*(out.obs[name].copy() for name in sorted(out.obs)), out.reward.copy(), out.terminated.copy(),
            out.truncated.copy(), out.alive.copy(), out.agent_id.copy(), out.episodes.copy(), out.episode_rows.copy(),
            out.reset.copy()]


def with_final(out) -> list[np.ndarray]:
    """`outputs`, and on a step where every world reset together, their final observations."""
    final = [out.final_obs[name].copy() for name in sorted(out.final_obs)] if out.truncated.any() else []
    return [*outputs(out), *final]


def assert_same_state(got: nmmo.core.state.State, want: nmmo.core.state.State) -> None:
    for name in fused.COLUMNS:
        assert np.array_equal(getattr(got.entities, name), getattr(want.entities, name)), name
    for name in ("material", "occupancy", "water_adjacent", "depleted"):
        assert np.array_equal(getattr(got.tiles, name), getattr(want.tiles, name)), name
    assert (got.tick, got.next_player_id, got.next_npc_id) == (want.tick, want.next_player_id, want.next_npc_id)


class LoneEnvs:
    """K lone envs stepped as a vector env steps them: what world k of the fused engine must equal."""

    def __init__(self, config: cfg.Config, seeds: list[int]) -> None:
        self.config, self.envs = config, [nmmo.Env(config, seed=s) for s in seeds]
        for env in self.envs:
            env.reset()

    def step(self, k: int, actions: np.ndarray):
        env = self.envs[k]
        out = env.step_arrays(actions)
        if env.done or (nobody_returns(self.config) and not out.alive.any()):
            env.reset()
        return out


@pytest.mark.parametrize("make_config, steps", [(respawning, 230), (dying, 220)])
def test_fused_worlds_equal_lone_envs_and_the_loop_engine(make_config, steps, monkeypatch):
    monkeypatch.setattr(fused, "REBASE_AT", 60)  # the clock is also moved back a few times on the way
    config, k, seed = make_config(), 3, 11
    seeds = np.random.SeedSequence(seed).generate_state(k).tolist()
    rng = np.random.default_rng(0)
    episodes, resets, finals = 0, np.zeros(k, dtype=int), 0
    with VectorEnv(config, num_envs=k, seed=seed) as vec, VectorEnv(config, num_envs=k, seed=seed,
                                                                   engine="loop") as loop:
        assert vec.engine == "fused" and loop.engine == "loop"
        lone = LoneEnvs(config, seeds)
        obs, loop_obs = vec.reset(), loop.reset()
        for name in obs:
            assert np.array_equal(obs[name], loop_obs[name])
        worlds = vec._impl.block.worlds
        for _ in range(steps):
            actions = random_actions(obs, rng)
            out, loop_out = vec.step(actions), loop.step(actions)
            got, want = outputs(out), outputs(loop_out)
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            for w in range(k):  # world w of the fused engine is a lone env with world w's seed
                rows = slice(w * config.PLAYER_N, (w + 1) * config.PLAYER_N)
                single = lone.step(w, actions[rows])
                assert np.array_equal(single.rewards, out.reward[rows])
                assert np.array_equal(single.terminated, out.terminated[rows])
                assert np.array_equal(lone.envs[w]._obs.entity, out.obs["entity"][rows])
                assert np.array_equal(lone.envs[w]._obs.tile, out.obs["tile"][rows])
                state = worlds.world_state(w)
                check_state(state)
                assert_same_state(state, lone.envs[w].realm.state)
                assert out.reset[rows].all() == (state.tick == 0) == out.reset[rows].any()  # the engine says which
                if state.tick == 0:  # the world's last observations, as its episode ended, kept
                    for name, values in out.final_obs.items():
                        assert np.array_equal(values[rows], loop_out.final_obs[name][rows]), name
                    finals += int(out.final_obs["entity"][rows].any())
                resets[w] += state.tick == 0
            episodes += len(out.episodes)
            obs = out.obs
    assert episodes > 50 and resets.min() >= 2  # agents died and every world restarted more than once
    assert finals == resets.sum()  # every ended episode left its last observations
    if make_config is dying:
        assert len(set(worlds.start.tolist())) == k  # the worlds restarted at different ticks


def test_the_fused_engine_fights_and_spawns():
    """The comparison above is only as strong as what happens in it: attacks land, NPCs and agents die and respawn."""
    config = respawning()
    rng = np.random.default_rng(1)
    deaths, npc_spawns, kills = 0, 0, 0
    with VectorEnv(config, num_envs=2, seed=3) as vec:
        obs = vec.reset()
        worlds = vec._impl.block.worlds
        for _ in range(40):
            before = worlds.next_npc_id.copy()
            out = vec.step(random_actions(obs, rng))
            deaths += out.terminated.sum()
            npc_spawns += (before - worlds.next_npc_id).sum()
            kills += worlds.state.entities.player_kills.sum()
            obs = out.obs
    assert deaths > 10 and npc_spawns > 0 and kills > 0


def test_a_world_loaded_from_a_lone_env_reads_back_the_same():
    config = respawning()
    env = nmmo.Env(config, seed=5)
    env.reset()
    rng = np.random.default_rng(2)
    for _ in range(30):
        env.step_arrays(random_actions({"move_mask": env._obs.move_mask, "target_mask": env._obs.target_mask}, rng))
    worlds = fused.FusedWorlds(config, [1, 2, 3])
    for k in range(3):
        worlds.reset_world(k)
    worlds.state.tick = 500  # any clock: world times are relative to it
    worlds.load(1, env)
    assert_same_state(worlds.world_state(1), env.realm.state)
    assert worlds.ticks().tolist() == [500, 30, 500]
    with pytest.raises(NotImplementedError, match="world_state"):
        worlds.players  # noqa: B018 - ids repeat across worlds: no id-keyed views
    with pytest.raises(NotImplementedError, match="world_state"):
        worlds.npcs  # noqa: B018


def check_restore(config: cfg.Config, seeds: list[int], rng: np.random.Generator) -> None:
    """Play a block past a reset of its worlds, restore a second one from the episodes' seeds and
    actions, and step both on: the same finished rows and buffers, byte for byte."""

    def block():
        buffers = nmmo.engines.vector.allocate_buffers(config, len(seeds) * config.PLAYER_N)
        return fused.FusedBlock(config, seeds, buffers, 0), buffers

    first, buffers = block()
    first.reset()
    logs, starts = [[] for _ in seeds], first.episode_seeds()
    for _ in range(60):  # past a reset of every world (HORIZON 45)
        actions = random_actions(buffers, rng)
        first.step(actions)
        for k, tick in enumerate(first.ticks()):
            if tick == 0:
                logs[k], starts[k] = [], first.episode_seeds()[k]
            else:
                logs[k].append(actions[k * config.PLAYER_N:(k + 1) * config.PLAYER_N])
    second, again = block()
    second.restore(starts, logs)
    for _ in range(20):
        actions = random_actions(buffers, rng)
        a, b = first.step(actions), second.step(actions)
        assert np.array_equal(a, b)
        for name in buffers:  # the final observations are history (the last reset's), not state
            if name != "_bytes" and not name.startswith(FINAL_PREFIX):
                assert np.array_equal(buffers[name], again[name]), name


def test_a_block_restored_from_seeds_and_actions_goes_on_identically():
    """What the Ray backend does with a killed actor: a new block replays each world's episode."""
    check_restore(respawning(), [7, 8], np.random.default_rng(3))


def test_custom_env_classes_run_on_the_loop_engine():
    class Bonus(nmmo.Env):
        def reward(self, agent_id):
            return 0.5

    with pytest.raises(ValueError, match="engine='loop'"):
        VectorEnv("train_small", num_envs=1, env=Bonus, engine="fused")
    with pytest.raises(ValueError, match="engine must be one of"):
        VectorEnv("train_small", num_envs=1, engine="turbo")
    with VectorEnv("train_small", num_envs=1, env=Bonus) as vec:
        assert vec.engine == "loop"


def test_worker_processes_run_fused_blocks():
    config = respawning().set("HORIZON", 12)
    rng = np.random.default_rng(4)
    with VectorEnv(config, num_envs=3, seed=2) as here, VectorEnv(config, num_envs=3, seed=2, workers=2) as there:
        obs, _ = here.reset(), there.reset()
        for _ in range(25):
            actions = random_actions(obs, rng)
            a, b = with_final(here.step(actions)), with_final(there.step(actions))
            for x, y in zip(a, b, strict=True):
                assert np.array_equal(x, y)
            obs = here.buffers


def check_killed_actor(config: cfg.Config, ray, record=with_final) -> None:
    """The same run on the loop engine in this process and on 2 Ray actors, one killed at step 17
    (HORIZON 12: after an auto-reset): the same `record(out)` every step, and one replacement."""

    def rollout(**backend):
        rng, trace = np.random.default_rng(0), []
        with VectorEnv(config, num_envs=3, seed=5, **backend) as vec:
            obs = vec.reset()
            for t in range(24):
                if t == 17 and backend.get("backend") == "ray":
                    ray.kill(vec._impl.actors[0])
                out = vec.step(random_actions(obs, rng))
                obs = out.obs
                trace.append(record(out))
            return trace, getattr(vec._impl, "replacements", 0)

    local, _ = rollout(engine="loop")
    remote, replaced = rollout(workers=2, backend="ray")
    assert replaced == 1
    for a, b in zip(local, remote, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_fused_blocks_on_ray_survive_a_killed_actor(ray_session):
    check_killed_actor(respawning().set("HORIZON", 12), ray_session)
