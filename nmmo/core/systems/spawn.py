"""Spawning and removal: players on the edge ring, NPCs inside by danger, the dead taken away.

Players: `reset` places PLAYER_N agents evenly around the spawn ring (the playable square's outer
ring), edge by edge so that players stay apart around corners too (`initial_ring_positions`);
teams are contiguous blocks of slots, each starting on neighbouring ring tiles. With
PLAYER_RESPAWN, up to PLAYER_SPAWN_ATTEMPTS free slots per tick, drawn at random, get a new agent
id on a random free ring tile; a slot keeps its team.
NPCs: up to NPC_SPAWN_ATTEMPTS random tiles per tick until NPC_N exist (reset fills them at once);
their kind and level follow the danger of the tile (0 at the playable edge, about 1 at the centre).

Time alive counts from an entity's first observation: the tick of `reset` for those placed then,
the next tick for those born during a tick (the observation built at its end is their first).
This module sets it (`spawn_tick`) and nothing else does.
"""

from __future__ import annotations

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import NPCType, Skill
from nmmo.core.rules import WALKABLE, danger, ring_tiles
from nmmo.core.state import NO_TICK, State
from nmmo.core.systems.progression import xp_table

_NO_TILES = np.zeros((0, 2), dtype=np.int64)
_NO_TILES.setflags(write=False)


def spawn_ring(config: Config) -> np.ndarray:
    low = config.MAP_BORDER
    return ring_tiles(low, low + config.MAP_CENTER - 1)


def _reset_row(state: State, rows: np.ndarray, born: int) -> None:
    _reset_entity_rows(state.entities, rows, born)


def _reset_entity_rows(ent, rows: np.ndarray, born) -> None:
    """Clear per-life columns of rows that are about to hold a new entity."""
    ent.freeze_end[rows] = NO_TICK
    ent.attacker_id[rows] = 0
    ent.attacker_row[rows] = -1
    ent.damage_taken[rows] = 0
    ent.attack_style[rows] = -1
    ent.attack_target_id[rows] = 0
    ent.target[rows] = -1
    ent.target_id[rows] = 0
    ent.flee_ticks[rows] = 0
    ent.player_kills[rows] = 0
    ent.max_equipment[rows] = 0
    ent.max_explore[rows] = 0
    ent.event_totals[rows] = 0  # the event log's life totals (`nmmo.core.systems.events`)
    ent.tile_ticks[rows] = 0
    ent.armour[rows] = 0
    ent.spawn_tick[rows] = born


def _place(state: State, rows: np.ndarray, tiles_rc: np.ndarray) -> None:
    ent = state.entities
    ent.row[rows], ent.col[rows] = tiles_rc[:, 0], tiles_rc[:, 1]
    ent.spawn_row[rows], ent.spawn_col[rows] = tiles_rc[:, 0], tiles_rc[:, 1]
    state.tiles.occupancy[tiles_rc[:, 0], tiles_rc[:, 1]] = rows
    ent.alive[rows] = True


def _init_players(state: State, config: Config, slots: np.ndarray, born: int) -> None:
    ids = np.arange(state.next_player_id, state.next_player_id + slots.size)
    state.next_player_id += slots.size
    init_players(state.entities, config, slots, slots, ids, born)


def init_players(ent, config: Config, rows: np.ndarray, slots: np.ndarray, ids: np.ndarray, born) -> None:
    """Write new players into entity `rows`: `slots` are their agent slots in their world (teams are
    contiguous blocks of slots), `ids` their agent ids, `born` their first tick."""
    _reset_entity_rows(ent, rows, born)
    ent.id[rows] = ids
    base = config.PROGRESSION_BASE_LEVEL if config.has("Progression") else 1
    resource_base = config.PROGRESSION_RESOURCE_BASE_LEVEL if config.has("Progression") else 10
    levels = np.full(len(Skill), base, dtype=np.int32)
    levels[[Skill.CONSTITUTION, Skill.HUNTING, Skill.FISHING]] = resource_base
    table = xp_table(config.PROGRESSION_LEVEL_MAX if config.has("Progression") else 99)
    ent.level[rows] = levels
    ent.xp[rows] = table[levels]
    ent.health[rows] = resource_base
    ent.food[rows] = resource_base
    ent.water[rows] = resource_base
    ent.team[rows] = slots // config.PLAYER_TEAM_SIZE
    ent.npc_type[rows] = NPCType.PLAYER


