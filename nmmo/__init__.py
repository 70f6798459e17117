"""flatmmo: a massively multi-agent game world for AI research on flat numpy state.

The import package is ``nmmo``. Start with ``nmmo.Env`` (a PettingZoo ParallelEnv) and the configs
in ``nmmo.config``.
"""

from nmmo import config, interfaces, policy
from nmmo.config import Config, ConfigError
from nmmo.core import world
from nmmo.core.actions import ActionError
from nmmo.core.enums import Direction, EntityAttr, Material, NPCType, Skill, Style, TileAttr
from nmmo.core.rules import team_spirit
from nmmo.engines.vector import VectorEnv
from nmmo.envs.env import BatchStep, Env

__version__ = "0.1.0"

__all__ = [
    "ActionError",
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
    "VectorEnv",
    "__version__",
    "config",
    "interfaces",
    "policy",
    "world",
    "team_spirit",
]
