"""The shipped baselines' weights (data, read with a weights-only loader)."""
