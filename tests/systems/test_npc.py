"""NPC behaviour (DESIGN.md section 5 "NPCs & Equipment"): passive flee, neutral retaliation, hostile
hunting, attacks within reach, never into water or lava."""

import numpy as np
import pytest

from nmmo.core.enums import Direction, Material, NPCType, Style
from nmmo.core.systems import movement, npc

from .helpers import add_npc, add_player, grass_map, make_config, make_state

NPC_ROW = 2  # two player slots, then NPC rows


def _decide(state, conf, seed=0):
    capacity = state.entities.capacity
    directions = np.full(capacity, Direction.STAY, dtype=np.int64)
    styles = np.full(capacity, -1, dtype=np.int64)
    targets = np.full(capacity, -1, dtype=np.int64)
    rows, directions[rows], styles[rows], targets[rows] = npc.decide(state, conf, np.random.default_rng(seed))
    return directions, styles, targets


def _hit(state, npc_row, attacker_row, damage=2):
    ent = state.entities
    ent.damage_taken[npc_row] = damage
    ent.attacker_row[npc_row] = attacker_row
    ent.attacker_id[npc_row] = ent.id[attacker_row]


def _clear_tick(state):
    ent = state.entities
    ent.damage_taken[:] = 0
    ent.attacker_row[:] = -1
    ent.attacker_id[:] = 0


def _step(state, row, direction):
    """Move one entity by hand (the decision only; movement has its own tests)."""
    ent, tiles = state.entities, state.tiles
    r, c = ent.row[row] + movement.DELTAS[direction, 0], ent.col[row] + movement.DELTAS[direction, 1]
    tiles.occupancy[ent.row[row], ent.col[row]] = -1
    ent.row[row], ent.col[row] = r, c
    tiles.occupancy[r, c] = row


def _dest(state, row, direction):
    ent = state.entities
    return int(ent.row[row] + movement.DELTAS[direction, 0]), int(ent.col[row] + movement.DELTAS[direction, 1])


def _npc_cell(state):
    return (int(state.entities.row[NPC_ROW]), int(state.entities.col[NPC_ROW]))


def _l1(a, b):
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# ------------------------------------------------------------------------------------ passive
@pytest.mark.parametrize("seed", range(5))
def test_damaged_passive_npc_flees_from_its_attacker(seed):
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 9)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.PASSIVE, level=3)
    _hit(state, NPC_ROW, 0)
    ent = state.entities
    attacker = (10, 9)
    directions, styles, targets = _decide(state, conf, seed)
    assert ent.flee_ticks[NPC_ROW] > 0
    assert styles[NPC_ROW] == -1 and targets[NPC_ROW] == -1  # passive NPCs never fight back
    fleeing_moves = 0
    while True:
        d = int(directions[NPC_ROW])
        here = (int(ent.row[NPC_ROW]), int(ent.col[NPC_ROW]))
        assert d != Direction.STAY
        assert _l1(_dest(state, NPC_ROW, d), attacker) > _l1(here, attacker)
        fleeing_moves += 1
        _step(state, NPC_ROW, d)
        _clear_tick(state)
        if ent.flee_ticks[NPC_ROW] == 0:
            break
        directions, _, _ = _decide(state, conf, seed + fleeing_moves)
    assert fleeing_moves == conf.NPC_FLEE_TICKS


def test_undamaged_passive_npc_wanders_to_random_empty_neighbours():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2, n_npcs=1)
    add_player(state, 0, 5, 6)  # east neighbour occupied
    add_npc(state, NPC_ROW, 5, 5, kind=NPCType.PASSIVE)
    seen = set()
    for seed in range(100):
        directions, styles, targets = _decide(state, conf, seed)
        assert targets[NPC_ROW] == -1
        seen.add(int(directions[NPC_ROW]))
    assert seen == {Direction.NORTH, Direction.SOUTH, Direction.WEST}


