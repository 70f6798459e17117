"""Minigames: short, legible games on the same world, each a canonical config (of the game's name:
``nmmo run --config king_of_the_hill``), a team task set, a win condition and, where tasks cannot
say it, a small rule (`nmmo.games.core`).

- `race_to_centre`: the first team on the centre tile wins.
- `king_of_the_hill`: hold the centre for a number of ticks (a curriculum in training).
- `team_battle`: the last team standing wins.
- `protect_the_king`: a team whose king dies is out; the last king's team wins.
- `sandwich`: a closing fog pushes NPCs in on the teams; the last team standing wins.
"""

from nmmo.config.checks import GAME_NAMES
from nmmo.games.battle import ProtectTheKing, Sandwich, TeamBattle
from nmmo.games.centre import HOLD_SCHEDULE, KingOfTheHill, RaceToCentre
from nmmo.games.core import Game, by_name

#: Each game's class by name, in the order of `GAME_NAMES` (the config layer's list, which checks the
#: GAME key without importing the games): `by_name` refuses a name without a class and a class unlisted.
GAMES: dict[str, type[Game]] = by_name(GAME_NAMES, (RaceToCentre, KingOfTheHill, TeamBattle, ProtectTheKing, Sandwich))

__all__ = ["GAMES", "HOLD_SCHEDULE", "Game", "KingOfTheHill", "ProtectTheKing", "RaceToCentre", "Sandwich",
           "TeamBattle"]
