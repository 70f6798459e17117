"""Resource: food, water and health for players; forest depletion and regrowth; NPC regeneration.

Per tick, for each live player: food and water drop; standing on a fresh forest refills food to
capacity (the forest turns to scrub); a water tile among the 4 neighbours refills water; then zero
food or zero water costs health, and food and water both above half capacity regenerate health.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core import draws
from nmmo.core.enums import Material, Skill, ints
from nmmo.core.state import State
from nmmo.core.systems import events
from nmmo.core.systems.progression import add_xp


def update(state: State, config: Config) -> None:
    """Apply one tick of the resource rules to every live entity."""
    ent = state.entities
    n = ent.n_players
    if not config.has("Resource"):
        players = np.flatnonzero(ent.alive[:n])
        ent.health[players] = np.minimum(ent.health[players] + 1, ent.max_health[players])
    elif ent.alive[:n].any():
        _update_players(state, config, np.flatnonzero(ent.alive[:n]))
    if config.has("NPC"):  # on the NPC rows in place, live ones only: no index arrays to build
        health = ent.health[n:]
        np.minimum(health + config.NPC_REGEN, ent.max_health[n:], out=health, where=ent.alive[n:])


def _update_players(state: State, config: Config, players: np.ndarray) -> None:
    """The player rules, with one gather per table (the levels as one block; tiles by flat index)."""
    ent, tiles = state.entities, state.tiles
    level = ent.level[players]  # as the tick began: only Hunting and Fishing gain XP below, after their reads
    food_cap, water_cap = level[:, Skill.HUNTING], level[:, Skill.FISHING]
    food = np.maximum(ent.food[players] - config.RESOURCE_FOOD_DECAY, 0)
    water = np.maximum(ent.water[players] - config.RESOURCE_WATER_DECAY, 0)

    pos = ent.row[players].astype(np.int64) * tiles.cols + ent.col[players]
    on_forest = tiles.material.ravel().take(pos) == ints.Material.FOREST
    np.copyto(food, food_cap, where=on_forest)
    next_to_water = tiles.water_adjacent.ravel().take(pos)
    np.copyto(water, water_cap, where=next_to_water)

    harvested = players[on_forest]
    drank = players[next_to_water]
    events.forage(state, harvested, drank)
    if harvested.size:
        spots = pos[on_forest]
        np.reshape(tiles.material, -1, copy=False)[spots] = Material.SCRUB
        tiles.depleted = np.concatenate([tiles.depleted, spots])
    if config.has("Progression"):
        scale = config.PROGRESSION_HARVEST_XP_SCALE
        level_max = config.PROGRESSION_LEVEL_MAX
        add_xp(ent, harvested, Skill.HUNTING, scale * food_cap[on_forest].astype(np.int64), level_max)
        add_xp(ent, drank, Skill.FISHING, scale * water_cap[next_to_water].astype(np.int64), level_max)

    is_starving = food == 0
    is_dehydrated = water == 0
    health = ent.health[players]
    health -= config.RESOURCE_STARVE_DAMAGE * is_starving + config.RESOURCE_DEHYDRATE_DAMAGE * is_dehydrated
    threshold = config.RESOURCE_REGEN_THRESHOLD
    can_regenerate = (food > threshold * food_cap) & (water > threshold * water_cap)
    if threshold < 0:  # else food (water) above threshold * capacity >= 0 is not starving (dehydrated)
        can_regenerate &= ~is_starving & ~is_dehydrated
    constitution = level[:, Skill.CONSTITUTION]
    regen = np.maximum(config.RESOURCE_REGEN_MIN, (config.RESOURCE_REGEN_FRACTION * constitution).astype(np.int32))
    np.add(health, regen, out=health, where=can_regenerate)
    np.minimum(health, constitution, out=health)  # max health
    np.maximum(health, 1 if config.IMMORTAL else 0, out=health)
    ent.food[players] = food
    ent.water[players] = water
    ent.health[players] = health


def regrow_forests(state: State, config: Config, rng: np.random.Generator) -> None:
    """Each harvested forest grows back with probability RESOURCE_FOREST_REGROW_PROB per tick."""
    tiles = state.tiles
    if not config.has("Resource") or tiles.depleted.size == 0:
        return
    regrows = draws.uniform_tiles(rng, tiles.depleted) < config.RESOURCE_FOREST_REGROW_PROB
    if regrows.any():
        tiles.material.ravel()[tiles.depleted[regrows]] = Material.FOREST
        tiles.depleted = tiles.depleted[~regrows]
