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
    players = np.flatnonzero(ent.alive[: ent.n_players])
    npcs = ent.n_players + np.flatnonzero(ent.alive[ent.n_players :])
    max_health = ent.max_health

    if not config.has("Resource"):
        ent.health[players] = np.minimum(ent.health[players] + 1, max_health[players])
    elif players.size:
        _update_players(state, config, players)
    if npcs.size and config.has("NPC"):
        ent.health[npcs] = np.minimum(ent.health[npcs] + config.NPC_REGEN, max_health[npcs])


def _update_players(state: State, config: Config, players: np.ndarray) -> None:
    ent, tiles = state.entities, state.tiles
    food_cap = ent.food_capacity[players]
    water_cap = ent.water_capacity[players]
    food = np.maximum(ent.food[players] - config.RESOURCE_FOOD_DECAY, 0)
    water = np.maximum(ent.water[players] - config.RESOURCE_WATER_DECAY, 0)

    rows, cols = ent.row[players], ent.col[players]
    on_forest = tiles.material[rows, cols] == ints.Material.FOREST
    food = np.where(on_forest, food_cap, food)
    next_to_water = tiles.water_adjacent[rows, cols]
    water = np.where(next_to_water, water_cap, water)

    harvested = players[on_forest]
    drank = players[next_to_water]
    events.forage(state, harvested, drank)
    if harvested.size:
        tiles.material[ent.row[harvested], ent.col[harvested]] = Material.SCRUB
        flat = ent.row[harvested].astype(np.int64) * tiles.cols + ent.col[harvested]
        tiles.depleted = np.concatenate([tiles.depleted, flat])
    if config.has("Progression"):
        scale = config.PROGRESSION_HARVEST_XP_SCALE
        level_max = config.PROGRESSION_LEVEL_MAX
        add_xp(ent, harvested, Skill.HUNTING, scale * ent.level[harvested, Skill.HUNTING].astype(np.int64), level_max)
        add_xp(ent, drank, Skill.FISHING, scale * ent.level[drank, Skill.FISHING].astype(np.int64), level_max)

    is_starving = food == 0
    is_dehydrated = water == 0
    health = ent.health[players]
    health = health - config.RESOURCE_STARVE_DAMAGE * is_starving - config.RESOURCE_DEHYDRATE_DAMAGE * is_dehydrated
    threshold = config.RESOURCE_REGEN_THRESHOLD
    can_regenerate = (
        ~is_starving & ~is_dehydrated & (food > threshold * food_cap) & (water > threshold * water_cap)
    )
    constitution = ent.level[players, Skill.CONSTITUTION]
    regen = np.maximum(config.RESOURCE_REGEN_MIN, (config.RESOURCE_REGEN_FRACTION * constitution).astype(np.int32))
    health = np.where(can_regenerate, health + regen, health)
    health = np.minimum(health, ent.max_health[players])
    if config.IMMORTAL:
        health = np.maximum(health, 1)
    ent.food[players] = food
    ent.water[players] = water
    ent.health[players] = np.maximum(health, 0)


def regrow_forests(state: State, config: Config, rng: np.random.Generator) -> None:
    """Each harvested forest grows back with probability RESOURCE_FOREST_REGROW_PROB per tick."""
    tiles = state.tiles
    if not config.has("Resource") or tiles.depleted.size == 0:
        return
    regrows = draws.uniform_tiles(rng, tiles.depleted) < config.RESOURCE_FOREST_REGROW_PROB
    if regrows.any():
        tiles.material.ravel()[tiles.depleted[regrows]] = Material.FOREST
        tiles.depleted = tiles.depleted[~regrows]
