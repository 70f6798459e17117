import numpy as np
import pytest

import nmmo
from evaluation.metrics import (
    LABELS,
    METRICS,
    aggregate,
    aggregate_by_policy,
    check_metric,
    collect_lifetimes,
    lifetime_matrix,
    lifetimes_from_infos,
    policy_means,
)

from .conftest import small_config


def life(lifetime, achievement=0, kills=0, equipment=0, explore=0, forage=10.0, **extra):
    return {"lifetime": lifetime, "achievement": achievement, "player_kills": kills, "equipment": equipment,
            "explore": explore, "forage": forage, **extra}


def test_engine_names_and_table_labels():
    assert set(METRICS) == {"lifetime", "achievement", "player_kills", "equipment", "explore", "forage"}
    assert [LABELS[m] for m in METRICS] == ["Lifetime", "Achievement", "Player Kills", "Equipment", "Explore",
                                            "Forage"]
    with pytest.raises(ValueError, match="unknown metric 'kills'"):
        check_metric("kills")


def test_aggregate_hand_built_lifetimes():
    lifetimes = [life(10, achievement=4, explore=3), life(20, achievement=0, explore=5, custom=1.0),
                 life(60, achievement=8, kills=2, explore=7, forage=12)]
    table = aggregate(lifetimes)
    assert table["lifetime"] == {"mean": 30.0, "std": pytest.approx(np.std([10, 20, 60])), "count": 3}
    assert table["achievement"]["mean"] == pytest.approx(4.0)
    assert table["achievement"]["std"] == pytest.approx(np.std([4, 0, 8]))
    assert table["player_kills"]["mean"] == pytest.approx(2 / 3)
    assert table["forage"]["mean"] == pytest.approx(32 / 3)
    assert aggregate([])["lifetime"] == {"mean": None, "std": None, "count": 0}


def test_aggregate_by_policy_groups_rows_and_keeps_empty_policies():
    lifetimes = [life(10, achievement=4), life(30, achievement=6), life(5), life(7, explore=2)]
    owners = np.array([0, 0, 2, 2])
    table = aggregate_by_policy(lifetime_matrix(lifetimes), owners, ["a", "b", "c"])
    assert table["a"]["lifetime"] == {"mean": 20.0, "std": 10.0, "count": 2}
    assert table["a"]["achievement"]["mean"] == 5.0
    assert table["b"]["lifetime"] == {"mean": None, "std": None, "count": 0}
    assert table["c"]["explore"] == {"mean": 1.0, "std": 1.0, "count": 2}
    assert policy_means(lifetime_matrix(lifetimes), owners, 3, "achievement") == [5.0, None, 0.0]


def test_lifetimes_from_infos_takes_only_finished_agents():
    infos = {1: {}, 2: {"life": life(3)}, 3: {"invalid_actions": 1}, 4: {"life": life(9)}}
    assert lifetimes_from_infos(infos) == {2: life(3), 4: life(9)}


def test_collect_lifetimes_covers_every_agent_of_an_episode():
    env = nmmo.Env(small_config(HORIZON=12), seed=3)
    env.reset()
    steps = []
    while env.agents:
        steps.append(env.step({})[4])
    found = collect_lifetimes(env, steps)
    issued = env.realm.state.next_player_id - 1
    assert sorted(found) == list(range(1, issued + 1))  # the dead and, at the horizon, the truncated
    assert all(set(METRICS) <= set(v) for v in found.values())


def test_collect_lifetimes_adds_the_living_when_stopped_early():
    env = nmmo.Env(small_config(HORIZON=50), seed=3)
    env.reset()
    steps = [env.step({})[4] for _ in range(3)]
    found = collect_lifetimes(env, steps)
    assert set(env.agents) <= set(found)
    assert all(found[a]["lifetime"] == 3 for a in env.agents if a <= 16)  # spawned at reset
