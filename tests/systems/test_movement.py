"""Movement rules (DESIGN.md section 5, Appendix A "Moves"): simultaneous moves after attacks, no
shared tiles, no swaps, frozen entities stay, lava kills (or blocks under IMMORTAL)."""

import copy

import numpy as np
import pytest

from nmmo.core.enums import Direction, Material
from nmmo.core.systems import movement

from .helpers import add_npc, add_player, check_occupancy, grass_map, make_config, make_state

N, S, E, W, STAY = Direction.NORTH, Direction.SOUTH, Direction.EAST, Direction.WEST, Direction.STAY


def _directions(capacity, moves=None):
    out = np.full(capacity, STAY, dtype=np.int64)
    for row, d in (moves or {}).items():
        out[row] = d
    return out


def _positions(state):
    ent = state.entities
    return list(zip(ent.row.tolist(), ent.col.tolist(), strict=True))


def _random_state(rng, size, n_players, n_npcs):
    material = grass_map(size)
    inner = rng.choice(
        [Material.GRASS, Material.FOREST, Material.SCRUB, Material.WATER, Material.STONE, Material.LAVA],
        p=[0.45, 0.15, 0.1, 0.1, 0.1, 0.1], size=(size - 2, size - 2),
    )
    material[1:-1, 1:-1] = inner
    state = make_state(material, n_players=n_players, n_npcs=n_npcs)
    free = np.argwhere(np.isin(material, [Material.GRASS, Material.FOREST, Material.SCRUB]))
    count = min(len(free), n_players + n_npcs)
    cells = free[rng.choice(len(free), size=count, replace=False)]
    rows = rng.choice(n_players + n_npcs, size=count, replace=False)
    for row, (r, c) in zip(rows.tolist(), cells.tolist(), strict=True):
        if row < n_players:
            add_player(state, row, r, c)
        else:
            add_npc(state, row, r, c)
    ent = state.entities
    state.tick = 5
    ent.freeze_end[:] = np.where(rng.random(ent.capacity) < 0.1, 5 + rng.integers(0, 2, ent.capacity), -100)
    ent.health[(rng.random(ent.capacity) < 0.05) & ent.alive] = 0  # died earlier this tick: stays put
    directions = rng.integers(0, 5, size=ent.capacity)
    return state, directions


@pytest.mark.parametrize("immortal", [False, True])
def test_vectorized_moves_match_the_per_agent_reference(immortal):
    conf = make_config().set("IMMORTAL", immortal)
    rng = np.random.default_rng(1234)
    for trial in range(150):
        size = int(rng.integers(5, 14))
        n = int(rng.integers(2, size * size // 2))
        state, directions = _random_state(rng, size, n_players=n, n_npcs=int(rng.integers(0, 6)))
        reference = copy.deepcopy(state)
        lava = movement.resolve(state, conf, directions.copy(), np.random.default_rng(trial))
        lava_ref = movement.reference_resolve(reference, conf, directions.copy(), np.random.default_rng(trial))
        assert sorted(lava.tolist()) == lava_ref.tolist(), trial
        assert _positions(state) == _positions(reference), trial
        assert (state.tiles.occupancy == reference.tiles.occupancy).all(), trial
        assert (state.entities.health == reference.entities.health).all(), trial
        check_occupancy(state)


def test_dense_crowds_never_share_a_tile_and_moves_are_single_steps():
    conf = make_config()
    rng = np.random.default_rng(7)
    for trial in range(100):
        state, directions = _random_state(rng, 10, n_players=60, n_npcs=4)
        ent = state.entities
        before_r, before_c = ent.row.copy(), ent.col.copy()
        frozen = ent.freeze_end >= state.tick
        movement.resolve(state, conf, directions, np.random.default_rng(trial))
        check_occupancy(state)
        step = np.abs(ent.row - before_r) + np.abs(ent.col - before_c)
        assert (step <= 1).all()
        moved = step == 1
        assert not (moved & frozen).any()
        assert not (moved & (directions == STAY)).any()
        expected_r = before_r + movement.DELTAS[directions, 0]
        expected_c = before_c + movement.DELTAS[directions, 1]
        assert ((ent.row[moved] == expected_r[moved]) & (ent.col[moved] == expected_c[moved])).all()
        walkable = np.isin(state.tiles.material[ent.row, ent.col], [Material.GRASS, Material.FOREST, Material.SCRUB])
        assert (walkable | (ent.health == 0) | ~ent.alive).all(), trial


def test_single_move_in_each_direction():
    conf = make_config()
    state = make_state(grass_map(12), n_players=4)
    for row, (r, c) in enumerate([(2, 2), (2, 8), (8, 2), (8, 8)]):
        add_player(state, row, r, c)
    movement.resolve(state, conf, _directions(4, {0: N, 1: S, 2: E, 3: W}), np.random.default_rng(0))
    assert _positions(state) == [(1, 2), (3, 8), (8, 3), (8, 7)]
    check_occupancy(state)


def test_water_and_stone_block():
    conf = make_config()
    material = grass_map(12)
    material[4, 5] = Material.WATER
    material[6, 5] = Material.STONE
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 7, 5)
    movement.resolve(state, conf, _directions(2, {0: N, 1: N}), np.random.default_rng(0))
    assert _positions(state) == [(5, 5), (7, 5)]
    movement.resolve(state, conf, _directions(2, {0: S}), np.random.default_rng(0))
    assert _positions(state) == [(5, 5), (7, 5)]


def test_frozen_entities_do_not_move():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 7, 7)
    state.tick = 20
    state.entities.freeze_end[0] = 20  # frozen through this tick
    state.entities.freeze_end[1] = 19  # thawed
    movement.resolve(state, conf, _directions(2, {0: E, 1: E}), np.random.default_rng(0))
    assert _positions(state) == [(5, 5), (7, 8)]
    state.tick = 21
    movement.resolve(state, conf, _directions(2, {0: E}), np.random.default_rng(0))
    assert _positions(state)[0] == (5, 6)


