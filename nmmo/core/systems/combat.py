"""Combat: simultaneous melee, range and mage attacks resolved in bulk.

All attacks of a tick use the positions and health at the start of the combat phase (an attacker
that dies this tick still hits). Accuracy: a d20 roll >= DEF_W * D + LVL_W * T - A + OFFSET hits (a
natural 20 always does), with A the attacker's style level, T the target's level in that style and
D its Defense level plus armour. A hit deals max(1, floor(base + scale * A / 99) - floor(armour /
5)); a miss deals 1. Damage to a target is summed, then capped at its health. The attacker that
dealt the most damage (ties: lowest id) is credited with the hit and with a kill. A damaging mage
hit freezes the target unless it was frozen within the last COMBAT_FREEZE_TICKS ticks. Player
attackers take food and water from player targets, at most the damage each, at most what the
target has (the biggest hitters take first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmmo.config import Config
from nmmo.core import draws
from nmmo.core.enums import Skill, ints
from nmmo.core.rules import chebyshev, may_attack, reaches
from nmmo.core.state import State
from nmmo.core.systems import events
from nmmo.core.systems.progression import add_xp

STYLE_SKILL = np.array([Skill.MELEE, Skill.RANGE, Skill.MAGE])


def hit_damage(config: Config, style: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Damage of a hit (before armour) by style and attacker level."""
    base = np.array([config.COMBAT_MELEE_DAMAGE_BASE, config.COMBAT_RANGE_DAMAGE_BASE, config.COMBAT_MAGE_DAMAGE_BASE])
    scale = np.array(
        [config.COMBAT_MELEE_DAMAGE_SCALE, config.COMBAT_RANGE_DAMAGE_SCALE, config.COMBAT_MAGE_DAMAGE_SCALE]
    )
    return (base[style] + scale[style] * level // 99).astype(np.int32)


def hit_threshold(config: Config, attack_level: np.ndarray, target_level: np.ndarray, defense: np.ndarray):
    """The d20 roll needed to hit."""
    return (
        config.COMBAT_ACCURACY_DEFENSE_WEIGHT * defense
        + config.COMBAT_ACCURACY_LEVEL_WEIGHT * target_level
        - attack_level
        + config.COMBAT_ACCURACY_OFFSET
    )


@dataclass
class CombatResult:
    """What happened this tick, for events and metrics: one entry per resolved attack."""

    attackers: np.ndarray
    targets: np.ndarray
    styles: np.ndarray
    damage: np.ndarray
    hit: np.ndarray
    killed: np.ndarray  # rows killed by attacks this tick
    killers: np.ndarray  # the credited attacker row of each killed row


EMPTY = np.zeros(0, dtype=np.int64)


def valid_attacks(state: State, config: Config, attackers: np.ndarray, styles: np.ndarray, targets: np.ndarray):
    """Mask of attacks that may resolve: live target other than self, within the style's reach,
    friendly-fire rules applied."""
    ent = state.entities
    ok = (targets >= 0) & (targets < ent.capacity) & (styles >= 0) & (styles < 3)
    safe_t = np.where(ok, targets, 0)
    safe_s = np.where(ok, styles, 0)
    dist = chebyshev(ent.row[attackers], ent.col[attackers], ent.row[safe_t], ent.col[safe_t])
    ok &= ent.alive[safe_t] & (dist >= 1) & (dist <= reaches(config)[safe_s])  # dist >= 1: not itself
    return ok & may_attack(config, ent.team[attackers], ent.team[safe_t])


def resolve(state: State, config: Config, styles: np.ndarray, targets: np.ndarray, rng: np.random.Generator):
    """Resolve this tick's attacks. `styles` and `targets` are per entity row (-1: no attack)."""
    ent = state.entities
    if not config.has("Combat"):
        return CombatResult(EMPTY, EMPTY, EMPTY, EMPTY, EMPTY.astype(bool), EMPTY, EMPTY)
    attackers = np.flatnonzero(ent.alive & (targets >= 0))
    s, t = styles[attackers].astype(np.int64), targets[attackers].astype(np.int64)
    keep = valid_attacks(state, config, attackers, s, t)
    a, s, t = attackers[keep], s[keep], t[keep]
    if a.size == 0:
        return CombatResult(EMPTY, EMPTY, EMPTY, EMPTY, EMPTY.astype(bool), EMPTY, EMPTY)

    skill = STYLE_SKILL[s]
    attack_level = ent.level[a, skill]
    armour = ent.equipment(t)
    defense = ent.level[t, Skill.DEFENSE] + armour
    roll = draws.integers(rng, a, 1, 21)
    hit = (roll >= hit_threshold(config, attack_level, ent.level[t, skill], defense)) | (roll == 20)
    absorbed = np.floor(armour / config.COMBAT_ARMOUR_ABSORB_DIVISOR).astype(np.int32)
    damage = np.where(hit, np.maximum(1, hit_damage(config, s, attack_level) - absorbed), config.COMBAT_MISS_DAMAGE)

    health_before = ent.health.copy()
    total = np.bincount(t, weights=damage, minlength=ent.capacity).astype(np.int32)
    hit_rows = np.flatnonzero(total)
    applied = np.minimum(total[hit_rows], health_before[hit_rows])
    if config.IMMORTAL:
        applied = np.minimum(applied, np.maximum(health_before[hit_rows] - 1, 0))
    ent.health[hit_rows] -= applied
    ent.damage_taken[hit_rows] += applied
    credited = np.minimum(damage, health_before[t])  # damage each attack is credited with

    # Per target, attacks sorted by damage (desc) then attacker id: the first is the credited one.
    order = np.lexsort((ent.id[a], -damage, t))
    first = np.ones(order.size, dtype=bool)
    first[1:] = t[order][1:] != t[order][:-1]
    top = order[first]
    ent.attacker_id[t[top]] = ent.id[a[top]]
    ent.attacker_row[t[top]] = a[top]
    ent.attack_style[a] = s
    ent.attack_target_id[a] = ent.id[t]

    _freeze(state, config, a, s, t, hit)
    _steal_resources(state, a, t, damage, order, first)
    if config.has("Progression"):
        _combat_xp(state, config, a, s, credited, hit_rows, applied)

    died = (health_before[t[top]] > 0) & (ent.health[t[top]] <= 0)
    killed, killers = t[top][died], a[top][died]
    events.combat(state, a, s, t, hit, credited, killed, killers)  # before looting changes the killers' armour
    _credit_kills(state, killed, killers)
    return CombatResult(a, t, s, damage, hit, killed, killers)


def _freeze(state: State, config: Config, a, s, t, hit) -> None:
    ent, ticks = state.entities, config.COMBAT_FREEZE_TICKS
    if ticks <= 0:
        return
    frozen = t[hit & (s == ints.Style.MAGE)]
    can_freeze = state.tick > ent.freeze_end[frozen] + ticks  # not frozen within the last `ticks` ticks
    ent.freeze_end[frozen[can_freeze]] = state.tick + ticks - 1


def _steal_resources(state: State, a, t, damage, order, first) -> None:
    """Player attackers take up to `damage` food and water each from player targets. What each
    attack wants is the same for both pools, so it is worked out once (and nothing is done
    when no player attacked a player)."""
    ent = state.entities
    n_players = ent.n_players
    a, t = a[order], t[order]
    want = np.where((a < n_players) & (t < n_players), damage[order], 0).astype(np.int64)
    if not want.any():
        return
    cumulative = np.cumsum(want)
    group_start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    before = cumulative - want - (cumulative[group_start] - want[group_start])
    for pool, capacity in ((ent.food, ent.food_capacity), (ent.water, ent.water_capacity)):
        available = pool[t].astype(np.int64)
        take = np.clip(available - before, 0, want)
        gains = np.bincount(a, weights=take, minlength=ent.capacity).astype(np.int32)
        losses = np.bincount(t, weights=take, minlength=ent.capacity).astype(np.int32)
        pool -= losses
        np.minimum(pool + gains, capacity, out=pool)


def _combat_xp(state: State, config: Config, a, s, credited, hit_rows, applied) -> None:
    ent, level_max = state.entities, config.PROGRESSION_LEVEL_MAX
    n_players = ent.n_players
    by_player = a < n_players
    if by_player.any():  # each attacker row once, so one call gives each its own style's skill
        pa, pd = a[by_player], credited[by_player].astype(np.int64)
        add_xp(ent, pa, Skill.CONSTITUTION, config.PROGRESSION_DEALT_CONSTITUTION_XP * pd, level_max)
        add_xp(ent, pa, STYLE_SKILL[s[by_player]], config.PROGRESSION_DEALT_STYLE_XP * pd, level_max)
    survived = (hit_rows < n_players) & (ent.health[hit_rows] > 0)
    rows, taken = hit_rows[survived], applied[survived].astype(np.int64)
    add_xp(ent, rows, Skill.CONSTITUTION, config.PROGRESSION_TAKEN_CONSTITUTION_XP * taken, level_max)
    add_xp(ent, rows, Skill.DEFENSE, config.PROGRESSION_TAKEN_DEFENSE_XP * taken, level_max)


def _credit_kills(state: State, killed: np.ndarray, killers: np.ndarray) -> None:
    """Player kills count player victims of player killers; every killer loots better armour."""
    ent = state.entities
    if killed.size == 0:
        return
    players_killed = (killed < ent.n_players) & (killers < ent.n_players)
    np.add.at(ent.player_kills, killers[players_killed], 1)
    better = ent.armour[killed] > ent.armour[killers]
    ent.armour[killers] = np.where(better, ent.armour[killed], ent.armour[killers])
    equipment_before = ent.max_equipment[killers]
    ent.max_equipment[killers] = np.maximum(equipment_before, ent.equipment(killers))
    events.looted(state, killers, equipment_before)
