"""Where interfaces are used: `InterfaceEnv` (a trainer steps the env in the policy's terms) and
`InterfaceAgent` / `agent_class` (a trained agent plays raw-env evaluations and tournaments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from nmmo.config import Config
from nmmo.interfaces.base import Interface, Outcome


# --------------------------------------------------------------- wrappers
class InterfaceEnv(ParallelEnv):
    """A PettingZoo ParallelEnv that speaks the interface's terms (agents, spaces, observations,
    actions, rewards). The raw env must give every agent the same spaces (`nmmo.Env` does)."""

    def __init__(self, env: ParallelEnv, interface: Interface) -> None:
        self.env = env
        self.interface = interface
        if "achievement_points" in interface.env_reports:
            env.unwrapped.report_achievements = True
        self.metadata = dict(getattr(env, "metadata", {}))
        self.render_mode = getattr(env, "render_mode", None)
        self.possible_agents = list(interface.possible_agents(list(env.possible_agents)))
        self._possible = set(self.possible_agents)
        self.agents: list = []
        self._raw_obs: dict | None = None
        self._spaces: dict[str, spaces.Space] = {}

    @property
    def unwrapped(self) -> ParallelEnv:
        """The raw env underneath (its realm, replays and overlays stay reachable)."""
        return self.env.unwrapped

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Reset the env, then the interface with the episode's seed (the env's `episode_seed` when
        no seed is given), so the episode, augmentation included, replays from that seed alone."""
        obs, infos = self.env.reset(seed=seed, options=options)
        if seed is None:
            seed = getattr(self.env.unwrapped, "episode_seed", None)
        self.interface.reset(seed)
        view, out = self._transform(obs, Outcome({}, {}, {}, infos, list(self.env.agents)))
        return view, out.infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        """Map the actions to raw ones, step the env, and transform what comes back."""
        if self._raw_obs is None:
            raise RuntimeError("call reset() before step()")
        raw_actions = self.interface.actions(actions, self._raw_obs)
        obs, rewards, terminations, truncations, infos = self.env.step(raw_actions)
        view, out = self._transform(obs, Outcome(rewards, terminations, truncations, infos, list(self.env.agents)))
        return view, out.rewards, out.terminations, out.truncations, out.infos

    def _transform(self, obs: dict, outcome: Outcome) -> tuple[dict, Outcome]:
        view = self.interface.observations(obs)
        out = self.interface.outcome(outcome, obs)
        self._raw_obs = obs
        self.agents = list(out.agents)
        return view, out

    def observation_space(self, agent: Any) -> spaces.Space:
        """The same space object for every agent and every call (PettingZoo requires it)."""
        return self._space(agent, "observation", self.interface.observation_space)

    def action_space(self, agent: Any) -> spaces.Space:
        """The same space object for every agent and every call."""
        return self._space(agent, "action", self.interface.action_space)

    def _space(self, agent: Any, kind: str, transform: Callable[[spaces.Space], spaces.Space]) -> spaces.Space:
        """Transform the raw space once; every agent shares the result."""
        if agent not in self._possible:
            raise ValueError(f"{agent!r} is not an agent of this env (see possible_agents)")
        if kind not in self._spaces:
            raw_agent = self.env.possible_agents[0]
            raw = self.env.observation_space(raw_agent) if kind == "observation" else self.env.action_space(raw_agent)
            self._spaces[kind] = transform(raw)
        return self._spaces[kind]

    @property
    def state_space(self) -> spaces.Space:
        """The raw env's global state space (the state is the world's, whatever the interface)."""
        return self.env.unwrapped.state_space

    def state(self) -> Any:
        """The raw env's global state (`nmmo.Env.state`), for centralized critics."""
        return self.env.unwrapped.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class InterfaceAgent:
    """A policy acting on transformed observations, seen from outside as a raw-env policy."""

    def __init__(self, policy: Any, interface: Interface) -> None:
        self.policy = policy
        self.interface = interface

    def reset(self, seed: int | None = None) -> None:
        """Reset the interface (a seed draws its per-episode state) and the policy, if it resets."""
        self.interface.reset(seed)
        if callable(getattr(self.policy, "reset", None)):
            self.policy.reset(seed)

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        """Raw observations in, raw actions out."""
        view = self.interface.observations(observations)
        return self.interface.actions(self.policy.act(view), observations)


def agent_class(policy_cls: Callable[[Config], Any], make_interface: Callable[[Config], Interface],
                name: str | None = None) -> type:
    """A policy class built as ``Cls(config)`` (what spec strings like ``file.py:Agent`` load) that
    wraps ``policy_cls(config)`` in ``make_interface(config)``."""

    def __init__(self, config: Config) -> None:
        InterfaceAgent.__init__(self, policy_cls(config), make_interface(config))
        self.config = config

    cls_name = name or f"{getattr(policy_cls, '__name__', 'Policy')}Agent"
    return type(cls_name, (InterfaceAgent,), {"__init__": __init__, "__qualname__": cls_name,
                                              "__module__": getattr(policy_cls, "__module__", __name__)})
