"""Resource rules (DESIGN.md section 5 "Resources", Appendix A): decay, harvest, drink, starve, regenerate."""

import numpy as np
import pytest

from nmmo.core.enums import Material, Skill
from nmmo.core.systems import resource

from .helpers import add_npc, add_player, grass_map, make_config, make_state


def test_idle_player_on_grass_starves_on_the_appendix_schedule():
    # Appendix A: food and water reach 0 on the 10th update, health then falls 2 per update from
    # 10, so the player dies on its 14th update.
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=1)
    add_player(state, 0, 5, 5)
    ent = state.entities
    for update in range(1, 15):
        resource.update(state, conf)
        expected_stock = max(10 - update, 0)
        assert (ent.food[0], ent.water[0]) == (expected_stock, expected_stock), update
        expected_health = 10 if update < 10 else 10 - 2 * (update - 9)
        assert ent.health[0] == expected_health, update
    assert ent.health[0] == 0


@pytest.mark.parametrize(
    ("constitution", "health", "expected"),
    [
        (10, 5, 6),  # floor(0.1 * 10) = 1
        (30, 20, 23),  # floor(0.1 * 30) = 3
        (99, 50, 59),  # floor(0.1 * 99) = 9
        (5, 3, 4),  # max(1, floor(0.5)) = 1
        (30, 29, 30),  # capped at max health (Constitution)
        (10, 10, 10),
    ],
)
def test_regeneration_when_fed_and_watered(constitution, health, expected):
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=1)
    add_player(state, 0, 5, 5, health=health, levels={Skill.CONSTITUTION: constitution})
    resource.update(state, conf)
    assert state.entities.food[0] == 9 and state.entities.water[0] == 9
    assert state.entities.health[0] == expected


@pytest.mark.parametrize(("food", "water"), [(6, 10), (10, 6), (6, 6), (2, 2)])
def test_no_regeneration_at_or_below_half_capacity(food, water):
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=1)
    add_player(state, 0, 5, 5, health=4, food=food, water=water)
    resource.update(state, conf)  # after decay one of them is <= 5 = half of capacity 10
    assert state.entities.health[0] == 4


def test_starvation_and_dehydration_cost_one_health_each():
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=3)
    add_player(state, 0, 3, 3, health=7, food=1, water=10)
    add_player(state, 1, 3, 6, health=7, food=10, water=0)
    add_player(state, 2, 6, 6, health=7, food=0, water=1)
    resource.update(state, conf)
    ent = state.entities
    assert ent.health.tolist() == [6, 6, 5]  # food 0 and water 9: -1, no regeneration
    assert ent.food.tolist() == [0, 9, 0] and ent.water.tolist() == [9, 0, 0]


def test_harvesting_a_forest_refills_food_and_depletes_the_tile():
    conf = make_config("Resource")
    material = grass_map(12)
    material[5, 5] = material[5, 7] = material[2, 2] = Material.FOREST
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 5, food=3)
    add_player(state, 1, 5, 7, food=0, levels={Skill.HUNTING: 15})
    ent, tiles = state.entities, state.tiles
    resource.update(state, conf)
    assert ent.food[0] == 10 and ent.food[1] == 15  # refilled to capacity (the Hunting level)
    assert tiles.material[5, 5] == Material.SCRUB and tiles.material[5, 7] == Material.SCRUB
    assert tiles.material[2, 2] == Material.FOREST  # nobody stood there
    assert sorted(tiles.depleted.tolist()) == [5 * 12 + 5, 5 * 12 + 7]
    assert tiles.base_material[5, 5] == Material.FOREST  # the map itself is untouched
    # A depleted forest gives nothing: food decays again.
    resource.update(state, conf)
    assert ent.food[0] == 9 and ent.food[1] == 14
    assert sorted(tiles.depleted.tolist()) == [5 * 12 + 5, 5 * 12 + 7]


def test_harvest_appends_to_depleted_in_harvest_order():
    conf = make_config("Resource")
    material = grass_map(12)
    material[4, 4] = material[6, 6] = Material.FOREST
    state = make_state(material, n_players=1)
    add_player(state, 0, 6, 6)
    resource.update(state, conf)
    ent, tiles = state.entities, state.tiles
    tiles.occupancy[6, 6] = -1
    ent.row[0], ent.col[0] = 4, 4
    tiles.occupancy[4, 4] = 0
    resource.update(state, conf)
    assert tiles.depleted.tolist() == [6 * 12 + 6, 4 * 12 + 4]


