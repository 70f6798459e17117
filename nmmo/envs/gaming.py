"""Minigames in an env: `Gaming`, the mixin through which `nmmo.Env` plays the game the config's
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

from nmmo.games import GAMES, Game
from nmmo.tasks import TaskSet


class Gaming:
    """The minigame half of `nmmo.Env` (a mixin: its methods are the env's). It reads what the env
    keeps: ``config`` and ``realm``; `Tasking._init_tasks` takes the game's tasks."""

    def _init_game(self, tasks: Any) -> Any:
        """The game of the config (None: the open world); returns the tasks the env takes."""
        self.game: Game | None = GAMES[self.config.GAME](self.config) if self.config.GAME else None
        self._game_over, self._won, self._by_rule = False, np.zeros(0, dtype=np.int64), False
        if self.game is None:
            return tasks
        if tasks is not None:
            raise ValueError(f"GAME={self.config.GAME!r} brings its own team tasks; do not pass tasks= as well")
        self._game_tasks = self.game.task_set()
        return self._game_tasks

    def _reset_game(self) -> None:
        """A new episode: the game's rules in the realm, its tasks (an adaptive game's may change)."""
        if self.game is None:
            return
        tasks: TaskSet = self.game.task_set()
        if tasks != self._game_tasks:  # a curriculum moved on: the env holds the new task set
            self._game_tasks = tasks
            self._init_tasks(tasks)
        self.realm.rules = self.game.rules()
        self.game.start(self.realm.state)
        self._game_over, self._won, self._by_rule = False, np.zeros(0, dtype=np.int64), False

    def _game_tick(self) -> None:
        """After a tick: has a team won (or has the horizon come)?"""
        if self.game is None or self._game_over:
            return
        state = self.realm.state
        won = self.game.winners(state)
        self._by_rule = bool(won.size)  # won by the game's rule, not decided at the horizon
        if not won.size and state.tick >= self.config.HORIZON:
            won = self.game.final_winners(state)
        elif not won.size:
            return
        self._game_over, self._won = True, won
        self.game.finish(won)

    @property
    def game_over(self) -> bool:
        """Whether the game ended before the horizon, a team having won."""
        return self._game_over

    def game_winners(self) -> np.ndarray:
        """The teams that won (the episode is over), or that would win if it ended now."""
        if self.game is None:
            return np.zeros(0, dtype=np.int64)
        return self._won if self._game_over else self.game.final_winners(self.realm.state)

    def game_state(self) -> dict[str, Any]:
        """What the viewer shows of the game now ({} without one): the game's numbers, its name and
        title, and the winners once there are some."""
        if self.game is None or self.realm.state is None:
            return {}
        return {"game": self.game.name, "title": self.game.title, "tick": int(self.realm.state.tick),
                **self.game.state(self.realm.state), "winners": self._won.tolist() if self._game_over else [],
                **self.game.level()}

    def game_result(self) -> str:
        """One line for people, '' without a game: who won, at which tick and why (the game's rule,
        or what decides at the horizon), or why nobody did; for a game not over yet (a run stopped
        early, or every player dead before the horizon), how it stands."""
        if self.game is None or self.realm.state is None:
            return ""
        game, tick, horizon = self.game, int(self.realm.state.tick), self.config.HORIZON
        if self._game_over:
            if not self._won.size:
                return f"{game.name}: no winner at tick {tick}, the horizon: {game.no_winner}"
            why = game.win_rule if self._by_rule else game.final_rule
            return f"{game.name}: {_teams(self._won)} won at tick {tick} of {horizon} ({why})"
        if not self.realm.state.entities.alive[: self.config.PLAYER_N].any():
            return f"{game.name}: no winner: every player died by tick {tick} (of {horizon})"
        now = self.game.final_winners(self.realm.state)
        standing = f"{_teams(now)} would win now ({game.final_rule})" if now.size else game.no_winner
        return f"{game.name}: stopped at tick {tick}, before the game ended (horizon {horizon}); {standing}"


def _teams(teams: np.ndarray) -> str:
    """'team 3' or 'teams 1, 4' (team indices, as the game state and the viewer number them)."""
    return ("team " if len(teams) == 1 else "teams ") + ", ".join(str(int(t)) for t in teams)