def test_a_mage_freeze_blocks_moves_for_exactly_three_ticks():
    conf = make_config()
    state = make_state(grass_map(16), n_players=1)
    add_player(state, 0, 5, 2)
    state.entities.freeze_end[0] = 10 + conf.COMBAT_FREEZE_TICKS - 1  # frozen by a mage hit at tick 10
    cols = []
    for tick in range(10, 15):
        state.tick = tick
        movement.resolve(state, conf, _directions(1, {0: E}), np.random.default_rng(tick))
        cols.append(int(state.entities.col[0]))
    assert cols == [2, 2, 2, 3, 4]


@pytest.mark.parametrize("direction", [N, S, E, W])
def test_a_line_walking_the_same_way_all_moves(direction):
    conf = make_config()
    state = make_state(grass_map(14), n_players=5)
    dr, dc = movement.DELTAS[direction]
    for row in range(5):  # a line along the walking direction, the leader first
        add_player(state, row, 7 - dr * (row - 2), 7 - dc * (row - 2))
    before = _positions(state)
    for seed in range(10):
        state_copy = copy.deepcopy(state)
        movement.resolve(state_copy, conf, _directions(5, dict.fromkeys(range(5), direction)),
                         np.random.default_rng(seed))
        assert _positions(state_copy) == [(r + dr, c + dc) for r, c in before]
        check_occupancy(state_copy)


def test_a_line_behind_a_blocked_leader_stays():
    conf = make_config()
    material = grass_map(12)
    material[5, 8] = Material.STONE
    state = make_state(material, n_players=3)
    for row, c in enumerate([7, 6, 5]):
        add_player(state, row, 5, c)
    movement.resolve(state, conf, _directions(3, dict.fromkeys(range(3), E)), np.random.default_rng(0))
    assert _positions(state) == [(5, 7), (5, 6), (5, 5)]


def test_swaps_never_happen():
    conf = make_config()
    for seed in range(20):
        state = make_state(grass_map(12), n_players=2)
        add_player(state, 0, 5, 5)
        add_player(state, 1, 5, 6)
        movement.resolve(state, conf, _directions(2, {0: E, 1: W}), np.random.default_rng(seed))
        assert _positions(state) == [(5, 5), (5, 6)]


def test_rotations_never_happen():
    conf = make_config()
    for seed in range(20):
        state = make_state(grass_map(12), n_players=4)
        # A 2x2 block turning clockwise: each agent walks into the next one's tile.
        for row, (r, c) in enumerate([(4, 4), (4, 5), (5, 5), (5, 4)]):
            add_player(state, row, r, c)
        movement.resolve(state, conf, _directions(4, {0: E, 1: S, 2: W, 3: N}), np.random.default_rng(seed))
        assert _positions(state) == [(4, 4), (4, 5), (5, 5), (5, 4)]


def test_contested_tile_goes_to_exactly_one_with_no_edge_by_slot():
    conf = make_config()
    wins = np.zeros(2, dtype=int)
    for seed in range(400):
        state = make_state(grass_map(12), n_players=2)
        add_player(state, 0, 5, 4)
        add_player(state, 1, 5, 6)
        movement.resolve(state, conf, _directions(2, {0: E, 1: W}), np.random.default_rng(seed))
        winners = [row for row in range(2) if _positions(state)[row] == (5, 5)]
        assert len(winners) == 1
        check_occupancy(state)
        wins[winners[0]] += 1
    assert 150 < wins[0] < 250  # ~50 % each


def test_moving_into_a_tile_being_vacated_succeeds():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 4, 5)
    movement.resolve(state, conf, _directions(2, {0: N, 1: E}), np.random.default_rng(0))
    assert _positions(state) == [(4, 5), (4, 6)]


def test_lava_entry_kills():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 1, 5)
    add_player(state, 1, 2, 5)
    lava = movement.resolve(state, conf, _directions(2, {0: N, 1: N}), np.random.default_rng(0))
    assert lava.tolist() == [0]
    assert state.entities.health[0] == 0
    assert _positions(state)[0] == (0, 5)
    assert _positions(state)[1] == (1, 5)  # the vacated tile can be taken the same tick
    assert state.tiles.occupancy[1, 5] == 1 and state.tiles.occupancy[0, 5] == -1
    check_occupancy(state)


def test_two_entities_entering_the_same_lava_both_die():
    conf = make_config()
    material = grass_map(12)
    material[5, 5] = Material.LAVA
    state = make_state(material, n_players=2)
    add_player(state, 0, 5, 4)
    add_player(state, 1, 5, 6)
    lava = movement.resolve(state, conf, _directions(2, {0: E, 1: W}), np.random.default_rng(0))
    assert sorted(lava.tolist()) == [0, 1]
    assert state.entities.health.tolist() == [0, 0]


def test_immortal_makes_lava_impassable():
    conf = make_config().set("IMMORTAL", True)
    state = make_state(grass_map(12), n_players=1)
    add_player(state, 0, 1, 5)
    lava = movement.resolve(state, conf, _directions(1, {0: N}), np.random.default_rng(0))
    assert lava.size == 0
    assert _positions(state) == [(1, 5)] and state.entities.health[0] == 10
    check_occupancy(state)


def test_dead_entities_do_not_move():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 5, 5, health=0)
    add_player(state, 1, 7, 7)
    state.entities.alive[1] = False
    movement.resolve(state, conf, _directions(2, {0: E, 1: E}), np.random.default_rng(0))
    assert _positions(state) == [(5, 5), (7, 7)]
