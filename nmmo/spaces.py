"""The env's gymnasium spaces, built from the config (`nmmo.Env` caches one object of each)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from nmmo.actions import ATTACK, DIRECTION, MOVE, STYLE, TARGET
from nmmo.config import Config
from nmmo.enums import Direction, Style
from nmmo.obs import layout


def observation_space(config: Config, n_agent_ids: int) -> spaces.Dict:
    """One agent's observation: Tile and Entity arrays (`nmmo.obs.layout`), the ActionTargets masks,
    AgentId (ids 1..n_agent_ids) and CurrentTick."""
    shapes = layout(config)
    (tile_shape, tile_dtype), (entity_shape, entity_dtype) = shapes["tile"], shapes["entity"]
    entity_range = np.iinfo(entity_dtype)
    n_obs = config.PLAYER_N_OBS
    return spaces.Dict({
        "Tile": spaces.Box(0, max(config.MAP_SIZE, 8), tile_shape, dtype=tile_dtype),
        "Entity": spaces.Box(entity_range.min, entity_range.max, entity_shape, dtype=entity_dtype),
        "ActionTargets": spaces.Dict({
            MOVE: spaces.Dict({DIRECTION: spaces.MultiBinary(len(Direction))}),
            ATTACK: spaces.Dict({STYLE: spaces.MultiBinary(len(Style)), TARGET: spaces.MultiBinary(n_obs + 1)}),
        }),
        "AgentId": spaces.Discrete(n_agent_ids + 1),
        "CurrentTick": spaces.Discrete(config.HORIZON + 1),
    })


def action_space(config: Config) -> spaces.Dict:
    """One agent's action: a move direction and an attack (style, target row; the last row is the no-op)."""
    return spaces.Dict({
        MOVE: spaces.Dict({DIRECTION: spaces.Discrete(len(Direction))}),
        ATTACK: spaces.Dict({STYLE: spaces.Discrete(len(Style)), TARGET: spaces.Discrete(config.PLAYER_N_OBS + 1)}),
    })
