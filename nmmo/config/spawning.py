"""The spawn ring's arithmetic on config keys alone, below `nmmo.core`: the config checks
(`nmmo.config.checks`) refuse a spacing the ring cannot keep, before any engine module is loaded.
The ring itself is `nmmo.core.systems.spawn`'s; the other rules live in `nmmo.core.rules`."""

from __future__ import annotations


def min_spawn_distance(n: int, team_size: int, center: int) -> int:
    """The smallest Chebyshev distance the spawn ring's placement (`nmmo.core.systems.spawn`) guarantees
    between the starting tiles of players of different teams (1, distinct tiles, when it falls back
    to ring length)."""
    edge = center - 1
    units = -(-n // team_size)
    per_edge = -(-units // 4)
    if per_edge * team_size > edge:
        return 1
    if units <= 1:
        return 2 * edge  # a single unit: nobody to keep apart from
    return edge // per_edge - (team_size - 1)
