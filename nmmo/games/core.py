"""What a minigame is: a canonical config, a team task set, a win condition and, where tasks cannot
say it, a small rule of its own.

A `Game` is attached to an env by the config key GAME (`nmmo.envs.gaming`). Each episode it starts
(`start`), adds its rules to the realm's tick (`rules`), and after every tick says which teams have
won so far (`winners`): a non-empty answer ends the episode early, every live agent truncated.
At the horizon `final_winners` decides. `state` is what the viewer and replays show of it (the
hill and who holds it, the kings, the fog, each team's score), as plain numbers.

Teams are contiguous blocks of PLAYER_TEAM_SIZE agent slots (team t: slots t*size .. t*size +
size - 1); a team's leader (its king) is its first slot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.state import State
from nmmo.tasks import TaskSet, load_task_set

#: Where the games' task sets live (``nmmo/configs/tasks/games/NAME.toml``).
TASK_FOLDER = Path(__file__).resolve().parent.parent / "configs" / "tasks" / "games"


class Game:
    """A minigame (see the module notes). Subclasses set `name` and `title` and override what
    their rules need."""

    name = ""
    title = ""
    #: Why the teams `winners` names won, for the winner line (`nmmo.envs.gaming.Gaming.result`).
    win_rule = "the last team standing"
    #: What decides at the horizon (`final_winners`), and what it means when it names nobody.
    final_rule = "the most live members at the horizon"
    no_winner = "no team has a live member"

    def __init__(self, config: Config) -> None:
        self.config = config
        self.team_size = config.PLAYER_TEAM_SIZE
        self.n_teams = -(-config.PLAYER_N // self.team_size)
        self.center = config.MAP_SIZE // 2
        self.history: list[dict[str, Any]] = []  # one entry per finished episode of this env

    # -------------------------------------------------------------- episode
    def task_set(self) -> TaskSet:
        """The team task set of the next episode (default: the game's file)."""
        return load_task_set(TASK_FOLDER / f"{self.name}.toml")

    def start(self, state: State) -> None:
        """A new episode has begun on `state`."""

    def rules(self) -> list:
        """``rule(state, config)`` callables run inside each tick (`nmmo.core.realm.Realm.rules`)."""
        return []

    def winners(self, state: State) -> np.ndarray:
        """Teams that have won after this tick (empty: the game goes on)."""
        return np.zeros(0, dtype=np.int64)

    def final_winners(self, state: State) -> np.ndarray:
        """Teams that win when the horizon comes (default: those with the most live members)."""
        return most_alive(self.team_alive(state))

    def finish(self, won: np.ndarray) -> None:
        """The episode is over with `won` teams winning (adaptive games learn from it)."""
        self.history.append({"winners": won.tolist(), **self.level()})

    def level(self) -> dict[str, Any]:
        """The difficulty the episode was played at (for logs and the viewer)."""
        return {}

    def state(self, state: State) -> dict[str, Any]:
        """What the viewer shows: plain numbers and lists."""
        return {"alive": self.team_alive(state).tolist()}

    # -------------------------------------------------------------- helpers
    def team_alive(self, state: State) -> np.ndarray:
        """Live members of each team."""
        ent, n = state.entities, self.config.PLAYER_N
        teams = np.arange(n) // self.team_size
        return np.bincount(teams, weights=ent.alive[:n], minlength=self.n_teams).astype(np.int64)

    def leaders(self) -> np.ndarray:
        """Each team's leader slot (its first)."""
        return np.arange(self.n_teams) * self.team_size


def most_alive(alive: np.ndarray) -> np.ndarray:
    """The teams with the most live members (none when every team is gone)."""
    if alive.max(initial=0) <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(alive == alive.max())


def last_standing(alive: np.ndarray) -> np.ndarray:
    """The one team with live members when all others are gone; empty otherwise."""
    standing = np.flatnonzero(alive > 0)
    return standing if standing.size == 1 else np.zeros(0, dtype=np.int64)


def by_name(names: tuple[str, ...], classes: tuple[type[Game], ...]) -> dict[str, type[Game]]:
    """`classes` keyed by their `name`, in the order of `names` (the config's `GAME_NAMES`, which
    the config checks without importing the games); ValueError when a name has no class or a
    class has no name in the list, so the two cannot drift apart."""
    found = {cls.name: cls for cls in classes}
    missing, unlisted = [n for n in names if n not in found], [n for n in found if n not in names]
    if missing or unlisted or len(found) != len(classes):
        raise ValueError(f"the games and nmmo.config.checks.GAME_NAMES differ: names without a class {missing}, "
                         f"classes not listed {unlisted}, {len(classes) - len(found)} class(es) sharing a name")
    return {name: found[name] for name in names}
