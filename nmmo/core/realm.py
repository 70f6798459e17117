"""The realm: the game state plus the tick, an ordered list of system calls.

`Realm.tick` takes one action per entity row (move direction, attack style, attack target row)
and advances the world by one tick. Read-only object views (`realm.players[id].food`) read the
tables for users who prefer objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Skill
from nmmo.core.rules import is_frozen
from nmmo.core.state import Entities, State, Tiles
from nmmo.core.systems import combat, events, movement, npc, resource, spawn
from nmmo.core.world import Map


@dataclass
class TickResult:
    """What one tick did: rows removed (dead), player slots spawned, the combat log."""

    dead: np.ndarray
    spawned: np.ndarray
    combat: combat.CombatResult


class Realm:
    """Owns the state tables and advances them; knows nothing about agents' dicts or rewards."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.n_players = config.PLAYER_N
        self.capacity = config.PLAYER_N + (config.NPC_N if config.has("NPC") else 0)
        #: Extra rules of a minigame (`nmmo.games`): ``rule(state, config)`` after the moves, before
        #: the dead are removed (damage they deal kills this tick).
        self.rules: list = []
        self.state: State | None = None
        self.map: Map | None = None

    def reset(self, game_map: Map, rng: np.random.Generator) -> None:
        self.map = game_map
        self.state = State(Entities(self.capacity, self.n_players), Tiles.from_map(game_map.material, self.capacity))
        self.state.map_seed = game_map.seed
        spawn.spawn_initial_players(self.state, self.config, rng)
        if self.config.has("NPC"):
            spawn.spawn_npcs(self.state, self.config, rng, attempts=4 * self.config.NPC_N, born=self.state.tick)

    def tick(self, directions: np.ndarray, styles: np.ndarray, targets: np.ndarray,
             rng: np.random.Generator, respawn: bool = True) -> TickResult:
        """Advance one tick. The arrays have one entry per entity row (NPC rows are ignored: the NPC
        AI acts for them; the arrays themselves are not changed); `respawn=False` skips player
        respawns (the env's last tick; the fused engine passes one flag per world). Order: NPCs
        decide, entities update, attacks, moves, a minigame's rules, spawns, dead removed, forests
        regrow, tick + 1; the event log (`nmmo.core.systems.events`) is cleared first and settled
        after the moves."""
        state, config = self.state, self.config
        ent = state.entities
        directions, styles, targets = directions.copy(), styles.copy(), targets.copy()
        rows, *npc_actions = npc.decide(state, config, rng)  # from last tick's state
        directions[rows], styles[rows], targets[rows] = npc_actions
        _clear_tick_columns(ent)
        before = events.begin_tick(state)  # clear the event log; snapshot what its events are measured against
        resource.update(state, config)  # food, water, harvest, drink, starve, regenerate, XP
        log = combat.resolve(state, config, styles, targets, rng)  # all attacks, start-of-tick positions
        movement.resolve(state, config, directions, rng)  # all moves, conflicts by random priority
        _update_explore(state)
        for rule in self.rules:
            rule(state, config)
        events.settle(state, before)  # level-up events; this tick's events into the life totals
        spawned = self._respawn_players(rng, respawn)
        self._spawn_npcs(rng)
        dead = spawn.remove_dead(state)
        resource.regrow_forests(state, config, rng)
        state.tick += 1
        return TickResult(dead=dead, spawned=spawned, combat=log)

    def _respawn_players(self, rng: np.random.Generator, respawn) -> np.ndarray:
        if not respawn:
            return np.zeros(0, dtype=np.int64)
        return spawn.respawn_players(self.state, self.config, rng)

    def _spawn_npcs(self, rng: np.random.Generator) -> None:
        config = self.config
        spawn.spawn_npcs(self.state, config, rng, config.NPC_SPAWN_ATTEMPTS if config.has("NPC") else 0,
                         born=self.state.tick + 1)  # first seen next tick

    @property
    def players(self) -> Mapping[int, EntityView]:
        """Live players by agent id."""
        return _Views(self.state, np.arange(self.n_players))

    @property
    def npcs(self) -> Mapping[int, EntityView]:
        """Live NPCs by (negative) id."""
        return _Views(self.state, np.arange(self.n_players, self.capacity))


def _clear_tick_columns(ent: Entities) -> None:
    ent.attacker_id[:] = 0
    ent.attacker_row[:] = -1
    ent.damage_taken[:] = 0
    ent.attack_style[:] = -1
    ent.attack_target_id[:] = 0


def _update_explore(state: State) -> None:
    ent = state.entities
    distance = np.where(ent.alive, np.abs(ent.row - ent.spawn_row) + np.abs(ent.col - ent.spawn_col), 0)
    events.explore(state, distance)  # new farthest distances, before the record moves
    np.maximum(ent.max_explore, distance, out=ent.max_explore)


class EntityView:
    """Read-only view of one entity row; every attribute reads the tables at access time."""

    __slots__ = ("_ent", "_row", "_state")

    def __init__(self, state: State, row: int) -> None:
        self._ent, self._row, self._state = state.entities, int(row), state

    def __repr__(self) -> str:
        return (f"<{'NPC' if self.is_npc else 'Player'} {self.id} at ({self.row}, {self.col}) "
                f"health {self.health}/{self.max_health}>")

    id = property(lambda self: int(self._ent.id[self._row]))
    slot = property(lambda self: self._row)
    is_npc = property(lambda self: self._row >= self._ent.n_players)
    alive = property(lambda self: bool(self._ent.alive[self._row]))
    row = property(lambda self: int(self._ent.row[self._row]))
    col = property(lambda self: int(self._ent.col[self._row]))
    pos = property(lambda self: (self.row, self.col))
    health = property(lambda self: int(self._ent.health[self._row]))
    max_health = property(lambda self: int(self._ent.max_health[self._row]))
    food = property(lambda self: int(self._ent.food[self._row]))
    water = property(lambda self: int(self._ent.water[self._row]))
    team = property(lambda self: int(self._ent.team[self._row]))
    npc_type = property(lambda self: int(self._ent.npc_type[self._row]))
    frozen = property(lambda self: bool(is_frozen(self._ent.freeze_end[self._row], self._state.tick)))
    armour = property(lambda self: tuple(int(a) for a in self._ent.armour[self._row]))
    equipment = property(lambda self: float(self._ent.armour[self._row].mean()))
    combat_level = property(lambda self: int(self._ent.combat_level(self._row)))
    constitution_level = property(lambda self: int(self._ent.level[self._row, Skill.CONSTITUTION]))
    hunting_level = property(lambda self: int(self._ent.level[self._row, Skill.HUNTING]))
    fishing_level = property(lambda self: int(self._ent.level[self._row, Skill.FISHING]))
    melee_level = property(lambda self: int(self._ent.level[self._row, Skill.MELEE]))
    range_level = property(lambda self: int(self._ent.level[self._row, Skill.RANGE]))
    mage_level = property(lambda self: int(self._ent.level[self._row, Skill.MAGE]))
    defense_level = property(lambda self: int(self._ent.level[self._row, Skill.DEFENSE]))


class _Views(Mapping):
    def __init__(self, state: State, rows: np.ndarray) -> None:
        alive = rows[state.entities.alive[rows]]
        self._state = state
        self._rows = dict(zip(state.entities.id[alive].tolist(), alive.tolist(), strict=True))

    def __getitem__(self, entity_id: int) -> EntityView:
        if entity_id not in self._rows:
            raise KeyError(f"no live entity with id {entity_id!r}")
        return EntityView(self._state, self._rows[entity_id])

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

