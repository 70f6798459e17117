"""Combat rules (DESIGN.md section 5 "Combat", Appendix A): accuracy, damage, reach, armour, kills,
loot, freeze, friendly fire, stealing."""

import numpy as np
import pytest

from nmmo.core.enums import NPCType, Skill, Style
from nmmo.core.systems import combat

from .helpers import add_npc, add_player, grass_map, make_config, make_state, no_actions

STYLE_SKILL = {Style.MELEE: Skill.MELEE, Style.RANGE: Skill.RANGE, Style.MAGE: Skill.MAGE}
STRONG = {Skill.MELEE: 99, Skill.RANGE: 99, Skill.MAGE: 99}  # always hits a level-1 target
TOUGH = {Skill.CONSTITUTION: 99}  # 99 health: survives one hit of anything


def attack(state, conf, pairs, seed=0):
    """Resolve attacks given as (attacker row, style, target row)."""
    styles, targets = no_actions(state.entities.capacity)
    for attacker, style, target in pairs:
        styles[attacker], targets[attacker] = style, target
    return combat.resolve(state, conf, styles, targets, np.random.default_rng(seed))


def d20_hit_probability(threshold: float) -> float:
    rolls = np.arange(1, 21)
    return float(((rolls >= threshold) | (rolls == 20)).mean())


# ----------------------------------------------------------------------------------- accuracy
def test_hit_chance_is_55_percent_at_level_one_vs_one():
    conf = make_config()
    threshold = combat.hit_threshold(conf, np.array([1]), np.array([1]), np.array([1 + 0]))
    assert float(threshold[0]) == pytest.approx(10.0)
    assert d20_hit_probability(float(threshold[0])) == pytest.approx(0.55)


@pytest.mark.parametrize(
    ("attack_level", "target_level", "defense", "expected"),
    [(1, 1, 1, 10.0), (99, 1, 1, -88.0), (1, 1, 99, 39.4), (10, 20, 30, 23.0)],
)
def test_hit_threshold_formula(attack_level, target_level, defense, expected):
    conf = make_config()
    got = combat.hit_threshold(conf, np.array([attack_level]), np.array([target_level]), np.array([defense]))
    # 0.3 D + 0.7 T - A + 10
    assert float(got[0]) == pytest.approx(expected)


def _pairs_state(conf, size=40):
    """Attacker/target pairs side by side, every player level 1 in combat skills."""
    n_pairs = ((size - 2) // 2) * (size - 2)
    state = make_state(grass_map(size), n_players=2 * n_pairs)
    pairs = []
    k = 0
    for r in range(1, size - 1):
        for c in range(1, size - 2, 2):
            add_player(state, 2 * k, r, c)
            add_player(state, 2 * k + 1, r, c + 1)
            pairs.append((2 * k, Style.MELEE, 2 * k + 1))
            k += 1
    return state, pairs


def test_observed_hit_rate_at_level_one_is_55_percent():
    conf = make_config("Combat")
    hits = []
    for seed in range(8):
        state, pairs = _pairs_state(conf)
        result = attack(state, conf, pairs, seed)
        assert result.hit.size == len(pairs)
        # A level-1 melee hit deals floor(7 + 63/99) = 7; a miss deals 1.
        assert (result.damage == np.where(result.hit, 7, 1)).all()
        hits.append(result.hit)
    rate = np.concatenate(hits).mean()
    # 8 * 722 = 5776 rolls: sd of the rate ~0.0065.
    assert rate == pytest.approx(0.55, abs=0.025)


def test_only_a_natural_20_hits_a_far_stronger_defender():
    conf = make_config("Combat")
    hits = []
    for seed in range(4):
        state, pairs = _pairs_state(conf)
        for _, _, target in pairs:
            state.entities.level[target, Skill.DEFENSE] = 99
        result = attack(state, conf, pairs, seed)
        assert (result.damage == np.where(result.hit, 7, 1)).all()
        hits.append(result.hit)
    assert np.concatenate(hits).mean() == pytest.approx(0.05, abs=0.015)


# ------------------------------------------------------------------------------------- damage
@pytest.mark.parametrize(
    ("style", "level", "expected"),
    [
        (Style.MELEE, 1, 7), (Style.MELEE, 50, 38), (Style.MELEE, 99, 70),
        (Style.RANGE, 1, 3), (Style.RANGE, 50, 19), (Style.RANGE, 99, 35),
        (Style.MAGE, 1, 1), (Style.MAGE, 50, 13), (Style.MAGE, 99, 25),
    ],
)
def test_hit_damage_per_style_and_level(style, level, expected):
    conf = make_config()
    got = combat.hit_damage(conf, np.array([style]), np.array([level]))
    assert int(got[0]) == expected


def test_hit_damage_matches_the_formula_for_every_level():
    conf = make_config()
    levels = np.arange(1, 100)
    for style, (base, scale) in {Style.MELEE: (7, 63), Style.RANGE: (3, 32), Style.MAGE: (1, 24)}.items():
        got = combat.hit_damage(conf, np.full(99, style), levels)
        expected = [int(np.floor(base + scale * level / 99 + 1e-9)) for level in range(1, 100)]
        assert got.tolist() == expected


@pytest.mark.parametrize(("style", "damage"), [(Style.MELEE, 70), (Style.RANGE, 35), (Style.MAGE, 25)])
def test_resolved_hit_deals_the_style_damage(style, damage):
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6, levels=TOUGH)
    result = attack(state, conf, [(0, style, 1)])
    assert result.hit.tolist() == [True]
    assert state.entities.health[1] == 99 - damage
    assert state.entities.damage_taken[1] == damage
    assert state.entities.attacker_id[1] == 1 and state.entities.attacker_row[1] == 0


