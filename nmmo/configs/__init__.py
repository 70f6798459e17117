"""Data, not code: the shipped config files (``*.toml``, one canonical config each) and task sets
(``tasks/*.toml``), installed inside the wheel as ``nmmo.configs`` (``configs/`` at the top of the
checkout links here). The code that declares, checks and loads them is `nmmo.config`; load one by
name with ``nmmo.config.load("small_maps")``."""
