"""Tasks in vector envs: the fused engine, the loop engine and lone envs give the same task rewards,
progress, embeddings and lifetime outcomes, byte for byte, through deaths, respawns and resets."""

import numpy as np
import pytest

from nmmo.engines.buffers import TASK_FIELDS
from nmmo.engines.vector import VectorEnv
from tests.test_fused import LoneEnvs, check_killed_actor, check_restore, outputs, random_actions, respawning


def with_tasks(config, tasks: str = "combat", **keys):
    return config.update({"TASKS": tasks, "TASK_SURVIVAL_REWARD": 0.5, **keys})


def task_outputs(out) -> list[np.ndarray]:
    return [*outputs(out), *(out.tasks[name].copy() for name in TASK_FIELDS), out.episode_tasks.copy()]


@pytest.mark.parametrize("tasks, keys", [("combat", {}), ("team", {"PLAYER_TEAM_SIZE": 4, "TASK_ASSIGN": "team"})])
def test_fused_loop_and_lone_envs_agree_on_tasks(tasks, keys):
    config, k, seed = with_tasks(respawning(), tasks, **keys), 3, 5
    seeds = np.random.SeedSequence(seed).generate_state(k).tolist()
    rng = np.random.default_rng(1)
    with VectorEnv(config, num_envs=k, seed=seed) as vec, VectorEnv(config, num_envs=k, seed=seed,
                                                                   engine="loop") as loop:
        assert vec.engine == "fused"
        lone = LoneEnvs(config, seeds)
        obs, loop_obs = vec.reset(), loop.reset()
        assert np.array_equal(obs["task"], loop_obs["task"]) and obs["task"].any()
        rewarded = completed = 0
        for _ in range(200):  # past four horizons (HORIZON 45): deaths, respawns and resets
            actions = random_actions(obs, rng)
            out = vec.step(actions)
            for a, b in zip(task_outputs(out), task_outputs(loop.step(actions)), strict=True):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            for w in range(k):
                rows = slice(w * config.PLAYER_N, (w + 1) * config.PLAYER_N)
                single = lone.step(w, actions[rows])
                assert np.array_equal(single.rewards, out.reward[rows])
                status = lone.envs[w].task_status(np.arange(config.PLAYER_N))
                assert np.array_equal(status[:, 0], out.tasks["task_index"][rows])
            rewarded += int(np.count_nonzero(out.reward % 0.5))  # a task paid something beyond death's -0.5
            completed += int(out.episode_tasks[:, 2].sum())
            obs = out.obs
    assert rewarded > 0 and completed > 0


def test_a_fused_block_with_tasks_is_restored_identically():
    check_restore(with_tasks(respawning()), [7, 8], np.random.default_rng(3))


def test_without_respawn_tasks_run_on_the_loop_engine():
    config = with_tasks(respawning(), PLAYER_RESPAWN=False)
    with VectorEnv(config, num_envs=2) as vec:
        assert vec.engine == "loop"
    with pytest.raises(ValueError, match="only with respawn on"):
        VectorEnv(config, num_envs=2, engine="fused")


def test_worker_processes_carry_the_task_buffers():
    config = with_tasks(respawning())
    rng = np.random.default_rng(2)
    with VectorEnv(config, num_envs=2, seed=3) as inline, VectorEnv(config, num_envs=2, seed=3, workers=2) as procs:
        obs, _ = inline.reset(), procs.reset()
        for _ in range(50):
            actions = random_actions(obs, rng)
            a, b = inline.step(actions), procs.step(actions)
            for x, y in zip(task_outputs(a), task_outputs(b), strict=True):
                assert np.array_equal(x, y)
            obs = a.obs


def test_ray_actors_with_tasks_survive_a_killed_actor(ray_session):
    check_killed_actor(with_tasks(respawning()).set("HORIZON", 12), ray_session, task_outputs)


def test_tile_predicates_read_each_worlds_own_coordinates():
    """The fused engine stacks its worlds' maps as rows of one grid: OccupyTile and the centre
    distance must read a tile within the agent's own world."""
    from nmmo.tasks import TaskState, task_set_from_data

    config, k = respawning(), 3
    with VectorEnv(config, num_envs=k, seed=2) as vec:
        vec.reset()
        worlds = vec._impl.block.worlds
        ent, n = worlds.state.entities, config.PLAYER_N
        slot = 2 * n  # world 2's first agent
        row, col = int(ent.row[slot]) - 2 * config.MAP_SIZE, int(ent.col[slot])
        specs = task_set_from_data([{"name": "here", "predicate": "OccupyTile", "args": {"row": row, "col": col}},
                                    {"name": "centre", "predicate": "ProgressTowardCenter"}])
        tasks = TaskState(specs, config, n_worlds=k)
        tasks.reset(worlds.state, assignment=np.arange(k * n) % 2, world_ticks=worlds.ticks())
        step = tasks.evaluate(worlds.state, worlds.ticks())
        assert step.progress[slot] == 1.0  # its own tile, in its world's coordinates
        here = (ent.row[: k * n] - np.repeat(np.arange(k) * config.MAP_SIZE, n) == row) & (ent.col[: k * n] == col)
        assert np.array_equal(step.progress[::2] == 1.0, here[::2] & ent.alive[: k * n][::2])
        centre = config.MAP_SIZE // 2
        local_row = ent.row[1: k * n: 2] - np.repeat(np.arange(k) * config.MAP_SIZE, n // 2)
        distance = np.maximum(np.abs(local_row - centre), np.abs(ent.col[1: k * n: 2] - centre))
        expected = np.clip(1 - distance / (config.MAP_CENTER // 2), 0, 1)
        assert np.allclose(step.progress[1::2], expected)
