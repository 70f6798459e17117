"""Configuration: a base `Config`, game-system mixins, size presets and TOML task files.

A config is a class composed from a size preset and the game systems it enables, e.g.::

    class MyConfig(nmmo.config.Small, nmmo.config.Resource, nmmo.config.Combat):
        pass

    config = MyConfig().set("PLAYER_N", 32)

A system is on when its mixin is present. Keys are UPPER_CASE class attributes; the keys of a
system are prefixed by its name (``RESOURCE_``, ``COMBAT_``, ``PROGRESSION_``, ``NPC_``) and are only
settable when that system is on. Capacities (map size, populations, observation rows) live in the
base class and the presets; rules (damage, regeneration, XP rates) live in the mixins.

This package is the code; the data it reads is apart: the canonical configs and task sets are
TOML files in ``nmmo/configs/`` (the ``nmmo.configs`` package, plural; ``configs/`` at the top of
the checkout links there), loaded with `load`, by name (``"small_maps"``) or by path.

The package: `keys` declares every key (the data), `checks` the rules between keys, `files` the loaders.
"""

from nmmo.config.checks import MAX_AGENT_IDS, ConfigError
from nmmo.config.files import available, from_spec, from_toml, load, resolve
from nmmo.config.keys import (
    _BOUNDS,
    _MIXINS,
    _SYSTEM_PREFIXES,
    NPC,
    Combat,
    Config,
    Default,
    Large,
    Medium,
    Progression,
    Resource,
    Small,
)

__all__ = [
    "MAX_AGENT_IDS",
    "NPC",
    "_BOUNDS",
    "_MIXINS",
    "_SYSTEM_PREFIXES",
    "Combat",
    "Config",
    "ConfigError",
    "Default",
    "Large",
    "Medium",
    "Progression",
    "Resource",
    "Small",
    "available",
    "from_spec",
    "from_toml",
    "load",
    "resolve",
]
