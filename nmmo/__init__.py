"""flatmmo: a massively multi-agent game world for AI research on flat numpy state.

The import package is ``nmmo``. Start with ``nmmo.Env`` (a PettingZoo ParallelEnv) and the configs
in ``nmmo.config``.
"""

from nmmo import config, interfaces, policy, world
from nmmo.config import Config, ConfigError
from nmmo.enums import Direction, EntityAttr, Material, NPCType, Skill, Style, TileAttr
from nmmo.env import BatchStep, Env
from nmmo.rules import team_spirit

__version__ = "0.1.0"

__all__ = [
    "BatchStep",
    "Config",
    "ConfigError",
    "Direction",
    "EntityAttr",
    "Env",
    "Material",
    "NPCType",
    "Skill",
    "Style",
    "TileAttr",
    "__version__",
    "config",
    "interfaces",
    "policy",
    "world",
    "team_spirit",
]
