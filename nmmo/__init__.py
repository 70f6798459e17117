"""flatmmo: a massively multi-agent game world for AI research on flat numpy state.

The import package is ``nmmo``. Start with ``nmmo.Env`` (a PettingZoo ParallelEnv) and the configs
in ``nmmo.config``.
"""

from nmmo import config
from nmmo.config import Config, ConfigError
from nmmo.enums import Material

__version__ = "0.1.0"

__all__ = ["Config", "ConfigError", "Material", "config", "__version__"]
