"""Progression rules (DESIGN.md section 5 "Progression"): the XP curve, levels, harvest and combat XP."""

import math

import numpy as np
import pytest

from nmmo.core.enums import Material, Skill, Style
from nmmo.core.state import Entities
from nmmo.core.systems import combat, progression, resource

from .helpers import add_player, grass_map, make_config, make_state, no_actions


def _classic_curve(level: int) -> int:
    return sum(math.floor(i - 1 + 300 * 2 ** ((i - 1) / 7)) for i in range(2, level + 1)) // 4


@pytest.mark.parametrize(
    ("level", "xp"), [(1, 0), (2, 83), (3, 174), (10, 1154), (20, 4470), (50, 101333), (99, 13034431)]
)
def test_xp_table_known_values(level, xp):
    assert int(progression.xp_table()[level]) == xp


def test_xp_table_follows_the_classic_formula_everywhere():
    table = progression.xp_table()
    assert table.shape == (100,)
    assert table[1:].tolist() == [_classic_curve(level) for level in range(1, 100)]
    assert (np.diff(table[1:]) > 0).all()


def test_xp_table_respects_a_lower_level_cap():
    assert progression.xp_table(50).tolist() == progression.xp_table()[:51].tolist()


@pytest.mark.parametrize(
    ("xp", "level"),
    [
        (0, 1), (82, 1), (83, 2), (173, 2), (174, 3), (1153, 9), (1154, 10), (4469, 19), (4470, 20),
        (101332, 49), (101333, 50), (13034430, 98), (13034431, 99), (10**10, 99),
    ],
)
def test_level_from_xp_boundaries(xp, level):
    assert progression.level_from_xp(np.array([xp])).tolist() == [level]


def test_level_from_xp_is_capped_by_level_max():
    assert progression.level_from_xp(np.array([10**9]), level_max=50).tolist() == [50]
    assert progression.level_from_xp(np.array([101333, 101332]), level_max=50).tolist() == [50, 49]


def test_add_xp_accumulates_and_raises_levels():
    ent = Entities(3, 3)
    ent.xp[:] = 0
    ent.level[:] = 1
    rows = np.array([0, 2])
    progression.add_xp(ent, rows, Skill.MELEE, np.array([82, 83]), 99)
    assert ent.level[:, Skill.MELEE].tolist() == [1, 1, 2]
    progression.add_xp(ent, rows, Skill.MELEE, np.array([1, 1154 - 83]), 99)
    assert ent.xp[:, Skill.MELEE].tolist() == [83, 0, 1154]
    assert ent.level[:, Skill.MELEE].tolist() == [2, 1, 10]
    assert ent.level[:, Skill.RANGE].tolist() == [1, 1, 1]  # other skills untouched


def test_add_xp_counts_repeated_rows_twice():
    ent = Entities(1, 1)
    progression.add_xp(ent, np.array([0, 0]), Skill.MAGE, np.array([50, 50]), 99)
    assert ent.xp[0, Skill.MAGE] == 100 and ent.level[0, Skill.MAGE] == 2


def test_harvest_and_drink_give_ten_times_the_skill_level():
    conf = make_config("Resource", "Progression")
    material = grass_map(12)
    material[5, 5] = Material.FOREST
    material[5, 6] = Material.WATER
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 5, food=10, water=10)  # full: XP whatever amount was missing
    add_player(state, 1, 8, 8)  # grass, no water: no XP
    ent = state.entities
    before = ent.xp.copy()
    resource.update(state, conf)
    gained = ent.xp - before
    assert gained[0, Skill.HUNTING] == 100 and gained[0, Skill.FISHING] == 100
    assert gained[0].sum() == 200 and gained[1].sum() == 0
    # Standing by water trains Fishing every tick; the forest is now scrub, so no more Hunting XP.
    resource.update(state, conf)
    gained = ent.xp - before
    assert gained[0, Skill.HUNTING] == 100 and gained[0, Skill.FISHING] == 200


