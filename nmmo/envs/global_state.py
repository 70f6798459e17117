"""The global state a centralized critic reads (MAPPO in TorchRL/BenchMARL, RLlib's shared value
functions): `Env.state()` and `Env.state_space`, PettingZoo's names for them.

The state is one float32 vector: every row of the entity table (players by slot, then NPCs by
slot) in the `EntityAttr` columns of the Entity observation (IS_SELF is 0, rows of dead or empty
slots are all zeros, and ROW/COL are map coordinates), followed by the tick as a fraction of the
horizon. It is what every agent could see if its window covered the whole map; the terrain,
which changes only where forests are harvested, is left out (the map seed names it).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.core.layout import N_ENTITY_ATTRS
from nmmo.core.state import State


def entity_rows(config: Config) -> int:
    """Rows of the entity table: players, then NPCs (when the NPC system is on)."""
    return config.PLAYER_N + (config.NPC_N if config.has("NPC") else 0)


def state_space(config: Config) -> spaces.Box:
    """A Box of ``entity_rows(config) * N_ENTITY_ATTRS + 1`` float32 values (bounds: int32's range for
    entity columns, [0, 1] for the tick)."""
    size = entity_rows(config) * N_ENTITY_ATTRS
    bound = float(np.iinfo(np.int32).max)
    low = np.concatenate([np.full(size, -bound), [0.0]]).astype(np.float32)
    high = np.concatenate([np.full(size, bound), [1.0]]).astype(np.float32)
    return spaces.Box(low, high, dtype=np.float32)


def global_state(state: State, features: np.ndarray, config: Config) -> np.ndarray:
    """The state vector from the entity `features` (`ObservationBuilder.entity_features(state)`)."""
    rows = np.where(state.entities.alive[:, None], features, 0).astype(np.float32)
    tick = np.float32(min(state.tick, config.HORIZON) / max(config.HORIZON, 1))
    return np.concatenate([rows.ravel(), [tick]])
