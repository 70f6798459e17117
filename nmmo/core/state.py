"""The game state: flat numpy tables and nothing else.

One entity table holds every player and NPC (one row each, one array per attribute); player slots
are rows ``0 .. PLAYER_N - 1`` and NPC slots the rows after them. Tile grids hold the current
material (a harvested forest reads as scrub) and the occupancy grid, which is the spatial index: at
most one entity stands on a tile, so "who is near (r, c)" is a crop of it. Systems in
`nmmo.core.systems` transform these arrays in bulk; nothing else holds game state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from nmmo.core.enums import Event, Skill
from nmmo.core.rules import water_adjacent

if TYPE_CHECKING:
    from nmmo.core.systems.events import Written

NO_TICK = -1_000_000  # "never" for tick-valued columns
N_SKILLS = len(Skill)
N_EVENTS = len(Event)


@dataclass
class Entities:
    """Struct of arrays, one row per entity slot; `alive` marks the rows in use."""

    capacity: int
    n_players: int
    alive: np.ndarray = field(init=False)
    id: np.ndarray = field(init=False)
    row: np.ndarray = field(init=False)
    col: np.ndarray = field(init=False)
    health: np.ndarray = field(init=False)
    food: np.ndarray = field(init=False)
    water: np.ndarray = field(init=False)
    level: np.ndarray = field(init=False)  # (capacity, N_SKILLS)
    xp: np.ndarray = field(init=False)  # (capacity, N_SKILLS)
    armour: np.ndarray = field(init=False)  # (capacity, 2): chestplate, platelegs levels
    team: np.ndarray = field(init=False)
    npc_type: np.ndarray = field(init=False)
    style: np.ndarray = field(init=False)  # an NPC's fixed attack style
    spawn_row: np.ndarray = field(init=False)
    spawn_col: np.ndarray = field(init=False)
    spawn_tick: np.ndarray = field(init=False)
    freeze_end: np.ndarray = field(init=False)  # last tick the entity is frozen
    attacker_id: np.ndarray = field(init=False)  # who hit it hardest this tick (0: nobody)
    attacker_row: np.ndarray = field(init=False)  # that attacker's row (-1: nobody)
    damage_taken: np.ndarray = field(init=False)  # damage taken this tick
    attack_style: np.ndarray = field(init=False)  # this tick's attack (-1: none), for events
    attack_target_id: np.ndarray = field(init=False)
    target: np.ndarray = field(init=False)  # NPC AI: row of the entity it hunts (-1: none)
    target_id: np.ndarray = field(init=False)
    flee_ticks: np.ndarray = field(init=False)  # NPC AI: ticks left fleeing
    flee_row: np.ndarray = field(init=False)
    flee_col: np.ndarray = field(init=False)
    player_kills: np.ndarray = field(init=False)
    max_equipment: np.ndarray = field(init=False)
    max_explore: np.ndarray = field(init=False)
    events: np.ndarray = field(init=False)  # (capacity, N_EVENTS): this tick's events (`nmmo.core.systems.events`)
    event_totals: np.ndarray = field(init=False)  # (capacity, N_EVENTS): their sums over the entity's life
    tile_ticks: np.ndarray = field(init=False)  # ticks ended on its current tile (0: it arrived this tick)

    def __post_init__(self) -> None:
        n = self.capacity
        self.alive = np.zeros(n, dtype=bool)
        self.id = np.zeros(n, dtype=np.int64)
        self.row = np.zeros(n, dtype=np.int32)
        self.col = np.zeros(n, dtype=np.int32)
        self.health = np.zeros(n, dtype=np.int32)
        self.food = np.zeros(n, dtype=np.int32)
        self.water = np.zeros(n, dtype=np.int32)
        self.level = np.ones((n, N_SKILLS), dtype=np.int32)
        self.xp = np.zeros((n, N_SKILLS), dtype=np.int64)
        self.armour = np.zeros((n, 2), dtype=np.int32)
        self.team = np.full(n, -1, dtype=np.int32)
        self.npc_type = np.zeros(n, dtype=np.int8)
        self.style = np.zeros(n, dtype=np.int8)
        self.spawn_row = np.zeros(n, dtype=np.int32)
        self.spawn_col = np.zeros(n, dtype=np.int32)
        self.spawn_tick = np.zeros(n, dtype=np.int32)
        self.freeze_end = np.full(n, NO_TICK, dtype=np.int32)
        self.attacker_id = np.zeros(n, dtype=np.int64)
        self.attacker_row = np.full(n, -1, dtype=np.int32)
        self.damage_taken = np.zeros(n, dtype=np.int32)
        self.attack_style = np.full(n, -1, dtype=np.int8)
        self.attack_target_id = np.zeros(n, dtype=np.int64)
        self.target = np.full(n, -1, dtype=np.int32)
        self.target_id = np.zeros(n, dtype=np.int64)
        self.flee_ticks = np.zeros(n, dtype=np.int32)
        self.flee_row = np.zeros(n, dtype=np.int32)
        self.flee_col = np.zeros(n, dtype=np.int32)
        self.player_kills = np.zeros(n, dtype=np.int32)
        self.max_equipment = np.zeros(n, dtype=np.float32)  # mean of two pieces: x.5 happens
        self.max_explore = np.zeros(n, dtype=np.int32)
        self.events = np.zeros((n, N_EVENTS), dtype=np.int32)
        self.event_totals = np.zeros((n, N_EVENTS), dtype=np.int32)
        self.tile_ticks = np.zeros(n, dtype=np.int32)

    @property
    def max_health(self) -> np.ndarray:
        return self.level[:, Skill.CONSTITUTION]

    @property
    def food_capacity(self) -> np.ndarray:
        return self.level[:, Skill.HUNTING]

    @property
    def water_capacity(self) -> np.ndarray:
        return self.level[:, Skill.FISHING]

    def equipment(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Equipment level: the mean of the two armour pieces (float64, as `mean` gives, without
        its overhead: the sum of two small ints is exact)."""
        armour = self.armour[rows]
        return (armour[..., 0] + armour[..., 1]) / 2

    def combat_level(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """floor(0.25 * (Defense + Constitution) + 0.5 * best attack skill); 3 for a new player."""
        lv = self.level[rows]
        best = np.maximum(np.maximum(lv[..., Skill.MELEE], lv[..., Skill.RANGE]), lv[..., Skill.MAGE])
        return (0.25 * (lv[..., Skill.DEFENSE] + lv[..., Skill.CONSTITUTION]) + 0.5 * best).astype(np.int32)


@dataclass
class Tiles:
    """Tile grids. `material` is the current material; `occupancy` holds entity rows (-1: empty)."""

    material: np.ndarray
    base_material: np.ndarray
    occupancy: np.ndarray
    water_adjacent: np.ndarray
    depleted: np.ndarray  # flat indices of harvested forests waiting to regrow, in harvest order
    scratch: np.ndarray | None = field(default=None, repr=False)  # working space of the move system

    @classmethod
    def from_map(cls, material: np.ndarray, capacity: int = 2**15 - 1) -> Tiles:
        """Tile tables for a map; occupancy is int16 when `capacity` entity rows fit (half the
        memory traffic of the observation gathers), else int32."""
        return cls(
            material=material.copy(),
            base_material=material,
            occupancy=np.full(material.shape, -1, dtype=np.int16 if capacity < 2**15 - 1 else np.int32),
            water_adjacent=water_adjacent(material),
            depleted=np.zeros(0, dtype=np.int64),
        )

    @property
    def size(self) -> int:
        return self.material.shape[0]

    @property
    def cols(self) -> int:
        """Row stride of the flat tile indices (the map side; the fused engine stacks worlds' maps
        as rows of one tall grid, so there it differs from `size`)."""
        return self.material.shape[1]


@dataclass
class State:
    """Everything that changes during an episode."""

    entities: Entities
    tiles: Tiles
    tick: int = 0
    next_player_id: int = 1
    next_npc_id: int = -1
    map_seed: int = 0
    event_seconds: float = 0.0  # time spent writing the event log (a code timer, not game state)
    # this tick's rare events (`events.Written`); None: unknown (set None after editing tables by hand)
    written: Written | None = None