def test_orthogonal_water_refills_water_and_diagonal_water_does_not():
    conf = make_config("Resource")
    material = grass_map(12)
    material[4, 3] = Material.WATER  # north of (5, 3)
    material[4, 8] = Material.WATER  # diagonal to (5, 7)
    material[8, 2] = Material.WATER  # west of (8, 3)
    state = make_state(material, n_players=3)
    add_player(state, 0, 5, 3, water=2)
    add_player(state, 1, 5, 7, water=2)
    add_player(state, 2, 8, 3, water=0, levels={Skill.FISHING: 20})
    resource.update(state, conf)
    ent = state.entities
    assert ent.water.tolist() == [10, 1, 20]
    assert (state.tiles.material == material).all()  # water never depletes


def test_food_and_water_never_exceed_capacity():
    conf = make_config("Resource")
    material = grass_map(12)
    material[5, 5] = Material.FOREST
    material[5, 6] = Material.WATER
    state = make_state(material, n_players=1)
    add_player(state, 0, 5, 5, food=10, water=10)
    resource.update(state, conf)
    assert state.entities.food[0] == 10 and state.entities.water[0] == 10


def test_regrow_with_probability_one_restores_every_forest():
    conf = make_config("Resource").set("RESOURCE_FOREST_REGROW_PROB", 1.0)
    material = grass_map(12)
    material[5, 5] = material[3, 8] = Material.FOREST
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 3, 8)
    resource.update(state, conf)
    assert state.tiles.material[5, 5] == Material.SCRUB and state.tiles.depleted.size == 2
    resource.regrow_forests(state, conf, np.random.default_rng(0))
    assert state.tiles.material[5, 5] == Material.FOREST and state.tiles.material[3, 8] == Material.FOREST
    assert state.tiles.depleted.size == 0
    assert (state.tiles.material == material).all()


def test_regrow_with_probability_zero_never_restores():
    conf = make_config("Resource").set("RESOURCE_FOREST_REGROW_PROB", 0.0)
    material = grass_map(12)
    material[5, 5] = Material.FOREST
    state = make_state(material, n_players=1)
    add_player(state, 0, 5, 5)
    resource.update(state, conf)
    rng = np.random.default_rng(0)
    for _ in range(500):
        resource.regrow_forests(state, conf, rng)
    assert state.tiles.material[5, 5] == Material.SCRUB
    assert state.tiles.depleted.tolist() == [5 * 12 + 5]


def test_regrow_rate_matches_the_default_probability():
    conf = make_config("Resource")
    assert conf.RESOURCE_FOREST_REGROW_PROB == 0.025
    size = 200
    state = make_state(np.full((size, size), Material.SCRUB, dtype=np.uint8), n_players=1)
    state.tiles.depleted = np.arange(size * size, dtype=np.int64)
    resource.regrow_forests(state, conf, np.random.default_rng(1))
    regrown = int((state.tiles.material == Material.FOREST).sum())
    # 40000 Bernoulli(0.025) draws: mean 1000, sd ~31.
    assert 850 < regrown < 1150
    assert state.tiles.depleted.size == size * size - regrown
    assert (state.tiles.material.ravel()[state.tiles.depleted] == Material.SCRUB).all()


def test_without_the_resource_system_health_regenerates_one_and_food_never_drains():
    conf = make_config("Combat")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, health=5, food=7, water=3)
    add_player(state, 1, 5, 7, health=10, food=0, water=0, levels={Skill.CONSTITUTION: 30})
    ent = state.entities
    for tick in range(1, 8):
        resource.update(state, conf)
        assert ent.health[0] == min(5 + tick, 10)
        assert ent.health[1] == 10 + tick  # +1 per tick, not floor(0.1 * 30) = 3, despite no food
        assert (ent.food[0], ent.water[0], ent.food[1], ent.water[1]) == (7, 3, 0, 0)


def test_immortal_keeps_health_at_least_one():
    conf = make_config("Resource").set("IMMORTAL", True)
    state = make_state(grass_map(12), n_players=1)
    add_player(state, 0, 5, 5)
    for _ in range(40):
        resource.update(state, conf)
        assert state.entities.health[0] >= 1
    assert state.entities.health[0] == 1
    assert state.entities.food[0] == 0 and state.entities.water[0] == 0


def test_npcs_regenerate_and_carry_no_food():
    conf = make_config()
    state = make_state(grass_map(12), n_players=1, n_npcs=1)
    add_npc(state, 1, 5, 5, level=8, health=3)
    resource.update(state, conf)
    ent = state.entities
    assert ent.health[1] == 4  # NPC_REGEN = 1
    assert ent.food[1] == 0 and ent.water[1] == 0


def test_dead_slots_are_ignored():
    conf = make_config("Resource")
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    state.entities.food[1] = 4
    state.entities.health[1] = 0
    resource.update(state, conf)
    assert state.entities.food[1] == 4 and state.entities.health[1] == 0
