"""Tiny hand-made worlds for the rule tests: a map grid, an entity table, and entities placed by hand."""

from __future__ import annotations

import numpy as np

from nmmo import config as cfg
from nmmo.core.enums import Material, NPCType, Skill, Style
from nmmo.core.state import Entities, State, Tiles
from nmmo.core.systems.progression import xp_table
from nmmo.testing import check_state

_MIXINS = {"Resource": cfg.Resource, "Combat": cfg.Combat, "Progression": cfg.Progression, "NPC": cfg.NPC}


def make_config(*systems: str, **keys) -> cfg.Config:
    """A Small config with the named systems (all four when none are named) and key overrides."""
    systems = systems or tuple(_MIXINS)
    cls = type("TestConfig", (cfg.Small, *(_MIXINS[s] for s in systems)), {})
    conf = cls()
    for key, value in keys.items():
        conf.set(key, value)
    return conf


def grass_map(size: int = 12, border: int = 1, fill: Material = Material.GRASS) -> np.ndarray:
    """A size x size grid of `fill` inside a lava border `border` tiles wide."""
    material = np.full((size, size), Material.LAVA, dtype=np.uint8)
    material[border : size - border, border : size - border] = fill
    return material


def make_state(material: np.ndarray, n_players: int = 4, n_npcs: int = 0) -> State:
    return State(Entities(n_players + n_npcs, n_players), Tiles.from_map(material))


def add_player(state: State, row: int, r: int, c: int, *, health: int | None = None, food: int = 10,
               water: int = 10, levels: dict[Skill, int] | None = None, team: int | None = None,
               entity_id: int | None = None) -> int:
    """Put a new player in slot `row` at (r, c): resource skills 10, combat skills 1, as at spawn."""
    ent = state.entities
    assert row < ent.n_players
    lv = np.ones(len(Skill), dtype=np.int32)
    lv[[Skill.CONSTITUTION, Skill.HUNTING, Skill.FISHING]] = 10
    for skill, value in (levels or {}).items():
        lv[skill] = value
    _place(state, row, r, c)
    ent.id[row] = row + 1 if entity_id is None else entity_id
    ent.level[row] = lv
    ent.xp[row] = xp_table()[lv]
    ent.health[row] = lv[Skill.CONSTITUTION] if health is None else health
    ent.food[row], ent.water[row] = food, water
    ent.team[row] = row if team is None else team
    ent.npc_type[row] = NPCType.PLAYER
    return row


def add_npc(state: State, row: int, r: int, c: int, *, kind: NPCType = NPCType.PASSIVE,
            style: Style = Style.MELEE, level: int = 1, health: int | None = None,
            entity_id: int | None = None) -> int:
    """Put an NPC in row `row` (>= n_players) at (r, c) with all combat skills at `level`."""
    ent = state.entities
    assert row >= ent.n_players
    _place(state, row, r, c)
    ent.id[row] = -(row - ent.n_players + 1) if entity_id is None else entity_id
    ent.level[row] = 1
    for skill in (Skill.CONSTITUTION, Skill.DEFENSE, Skill.MELEE, Skill.RANGE, Skill.MAGE):
        ent.level[row, skill] = level
    ent.xp[row] = 0
    ent.health[row] = level if health is None else health
    ent.food[row] = ent.water[row] = 0
    ent.team[row] = -1
    ent.npc_type[row] = kind
    ent.style[row] = style
    return row


def _place(state: State, row: int, r: int, c: int) -> None:
    ent, tiles = state.entities, state.tiles
    assert tiles.occupancy[r, c] < 0, f"tile {(r, c)} already holds row {tiles.occupancy[r, c]}"
    ent.alive[row] = True
    ent.row[row], ent.col[row] = r, c
    ent.spawn_row[row], ent.spawn_col[row] = r, c
    tiles.occupancy[r, c] = row


def no_actions(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row attack arrays with no attack (-1)."""
    return np.full(capacity, -1, dtype=np.int64), np.full(capacity, -1, dtype=np.int64)


def check_occupancy(state: State) -> None:
    """The tables agree with each other (`nmmo.testing.check_state`): the occupancy grid indexes
    exactly the live entities standing on the map (not in lava, where an entity has died and only
    waits for removal), one per tile, and every other invariant."""
    check_state(state)
