"""Tasks in the env: the observation's Task field, task infos and rewards, determinism, and an
episode whose world is the same with tasks on or off."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import nmmo
from nmmo import config as cfg
from nmmo.tasks import EMBEDDING_SIZE, load_task_set


class Small(cfg.Small, cfg.Resource, cfg.Combat):
    pass


def small(**keys) -> cfg.Config:
    config = Small().set("PLAYER_N", 16).set("HORIZON", 60)
    for key, value in keys.items():
        config.set(key, value)
    return config


def moves(obs: dict, rng: np.random.Generator) -> dict:
    return {a: {"Move": {"Direction": int(rng.choice(np.flatnonzero(o["ActionTargets"]["Move"]["Direction"])))}}
            for a, o in obs.items()}


def play(env: nmmo.Env, ticks: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    trace = []
    for _ in range(ticks):
        if not env.agents:
            break
        obs, rewards, _, _, infos = env.step(moves({a: obs[a] for a in env.agents}, rng))
        ent = env.realm.state.entities
        trace.append((ent.row.copy(), ent.col.copy(), ent.health.copy(), rewards, infos, obs))
    return trace


def test_tasks_show_in_observations_infos_and_rewards():
    env = nmmo.Env(small(), tasks="foraging")
    obs, infos = env.reset(seed=1)
    agent = next(iter(obs))
    assert obs[agent]["Task"].shape == (EMBEDDING_SIZE,) and obs[agent]["Task"].dtype == np.float32
    assert env.observation_space(agent).contains(obs[agent])
    assert env.observations()["task"].shape == (len(obs), EMBEDDING_SIZE)
    tasks = load_task_set("foraging")
    paid = 0.0
    for *_, rewards, infos, _ in play(env, 40, seed=1):
        for info in infos.values():
            assert 0 <= info["task"] < len(tasks) and 0.0 <= info["task_progress"] <= 1.0
            assert info["task_completed"] in (0, 1)
        paid += sum(rewards.values())
    assert paid > 0  # eating and drinking tasks pay within 40 ticks of random moves


def test_turning_tasks_on_changes_nothing_else():
    plain, tasked = play(nmmo.Env(small(), seed=3), 30, seed=3), play(nmmo.Env(small(), seed=3, tasks="combat"), 30, 3)
    for (r1, c1, h1, *_), (r2, c2, h2, *_) in zip(plain, tasked, strict=True):
        assert np.array_equal(r1, r2) and np.array_equal(c1, c2) and np.array_equal(h1, h2)


def test_task_episodes_are_deterministic():
    first, second = (play(nmmo.Env(small(), tasks="exploration"), 30, seed=5) for _ in range(2))
    for step_a, step_b in zip(first, second, strict=True):
        assert step_a[3] == step_b[3]
        assert {a: i["task"] for a, i in step_a[4].items()} == {a: i["task"] for a, i in step_b[4].items()}


def test_inline_specs_the_config_key_and_an_encoder():
    spec = [{"name": "eat", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 1}}]
    env = nmmo.Env(small(), tasks=spec)
    env.task_encoder = lambda task_set, task: np.full((len(task), EMBEDDING_SIZE), 0.5, np.float32)
    obs, _ = env.reset(seed=0)
    assert all(np.all(o["Task"] == 0.5) for o in obs.values())
    config = small()
    nmmo.Env(config, tasks="combat")
    assert config.TASKS == ""  # the caller's config is left as it was
    by_key = nmmo.Env(small(TASKS="foraging"))
    assert "Task" in next(iter(by_key.reset(seed=0)[0].values()))
    with pytest.raises(ValueError, match="predicate"):
        nmmo.Env(small(), tasks=[{"name": "bad", "predicate": "os:system"}])
    assert "Task" not in next(iter(nmmo.Env(small()).reset(seed=0)[0].values()))


def test_pettingzoo_api_with_tasks():
    parallel_api_test(nmmo.Env(small(), tasks="foraging"), num_cycles=40)


def test_a_task_conditioned_network_reads_the_embedding():
    import torch

    from baselines.model import Policy
    from nmmo.core.layout import ObsBatch

    env = nmmo.Env(small(), tasks="foraging")
    env.reset(seed=0)
    batch: ObsBatch = env.observations()
    model = Policy(side=15, task_dim=EMBEDDING_SIZE)
    assert model.kwargs["task_dim"] == EMBEDDING_SIZE and "task_dim" not in Policy(side=15).kwargs
    tensors = {name: torch.as_tensor(values) for name, values in batch.items()}
    state = model.initial_state(batch.n)
    first = model(tensors, state, torch.zeros(batch.n))[3]
    tensors["task"] = torch.zeros_like(tensors["task"])
    assert not torch.equal(first, model(tensors, state, torch.zeros(batch.n))[3])  # the value depends on the task
    del tensors["task"]
    with pytest.raises(ValueError, match="trained on tasks"):
        model(tensors, state, torch.zeros(batch.n))


def test_tasks_given_at_reset_or_drawn_by_a_sampler():
    from nmmo.tasks import CurriculumSampler, TaskSampler

    n = len(load_task_set("foraging"))
    env = nmmo.Env(small(), tasks="foraging")
    given = np.arange(16) % n
    _, infos = env.reset(seed=1, options={"tasks": given})
    assert [infos[a]["task"] for a in sorted(infos)] == given.tolist()
    with pytest.raises(ValueError, match=r"options\['tasks'\].*16 task indices"):
        env.reset(seed=1, options={"tasks": [n] * 16})  # an index past the set
    with pytest.raises(ValueError, match="has no tasks"):
        nmmo.Env(small()).reset(seed=1, options={"tasks": given})

    class Second(TaskSampler):
        def sample(self, rng, units):
            return np.full(units, 1)

    _, infos = nmmo.Env(small(), tasks=Second("foraging")).reset(seed=1)
    assert {info["task"] for info in infos.values()} == {1}

    curriculum = CurriculumSampler("foraging", floor=0.01)
    curriculum.update(np.zeros(500, dtype=int), np.ones(500))  # task 0: always completed
    assert curriculum.rate[0] > 0.99 and curriculum.probabilities()[0] < 0.2 / n
    draws = [nmmo.Env(small(), tasks=curriculum).reset(seed=2)[1] for _ in range(2)]
    assert draws[0] == draws[1]  # the same seed, the same draw
    with pytest.raises(ValueError, match="spec indices"):
        curriculum.update([n], [1.0])