# ------------------------------------------------------------------------------------ neutral
def test_neutral_npc_retaliates_and_chases_its_attacker():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 13)  # distance 3: range attack reach, out of melee reach
    add_player(state, 1, 10, 8)  # a bystander
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.NEUTRAL, style=Style.MELEE, level=5)
    _hit(state, NPC_ROW, 0)
    ent = state.entities
    directions, styles, targets = _decide(state, conf)
    assert ent.target[NPC_ROW] == 0 and ent.target_id[NPC_ROW] == ent.id[0]
    assert targets[NPC_ROW] == -1  # out of melee reach: no attack yet
    assert directions[NPC_ROW] == Direction.EAST  # the only step that closes the distance
    # Next tick, no new damage: still hunting while the attacker stays within vision.
    _step(state, NPC_ROW, Direction.EAST)
    _clear_tick(state)
    directions, styles, targets = _decide(state, conf, 1)
    assert directions[NPC_ROW] == Direction.EAST and targets[NPC_ROW] == -1
    _step(state, NPC_ROW, Direction.EAST)
    directions, styles, targets = _decide(state, conf, 2)
    assert (styles[NPC_ROW], targets[NPC_ROW]) == (Style.MELEE, 0)  # adjacent now: attack
    assert directions[NPC_ROW] == Direction.STAY


def test_neutral_npc_attacks_an_adjacent_attacker_with_its_style():
    conf = make_config()
    state = make_state(grass_map(16), n_players=2, n_npcs=1)
    add_player(state, 1, 6, 9)
    add_npc(state, NPC_ROW, 8, 8, kind=NPCType.NEUTRAL, style=Style.RANGE, level=5)
    _hit(state, NPC_ROW, 1)
    directions, styles, targets = _decide(state, conf)
    assert (styles[NPC_ROW], targets[NPC_ROW]) == (Style.RANGE, 1)
    assert directions[NPC_ROW] == Direction.STAY


def test_neutral_npc_ignores_attackers_out_of_vision_and_bystanders():
    conf = make_config()
    state = make_state(grass_map(24), n_players=2, n_npcs=1)
    add_player(state, 0, 12, 18)  # distance 6 > NPC_VISION_RADIUS 5
    add_player(state, 1, 12, 11)  # adjacent but never attacked the NPC
    add_npc(state, NPC_ROW, 12, 12, kind=NPCType.NEUTRAL, level=5)
    _hit(state, NPC_ROW, 0)
    directions, styles, targets = _decide(state, conf)
    assert state.entities.target[NPC_ROW] == -1
    assert targets[NPC_ROW] == -1


def test_neutral_npc_gives_up_once_the_attacker_leaves_vision():
    conf = make_config()
    state = make_state(grass_map(24), n_players=2, n_npcs=1)
    add_player(state, 0, 12, 16)
    add_npc(state, NPC_ROW, 12, 12, kind=NPCType.NEUTRAL, level=5)
    _hit(state, NPC_ROW, 0)
    _decide(state, conf)
    assert state.entities.target[NPC_ROW] == 0
    _clear_tick(state)
    _step(state, 0, Direction.EAST)
    _step(state, 0, Direction.EAST)  # now at distance 6
    _, _, targets = _decide(state, conf, 1)
    assert state.entities.target[NPC_ROW] == -1 and targets[NPC_ROW] == -1


# ------------------------------------------------------------------------------------ hostile
def test_hostile_npc_targets_the_nearest_entity_and_attacks_in_reach():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 14)  # distance 4
    add_player(state, 1, 8, 9)  # distance 2: nearest
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.RANGE, level=5)
    directions, styles, targets = _decide(state, conf)
    assert state.entities.target[NPC_ROW] == 1
    assert (styles[NPC_ROW], targets[NPC_ROW]) == (Style.RANGE, 1)  # reach 3 >= 2
    assert directions[NPC_ROW] == Direction.STAY


def test_hostile_npc_chases_the_nearest_entity_out_of_reach():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 15)  # distance 5: at the edge of vision
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.MELEE, level=5)
    directions, styles, targets = _decide(state, conf)
    assert state.entities.target[NPC_ROW] == 0
    assert targets[NPC_ROW] == -1
    assert directions[NPC_ROW] == Direction.EAST


def test_hostile_npc_sees_nothing_beyond_vision():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 16)  # distance 6
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, level=5)
    _, _, targets = _decide(state, conf)
    assert state.entities.target[NPC_ROW] == -1 and targets[NPC_ROW] == -1


def test_hostile_npc_hunts_any_kind_of_entity():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=2)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.MAGE, level=5)
    add_npc(state, NPC_ROW + 1, 12, 12, kind=NPCType.PASSIVE, level=2)
    _, styles, targets = _decide(state, conf)
    assert (styles[NPC_ROW], targets[NPC_ROW]) == (Style.MAGE, NPC_ROW + 1)


def test_hostile_npc_keeps_a_valid_target():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 13)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.MELEE, level=5)
    _decide(state, conf)
    assert state.entities.target[NPC_ROW] == 0
    add_player(state, 1, 9, 10)  # a nearer entity shows up
    directions, _, targets = _decide(state, conf, 1)
    assert state.entities.target[NPC_ROW] == 0
    assert targets[NPC_ROW] == -1 and directions[NPC_ROW] == Direction.EAST


