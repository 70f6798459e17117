"""Scripted baseline agents (Meander, Forage, Combat), acting through the public observation/action
API like any submission. Arrives with the bots-and-evaluation issue; nothing is exported yet."""