def spawn_initial_players(state: State, config: Config, rng: np.random.Generator) -> None:
    ring = spawn_ring(config)
    slots = np.arange(config.PLAYER_N)
    index = initial_ring_positions(config.PLAYER_N, config.PLAYER_TEAM_SIZE, config.MAP_CENTER, rng,
                                   config.PLAYER_SPAWN_SPACING)
    _place(state, slots, ring[index])
    _init_players(state, config, slots, born=state.tick)


def initial_ring_positions(n: int, team_size: int, center: int, rng: np.random.Generator,
                           spacing: int = 1) -> np.ndarray:
    """Ring index (see `spawn_ring`) of each initial slot, spread evenly edge by edge.

    The ring is four edges of ``center - 1`` tiles, each starting at a corner. Units (teams, or
    single players) are dealt to the edges as evenly as possible (the edge that gets the first
    extra unit is drawn), ``s = (center - 1) // units on that edge`` apart along the edge, from a
    random offset. The offset keeps every unit at least `spacing` (Chebyshev) from the units of the
    next edge around the corner, and within that leaves the units anywhere along the edge: spread
    out, they do not all start in corners, where an agent sees least of the map. A team's members
    take neighbouring ring tiles from its unit's position. When an edge cannot hold its teams that
    way, teams are spread by ring length (and when even that fails, single slots)."""
    edge, ring = center - 1, 4 * (center - 1)
    units = -(-n // team_size)
    slots = np.arange(n)
    if -(-units // 4) * team_size > edge:  # too crowded for the edge-wise layout
        start = int(rng.integers(ring))
        if units * team_size > ring:
            return (start + (slots * ring) // n) % ring
        return (start + ((slots // team_size) * ring) // units + slots % team_size) % ring
    counts = np.full(4, units // 4)
    counts[(int(rng.integers(4)) + np.arange(units % 4)) % 4] += 1
    starts = []
    for side, count in enumerate(counts.tolist()):
        if count == 0:
            continue
        step = edge // count
        # the last unit's last member ends `edge - shift - (count - 1) * step - (team_size - 1)` tiles before
        # the next corner: at least `spacing` from whatever starts there
        room = max(edge - count * step + step - spacing - (team_size - 1), 0)
        shift = int(rng.integers(room + 1))
        starts.append(side * edge + shift + step * np.arange(count))
    anchors = np.concatenate(starts)
    return (anchors[slots // team_size] + slots % team_size) % ring


def respawn_players(state: State, config: Config, rng: np.random.Generator) -> np.ndarray:
    """Fill free player slots, drawn at random, on random free ring tiles (during a tick: they are
    first seen, and count as alive, from the next); returns the slots filled.
    (A random slot, not the lowest free one: which slot an agent gets must say nothing about who
    controls it, and tournaments deal slots to policies.)"""
    ent = state.entities
    if not config.PLAYER_RESPAWN or config.PLAYER_SPAWN_ATTEMPTS == 0:
        return np.zeros(0, dtype=np.int64)
    slots, chosen = choose_respawns(config, rng, ent.alive[: ent.n_players], state.tiles.material,
                                    state.tiles.occupancy)
    if slots.size:
        _place(state, slots, chosen)
        _init_players(state, config, slots, born=state.tick + 1)
    return slots


def choose_respawns(config: Config, rng: np.random.Generator, alive: np.ndarray, material: np.ndarray,
                    occupancy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(slots, ring tiles) of this tick's respawns in one world, given its players' `alive` flags
    and its tile grids: the draws `respawn_players` makes, and nothing else."""
    free_slots = np.flatnonzero(~alive)
    if free_slots.size == 0:
        return free_slots, _NO_TILES
    if free_slots.size > config.PLAYER_SPAWN_ATTEMPTS:
        free_slots = rng.choice(free_slots, size=config.PLAYER_SPAWN_ATTEMPTS, replace=False)
    ring = spawn_ring(config)
    open_tiles = ring[(occupancy[ring[:, 0], ring[:, 1]] < 0) & WALKABLE[material[ring[:, 0], ring[:, 1]]]]
    count = min(free_slots.size, len(open_tiles))
    if count == 0:
        return free_slots[:0], _NO_TILES
    chosen = open_tiles[rng.choice(len(open_tiles), size=count, replace=False)]
    return free_slots[:count], chosen


def spawn_npcs(state: State, config: Config, rng: np.random.Generator, attempts: int,
               born: int | None = None) -> np.ndarray:
    """Try `attempts` random tiles; place NPCs on the walkable empty ones while slots are free.
    `born`: the tick they count as alive from (default: now, as at reset; during a tick, the next)."""
    ent, tiles = state.entities, state.tiles
    if not config.has("NPC") or attempts <= 0:
        return np.zeros(0, dtype=np.int64)
    free = ent.n_players + np.flatnonzero(~ent.alive[ent.n_players :])
    rc = choose_npc_tiles(config, rng, tiles.material, tiles.occupancy, free.size, attempts)
    rows = free[: len(rc)]
    if rows.size == 0:
        return rows
    _place(state, rows, rc)
    _reset_row(state, rows, state.tick if born is None else born)
    _init_npcs(state, config, rows, rng)
    return rows


def choose_npc_tiles(config: Config, rng: np.random.Generator, material: np.ndarray, occupancy: np.ndarray,
                     n_free: int, attempts: int) -> np.ndarray:
    """Tiles (row, col) for up to `n_free` new NPCs in one world: `attempts` random tiles, the
    walkable, empty and distinct ones kept in draw order (nothing is drawn when no slot is free)."""
    if n_free == 0:
        return _NO_TILES
    low = config.MAP_BORDER
    rc = rng.integers(low, low + config.MAP_CENTER, size=(attempts, 2))
    ok = WALKABLE[material[rc[:, 0], rc[:, 1]]] & (occupancy[rc[:, 0], rc[:, 1]] < 0)
    flat = rc[:, 0] * material.shape[1] + rc[:, 1]
    _, first = np.unique(flat, return_index=True)
    unique = np.zeros(attempts, dtype=bool)
    unique[first] = True
    return rc[ok & unique][:n_free]


def _init_npcs(state: State, config: Config, rows: np.ndarray, rng: np.random.Generator) -> None:
    n = rows.size
    ids = np.arange(state.next_npc_id, state.next_npc_id - n, -1)
    state.next_npc_id -= n
    ent = state.entities
    init_npcs(ent, rows, ids, npc_stats(config, rng, ent.row[rows], ent.col[rows]))


def npc_stats(config: Config, rng: np.random.Generator, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """(kind, levels, style, armour) of new NPCs on tiles (rows, cols) of one world, drawn in the
    order a lone world draws them: the kind and level base follow the tile's danger."""
    n = rows.size
    d = danger(config, rows, cols)
    kind = np.full(n, NPCType.PASSIVE, dtype=np.int8)
    kind[d >= config.NPC_NEUTRAL_DANGER] = NPCType.NEUTRAL
    kind[d >= config.NPC_HOSTILE_DANGER] = NPCType.HOSTILE
    low, high, spread = config.NPC_LEVEL_MIN, config.NPC_LEVEL_MAX, config.NPC_LEVEL_SPREAD
    base = np.rint(d * (high - low) + low).astype(np.int32)
    level = np.ones((n, len(Skill)), dtype=np.int32)
    for skill in (Skill.CONSTITUTION, Skill.DEFENSE, Skill.MELEE, Skill.RANGE, Skill.MAGE):
        level[:, skill] = np.clip(base + rng.integers(-spread, spread + 1, size=n), low, high)
    style = rng.integers(0, 3, size=n)
    defense = level[:, Skill.DEFENSE]
    pieces = rng.normal(defense[:, None] + config.NPC_ARMOUR_OFFSET, config.NPC_ARMOUR_STD, size=(n, 2))
    armour = np.clip(np.rint(pieces), 0, defense[:, None]).astype(np.int32)
    return kind, level, style, armour


def init_npcs(ent, rows: np.ndarray, ids: np.ndarray, stats: tuple[np.ndarray, ...]) -> None:
    """Write new NPCs (`npc_stats`) into entity `rows` with the given (negative) ids."""
    kind, level, style, armour = stats
    ent.id[rows] = ids
    ent.npc_type[rows] = kind
    ent.level[rows] = level
    ent.xp[rows] = 0
    ent.health[rows] = level[:, Skill.CONSTITUTION]
    ent.food[rows] = 0
    ent.water[rows] = 0
    ent.team[rows] = -1
    ent.style[rows] = style
    ent.armour[rows] = armour


def remove_dead(state: State) -> np.ndarray:
    """Free the rows and tiles of entities with no health left; returns the removed rows."""
    ent = state.entities
    dead = np.flatnonzero(ent.alive & (ent.health <= 0))
    if dead.size:
        on_tile = state.tiles.occupancy[ent.row[dead], ent.col[dead]] == dead
        state.tiles.occupancy[ent.row[dead][on_tile], ent.col[dead][on_tile]] = -1
        ent.alive[dead] = False
    return dead
