"""Integer enums shared by the engine and its clients, so nobody indexes by magic numbers."""

from __future__ import annotations

from enum import IntEnum
from types import SimpleNamespace


class Material(IntEnum):
    """Tile materials (the values stored in `Map.material`)."""

    LAVA = 0
    WATER = 1
    GRASS = 2
    SCRUB = 3
    FOREST = 4
    STONE = 5


#: RGB colour per material, for previews and the viewer.
MATERIAL_COLORS: dict[Material, tuple[int, int, int]] = {
    Material.LAVA: (207, 16, 32),
    Material.WATER: (44, 110, 196),
    Material.GRASS: (122, 178, 74),
    Material.SCRUB: (176, 160, 96),
    Material.FOREST: (30, 96, 44),
    Material.STONE: (128, 128, 128),
}


class Direction(IntEnum):
    """Move directions: N is row - 1, S row + 1, E col + 1, W col - 1."""

    NORTH = 0
    SOUTH = 1
    EAST = 2
    WEST = 3
    STAY = 4


class Style(IntEnum):
    """Attack styles."""

    MELEE = 0
    RANGE = 1
    MAGE = 2


class Skill(IntEnum):
    """Columns of the entity table's level and XP arrays."""

    CONSTITUTION = 0
    HUNTING = 1
    FISHING = 2
    MELEE = 3
    RANGE = 4
    MAGE = 5
    DEFENSE = 6


class NPCType(IntEnum):
    """Entity kinds (players are 0)."""

    PLAYER = 0
    PASSIVE = 1
    NEUTRAL = 2
    HOSTILE = 3


class TileAttr(IntEnum):
    """Columns of the `Tile` observation."""

    MATERIAL = 0
    OCCUPIED = 1
    ROW = 2
    COL = 3


class EntityAttr(IntEnum):
    """Columns of the `Entity` observation (row 0 is the observer)."""

    ID = 0
    IS_SELF = 1
    NPC_TYPE = 2
    TEAM = 3
    ROW = 4
    COL = 5
    HEALTH = 6
    FOOD = 7
    WATER = 8
    FREEZE = 9
    COMBAT_LEVEL = 10
    ARMOUR = 11
    ATTACKER_ID = 12
    DAMAGE = 13
    TIME_ALIVE = 14
    MELEE = 15
    RANGE = 16
    MAGE = 17
    DEFENSE = 18


class Event(IntEnum):
    """Columns of the event log (`Entities.events`: this tick's events per entity row, and
    `Entities.event_totals`: their sums over the entity's life). Names follow nmmo 2.x's
    `EventCode` where one exists (EAT_FOOD, DRINK_WATER, GO_FARTHEST, SCORE_HIT, PLAYER_KILL,
    LEVEL_UP); `nmmo.core.systems.events` writes them and `nmmo.tasks.events` reads them."""

    EAT_FOOD = 0  # harvested a forest
    DRINK_WATER = 1  # drank from a neighbouring water tile
    GO_FARTHEST = 2  # beat its record distance from spawn (Manhattan, the Explore metric: `max_explore`)
    SCORE_HIT = 3  # an attack that hit (a d20 success), any style
    HIT_MELEE = 4  # ... by style (HIT_MELEE + Style)
    HIT_RANGE = 5
    HIT_MAGE = 6
    HIT_PLAYER = 7  # ... by the kind of target
    HIT_NPC = 8
    DAMAGE_DEALT = 9  # damage dealt (hits and misses), capped at the target's health
    PLAYER_KILL = 10  # a kill credited, of a player or an NPC (nmmo 2.x's name)
    KILL_PLAYER = 11
    KILL_NPC = 12
    KILL_LEVEL = 13  # combat level of the victim (a value, not a count)
    EQUIPMENT_UP = 14  # its equipment level rose (looted better armour)
    LEVEL_UP = 15  # levels gained, all skills
    LEVEL_CONSTITUTION = 16  # levels gained per skill (LEVEL_CONSTITUTION + Skill)
    LEVEL_HUNTING = 17
    LEVEL_FISHING = 18
    LEVEL_MELEE = 19
    LEVEL_RANGE = 20
    LEVEL_MAGE = 21
    LEVEL_DEFENSE = 22


def _plain(*enums: type[IntEnum]) -> SimpleNamespace:
    return SimpleNamespace(**{enum.__name__: SimpleNamespace(**{m.name: int(m) for m in enum}) for enum in enums})


#: Every enum's members as plain ints (``ints.Material.LAVA == int(Material.LAVA)``), for hot numpy
#: code: an IntEnum operand makes every ufunc look up ``__array_ufunc__`` through the enum's slow getattr.
ints = _plain(Material, Direction, Style, Skill, NPCType, TileAttr, EntityAttr, Event)