def test_harvest_xp_scales_with_the_current_level_and_levels_up():
    conf = make_config("Resource", "Progression")
    material = grass_map(12)
    material[5, 6] = Material.WATER
    state = make_state(material, n_players=1)
    add_player(state, 0, 5, 5, levels={Skill.FISHING: 20})
    ent = state.entities
    ent.xp[0, Skill.FISHING] = progression.xp_table()[21] - 150  # 150 short of level 21
    resource.update(state, conf)
    assert ent.xp[0, Skill.FISHING] == progression.xp_table()[21] + 50  # +10 * 20
    assert ent.level[0, Skill.FISHING] == 21
    assert ent.water[0] == 20  # refilled to the capacity before the level-up


def test_no_progression_system_means_no_xp():
    conf = make_config("Resource", "Combat")
    material = grass_map(12)
    material[5, 5] = Material.FOREST
    material[5, 6] = Material.WATER
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 4, 5)
    before = state.entities.xp.copy()
    resource.update(state, conf)
    styles, targets = no_actions(2)
    styles[0], targets[0] = Style.MAGE, 1
    combat.resolve(state, conf, styles, targets, np.random.default_rng(0))
    assert (state.entities.xp == before).all()


def test_combat_xp_for_dealing_and_surviving_damage():
    # A level-1 mage attack deals exactly 1 damage, hit or miss: d = 1.
    conf = make_config("Combat", "Progression")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 5, 7)
    ent = state.entities
    before = ent.xp.copy()
    styles, targets = no_actions(2)
    styles[0], targets[0] = Style.MAGE, 1
    combat.resolve(state, conf, styles, targets, np.random.default_rng(0))
    gained = ent.xp - before
    assert gained[0, Skill.CONSTITUTION] == 20 and gained[0, Skill.MAGE] == 40 and gained[0].sum() == 60
    assert gained[1, Skill.CONSTITUTION] == 20 and gained[1, Skill.DEFENSE] == 40 and gained[1].sum() == 60


def test_combat_xp_scales_with_damage_and_raises_levels():
    conf = make_config("Combat", "Progression")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels={Skill.RANGE: 99})  # hits a level-1 target for 35
    add_player(state, 1, 5, 8, levels={Skill.CONSTITUTION: 99})
    ent = state.entities
    before = ent.xp.copy()
    styles, targets = no_actions(2)
    styles[0], targets[0] = Style.RANGE, 1
    combat.resolve(state, conf, styles, targets, np.random.default_rng(0))
    gained = ent.xp - before
    assert gained[0, Skill.RANGE] == 40 * 35 and gained[0, Skill.CONSTITUTION] == 20 * 35
    assert gained[1, Skill.DEFENSE] == 40 * 35 and gained[1, Skill.CONSTITUTION] == 20 * 35
    # Defense: 1400 XP lies between XP(11) = 1358 and XP(12) = 1584.
    assert progression.xp_table()[11] <= 1400 < progression.xp_table()[12]
    assert ent.level[1, Skill.DEFENSE] == 11
    assert ent.level[0, Skill.CONSTITUTION] == progression.level_from_xp(np.array([1154 + 700]))[0] == 13


def test_a_killed_target_gains_no_xp():
    conf = make_config("Combat", "Progression")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels={Skill.MELEE: 99})
    add_player(state, 1, 5, 6, health=5)
    before = state.entities.xp.copy()
    styles, targets = no_actions(2)
    styles[0], targets[0] = Style.MELEE, 1
    combat.resolve(state, conf, styles, targets, np.random.default_rng(0))
    assert state.entities.health[1] == 0
    assert (state.entities.xp[1] == before[1]).all()


def test_combat_level_of_a_new_player_is_three():
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 5, 6, levels={Skill.DEFENSE: 40, Skill.CONSTITUTION: 60, Skill.MAGE: 30})
    # floor(0.25 * (1 + 10) + 0.5 * 1) = 3; floor(0.25 * 100 + 0.5 * 30) = 40
    assert state.entities.combat_level().tolist() == [3, 40]
