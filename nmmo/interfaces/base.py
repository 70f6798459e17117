"""The interface protocol: `Interface` (the identity), `Outcome`, and `Stack` (A then B)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

MASK_KEY = "action_mask"  # PettingZoo's convention: its API test samples actions with this mask
TARGETS_KEY = "ActionTargets"


# ------------------------------------------------------------------- base
@dataclass
class Outcome:
    """Everything a step returns besides observations, keyed by agent (as the interface sees them)."""

    rewards: dict
    terminations: dict
    truncations: dict
    infos: dict
    agents: list


class Interface:
    """The identity transform; subclasses override only what they change."""

    #: What the raw env must report in its infos for this interface (`InterfaceEnv` asks for it).
    env_reports: frozenset[str] = frozenset()

    def reset(self, seed: int | None = None) -> None:
        """Start an episode: stateful interfaces clear or redraw their state here."""

    def possible_agents(self, agents: list) -> list:
        """Keys this interface can produce, given the raw env's."""
        return agents

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        """The space of one transformed observation, given the raw one."""
        return space

    def action_space(self, space: spaces.Space) -> spaces.Space:
        """The space of one action the policy gives, given the raw action space."""
        return space

    def observations(self, obs: dict) -> dict:
        """Raw ``{agent: observation}`` to what the policy sees."""
        return obs

    def actions(self, actions: dict, obs: dict) -> dict:
        """The policy's actions back to raw ones; `obs` is the raw dict they answer."""
        return actions

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        """Rewards, flags, infos and live agents of a step (or a reset), after `observations(obs)`."""
        return outcome


class Stack(Interface):
    """Interfaces applied in order: observations go first to last, actions come back last to first."""

    def __init__(self, *interfaces: Interface) -> None:
        self.stages: list[Interface] = []
        for interface in interfaces:
            self.stages.extend(interface.stages if isinstance(interface, Stack) else [interface])
        self._trace: list[dict] = []
        self.env_reports = frozenset().union(*(stage.env_reports for stage in self.stages))

    def reset(self, seed: int | None = None) -> None:
        for stage in self.stages:
            stage.reset(seed)
        self._trace = []

    def possible_agents(self, agents: list) -> list:
        for stage in self.stages:
            agents = stage.possible_agents(agents)
        return agents

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        for stage in self.stages:
            space = stage.observation_space(space)
        return space

    def action_space(self, space: spaces.Space) -> spaces.Space:
        for stage in self.stages:
            space = stage.action_space(space)
        return space

    def observations(self, obs: dict) -> dict:
        """Run every stage, keeping each one's input: actions and outcomes need them on the way back."""
        trace = [obs]
        for stage in self.stages:
            trace.append(stage.observations(trace[-1]))
        self._trace = trace
        return trace[-1]

    def _inputs(self, obs: dict) -> list[dict]:
        """Each stage's input for raw `obs`: the cached trace, recomputed if `obs` is not the last one seen."""
        if not self._trace or self._trace[0] is not obs:
            self.observations(obs)
        return self._trace[:-1]

    def actions(self, actions: dict, obs: dict) -> dict:
        for stage, seen in reversed(list(zip(self.stages, self._inputs(obs), strict=True))):
            actions = stage.actions(actions, seen)
        return actions

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        for stage, seen in zip(self.stages, self._inputs(obs), strict=True):
            outcome = stage.outcome(outcome, seen)
        return outcome


def stack(*interfaces: Interface) -> Stack:
    """A then B then ...: the first interface sees the raw env."""
    return Stack(*interfaces)


def _require_raw(obs: dict, name: str, keys: tuple[str, ...]) -> None:
    """A clear error when an interface that reads raw observation tables gets something else (one
    agent tells: every observation of a step has the same structure)."""
    if not obs:
        return
    agent, ob = next(iter(obs.items()))
    if not isinstance(ob, Mapping) or any(not isinstance(ob.get(k), np.ndarray) for k in keys):
        raise ValueError(f"{name} reads the raw {'/'.join(keys)} tables, which agent {agent!r}'s observation "
                         f"lacks: put {name} before interfaces that replace them (Flatten, combine), or pass it "
                         f"as a member: combine(config, {name}(...))")
