"""Scripted baseline agents, acting only through the public observation -> action interface.

Each is a policy: ``Bot(config)`` with ``act(observations) -> actions`` for all the agents it
controls, vectorized over them. Spec strings: ``scripted:Meander``, ``scripted:Forage``,
``scripted:Combat``, ``scripted:ForageNoExplore``, ``scripted:CombatNoExplore``.
"""

from scripted.bots import Combat, CombatNoExplore, Forage, ForageNoExplore, Meander, Scripted

__all__ = ["Combat", "CombatNoExplore", "Forage", "ForageNoExplore", "Meander", "Scripted"]
