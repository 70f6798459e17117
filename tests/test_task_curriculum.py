"""The edge curriculum (``TASK_CURRICULUM = "edge"``, `nmmo.tasks.sampling.EdgeSampler`): it favours
the tasks completed about half the time, every env feeds it its own ended lives (the loop and
fused engines alike), and it is deterministic."""

import numpy as np
import pytest

from nmmo.core.actions import NO_OP_ROW
from nmmo.engines.vector import VectorEnv
from nmmo.tasks.sampling import EdgeSampler, curriculum_sampler
from tests.test_fused import dying, random_actions, respawning


def test_edge_sampler_favours_the_tasks_at_the_edge():
    sampler = EdgeSampler("foraging")
    n = len(sampler.tasks)
    assert np.allclose(sampler.probabilities(), 1 / n)  # nothing seen yet: the specs' weights
    rng = np.random.default_rng(0)
    for _ in range(300):  # task 0 never completed, 1 half the time, 2 always
        sampler.update(np.array([0, 1, 2]), np.array([0.0, float(rng.random() < 0.5), 1.0]))
    p = sampler.probabilities()
    assert p[1] > 3 * p[0] and p[1] > 3 * p[2] and abs(p[0] - p[2]) < 0.2 * p[0]
    assert p[3] >= p[1] > p[0]  # unseen tasks stay at the prior (0.5): drawn as much as the best, until seen
    assert sampler.lives[:3].tolist() == [300, 300, 300] and sampler.lives[3:].sum() == 0
    # the draw follows the weights
    draws = np.bincount(sampler.sample(np.random.default_rng(1), 20_000), minlength=n) / 20_000
    assert np.allclose(draws, p, atol=0.01)


def test_edge_sampler_is_deterministic_and_checks_its_inputs():
    outcomes = np.random.default_rng(4).random((2, 500)) < 0.3
    tasks = np.random.default_rng(5).integers(0, 6, 500)
    a, b = EdgeSampler("exploration"), EdgeSampler("exploration")
    a.update(tasks, outcomes[0])
    b.update(tasks, outcomes[0])
    assert np.array_equal(a.rate, b.rate)
    assert np.array_equal(a.sample(np.random.default_rng(9), 64), b.sample(np.random.default_rng(9), 64))
    with pytest.raises(ValueError, match="spec indices"):
        a.update(np.array([99]), np.array([1.0]))
    with pytest.raises(ValueError, match="TASK_CURRICULUM"):
        curriculum_sampler("hardest", "exploration")
    assert curriculum_sampler("", "exploration") is None


def samplers(vec: VectorEnv) -> list[EdgeSampler]:
    block = vec._impl.block
    envs = block.worlds.envs if hasattr(block, "worlds") else block.envs
    return [env.task_sampler for env in envs]


@pytest.mark.parametrize("config", [respawning(), dying()], ids=["respawning", "dying"])
def test_every_env_feeds_its_curriculum_its_own_lives(config):
    config = config.update({"TASKS": "foraging", "TASK_CURRICULUM": "edge"})
    k, rng = 2, np.random.default_rng(1)
    engines = ("fused", "loop") if config.PLAYER_RESPAWN else ("loop",)
    vecs = [VectorEnv(config, num_envs=k, seed=3, engine=engine) for engine in engines]
    try:
        obs = [vec.reset() for vec in vecs][0]
        ended = np.zeros(k)
        resets = 0
        for _ in range(140):  # past three horizons: deaths, respawns and the resets' draws
            actions = random_actions(obs, rng)
            outs = [vec.step(actions) for vec in vecs]
            ended += np.bincount(outs[0].episode_rows // config.PLAYER_N, minlength=k)
            for vec in vecs:  # every ended life (death or horizon) reported to its own env's sampler
                assert [int(s.lives.sum()) for s in samplers(vec)] == ended.tolist()
            for out in outs[1:]:  # the fused and loop engines draw the same tasks from the same curricula
                assert np.array_equal(out.tasks["task_index"], outs[0].tasks["task_index"])
            resets += int(outs[0].truncated.any())
            obs = outs[0].obs
        rates = [np.stack([s.rate for s in samplers(vec)]) for vec in vecs]
        assert all(np.array_equal(r, rates[0]) for r in rates)
        assert (rates[0] != 0.5).any() and ended.sum() > 50
    finally:
        for vec in vecs:
            vec.close()


def test_a_sampler_you_pass_is_yours_to_feed():
    import nmmo

    config = respawning().update({"TASK_CURRICULUM": "edge"})
    sampler = EdgeSampler("foraging")
    given, built = nmmo.Env(config, tasks=sampler, seed=0), nmmo.Env(config, tasks="foraging", seed=0)
    for env in (given, built):
        for _ in range(2):  # an episode to its horizon, then the next reset's draw
            env.reset()
            while not env.done:
                env.step({})
    assert given.task_sampler is sampler and sampler.lives.sum() == 0
    assert isinstance(built.task_sampler, EdgeSampler) and built.task_sampler.lives.sum() >= 2 * config.PLAYER_N


def test_training_logs_the_curriculum_and_both_kinds_of_checkpoint_play_with_tasks(tmp_path):
    pytest.importorskip("torch")
    import nmmo
    from baselines.ppo import load_checkpoint, read_log, train
    from tests.test_train import tiny_args

    train(tiny_args(tmp_path / "edge", tasks="foraging", task_curriculum="edge"))
    rows = read_log(tmp_path / "edge")
    names = [spec.name for spec in nmmo.tasks.load_task_set("foraging")]
    for row in rows:
        assert abs(sum(row[f"task_share/{name}"] for name in names) - 1.0) < 1e-6
        assert {f"task_completion/{name}" for name in names} <= set(row) and "task_lives" in row
    assert (tmp_path / "edge" / "tasks.png").read_bytes()[:4] == b"\x89PNG"
    assert 'TASK_CURRICULUM = "edge"' in load_checkpoint(tmp_path / "edge" / "checkpoint.pt")["config_toml"]
    train(tiny_args(tmp_path / "blind", tasks="foraging", iterations=1, task_blind=True))
    with pytest.raises(ValueError, match="need --tasks"):
        train(tiny_args(tmp_path / "none", tasks="", task_blind=True))

    config = nmmo.config.load("train_small").update({"HORIZON": 12, "TASKS": "heldout"})
    for kind in ("edge", "blind"):  # ckpt: policies of both kinds play where every agent holds a task
        policy = nmmo.policy.load_policy_class(f"ckpt:{tmp_path / kind / 'checkpoint.pt'}")(config)
        assert ("task_dim" in policy.model.kwargs) == (kind == "edge")
        env = nmmo.Env(config, seed=0)
        env.reset(seed=0)
        while not env.done:
            batch = env.observations()
            assert "task" in batch.arrays  # the blind network ignores it
            actions = np.tile(np.array(NO_OP_ROW), (env.n_slots, 1))
            actions[env.live_players()[1]] = policy.act_arrays(batch)
            env.step_arrays(actions)
