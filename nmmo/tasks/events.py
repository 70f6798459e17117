"""Reading the event log: names, the columns tasks count, and a tick's events as arrays.

The log itself is two tables in the entity table (`nmmo.core.state.Entities.events`, this tick's
events per entity row, and ``event_totals``, their sums over each life) plus ``tile_ticks``; the
systems write them (`nmmo.core.systems.events`). Column names are `nmmo.core.enums.Event`'s: nmmo 2.x's
`EventCode` names where one exists. Events nmmo 2.x has and this game does not (items, gold,
market, ammunition, culling) have no column; its ``EQUIP_ITEM`` is read as ``EQUIPMENT_UP``.
"""

from __future__ import annotations

import numpy as np

from nmmo.core.enums import Event
from nmmo.core.state import State

#: Every event column by name, in column order.
EVENT_NAMES: tuple[str, ...] = tuple(event.name for event in Event)
#: nmmo 2.x event names that mean one of ours.
ALIASES: dict[str, str] = {"EQUIP_ITEM": "EQUIPMENT_UP"}
#: Columns that count something (`CountEvent` sums them): all but the victim's level.
COUNTABLE: tuple[str, ...] = tuple(name for name in EVENT_NAMES if name != "KILL_LEVEL")


def event_column(name: str) -> int:
    """Column of an event given by name (ours or nmmo 2.x's alias), case-insensitive."""
    key = ALIASES.get(name.upper(), name.upper())
    if key not in EVENT_NAMES:
        raise ValueError(f"unknown event {name!r}; events: {', '.join(EVENT_NAMES)}")
    return int(Event[key])


def tick_events(state: State, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The events of the tick that just ran, as arrays, for replays and tools: ``row`` and ``id`` of every entity row
    (of `rows`, default all) with at least one event, ``tile_ticks``, and one int32 column per
    event name. Read it after a tick (the next one clears the log)."""
    ent = state.entities
    rows = np.arange(ent.capacity) if rows is None else np.asarray(rows, dtype=np.int64)
    events = ent.events[rows]
    keep = events.any(axis=1)
    rows, events = rows[keep], events[keep]
    out = {"row": rows, "id": ent.id[rows].copy(), "tile_ticks": ent.tile_ticks[rows].copy()}
    out.update({name: events[:, i].copy() for i, name in enumerate(EVENT_NAMES)})
    return out


def life_totals(state: State, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Each event summed over the current life of the entities in `rows`."""
    totals = state.entities.event_totals[np.asarray(rows, dtype=np.int64)]
    return {name: totals[:, i].copy() for i, name in enumerate(EVENT_NAMES)}
