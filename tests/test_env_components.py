"""The env's components run without an env: `Episodes` and `Tasking` over a bare realm give, byte for
byte, what `nmmo.Env` gives with them inside, and `Gaming` and `Outcomes` answer from the tables
they are handed."""

import numpy as np

import nmmo
from nmmo import config as cfg
from nmmo.core.actions import NO_OP_ROW, no_actions
from nmmo.core.realm import Realm
from nmmo.envs.episodes import Episodes
from nmmo.envs.gaming import Gaming
from nmmo.envs.outcomes import Outcomes
from nmmo.envs.tasking import Tasking
from nmmo.tasks import load_task_set


class Small(cfg.Small, cfg.Resource, cfg.Combat):
    pass


def small() -> cfg.Config:
    return Small().update({"PLAYER_N": 16, "HORIZON": 30})


def test_tasking_over_a_bare_realm_is_the_envs():
    config, seed = small(), 11
    given = {"tasks": [slot % len(load_task_set("foraging")) for slot in range(config.PLAYER_N)]}
    env = nmmo.Env(config, tasks="foraging")
    env.reset(seed=seed, options=given)

    episodes = Episodes(env.config)
    realm = Realm(env.config)
    realm.reset(episodes.begin(seed, given), episodes.rng)
    tasking = Tasking(config, "foraging")
    assert tasking.config.TASKS == "foraging" and config.TASKS == ""  # the caller's config is left alone
    tasking.reset(realm.state, episodes.seed, given)
    assert np.array_equal(tasking.embeddings, env.tasking.embeddings)

    idle = np.tile(NO_OP_ROW, (config.PLAYER_N, 1))
    for _ in range(12):
        env.step_arrays(idle)
        realm.tick(*no_actions(realm.capacity), episodes.rng, respawn=realm.state.tick + 1 < config.HORIZON)
        tasking.evaluate(realm.state)
        slots = np.arange(config.PLAYER_N)
        assert np.array_equal(tasking.status(slots), env.task_status(slots))
        assert np.array_equal(tasking.rewards(slots), env.tasking.rewards(slots))
    columns = tasking.columns(realm.state)
    assert np.array_equal(columns["task"], env.task_columns()["task"])
    assert (columns["task"][config.PLAYER_N:] == -1).all()  # NPC rows hold no task
    assert tasking.header()["tasks"]["name"] == env.task_header()["tasks"]["name"]


def test_components_off_answer_without_a_state():
    config = small()
    tasking, gaming = Tasking(config), Gaming(config)
    assert tasking.tasks is None and tasking.status(np.arange(3)).shape == (0, 4)
    assert tasking.rewards(np.arange(3)) is None and tasking.header() == {} and tasking.columns(None) is None
    assert gaming.game is None and gaming.tasks(None) is None and gaming.next_tasks() is None
    assert gaming.view(None) == {} and gaming.result(None) == "" and gaming.winners(None).size == 0


def test_outcomes_account_a_tick_from_the_tables():
    config = small()
    realm = Realm(config)
    episodes = Episodes(config, 5)
    realm.reset(episodes.begin(None, None), episodes.rng)
    died = np.array([2])
    slots = np.arange(4)
    outcomes = Outcomes(config, config.PLAYER_N)
    rewards, terminated, truncated, infos = outcomes.dicts(realm.state, slots, died, {}, Tasking(config), done=False)
    ids = realm.state.entities.id[slots].tolist()
    assert [rewards[i] for i in ids] == [0.0, 0.0, -1.0, 0.0] and terminated[ids[2]] and not any(truncated.values())
    assert "life" in infos[ids[2]] and "life" not in infos[ids[0]]
    custom = Outcomes(config, config.PLAYER_N, reward=lambda agent: float(agent))
    rewards, *_ = custom.dicts(realm.state, slots, died, {}, Tasking(config), done=True)
    assert rewards == {agent: float(agent) for agent in ids}