def test_hostile_npc_drops_a_target_that_died_and_was_replaced():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 12)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.MELEE, level=5)
    _decide(state, conf)
    assert state.entities.target[NPC_ROW] == 0
    # Slot 0 is reused by a new agent far away; the slot alone must not keep the hunt going.
    ent = state.entities
    state.tiles.occupancy[10, 12] = -1
    ent.id[0], ent.row[0], ent.col[0] = 77, 1, 1
    state.tiles.occupancy[1, 1] = 0
    _, _, targets = _decide(state, conf, 1)
    assert ent.target[NPC_ROW] == -1 and targets[NPC_ROW] == -1


def test_hunting_npc_walks_around_a_short_wall():
    # DESIGN 5: "Hunting: step toward the target along a walkable path (bounded search)". A
    # three-tile wall between a hostile and its still target is within any sensible search bound:
    # the shortest way into melee reach is 5 steps, all inside the NPC's vision.
    conf = make_config()
    material = grass_map(20)
    material[9:12, 11] = Material.STONE
    stuck = []
    for seed in range(3):
        state = make_state(material, n_players=2, n_npcs=1)
        add_player(state, 0, 10, 13)
        add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE, style=Style.MELEE, level=5)
        for tick in range(12):
            directions, styles, targets = _decide(state, conf, seed * 100 + tick)
            assert state.entities.target[NPC_ROW] == 0
            if targets[NPC_ROW] == 0:
                break
            if directions[NPC_ROW] != Direction.STAY:
                _step(state, NPC_ROW, int(directions[NPC_ROW]))
        else:
            stuck.append(_npc_cell(state))
    assert not stuck, f"the NPC never got around the wall (ended at {stuck})"


# ------------------------------------------------------------------------------- terrain
def test_npcs_never_step_into_water_or_lava():
    conf = make_config()
    material = grass_map(20, fill=Material.GRASS)
    material[10, 9] = Material.LAVA  # west of the NPC
    material[9, 10] = Material.WATER  # north
    material[11, 10] = Material.WATER  # south
    state = make_state(material, n_players=2, n_npcs=1)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.PASSIVE)
    for seed in range(50):
        directions, _, _ = _decide(state, conf, seed)
        assert directions[NPC_ROW] in (Direction.EAST, Direction.STAY)


def test_fleeing_and_hunting_npcs_never_step_into_water_or_lava():
    conf = make_config()
    material = grass_map(20)
    material[10, 9] = Material.LAVA  # fleeing from the east leads west into lava
    material[9, 10] = material[11, 10] = Material.STONE
    material[5, 10] = Material.WATER  # a hostile chasing north walks into water
    material[5, 9] = material[5, 11] = Material.STONE
    state = make_state(material, n_players=2, n_npcs=2)
    add_player(state, 0, 10, 11)
    add_player(state, 1, 3, 10)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.PASSIVE)
    add_npc(state, NPC_ROW + 1, 6, 10, kind=NPCType.HOSTILE, style=Style.MELEE)
    for seed in range(30):
        _hit(state, NPC_ROW, 0)
        state.entities.target[NPC_ROW + 1] = -1
        directions, _, _ = _decide(state, conf, seed)
        assert directions[NPC_ROW] == Direction.STAY  # boxed in: lava, stone, stone, attacker
        assert state.entities.target[NPC_ROW + 1] == 1
        r, c = _dest(state, NPC_ROW + 1, int(directions[NPC_ROW + 1]))
        assert material[r, c] in (Material.GRASS, Material.SCRUB, Material.FOREST)


def test_decide_leaves_player_rows_alone():
    conf = make_config()
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 11)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE)
    rows, directions, styles, targets = npc.decide(state, conf, np.random.default_rng(0))
    assert rows.tolist() == [NPC_ROW]  # actions for NPC rows only
    assert len(directions) == len(styles) == len(targets) == 1


def test_no_npc_system_means_no_decisions():
    conf = make_config("Resource", "Combat")
    state = make_state(grass_map(20), n_players=2, n_npcs=1)
    add_player(state, 0, 10, 11)
    add_npc(state, NPC_ROW, 10, 10, kind=NPCType.HOSTILE)
    directions, styles, targets = _decide(state, conf)
    assert targets[NPC_ROW] == -1 and directions[NPC_ROW] == Direction.STAY
