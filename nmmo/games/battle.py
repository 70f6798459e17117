"""Games of teams fighting: team battle, protect the king, sandwich."""

from __future__ import annotations

from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.rules import WALKABLE
from nmmo.core.state import State
from nmmo.games.core import Game, last_standing

#: Sandwich: the fog's edge moves one tile inward every this many ticks.
FOG_TICKS_PER_TILE = 4


class TeamBattle(Game):
    """The last team with live members wins (at the horizon: the most live members). Team task:
    every foe dead (AllDead of the foes)."""

    name, title = "team_battle", "Team battle"

    def winners(self, state: State) -> np.ndarray:
        return last_standing(self.team_alive(state))


class ProtectTheKing(Game):
    """Each team's first slot is its king; when a king dies his whole team is out (a rule: its
    members fall on the same tick). The last team with a king wins (at the horizon: the kings'
    teams with the most live members). Team task: ProtectLeader (keep the king, kill the others)."""

    name, title = "protect_the_king", "Protect the king"
    win_rule = "the last team with its king alive"
    final_rule = "the most live members, king alive, at the horizon"
    no_winner = "no king is alive"

    def rules(self) -> list:
        return [self._kings_fall]

    def _kings_fall(self, state: State, config: Config) -> None:
        ent, kings = state.entities, self.leaders()
        fallen = kings[(ent.health[kings] <= 0) | ~ent.alive[kings]]
        if fallen.size:
            members = (fallen[:, None] + np.arange(self.team_size)).ravel()
            members = members[members < config.PLAYER_N]
            ent.health[members[ent.alive[members]]] = 0

    def state(self, state: State) -> dict[str, Any]:
        ent, kings = state.entities, self.leaders()
        return {"kings": kings.tolist(), "king_alive": ent.alive[kings].astype(int).tolist(), **super().state(state)}


class Sandwich(Game):
    """From GAME_FOG_ONSET on, a fog closes in from the map's edge, one tile every
    FOG_TICKS_PER_TILE ticks, down to a square of radius GAME_FOG_FINAL around the centre: a player
    in it loses GAME_FOG_DAMAGE health a tick, and NPCs caught outside its line are pushed one tile
    inward a tick (where the tile is free), so the teams are squeezed between the NPCs and each
    other. The last team standing wins (at the horizon: the most live members). Team task: the
    team stays alive (StayAlive, ongoing)."""

    name, title = "sandwich", "Sandwich"

    def radius(self, tick: int) -> int:
        """The fog-free Chebyshev radius around the centre at `tick`."""
        start = self.config.MAP_CENTER // 2
        if tick < self.config.GAME_FOG_ONSET:
            return start
        return max(self.config.GAME_FOG_FINAL, start - (tick - self.config.GAME_FOG_ONSET) // FOG_TICKS_PER_TILE)

    def rules(self) -> list:
        return [self._fog]

    def _fog(self, state: State, config: Config) -> None:
        radius, ent, n = self.radius(int(state.tick)), state.entities, config.PLAYER_N
        outside = np.maximum(np.abs(ent.row - self.center), np.abs(ent.col - self.center)) > radius
        players = np.flatnonzero(ent.alive[:n] & outside[:n])
        ent.health[players] -= config.GAME_FOG_DAMAGE
        self._push_npcs(state, n + np.flatnonzero(ent.alive[n:] & outside[n:]))

    def _push_npcs(self, state: State, rows: np.ndarray) -> None:
        """Each NPC of `rows` one tile toward the centre, where that tile is walkable and free (one
        NPC per tile, in row order)."""
        if not rows.size:
            return
        ent, tiles = state.entities, state.tiles
        to_row = ent.row[rows] + np.sign(self.center - ent.row[rows])
        to_col = ent.col[rows] + np.sign(self.center - ent.col[rows])
        free = WALKABLE[tiles.material[to_row, to_col]] & (tiles.occupancy[to_row, to_col] < 0)
        flat = to_row * tiles.material.shape[1] + to_col
        first = np.zeros(rows.size, dtype=bool)
        first[np.unique(flat, return_index=True)[1]] = True
        go = free & first
        movers = rows[go]
        tiles.occupancy[ent.row[movers], ent.col[movers]] = -1
        ent.row[movers], ent.col[movers] = to_row[go], to_col[go]
        tiles.occupancy[to_row[go], to_col[go]] = movers

    def winners(self, state: State) -> np.ndarray:
        return last_standing(self.team_alive(state))

    def state(self, state: State) -> dict[str, Any]:
        return {"centre": [self.center, self.center], "fog_radius": self.radius(int(state.tick)),
                **super().state(state)}
