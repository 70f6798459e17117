"""Per-lifetime metrics (the paper's Table 1) and achievement points, computed from the tables."""

from __future__ import annotations

import numpy as np

from nmmo.enums import Skill
from nmmo.state import State

#: Thresholds (easy, normal, hard) per achievement category, and the points of each tier.
ACHIEVEMENT_TIERS: dict[str, tuple[int, int, int]] = {
    "player_kills": (1, 3, 6),
    "equipment": (1, 10, 20),
    "explore": (32, 64, 127),
    "forage": (20, 35, 50),
}
TIER_POINTS = (4, 6, 11)
#: Achievement points are divided by this when used as a reward (max 5.6 per episode).
REWARD_SCALE = 15.0


def achievement_points(values: dict[str, np.ndarray]) -> np.ndarray:
    """Points earned by each value set: every tier reached counts once."""
    total = np.zeros_like(np.asarray(values["player_kills"]), dtype=np.int64)
    for name, thresholds in ACHIEVEMENT_TIERS.items():
        value = np.asarray(values[name])
        for threshold, points in zip(thresholds, TIER_POINTS, strict=True):
            total += points * (value >= threshold)
    return total


def lifetime_metrics(state: State, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Lifetime, Player Kills, Equipment, Explore, Forage and Achievement of the given rows."""
    ent = state.entities
    values = {
        "lifetime": state.tick - ent.spawn_tick[rows],
        "player_kills": ent.player_kills[rows],
        "equipment": ent.max_equipment[rows],
        "explore": ent.max_explore[rows],
        "forage": (ent.level[rows, Skill.HUNTING] + ent.level[rows, Skill.FISHING]) / 2.0,
    }
    values["achievement"] = achievement_points(values)
    return values
