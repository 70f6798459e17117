"""Minigames in an env: `Gaming`, the component through which `nmmo.Env` plays the game the config's
GAME names (`nmmo.games`).

With a game on, the env takes the game's team task set (a game brings its own: passing `tasks=` too
is an error), adds the game's rules to the realm's tick, and after every tick asks the game who has
won: the episode ends on the tick a team wins (every live agent truncated, as at the horizon), or at
the horizon, where the game's final rule decides. `game_winners()` says who won (or would win if the
episode ended now), `game_state()` what the viewer shows. With GAME_ADAPTIVE the game's difficulty
moves between episodes (king of the hill's hold), and the task set follows it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.realm import Realm
from nmmo.core.state import State
from nmmo.games import GAMES, Game
from nmmo.tasks import TaskSet


class Gaming:
    """An env's minigame, as a component `nmmo.Env` holds (``env.gaming``) and calls: built from the
    env's config, handed the realm or its state whenever it reads them. Without a game (GAME empty)
    ``game`` is None and every call is a no-op or says so."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.game: Game | None = GAMES[config.GAME](config) if config.GAME else None
        self.over, self.won, self.by_rule = False, np.zeros(0, dtype=np.int64), False
        self.task_set: TaskSet | None = None  # the game's team tasks, which the env's tasks are

    def tasks(self, tasks: Any) -> Any:
        """The tasks the env takes: the game's own team task set with a game (passing `tasks` too is
        an error), else `tasks`."""
        if self.game is None:
            return tasks
        if tasks is not None:
            raise ValueError(f"GAME={self.config.GAME!r} brings its own team tasks; do not pass tasks= as well")
        self.task_set = self.game.task_set()
        return self.task_set

    def next_tasks(self) -> TaskSet | None:
        """At a reset, before `start`: the game's new task set when an adaptive game's curriculum moved
        on (the env then takes it), else None."""
        if self.game is None:
            return None
        tasks: TaskSet = self.game.task_set()
        if tasks == self.task_set:
            return None
        self.task_set = tasks
        return tasks

    def start(self, realm: Realm) -> None:
        """A new episode: the game's rules in the realm's tick, the game started on its state."""
        if self.game is None:
            return
        realm.rules = self.game.rules()
        self.game.start(realm.state)
        self.over, self.won, self.by_rule = False, np.zeros(0, dtype=np.int64), False

    def tick(self, state: State) -> None:
        """After a tick: has a team won (or has the horizon come)?"""
        if self.game is None or self.over:
            return
        won = self.game.winners(state)
        self.by_rule = bool(won.size)  # won by the game's rule, not decided at the horizon
        if not won.size and state.tick >= self.config.HORIZON:
            won = self.game.final_winners(state)
        elif not won.size:
            return
        self.over, self.won = True, won
        self.game.finish(won)

    def winners(self, state: State | None) -> np.ndarray:
        """The teams that won (the episode is over), or that would win if it ended now."""
        if self.game is None:
            return np.zeros(0, dtype=np.int64)
        return self.won if self.over else self.game.final_winners(state)

    def view(self, state: State | None) -> dict[str, Any]:
        """What the viewer shows of the game now ({} without one): the game's numbers, its name and
        title, and the winners once there are some."""
        if self.game is None or state is None:
            return {}
        return {"game": self.game.name, "title": self.game.title, "tick": int(state.tick),
                **self.game.state(state), "winners": self.won.tolist() if self.over else [], **self.game.level()}

    def result(self, state: State | None) -> str:
        """One line for people, '' without a game: who won, at which tick and why (the game's rule,
        or what decides at the horizon), or why nobody did; for a game not over yet (a run stopped
        early, or every player dead before the horizon), how it stands."""
        if self.game is None or state is None:
            return ""
        game, tick, horizon = self.game, int(state.tick), self.config.HORIZON
        if self.over:
            if not self.won.size:
                return f"{game.name}: no winner at tick {tick}, the horizon: {game.no_winner}"
            why = game.win_rule if self.by_rule else game.final_rule
            return f"{game.name}: {_teams(self.won)} won at tick {tick} of {horizon} ({why})"
        if not state.entities.alive[: self.config.PLAYER_N].any():
            return f"{game.name}: no winner: every player died by tick {tick} (of {horizon})"
        now = self.game.final_winners(state)
        standing = f"{_teams(now)} would win now ({game.final_rule})" if now.size else game.no_winner
        return f"{game.name}: stopped at tick {tick}, before the game ended (horizon {horizon}); {standing}"


def _teams(teams: np.ndarray) -> str:
    """'team 3' or 'teams 1, 4' (team indices, as the game state and the viewer number them)."""
    return ("team " if len(teams) == 1 else "teams ") + ", ".join(str(int(t)) for t in teams)
