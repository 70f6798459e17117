"""Games about the centre tile: race to the centre, king of the hill."""

from __future__ import annotations

from typing import Any

import numpy as np

from nmmo.core.enums import Material
from nmmo.core.rules import water_adjacent
from nmmo.core.state import State
from nmmo.games.core import Game
from nmmo.tasks import TaskSet, task_set_from_data

#: King of the hill's curriculum (nmmo 2.1.1's numbers): the hold starts at `start` ticks and grows
#: by `step` after `wins` won episodes at the current hold, up to `most`.
HOLD_SCHEDULE = {"start": 10, "step": 10, "wins": 2, "most": 200}


def open_centre(state: State, center: int, half: int) -> None:
    """Make the centre reachable: the water and stone on the two lines through the centre tile,
    across the playable square (centre +- `half`), become grass (a third of the generated maps have
    water or stone there; the lines reach the spawn ring on all four sides)."""
    tiles = state.tiles
    cross = np.zeros(tiles.material.shape, dtype=bool)
    cross[center - half: center + half + 1, center] = cross[center, center - half: center + half + 1] = True
    blocked = cross & np.isin(tiles.material, (Material.WATER, Material.STONE))
    if blocked.any():
        tiles.material[blocked] = Material.GRASS
        tiles.base_material = np.where(blocked, Material.GRASS, tiles.base_material).astype(tiles.material.dtype)
        tiles.water_adjacent = water_adjacent(tiles.material)


class RaceToCentre(Game):
    """Every team races for the centre tile; the first team with a member on it wins (the episode
    ends there). Team task: ProgressTowardCenter of its nearest member. The lines through the
    centre are cleared of water and stone (`open_centre`)."""

    name, title = "race_to_centre", "Race to the centre"
    win_rule, final_rule, no_winner = "the first team on the centre tile", "nobody wins at the horizon", \
        "no team reached the centre tile"

    def start(self, state: State) -> None:
        open_centre(state, self.center, self.config.MAP_CENTER // 2)

    def winners(self, state: State) -> np.ndarray:
        occupant = int(state.tiles.occupancy[self.center, self.center])
        if 0 <= occupant < self.config.PLAYER_N:
            return np.array([occupant // self.team_size])
        return np.zeros(0, dtype=np.int64)

    def final_winners(self, state: State) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)  # nobody reached the centre in time

    def state(self, state: State) -> dict[str, Any]:
        ent, n = state.entities, self.config.PLAYER_N
        distance = np.maximum(np.abs(ent.row[:n] - self.center), np.abs(ent.col[:n] - self.center))
        distance = np.where(ent.alive[:n], distance, 10**6)
        nearest = np.full(self.n_teams, 10**6, dtype=np.int64)
        np.minimum.at(nearest, np.arange(n) // self.team_size, distance)
        return {"centre": [self.center, self.center], "nearest": nearest.tolist(), **super().state(state)}


class KingOfTheHill(Game):
    """A team seizes the centre when one of its players steps on it while another team holds it
    (or nobody does); it keeps it, standing there or not, until another team steps on. Holding it
    `hold` ticks wins; at the horizon the holder wins. Team task: SeizeCenter for `hold` ticks.
    The lines through the centre are cleared of water and stone (`open_centre`).
    With GAME_ADAPTIVE (a curriculum) `hold` follows HOLD_SCHEDULE over the env's episodes;
    otherwise it is GAME_HOLD in every episode."""

    name, title = "king_of_the_hill", "King of the hill"
    final_rule, no_winner = "the team holding the centre at the horizon", "no team ever held the centre"

    def __init__(self, config) -> None:
        super().__init__(config)
        self.adaptive = config.GAME_ADAPTIVE
        self.hold = HOLD_SCHEDULE["start"] if self.adaptive else config.GAME_HOLD
        self.wins_at_hold = 0
        self.holder, self.since = -1, 0

    def task_set(self) -> TaskSet:
        task = {"name": f"seize_center_{self.hold}", "predicate": "SeizeCenter", "args": {"num_ticks": self.hold},
                "reward_to": "team", "tags": ["king_of_the_hill"]}
        return task_set_from_data({"name": self.name, "task": [task]}, f"<{self.name}>")

    def start(self, state: State) -> None:
        open_centre(state, self.center, self.config.MAP_CENTER // 2)
        self.holder, self.since = -1, int(state.tick)

    def winners(self, state: State) -> np.ndarray:
        occupant = int(state.tiles.occupancy[self.center, self.center])
        if 0 <= occupant < self.config.PLAYER_N and occupant // self.team_size != self.holder:
            self.holder, self.since = occupant // self.team_size, int(state.tick)
        if self.holder >= 0 and state.tick - self.since >= self.hold:
            return np.array([self.holder])
        return np.zeros(0, dtype=np.int64)

    def final_winners(self, state: State) -> np.ndarray:
        return np.array([self.holder]) if self.holder >= 0 else np.zeros(0, dtype=np.int64)

    def finish(self, won: np.ndarray) -> None:
        super().finish(won)
        if not self.adaptive or not won.size:
            return
        self.wins_at_hold += 1
        if self.wins_at_hold >= HOLD_SCHEDULE["wins"] and self.hold < HOLD_SCHEDULE["most"]:
            self.hold = min(self.hold + HOLD_SCHEDULE["step"], HOLD_SCHEDULE["most"])
            self.wins_at_hold = 0

    def level(self) -> dict[str, Any]:
        return {"hold": self.hold}

    @property
    def win_rule(self) -> str:  # type: ignore[override]
        return f"held the centre for {self.hold} ticks"

    def state(self, state: State) -> dict[str, Any]:
        held = int(state.tick - self.since) if self.holder >= 0 else 0
        return {"centre": [self.center, self.center], "holder": self.holder, "held": held, "hold": self.hold,
                **super().state(state)}
