"""Per-lifetime metrics (the paper's Table 1) and achievement points, computed from the tables."""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import Skill
from nmmo.core.state import Entities, State

#: The per-lifetime metrics, in table order (achievement second: it is the competition's metric).
#: Every client (evaluation tables, the vector env's episode rows, reward shaping) uses this order.
METRICS: tuple[str, ...] = ("lifetime", "achievement", "player_kills", "equipment", "explore", "forage")
#: Display names (the paper's Table 1 headings).
LABELS: dict[str, str] = {
    "lifetime": "Lifetime",
    "achievement": "Achievement",
    "player_kills": "Player Kills",
    "equipment": "Equipment",
    "explore": "Explore",
    "forage": "Forage",
}

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
_THRESHOLDS = np.array(list(ACHIEVEMENT_TIERS.values()), dtype=np.float64)[:, None, :]  # (category, 1, tier)
_POINTS = np.array(TIER_POINTS, dtype=np.int64)


def achievement_values(ent: Entities, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The value each achievement category tracks, for the given entity rows."""
    levels = ent.level[rows]
    return {
        "player_kills": ent.player_kills[rows],
        "equipment": ent.max_equipment[rows],
        "explore": ent.max_explore[rows],
        "forage": (levels[:, Skill.HUNTING] + levels[:, Skill.FISHING]) / 2.0,
    }


def achievement_points(values: dict[str, np.ndarray]) -> np.ndarray:
    """Points earned by each value set: every tier reached counts once."""
    stacked = np.stack([np.asarray(values[name], dtype=np.float64) for name in ACHIEVEMENT_TIERS])
    return ((stacked[..., None] >= _THRESHOLDS).astype(np.int64) @ _POINTS).sum(axis=0)


def lifetime_metrics(state: State, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Lifetime, Player Kills, Equipment, Explore, Forage and Achievement of the given rows."""
    values = {"lifetime": state.tick - state.entities.spawn_tick[rows], **achievement_values(state.entities, rows)}
    values["achievement"] = achievement_points(values)
    return values
