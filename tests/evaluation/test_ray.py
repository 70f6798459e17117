"""The Ray backend gives the local backend's results, and survives actors killed mid-run."""

import json

import numpy as np
import pytest

import nmmo
from evaluation.episode import EpisodeTask, RayEpisodePool, run_episode, run_episodes
from evaluation.sandbox.host import Limits
from evaluation.tournament import _tasks, run_tournament
from nmmo.engines.vector import VectorEnv

from .conftest import small_config


def comparable(results):
    """A result dict without what legitimately differs between runs (timings, creation time)."""
    out = {k: v for k, v in results.items() if k not in ("created", "settings")}
    out["episodes"] = [{k: v for k, v in e.items() if k != "seconds"} for e in results["episodes"]]
    return out


def test_tournament_on_ray_matches_local(ray_session):
    conf = small_config()
    args = dict(policies=["scripted:Forage", "random"], episodes=3, ticks=24, seed=7, progress=False,
                secret=99)
    local = run_tournament(conf, workers=0, **args)
    seen = []
    remote = run_tournament(conf, workers=2, backend="ray", on_update=lambda s: seen.append(len(s.results)), **args)
    assert comparable(remote) == comparable(local)
    assert remote["settings"]["backend"] == "ray" and sorted(seen) == [1, 2, 3]


def test_killed_episode_actors_are_replaced_and_the_run_completes(ray_session):
    conf = small_config()
    tasks = _tasks(conf.set("HORIZON", 48), ["scripted:Combat", "random"], [11, 12, 13, 14], [0, 1, 2, 3], 1.0,
                   Limits(), 5)
    expected = run_episodes(tasks, workers=0, progress=False)
    pool = RayEpisodePool(2)
    got = {}

    def finished(i, result):
        got[i] = result
        if len(got) == 1:  # one actor is mid-episode, the other about to take the next one: kill both
            for actor in pool.actors:
                ray_session.kill(actor)

    try:
        pool.run(tasks, finished)
    finally:
        pool.close()
    assert pool.retries >= 1 and sorted(got) == [0, 1, 2, 3]
    for i, result in enumerate(expected):
        assert np.array_equal(got[i].lifetimes, result.lifetimes) and np.array_equal(got[i].owners, result.owners)


def test_vector_env_on_ray_matches_local_through_a_killed_actor(ray_session, tmp_path):
    conf = nmmo.config.load("train_small").set("HORIZON", 12)  # an auto-reset before the kill at step 17
    (tmp_path / "my_env.py").write_text("import nmmo\n\n\nclass Bonus(nmmo.Env):\n    def reward(self, agent_id):\n"
                                        "        return 0.5 if agent_id in self.realm.players else -1.0\n")
    env = f"{tmp_path / 'my_env.py'}:Bonus"  # the actors build the env class the spec names

    def rollout(**backend):
        rng = np.random.default_rng(0)
        trace = []
        with VectorEnv(conf, num_envs=3, seed=5, env=env, **backend) as vec:
            obs = vec.reset()
            for t in range(24):
                if t == 17 and backend.get("backend") == "ray":
                    ray_session.kill(vec._impl.actors[0])
                actions = np.full((vec.rows, 3), -1)
                actions[:, 0] = np.argmax(rng.random((vec.rows, 5)) * obs["move_mask"], axis=1)
                out = vec.step(actions)
                obs = out.obs
                trace.append([out.obs["tile"].copy(), out.obs["entity"].copy(), out.reward.copy(),
                              out.agent_id.copy(), out.alive.copy(), out.episodes.copy()])
            replaced = getattr(vec._impl, "replacements", 0)
        return trace, replaced

    local, _ = rollout(workers=0)
    remote, replaced = rollout(workers=2, backend="ray")
    assert replaced == 1 and 0.5 in remote[0][2]
    for a, b in zip(local, remote, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_more_actors_than_cluster_cpus_is_a_clear_error(ray_session):
    with pytest.raises(ValueError, match="workers=3 Ray actors need 3 CPUs but the Ray cluster has 2"):
        RayEpisodePool(3)


def test_cli_ray_flag_then_resume_locally(ray_session, tmp_path, capsys):
    from nmmo.cli import main

    from .test_cli import CONFIG

    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG)
    common = ["tournament", "--config", str(config), "--policies", "random", "--ticks", "8",
              "--out", str(tmp_path / "out")]
    assert main([*common, "--episodes", "2", "--ray", "--workers", "2"]) == 0
    assert main([*common, "--episodes", "3", "--resume", "--workers", "0"]) == 0
    assert "3 episode(s) of 8 ticks" in capsys.readouterr().out
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [e["index"] for e in saved["episodes"]] == [0, 1, 2] and saved["settings"]["backend"] == "process"
    assert len((tmp_path / "out" / "episodes.jsonl").read_text().splitlines()) == 4


def test_the_arenas_ray_workers_play_a_claim_and_replace_a_killed_actor(ray_session):
    """`nmmo arena serve --ray-address`'s pool (`evaluation.arena.workers.RayWorkers`): an episode
    played on an actor is the one a local worker plays; an actor killed mid-episode is reported lost
    with its claim (the server replays it) and replaced by a live actor with a new pid."""
    from evaluation.arena.workers import RayWorkers

    config = small_config(PLAYER_N=12)
    specs = ("scripted:Forage", "idle", "scripted:Combat")
    task = EpisodeTask(3, config.set("HORIZON", 16).to_toml(), config.name, specs, 5, 0, 1.0, Limits(), 5, None, 1)
    expected = run_episode(task)
    pool = RayWorkers(1, "auto")

    def wait_for_event():
        for _ in range(120):
            events = pool.poll(0.5)
            if events:
                return events
        raise AssertionError("no event from the Ray worker within a minute")

    try:
        assert pool.idle() == [0] and pool.pid(0) > 0
        pool.submit(0, task)
        assert pool.idle() == [] and pool.busy()[0][0] == 3
        [event] = wait_for_event()
        assert (event.kind, event.claim) == ("result", 3)
        assert np.array_equal(event.result.lifetimes, expected.lifetimes)
        assert np.array_equal(event.result.owners, expected.owners)
        first_pid = pool.pid(0)
        pool.submit(0, EpisodeTask(4, config.set("HORIZON", 5000).to_toml(), config.name, specs, 6, 0, 1.0, Limits(),
                                   5, None, 1))
        ray_session.kill(pool.actors[0])
        [event] = wait_for_event()
        assert (event.kind, event.claim) == ("lost", 4) and "Ray actor died" in event.reason
        assert pool.idle() == [0] and pool.pid(0) not in (None, first_pid)
    finally:
        pool.close()
