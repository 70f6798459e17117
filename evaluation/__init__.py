"""Metrics, self-contained runs and TrueSkill tournaments. Arrives with the bots-and-evaluation
issue; nothing is exported yet."""
