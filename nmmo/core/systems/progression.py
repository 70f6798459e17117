"""Progression: XP per skill and the classic MMO level curve (L2 at 83 XP, L99 at 13,034,431)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from nmmo.core.enums import Skill
from nmmo.core.state import Entities

RESOURCE_SKILLS = (Skill.CONSTITUTION, Skill.HUNTING, Skill.FISHING)
COMBAT_SKILLS = (Skill.MELEE, Skill.RANGE, Skill.MAGE, Skill.DEFENSE)


@lru_cache(maxsize=8)
def xp_table(level_max: int = 99) -> np.ndarray:
    """XP needed to reach each level: ``table[L]`` for L in 1..level_max (``table[0]`` unused).

    XP(L) = floor(1/4 * sum_{i=2..L} floor(i - 1 + 300 * 2^((i - 1) / 7))).
    """
    points = [0, 0]
    total = 0
    for level in range(2, level_max + 1):
        total += int(level - 1 + 300 * 2 ** ((level - 1) / 7))
        points.append(total // 4)
    table = np.array(points[: level_max + 1], dtype=np.int64)
    table.setflags(write=False)
    return table


def level_from_xp(xp: np.ndarray, level_max: int = 99) -> np.ndarray:
    """Level reached with `xp` points (1 at 0 XP, capped at level_max)."""
    return np.searchsorted(xp_table(level_max)[1:], xp, side="right").astype(np.int32)


def add_xp(entities: Entities, rows: np.ndarray, skill: int | np.ndarray, amounts: np.ndarray, level_max: int) -> None:
    """Give XP to one skill of the given rows (or, with an array, to skill[i] of rows[i]: one call
    for several skills) and update their level in that skill."""
    if rows.size == 0:
        return
    amounts = amounts.astype(np.int64, copy=False)
    if isinstance(skill, np.ndarray):  # by flat index: numpy's add.at is quicker on one axis than on two
        np.add.at(np.reshape(entities.xp, -1, copy=False), rows * entities.xp.shape[1] + skill, amounts)
    else:
        np.add.at(entities.xp[:, skill], rows, amounts)
    entities.level[rows, skill] = level_from_xp(entities.xp[rows, skill], level_max)
