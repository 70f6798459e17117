"""Game systems: each module transforms the state tables in bulk for one part of the rules."""
