"""The env's gymnasium spaces, built from the config, and `Spaces`, the component through which
`nmmo.Env` gives them (one object of each per env) and its global state."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.core.actions import ATTACK, DIRECTION, MOVE, STYLE, TARGET
from nmmo.core.enums import Direction, Style
from nmmo.core.layout import fields
from nmmo.core.state import State
from nmmo.envs import global_state


def observation_space(config: Config, n_agent_ids: int) -> spaces.Dict:
    """One agent's observation: every field of the layout (`nmmo.core.layout.fields`) at its dict path
    (a Box, or a MultiBinary for a mask), AgentId (ids 1..n_agent_ids) and CurrentTick."""
    tree: dict = {}
    for spec in fields(config):
        shape = spec.shape(config)
        if spec.mask:
            space = spaces.MultiBinary(shape[0] if len(shape) == 1 else shape)
        else:
            bounds = np.iinfo(spec.dtype) if np.issubdtype(spec.dtype, np.integer) else np.finfo(spec.dtype)
            high = spec.high(config) if callable(spec.high) else spec.high
            space = spaces.Box(bounds.min if spec.low is None else spec.low, bounds.max if high is None else high,
                               shape, dtype=spec.dtype)
        node = tree
        for key in spec.key[:-1]:
            node = node.setdefault(key, {})
        node[spec.key[-1]] = space
    tree.update(AgentId=spaces.Discrete(n_agent_ids + 1), CurrentTick=spaces.Discrete(config.HORIZON + 1))
    return _as_dict_space(tree)


def _as_dict_space(tree: dict) -> spaces.Dict:
    return spaces.Dict({key: _as_dict_space(value) if isinstance(value, dict) else value
                        for key, value in tree.items()})


def action_space(config: Config) -> spaces.Dict:
    """One agent's action: a move direction and an attack (style, target row; the last row is the no-op)."""
    return spaces.Dict({
        MOVE: spaces.Dict({DIRECTION: spaces.Discrete(len(Direction))}),
        ATTACK: spaces.Dict({STYLE: spaces.Discrete(len(Style)), TARGET: spaces.Discrete(config.PLAYER_N_OBS + 1)}),
    })


class Spaces:
    """An env's spaces, as a component `nmmo.Env` holds (``env.spaces``) and calls: built from the
    config and the number of agent ids, each space made once and the same object ever after; the
    global state from the state tables and entity features it is handed."""

    def __init__(self, config: Config, n_agent_ids: int) -> None:
        self.config, self.n_agent_ids = config, n_agent_ids
        self._spaces: tuple[spaces.Dict, spaces.Dict] | None = None
        self._state_space: spaces.Box | None = None

    def observation_space(self, agent: Any) -> spaces.Dict:
        """The same space object for every agent and every call."""
        self.check_agent_id(agent)
        if self._spaces is None:
            self._spaces = (observation_space(self.config, self.n_agent_ids), action_space(self.config))
        return self._spaces[0]

    def action_space(self, agent: Any) -> spaces.Dict:
        """The same space object for every agent and every call."""
        self.check_agent_id(agent)
        self.observation_space(agent)
        return self._spaces[1]

    @property
    def state_space(self) -> spaces.Box:
        """The space of `state` (see `nmmo.envs.global_state`); one object per env."""
        if self._state_space is None:
            self._state_space = global_state.state_space(self.config)
        return self._state_space

    def state(self, state: State, features: np.ndarray) -> np.ndarray:
        """The global state for centralized critics: every entity's row of the Entity table (its
        `features`, `nmmo.core.obs.ObservationBuilder.entity_features`) and the tick (float32,
        `state_space`; layout in `nmmo.envs.global_state`)."""
        return global_state.global_state(state, features, self.config)

    def check_agent_id(self, agent: Any) -> None:
        """A ValueError unless `agent` is one of the env's agent ids (ints 1..n_agent_ids)."""
        if not (isinstance(agent, (int, np.integer)) and 1 <= agent <= self.n_agent_ids):
            raise ValueError(f"{agent!r} is not an agent id of this env (ints 1..{self.n_agent_ids})")