# -------------------------------------------------------------------------------------- reach
@pytest.mark.parametrize(("style", "reach"), [(Style.MELEE, 1), (Style.RANGE, 3), (Style.MAGE, 4)])
def test_reach_is_chebyshev_and_never_the_own_tile(style, reach):
    conf = make_config("Combat")
    state = make_state(grass_map(16), n_players=2)
    add_player(state, 0, 7, 7)
    add_player(state, 1, 1, 1)
    ent = state.entities
    for dr in range(-6, 7):
        for dc in range(-6, 7):
            r, c = 7 + dr, 7 + dc
            if not (1 <= r <= 14 and 1 <= c <= 14) or (dr, dc) == (0, 0):
                continue
            state.tiles.occupancy[ent.row[1], ent.col[1]] = -1
            ent.row[1], ent.col[1] = r, c
            state.tiles.occupancy[r, c] = 1
            ok = combat.valid_attacks(state, conf, np.array([0]), np.array([style]), np.array([1]))
            assert bool(ok[0]) == (max(abs(dr), abs(dc)) <= reach), (dr, dc)
    # Never oneself (distance 0), whatever the style.
    assert not combat.valid_attacks(state, conf, np.array([0]), np.array([style]), np.array([0]))[0]


def test_out_of_reach_and_dead_targets_take_no_damage():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 2, levels=STRONG)
    add_player(state, 1, 5, 4, levels=TOUGH)  # distance 2: out of melee reach
    add_player(state, 2, 6, 2)
    state.entities.alive[2] = False
    result = attack(state, conf, [(0, Style.MELEE, 1), (1, Style.MELEE, 2)])
    assert result.attackers.size == 0
    assert state.entities.health[1] == 99


# ------------------------------------------------------------------------------------- armour
@pytest.mark.parametrize(
    ("style", "armour", "expected"),
    [
        (Style.MELEE, (10, 10), 70 - 2),
        (Style.MELEE, (10, 11), 70 - 2),  # mean 10.5: floor(2.1) = 2
        (Style.MELEE, (14, 16), 70 - 3),
        (Style.RANGE, (99, 99), 35 - 19),
        (Style.MAGE, (99, 99), 25 - 19),
        (Style.MAGE, (20, 20), 25 - 4),
    ],
)
def test_armour_absorbs_a_fifth_of_its_level(style, armour, expected):
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6, levels=TOUGH)
    state.entities.armour[1] = armour
    result = attack(state, conf, [(0, style, 1)])
    assert result.hit.tolist() == [True]
    assert result.damage.tolist() == [expected]
    assert state.entities.health[1] == 99 - expected


