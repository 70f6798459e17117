"""The event log's writers: what the systems did this tick, per entity row, in flat tables.

Tables (columns of `nmmo.core.state.Entities`, so the fused engine carries them as any other column):
``events`` (capacity, len(Event)) holds this tick's events, cleared when a tick begins;
``event_totals`` sums them over the entity's life (cleared at spawn); ``tile_ticks`` counts the
ticks the entity has ended on its current tile ("tile held": 0 on the tick it arrived).

Who writes what: `resource.update` eating and drinking (`forage`); `combat.resolve` hits, damage
and kills (`combat`) and the armour looted (`looted`); `movement.resolve` the movers (`moved`);
the realm new farthest distances (`explore`), and level-ups from a snapshot of the levels taken
when the tick began (`begin_tick`, `settle`: after the moves, before spawns reset the new rows).
Nothing here draws from a generator or changes a game column, so the log never changes the game.
Each writer adds its own time to ``state.event_seconds`` (the tasks' time accounting reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from time import perf_counter

import numpy as np

from nmmo.core.enums import Event, ints
from nmmo.core.state import State

_LEVELS = slice(int(Event.LEVEL_CONSTITUTION), int(Event.LEVEL_DEFENSE) + 1)
_ONE = np.array(1, dtype=np.int32)
_ONE.flags.writeable = False
#: The columns a landed hit sets, by [style, target is an NPC].
_HIT_COLUMNS = np.array([[[Event.SCORE_HIT, Event.HIT_MELEE + style, kind]
                          for kind in (Event.HIT_PLAYER, Event.HIT_NPC)] for style in range(3)], dtype=np.int64)


@lru_cache(maxsize=8)
def _ones(n: int) -> np.ndarray:
    ones = np.ones(n, dtype=np.int32)
    ones.flags.writeable = False
    return ones


@dataclass
class Before:
    """The players' levels as the tick began (level-ups are their changes)."""

    level: np.ndarray


@dataclass
class Written:
    """Which rare events some row had this tick (readers skip their work when none did):
    kills, equipment gains, and level-ups per skill."""

    kill: bool = False
    equipment_up: bool = False
    level_up: list[int] | tuple = ()  # per skill: the levels gained this tick (empty: none)


def begin_tick(state: State) -> Before:
    """Clear this tick's events and snapshot the players' levels."""
    start = perf_counter()
    ent = state.entities
    ent.events.fill(0)
    np.add(ent.tile_ticks, _ONE, out=ent.tile_ticks)  # a 0-d array: a Python 1 is converted on every call
    written = state.written
    if written is None:
        state.written = Written()
    else:  # reset in place: cheaper than a new object each tick
        written.kill = written.equipment_up = False
        written.level_up = ()
    before = Before(ent.level[: ent.n_players].copy())
    state.event_seconds += perf_counter() - start
    return before


def _note(state: State, **flags) -> None:
    """Record rare events in `state.written` when the tick began with `begin_tick` (a state whose
    tables a caller wrote by hand keeps None: readers then assume anything may have happened)."""
    if state.written is not None:
        for name, value in flags.items():
            setattr(state.written, name, value)


def forage(state: State, ate: np.ndarray, drank: np.ndarray) -> None:
    """Rows that harvested a forest and rows that drank this tick."""
    start = perf_counter()
    events = state.entities.events
    if ate.size:
        events[ate, ints.Event.EAT_FOOD] = 1
    if drank.size:
        events[drank, ints.Event.DRINK_WATER] = 1
    state.event_seconds += perf_counter() - start


def combat(state: State, attackers: np.ndarray, styles: np.ndarray, targets: np.ndarray, hit: np.ndarray,
           credited: np.ndarray, killed: np.ndarray, killers: np.ndarray) -> None:
    """Record the resolved attacks of the tick (one per attacker row) and the kills credited."""
    start = perf_counter()
    ent = state.entities
    events, n_players = ent.events, ent.n_players
    landed = attackers[hit]
    if landed.size:  # SCORE_HIT, the style's and the target kind's columns, in one write
        npc = (targets[hit] >= n_players).view(np.uint8)  # 0 / 1 as an index
        events[landed[:, None], _HIT_COLUMNS[styles[hit], npc]] = 1
    events[attackers, ints.Event.DAMAGE_DEALT] = credited
    if killed.size:
        _note(state, kill=True)
        events[killers, ints.Event.PLAYER_KILL] = 1
        events[killers, np.where(killed < n_players, ints.Event.KILL_PLAYER, ints.Event.KILL_NPC)] = 1
        events[killers, ints.Event.KILL_LEVEL] = ent.combat_level(killed)
    state.event_seconds += perf_counter() - start


def looted(state: State, killers: np.ndarray, equipment_before: np.ndarray) -> None:
    """Killers whose equipment level rose with the armour they took."""
    start = perf_counter()
    ent = state.entities
    gained = killers[ent.max_equipment[killers] > equipment_before]
    if gained.size:
        _note(state, equipment_up=True)
        ent.events[gained, ints.Event.EQUIPMENT_UP] = 1
    state.event_seconds += perf_counter() - start


def moved(state: State, rows: np.ndarray) -> None:
    """Rows that stepped onto another tile: they hold it for 0 ticks so far."""
    start = perf_counter()
    state.entities.tile_ticks[rows] = 0
    state.event_seconds += perf_counter() - start


def explore(state: State, distance: np.ndarray) -> None:
    """Rows whose distance from spawn (0 for the dead) beats their farthest so far."""
    start = perf_counter()
    ent = state.entities
    ent.events[:, ints.Event.GO_FARTHEST] = distance > ent.max_explore
    state.event_seconds += perf_counter() - start


def settle(state: State, before: Before) -> None:
    """After the moves: level-ups from the snapshot, and this tick's events added to the life
    totals. (Only players gain levels: their rows hold the levels gained, 0 where none rose.)"""
    start = perf_counter()
    ent = state.entities
    events, n = ent.events, ent.n_players
    gained = np.subtract(ent.level[:n], before.level, out=events[:n, _LEVELS])  # 0 where none rose
    risen = (_ones(n) @ gained).tolist()  # levels gained per skill (a product with ones: a third of a sum's time)
    if any(risen):
        if state.written is not None:  # (`_note`, inline: this happens most ticks)
            state.written.level_up = risen
        np.matmul(gained, _ones(gained.shape[1]), out=events[:n, ints.Event.LEVEL_UP])
    ent.event_totals += events
    state.event_seconds += perf_counter() - start
