"""Spawning and removal (DESIGN.md section 5 "Players", "NPCs & Equipment", Appendix A "Teams")."""

import numpy as np
import pytest

from nmmo.core.enums import Direction, Material, NPCType, Skill
from nmmo.core.state import Entities, State, Tiles
from nmmo.core.systems import movement, spawn
from nmmo.core.systems.progression import xp_table

from .helpers import add_npc, add_player, check_occupancy, grass_map, make_config, make_state

CENTER, BORDER = 8, 2  # a 12 x 12 map; the playable square is rows/cols 2..9
LOW, HIGH = BORDER, BORDER + CENTER - 1


def _ring_order(low, high):
    """(r, c) -> position along the clockwise ring, computed independently of the engine."""
    cells = [(low, c) for c in range(low, high)] + [(r, high) for r in range(low, high)]
    cells += [(high, c) for c in range(high, low, -1)] + [(r, low) for r in range(high, low, -1)]
    return {cell: i for i, cell in enumerate(cells)}


def _player_world(player_n, team_size=1, seed=0, **keys):
    conf = make_config(MAP_CENTER=CENTER, MAP_BORDER=BORDER, PLAYER_N=player_n, PLAYER_TEAM_SIZE=team_size,
                       **keys)
    state = State(Entities(player_n, player_n), Tiles.from_map(grass_map(CENTER + 2 * BORDER, BORDER)))
    spawn.spawn_initial_players(state, conf, np.random.default_rng(seed))
    return conf, state


def _cells(state, rows):
    ent = state.entities
    return [(int(ent.row[i]), int(ent.col[i])) for i in rows]


# ---------------------------------------------------------------------------- initial players
def _chebyshev_gaps(cells, teams):
    """Least Chebyshev distance between cells of different teams (None when there is one team)."""
    cells = np.array(cells)
    gaps = np.max(np.abs(cells[:, None] - cells[None, :]), axis=2)
    other = np.asarray(teams)[:, None] != np.asarray(teams)[None, :]
    return int(gaps[other].min()) if other.any() else None