@pytest.mark.parametrize(("mage_level", "armour"), [(40, (50, 50)), (40, (99, 99)), (1, (50, 50))])
def test_armour_leaves_at_least_one_damage(mage_level, armour):
    # Mage 40 hits for floor(1 + 24 * 40 / 99) = 10 and always hits (threshold < 1); armour 50 or
    # more absorbs 10 or more. Level 1: 1 damage, hit or miss.
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels={Skill.MAGE: mage_level})
    add_player(state, 1, 5, 6, levels=TOUGH)
    state.entities.armour[1] = armour
    for seed in range(5):
        state.entities.health[1] = 99
        result = attack(state, conf, [(0, Style.MAGE, 1)], seed)
        if mage_level == 40:
            assert result.hit.tolist() == [True]
        assert result.damage.tolist() == [1]
        assert state.entities.health[1] == 98


def test_armour_counts_toward_defense_in_accuracy():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels={Skill.MELEE: 30})
    add_player(state, 1, 5, 6, levels=TOUGH)
    # Without armour: 0.3 + 0.7 - 30 + 10 < 1, always hits. With armour 99: 0.3 * 100 + 0.7 - 30 + 10
    # = 10.7, so rolls 11..20 hit (50 %).
    state.entities.armour[1] = (99, 99)
    hits = []
    for seed in range(400):
        state.entities.health[1] = 99
        hits.append(bool(attack(state, conf, [(0, Style.MELEE, 1)], seed).hit[0]))
    assert np.mean(hits) == pytest.approx(0.5, abs=0.1)


# ------------------------------------------------------------------------ damage sum and cap
def test_damage_is_summed_over_attackers():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 4, levels=STRONG)
    add_player(state, 1, 5, 8, levels=STRONG)
    add_player(state, 2, 5, 6, levels=TOUGH)
    attack(state, conf, [(0, Style.RANGE, 2), (1, Style.RANGE, 2)])
    assert state.entities.health[2] == 99 - 35 - 35
    assert state.entities.damage_taken[2] == 70


def test_damage_is_capped_at_remaining_health():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=4)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 7, levels=STRONG)
    add_player(state, 2, 4, 6, levels=STRONG)
    add_player(state, 3, 5, 6, health=40, levels=TOUGH)
    result = attack(state, conf, [(0, Style.MELEE, 3), (1, Style.MELEE, 3), (2, Style.MELEE, 3)])
    assert state.entities.health[3] == 0
    assert state.entities.damage_taken[3] == 40
    assert result.killed.tolist() == [3]


def test_attacks_use_start_of_tick_state_so_both_fighters_can_die():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6, levels=STRONG)
    result = attack(state, conf, [(0, Style.MELEE, 1), (1, Style.MELEE, 0)])
    assert state.entities.health.tolist() == [0, 0]
    assert sorted(result.killed.tolist()) == [0, 1]


# --------------------------------------------------------------------------------- kill credit
def test_kill_goes_to_the_top_damage_attacker():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 4, levels=STRONG, entity_id=1)  # range 35
    add_player(state, 1, 5, 7, levels=STRONG, entity_id=9)  # melee 70
    add_player(state, 2, 5, 6, health=50, levels=TOUGH)
    result = attack(state, conf, [(0, Style.RANGE, 2), (1, Style.MELEE, 2)])
    assert result.killed.tolist() == [2] and result.killers.tolist() == [1]
    assert state.entities.attacker_id[2] == 9 and state.entities.attacker_row[2] == 1
    assert state.entities.player_kills.tolist() == [0, 1, 0]


def test_kill_credit_tie_goes_to_the_lowest_id():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 5, levels=STRONG, entity_id=7)
    add_player(state, 1, 5, 7, levels=STRONG, entity_id=3)
    add_player(state, 2, 5, 6, levels=TOUGH)
    result = attack(state, conf, [(0, Style.MELEE, 2), (1, Style.MELEE, 2)])
    assert result.killed.tolist() == [2] and result.killers.tolist() == [1]
    assert state.entities.attacker_id[2] == 3
    assert state.entities.player_kills.tolist() == [0, 1, 0]


def test_a_kill_is_credited_once():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=4)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 7, levels=STRONG)
    add_player(state, 2, 4, 6, levels=STRONG)
    add_player(state, 3, 5, 6, health=5)
    result = attack(state, conf, [(0, Style.MELEE, 3), (1, Style.MELEE, 3), (2, Style.MELEE, 3)])
    assert result.killed.tolist() == [3]
    assert state.entities.player_kills.sum() == 1


