import numpy as np
import pytest

import nmmo
from nmmo import config
from nmmo.core.metrics import ACHIEVEMENT_TIERS, REWARD_SCALE, TIER_POINTS, achievement_points, lifetime_metrics


@pytest.mark.parametrize(
    ("values", "points"),
    [
        ({"player_kills": 0, "equipment": 0, "explore": 0, "forage": 10}, 0),
        ({"player_kills": 1, "equipment": 0, "explore": 0, "forage": 10}, 4),  # easy kills
        ({"player_kills": 3, "equipment": 0, "explore": 0, "forage": 10}, 4 + 6),  # easy + normal
        ({"player_kills": 6, "equipment": 20, "explore": 127, "forage": 50}, 4 * 21),  # everything
        ({"player_kills": 0, "equipment": 9, "explore": 64, "forage": 34.5}, 4 + 4 + 6 + 4),
    ],
)
def test_achievement_points_per_tier(values, points):
    assert achievement_points({k: np.array([v]) for k, v in values.items()})[0] == points


def test_maximum_achievement_reward_is_5_6():
    best = {name: np.array([tiers[-1]]) for name, tiers in ACHIEVEMENT_TIERS.items()}
    assert achievement_points(best)[0] == 4 * sum(TIER_POINTS) == 84
    assert achievement_points(best)[0] / REWARD_SCALE == pytest.approx(5.6)


def test_lifetime_metrics_read_the_tables():
    env = nmmo.Env(config.Small(), seed=0)
    env.reset()
    for _ in range(3):
        env.step({})
    ent = env.realm.state.entities
    ent.player_kills[0], ent.max_explore[0], ent.max_equipment[0] = 3, 40, 12
    metrics = lifetime_metrics(env.realm.state, np.array([0]))
    assert metrics["lifetime"][0] == 3 and metrics["forage"][0] == 10.0
    assert metrics["achievement"][0] == (4 + 6) + (4 + 6) + 4