@pytest.mark.parametrize(("player_n", "seed"), [(1, 0), (3, 1), (8, 2), (8, 3), (13, 4), (16, 6), (28, 5)])
def test_initial_players_spread_edge_by_edge(player_n, seed):
    conf, state = _player_world(player_n, seed=seed)
    ent = state.entities
    ring = _ring_order(LOW, HIGH)
    cells = _cells(state, range(player_n))
    assert ent.alive.all()
    assert len(set(cells)) == player_n  # distinct tiles
    assert all(cell in ring for cell in cells)  # all on the playable square's outer ring
    edge = CENTER - 1
    per_edge = np.bincount([ring[cell] // edge for cell in cells], minlength=4)
    assert per_edge.max() - per_edge.min() <= 1  # the four edges share the players evenly
    if player_n > 1:  # along an edge and around every corner, nobody closer than PLAYER_SPAWN_SPACING
        assert _chebyshev_gaps(cells, range(player_n)) >= conf.PLAYER_SPAWN_SPACING
    check_occupancy(state)


@pytest.mark.parametrize("spacing", [1, 2, 3])
def test_the_configured_spacing_holds_around_corners(spacing):
    for seed in range(40):  # 8 on a 7-tile edge: 2 an edge, 3 apart at most
        conf, state = _player_world(8, seed=seed, PLAYER_SPAWN_SPACING=spacing)
        assert _chebyshev_gaps(_cells(state, range(8)), range(8)) >= spacing


def test_few_players_do_not_all_start_in_corners():
    """Corners show an agent the least of the map: with room to spare, starts spread along the edges."""
    import nmmo

    conf = nmmo.config.load("small_maps").set("PLAYER_N", 8)
    edge = conf.MAP_CENTER - 1
    ring = _ring_order(conf.MAP_BORDER, conf.MAP_BORDER + edge)
    near_corner = []
    for seed in range(50):
        env = nmmo.Env(conf, seed=seed)
        env.reset()
        along = np.array([ring[cell] % edge for cell in _cells(env.realm.state, range(8))])  # place on its edge
        near_corner += ((along < 8) | (along > edge - 8)).tolist()
    assert np.mean(near_corner) < 0.3  # 15 of 127 tiles of an edge: 12 % by chance (the old layout: half)


@pytest.mark.parametrize("seed", range(6))
def test_tournament_spawns_are_beyond_mage_reach_for_every_pair(seed):
    """The canonical tournament: every pair of starting tiles at least 5 apart (mage reach is 4)."""
    import nmmo

    conf = nmmo.config.load("tournament")
    assert conf.PLAYER_SPAWN_SPACING > conf.COMBAT_MAGE_REACH
    env = nmmo.Env(conf, seed=seed)
    env.reset()
    ent = env.realm.state.entities
    cells = list(zip(ent.row[: conf.PLAYER_N].tolist(), ent.col[: conf.PLAYER_N].tolist(), strict=True))
    assert len(cells) == conf.PLAYER_N and ent.alive[: conf.PLAYER_N].all()
    assert _chebyshev_gaps(cells, range(conf.PLAYER_N)) >= 5


def test_spawn_spacing_that_the_ring_cannot_hold_is_a_config_error():
    import nmmo

    conf = nmmo.config.load("tournament")
    with pytest.raises(nmmo.ConfigError, match="PLAYER_SPAWN_SPACING=5.*PLAYER_N=104.*only 4 tile"):
        conf.set("PLAYER_N", 104).validate()


def test_initial_players_start_as_the_rules_say():
    conf, state = _player_world(8)
    ent = state.entities
    assert ent.id.tolist() == list(range(1, 9)) and state.next_player_id == 9
    assert (ent.health == 10).all() and (ent.food == 10).all() and (ent.water == 10).all()
    assert ent.level[0].tolist() == [10, 10, 10, 1, 1, 1, 1]
    assert ent.xp[0, Skill.HUNTING] == 1154 and ent.xp[0, Skill.MELEE] == 0
    assert (ent.armour == 0).all()
    assert (ent.npc_type == NPCType.PLAYER).all()
    assert ent.spawn_row.tolist() == ent.row.tolist() and ent.spawn_col.tolist() == ent.col.tolist()
    assert (ent.level[:, Skill.CONSTITUTION] == ent.health).all()


def test_default_small_preset_spawns_all_players_apart():
    conf = make_config()
    size = conf.MAP_SIZE
    state = State(Entities(conf.PLAYER_N, conf.PLAYER_N), Tiles.from_map(grass_map(size, conf.MAP_BORDER)))
    spawn.spawn_initial_players(state, conf, np.random.default_rng(0))
    ring = _ring_order(conf.MAP_BORDER, conf.MAP_BORDER + conf.MAP_CENTER - 1)
    cells = _cells(state, range(conf.PLAYER_N))
    assert len(set(cells)) == conf.PLAYER_N and all(cell in ring for cell in cells)


@pytest.mark.parametrize(("player_n", "team_size"), [(8, 4), (12, 3), (28, 4), (8, 2)])
def test_teams_are_contiguous_blocks_next_to_each_other_on_the_ring(player_n, team_size):
    conf, state = _player_world(player_n, team_size=team_size, seed=player_n)
    ent = state.entities
    assert ent.team.tolist() == [slot // team_size for slot in range(player_n)]
    ring = _ring_order(LOW, HIGH)
    positions = [ring[cell] for cell in _cells(state, range(player_n))]
    teams_along_ring = [int(ent.team[i]) for i in np.argsort(positions)]
    changes = sum(a != b for a, b in zip(teams_along_ring, teams_along_ring[1:] + teams_along_ring[:1],
                                          strict=True))
    assert changes == player_n // team_size  # each team is one unbroken arc of the ring


@pytest.mark.parametrize(("player_n", "team_size"), [(8, 4), (12, 3), (28, 4), (16, 2)])
def test_teammates_start_on_neighbouring_ring_tiles(player_n, team_size):
    conf, state = _player_world(player_n, team_size=team_size, seed=player_n)
    ent = state.entities
    for team in range(player_n // team_size):
        seats = np.flatnonzero(ent.team[:player_n] == team)
        rows, cols = ent.row[seats], ent.col[seats]
        # consecutive seats stand on touching tiles (the ring goes round corners)
        steps = np.maximum(np.abs(np.diff(rows)), np.abs(np.diff(cols)))
        assert steps.tolist() == [1] * (team_size - 1), (team, rows.tolist(), cols.tolist())
    assert _chebyshev_gaps(_cells(state, range(player_n)), ent.team[:player_n]) >= 1  # teams do not touch


# ---------------------------------------------------------------------------------- respawning
def _kill(state, rows):
    state.entities.health[rows] = 0
    return spawn.remove_dead(state)


def test_respawn_fills_free_slots_with_new_increasing_ids():
    conf, state = _player_world(8, team_size=4, PLAYER_SPAWN_ATTEMPTS=2)
    ent = state.entities
    ent.armour[[2, 5, 6]] = 7
    ent.player_kills[[2, 5, 6]] = 3
    ent.level[[2, 5, 6], Skill.MELEE] = 40
    assert _kill(state, [2, 5, 6]).tolist() == [2, 5, 6]
    state.tick = 30
    rng = np.random.default_rng(0)
    first = spawn.respawn_players(state, conf, rng).tolist()
    assert len(first) == 2 and set(first) < {2, 5, 6}  # at most 2 per tick, among the free slots
    assert sorted(ent.id[first].tolist()) == [9, 10]
    (last,) = {2, 5, 6} - set(first)
    assert not ent.alive[last]
    assert spawn.respawn_players(state, conf, rng).tolist() == [last]
    assert ent.id[last] == 11 and state.next_player_id == 12
    assert ent.alive.all()
    assert ent.team.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]  # slots keep their team
    for slot in (2, 5, 6):
        assert ent.health[slot] == 10 and ent.food[slot] == 10 and ent.water[slot] == 10
        assert ent.level[slot].tolist() == [10, 10, 10, 1, 1, 1, 1]
        assert ent.xp[slot].tolist() == xp_table()[[10, 10, 10, 1, 1, 1, 1]].tolist()
        assert ent.armour[slot].tolist() == [0, 0] and ent.player_kills[slot] == 0
        assert ent.spawn_tick[slot] == 31  # born during tick 30: first seen (and alive) from 31
    ring = _ring_order(LOW, HIGH)
    cells = _cells(state, range(8))
    assert all(cell in ring for cell in cells) and len(set(cells)) == 8
    check_occupancy(state)
    assert spawn.respawn_players(state, conf, rng).size == 0  # nobody missing


def test_respawn_draws_which_free_slots_fill_first():
    """Not lowest-first: the slot an agent gets says nothing about who controls it."""
    filled = set()
    for seed in range(12):
        conf, state = _player_world(8, PLAYER_SPAWN_ATTEMPTS=1)
        _kill(state, [1, 4, 6])
        filled |= set(spawn.respawn_players(state, conf, np.random.default_rng(seed)).tolist())
    assert filled == {1, 4, 6}


def test_respawn_never_reuses_ids_over_many_deaths():
    conf, state = _player_world(6, PLAYER_SPAWN_ATTEMPTS=3)
    rng = np.random.default_rng(5)
    seen = set(state.entities.id.tolist())
    for _ in range(30):
        _kill(state, rng.choice(6, size=int(rng.integers(0, 4)), replace=False))
        spawn.respawn_players(state, conf, rng)
        spawn.respawn_players(state, conf, rng)
        new = set(state.entities.id.tolist()) - seen
        assert all(i > max(seen) for i in new)
        seen |= new
        check_occupancy(state)
    assert len(seen) == state.next_player_id - 1


def test_respawn_uses_only_free_ring_tiles():
    conf, state = _player_world(28, PLAYER_SPAWN_ATTEMPTS=4)  # every ring tile taken
    _kill(state, [0, 1])
    rng = np.random.default_rng(0)
    spawned = spawn.respawn_players(state, conf, rng)
    assert spawned.tolist() == [0, 1]  # exactly the two freed tiles
    check_occupancy(state)
    _kill(state, [5])
    ring_cell = _cells(state, [5])[0]
    state.tiles.material[ring_cell] = Material.STONE  # the only free ring tile is not walkable
    assert spawn.respawn_players(state, conf, rng).size == 0
    state.tiles.material[ring_cell] = Material.GRASS
    assert spawn.respawn_players(state, conf, rng).tolist() == [5]
    assert _cells(state, [5]) == [ring_cell]


def test_no_respawn_with_concurrent_spawning():
    conf, state = _player_world(8, PLAYER_RESPAWN=False)
    _kill(state, [3])
    assert spawn.respawn_players(state, conf, np.random.default_rng(0)).size == 0
    assert not state.entities.alive[3]


# ---------------------------------------------------------------------------------------- NPCs
NPC_CENTER, NPC_BORDER = 32, 2
NPC_LOW, NPC_HIGH = NPC_BORDER, NPC_BORDER + NPC_CENTER - 1


def _danger(r, c):
    edge = min(r - NPC_LOW, NPC_HIGH - r, c - NPC_LOW, NPC_HIGH - c)
    return 2 * edge / NPC_CENTER


def _npc_world(material, npc_n, **keys):
    conf = make_config(MAP_CENTER=NPC_CENTER, MAP_BORDER=NPC_BORDER, PLAYER_N=2, NPC_N=npc_n, **keys)
    return conf, make_state(material, n_players=2, n_npcs=npc_n)


def _expected_kind(d):
    return NPCType.HOSTILE if d >= 0.8 else NPCType.NEUTRAL if d >= 0.5 else NPCType.PASSIVE


def test_npc_type_by_danger_at_chosen_tiles():
    # Only a few tiles are walkable, so spawns land exactly there.
    material = grass_map(NPC_CENTER + 2 * NPC_BORDER, NPC_BORDER, fill=Material.STONE)
    tiles = {
        (2, 2): NPCType.PASSIVE,  # on the edge: danger 0
        (33, 20): NPCType.PASSIVE,
        (9, 17): NPCType.PASSIVE,  # 7 from the edge: 0.4375
        (10, 17): NPCType.NEUTRAL,  # 8: 0.5
        (14, 14): NPCType.NEUTRAL,  # 12: 0.75
        (15, 17): NPCType.HOSTILE,  # 13: 0.8125
        (17, 17): NPCType.HOSTILE,  # 15: 0.9375 (the centre)
    }
    for cell in tiles:
        material[cell] = Material.GRASS
    conf, state = _npc_world(material, npc_n=len(tiles), NPC_LEVEL_MAX=99, NPC_LEVEL_SPREAD=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        spawn.spawn_npcs(state, conf, rng, attempts=2000)
    ent = state.entities
    rows = np.arange(2, 2 + len(tiles))
    assert ent.alive[rows].all()
    by_cell = {(int(ent.row[i]), int(ent.col[i])): i for i in rows}
    assert set(by_cell) == set(tiles)
    for cell, kind in tiles.items():
        row = by_cell[cell]
        assert ent.npc_type[row] == kind, cell
        base = _danger(*cell) * (99 - 1) + 1
        for skill in (Skill.CONSTITUTION, Skill.DEFENSE, Skill.MELEE, Skill.RANGE, Skill.MAGE):
            assert np.floor(base) <= ent.level[row, skill] <= np.ceil(base), (cell, skill)
        assert ent.health[row] == ent.level[row, Skill.CONSTITUTION]
    assert ent.level[by_cell[(2, 2)], Skill.MELEE] == 1  # level min at the edge
    assert sorted(ent.id[rows].tolist()) == list(range(-len(tiles), 0))
    assert state.next_npc_id == -len(tiles) - 1


@pytest.mark.parametrize(
    ("edge_distance", "kind"),
    [(16, NPCType.HOSTILE), (15, NPCType.NEUTRAL), (10, NPCType.NEUTRAL), (9, NPCType.PASSIVE), (0, NPCType.PASSIVE)],
)
def test_npc_type_thresholds_are_inclusive(edge_distance, kind):
    # MAP_CENTER 40: danger = 2 * e / 40, so e = 16 is exactly 0.8 (hostile) and e = 10 exactly 0.5.
    center, border = 40, 2
    material = grass_map(center + 2 * border, border, fill=Material.STONE)
    cell = (border + edge_distance, border + 20)
    material[cell] = Material.GRASS
    conf = make_config(MAP_CENTER=center, MAP_BORDER=border, PLAYER_N=1, NPC_N=1)
    state = make_state(material, n_players=1, n_npcs=1)
    rng = np.random.default_rng(0)
    for _ in range(50):
        if spawn.spawn_npcs(state, conf, rng, attempts=500).size:
            break
    assert _cells(state, [1]) == [cell]
    assert state.entities.npc_type[1] == kind


def test_npc_levels_armour_and_placement_over_many_spawns():
    material = grass_map(NPC_CENTER + 2 * NPC_BORDER, NPC_BORDER)
    conf, state = _npc_world(material, npc_n=600, NPC_LEVEL_MAX=99, NPC_LEVEL_SPREAD=10)
    add_player(state, 0, 17, 17)
    add_player(state, 1, 2, 2)
    rng = np.random.default_rng(3)
    spawned = spawn.spawn_npcs(state, conf, rng, attempts=600)
    for _ in range(5):
        spawned = np.append(spawned, spawn.spawn_npcs(state, conf, rng, attempts=600))
    ent = state.entities
    rows = np.flatnonzero(ent.alive[2:]) + 2
    assert sorted(spawned.tolist()) == rows.tolist()
    assert rows.size > 500
    check_occupancy(state)
    assert _cells(state, [0, 1]) == [(17, 17), (2, 2)]  # players kept their tiles
    r, c = ent.row[rows], ent.col[rows]
    assert ((r >= NPC_LOW) & (r <= NPC_HIGH) & (c >= NPC_LOW) & (c <= NPC_HIGH)).all()
    assert len(set(ent.id[rows].tolist())) == rows.size and (ent.id[rows] < 0).all()
    levels = ent.level[rows][:, [Skill.CONSTITUTION, Skill.DEFENSE, Skill.MELEE, Skill.RANGE, Skill.MAGE]]
    offsets = []
    for i, row in enumerate(rows):
        d = _danger(int(ent.row[row]), int(ent.col[row]))
        assert ent.npc_type[row] == _expected_kind(d)
        base = d * 98 + 1
        low, high = max(1, np.floor(base) - 10), min(99, np.ceil(base) + 10)
        assert ((levels[i] >= low) & (levels[i] <= high)).all()
        offsets.append(levels[i] - base)
    offsets = np.concatenate(offsets)
    assert offsets.std() > 4  # uniform over +-10 has sd ~6: the spread is used
    assert ent.food[rows].max() == 0 and ent.water[rows].max() == 0
    assert set(np.unique(ent.style[rows]).tolist()) == {0, 1, 2}
    # Armour: each piece clip(Normal(Defense - 10, 10), 0, Defense).
    defense = ent.level[rows, Skill.DEFENSE]
    armour = ent.armour[rows]
    assert (armour >= 0).all() and (armour <= defense[:, None]).all()
    strong = defense >= 40  # far from the clip at 0
    shortfall = (armour[strong] - (defense[strong, None] - 10)).mean()
    assert -2.5 < shortfall < 0.5  # E[min(N(D - 10, 10), D)] = D - 10.83


def test_npc_spawning_stops_at_npc_n():
    material = grass_map(NPC_CENTER + 2 * NPC_BORDER, NPC_BORDER)
    conf, state = _npc_world(material, npc_n=10)
    rng = np.random.default_rng(0)
    first = spawn.spawn_npcs(state, conf, rng, attempts=4)
    assert first.size <= 4
    for _ in range(5):
        spawn.spawn_npcs(state, conf, rng, attempts=25)
    assert state.entities.alive[2:].sum() == 10
    assert spawn.spawn_npcs(state, conf, rng, attempts=25).size == 0


def test_npcs_never_spawn_on_water_stone_or_lava():
    material = grass_map(NPC_CENTER + 2 * NPC_BORDER, NPC_BORDER)
    rng = np.random.default_rng(1)
    inner = material[NPC_LOW : NPC_HIGH + 1, NPC_LOW : NPC_HIGH + 1]
    inner[:] = rng.choice([Material.GRASS, Material.WATER, Material.STONE, Material.LAVA, Material.FOREST],
                          size=inner.shape)
    conf, state = _npc_world(material, npc_n=200)
    spawn.spawn_npcs(state, conf, rng, attempts=2000)
    ent = state.entities
    rows = np.flatnonzero(ent.alive)
    assert rows.size == 200
    assert np.isin(material[ent.row[rows], ent.col[rows]], [Material.GRASS, Material.FOREST]).all()


# ------------------------------------------------------------------------------------- removal
def test_remove_dead_frees_rows_and_tiles():
    state = make_state(grass_map(12), n_players=3, n_npcs=2)
    add_player(state, 0, 5, 5)
    add_player(state, 1, 5, 6, health=0)
    add_player(state, 2, 6, 6)
    add_npc(state, 3, 7, 7, health=0)
    add_npc(state, 4, 8, 8, health=4)
    removed = spawn.remove_dead(state)
    ent, occ = state.entities, state.tiles.occupancy
    assert removed.tolist() == [1, 3]
    assert ent.alive.tolist() == [True, False, True, False, True]
    assert occ[5, 6] == -1 and occ[7, 7] == -1
    assert occ[5, 5] == 0 and occ[6, 6] == 2 and occ[8, 8] == 4
    assert spawn.remove_dead(state).size == 0


def test_remove_dead_after_lava_keeps_the_tile_a_mover_took():
    conf = make_config()
    state = make_state(grass_map(12), n_players=2)
    add_player(state, 0, 1, 5)
    add_player(state, 1, 2, 5)
    directions = np.array([Direction.NORTH, Direction.NORTH])
    movement.resolve(state, conf, directions, np.random.default_rng(0))
    assert spawn.remove_dead(state).tolist() == [0]
    assert state.tiles.occupancy[1, 5] == 1  # player 1 walked into the tile player 0 left
    assert not state.entities.alive[0]
    check_occupancy(state)
