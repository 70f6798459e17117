"""Scripted baseline agents, acting only through the public observation -> action interface.

Each is a policy: ``Bot(config)`` with ``act(observations) -> actions`` for all the agents it
controls, vectorized over them. Spec strings: ``scripted:Meander``, ``scripted:Forage``,
``scripted:Combat``, ``scripted:ForageNoExplore``, ``scripted:CombatNoExplore``; the minigames' team
bots (`scripted.games`, `GAME_BOTS`): ``scripted:Racer``, ``scripted:Hill``, ``scripted:Battler``,
``scripted:Guard``, ``scripted:Survivor``; the task follower (`scripted.follower`), which does what
the task embedding of its observation asks: ``scripted:Follower``.
"""

from scripted.bots import Combat, CombatNoExplore, Forage, ForageNoExplore, Meander, Scripted
from scripted.follower import Follower
from scripted.games import GAME_BOTS, Battler, Guard, Hill, Racer, Survivor

#: The bots a spec may name (``scripted:NAME``): the tournament runs exactly these in-process, trusted.
BOTS = ("Meander", "Forage", "Combat", "ForageNoExplore", "CombatNoExplore", "Racer", "Hill", "Battler", "Guard",
        "Survivor", "Follower")

__all__ = ["BOTS", "GAME_BOTS", "Battler", "Combat", "CombatNoExplore", "Follower", "Forage", "ForageNoExplore",
           "Guard", "Hill", "Meander", "Racer", "Scripted", "Survivor"]