def test_player_kills_count_only_players_killed_by_players():
    conf = make_config("Combat", "NPC")
    state = make_state(grass_map(12), n_players=3, n_npcs=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_npc(state, 3, 5, 6, level=5)  # killed by player 0: no Player Kill
    add_player(state, 1, 2, 2, health=3)
    add_npc(state, 4, 2, 3, level=99, health=99)  # kills player 1: NPCs get no Player Kill either
    add_player(state, 2, 8, 8)
    result = attack(state, conf, [(0, Style.MELEE, 3), (4, Style.MELEE, 1)])
    assert sorted(result.killed.tolist()) == [1, 3]
    assert state.entities.player_kills.tolist() == [0, 0, 0, 0, 0]


# --------------------------------------------------------------------------------------- loot
def test_killer_takes_each_armour_piece_that_beats_its_own():
    conf = make_config("Combat", "NPC")
    state = make_state(grass_map(12), n_players=1, n_npcs=1)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_npc(state, 1, 5, 6, level=5)
    state.entities.armour[0] = (3, 9)
    state.entities.armour[1] = (5, 2)  # absorbs floor(3.5 / 5) = 0
    result = attack(state, conf, [(0, Style.MELEE, 1)])
    assert result.killed.tolist() == [1]
    assert state.entities.armour[0].tolist() == [5, 9]
    assert state.entities.armour[1].tolist() == [5, 2]
    assert state.entities.max_equipment[0] == 7  # the mean of the two pieces


def test_equipment_metric_keeps_half_levels():
    # armour (3, 0) is equipment 1.5: the metric must not round it down to 1 (and (1, 0) to 0,
    # which would miss the easy Equipment achievement at 1 only by rounding)
    conf = make_config("Combat", "NPC")
    state = make_state(grass_map(12), n_players=1, n_npcs=1)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_npc(state, 1, 5, 6, level=5)
    state.entities.armour[1] = (3, 0)
    assert attack(state, conf, [(0, Style.MELEE, 1)]).killed.tolist() == [1]
    assert state.entities.max_equipment[0] == 1.5


def test_no_loot_without_a_kill():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6, levels=TOUGH)
    state.entities.armour[1] = (20, 20)
    attack(state, conf, [(0, Style.MELEE, 1)])
    assert state.entities.health[1] > 0
    assert state.entities.armour[0].tolist() == [0, 0]


# ------------------------------------------------------------------------------------- freeze
def test_mage_hit_freezes_for_three_ticks_without_freeze_lock():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 7, levels=TOUGH)
    ent = state.entities
    state.tick = 10
    result = attack(state, conf, [(0, Style.MAGE, 1)])
    assert result.hit.tolist() == [True]
    assert ent.freeze_end[1] == 12  # frozen at ticks 10, 11, 12
    # Hit again while frozen or within 3 ticks after the freeze ended: no new freeze.
    for tick in range(11, 16):
        state.tick = tick
        ent.health[1] = 99
        attack(state, conf, [(0, Style.MAGE, 1)], seed=tick)
        assert ent.freeze_end[1] == 12, tick
    state.tick = 16
    attack(state, conf, [(0, Style.MAGE, 1)], seed=16)
    assert ent.freeze_end[1] == 18


@pytest.mark.parametrize("style", [Style.MELEE, Style.RANGE])
def test_only_mage_freezes(style):
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6, levels=TOUGH)
    state.tick = 4
    attack(state, conf, [(0, style, 1)])
    assert state.entities.freeze_end[1] < 4


def test_a_missed_mage_attack_does_not_freeze():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 5, 6, levels={Skill.CONSTITUTION: 99, Skill.DEFENSE: 99, Skill.MAGE: 99})
    for seed in range(30):
        result = attack(state, conf, [(0, Style.MAGE, 1)], seed)
        if not result.hit[0]:
            assert state.entities.freeze_end[1] < 0
            return
    pytest.fail("no miss in 30 rolls at a 5 % hit chance")


# ------------------------------------------------------------------------------ friendly fire
def test_friendly_fire_off_blocks_teammates_only():
    conf = make_config("Combat").set("COMBAT_FRIENDLY_FIRE", False)
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 5, levels=STRONG, team=0)
    add_player(state, 1, 5, 6, levels=TOUGH, team=0)
    add_player(state, 2, 4, 5, levels=TOUGH, team=1)
    ok = combat.valid_attacks(state, conf, np.array([0, 0]), np.array([0, 0]), np.array([1, 2]))
    assert ok.tolist() == [False, True]
    attack(state, conf, [(0, Style.MELEE, 1)])
    assert state.entities.health[1] == 99
    attack(state, conf, [(0, Style.MELEE, 2)])
    assert state.entities.health[2] == 99 - 70


def test_friendly_fire_on_by_default_allows_teammates():
    conf = make_config("Combat")
    assert conf.COMBAT_FRIENDLY_FIRE is True
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG, team=0)
    add_player(state, 1, 5, 6, levels=TOUGH, team=0)
    attack(state, conf, [(0, Style.MELEE, 1)])
    assert state.entities.health[1] == 99 - 70


def test_friendly_fire_off_still_allows_attacking_npcs():
    conf = make_config("Combat", "NPC").set("COMBAT_FRIENDLY_FIRE", False)
    state = make_state(grass_map(12), n_players=1, n_npcs=2)
    add_player(state, 0, 5, 5, levels=STRONG, team=0)
    add_npc(state, 1, 5, 6, level=99, kind=NPCType.HOSTILE)
    add_npc(state, 2, 4, 6, level=99, kind=NPCType.HOSTILE)
    attack(state, conf, [(0, Style.MELEE, 1), (1, Style.MELEE, 2)])
    assert state.entities.health[1] == 99 - 70
    assert state.entities.health[2] < 99  # NPCs (team -1) are nobody's teammates


# ----------------------------------------------------------------------------------- stealing
def test_attacker_steals_food_and_water_up_to_damage():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, food=3, water=4)  # level-1 mage: exactly 1 damage, hit or miss
    add_player(state, 1, 5, 6, food=5, water=7)
    attack(state, conf, [(0, Style.MAGE, 1)])
    ent = state.entities
    assert (ent.food[0], ent.water[0], ent.food[1], ent.water[1]) == (4, 5, 4, 6)


def test_stealing_is_limited_by_what_the_target_has_and_by_capacity():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, food=8, water=1, levels=STRONG)  # range 35 damage
    add_player(state, 1, 5, 7, food=6, water=2, levels=TOUGH)
    attack(state, conf, [(0, Style.RANGE, 1)])
    ent = state.entities
    assert (ent.food[1], ent.water[1]) == (0, 0)  # min(35, 6) and min(35, 2) taken
    assert (ent.food[0], ent.water[0]) == (10, 3)  # gains above capacity 10 are lost


def test_biggest_hitter_steals_first():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 5, 5, food=0, water=0, levels=STRONG)  # range: 35
    add_player(state, 1, 5, 8, food=0, water=0, levels=STRONG)  # melee: 70
    add_player(state, 2, 5, 7, food=4, water=9, levels=TOUGH)
    attack(state, conf, [(0, Style.RANGE, 2), (1, Style.MELEE, 2)])
    ent = state.entities
    assert (ent.food[1], ent.water[1]) == (4, 9)
    assert (ent.food[0], ent.water[0]) == (0, 0)
    assert (ent.food[2], ent.water[2]) == (0, 0)


def test_nothing_is_stolen_from_npcs():
    conf = make_config("Combat", "NPC")
    state = make_state(grass_map(12), n_players=1, n_npcs=1)
    add_player(state, 0, 5, 5, food=2, water=2)
    add_npc(state, 1, 5, 6, level=20)
    attack(state, conf, [(0, Style.MAGE, 1)])
    ent = state.entities
    assert (ent.food[0], ent.water[0]) == (2, 2)
    assert (ent.food[1], ent.water[1]) == (0, 0)


def test_no_combat_system_means_no_attacks():
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6)
    result = attack(state, conf, [(0, Style.MELEE, 1)])
    assert result.attackers.size == 0 and state.entities.health[1] == 10


def test_immortal_targets_keep_one_health():
    conf = make_config("Combat").set("IMMORTAL", True)
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, levels=STRONG)
    add_player(state, 1, 5, 6)
    result = attack(state, conf, [(0, Style.MELEE, 1)])
    assert state.entities.health[1] == 1 and result.killed.size == 0
