"""Interfaces: small composable transforms between the raw env and a policy.

An `Interface` stands between `nmmo.Env` and a policy. It maps what the env gives (observations,
their space, rewards, done flags, infos, the live agents) to what the policy sees, and maps the
policy's answers back to raw actions. The same interface object serves two places:

- `InterfaceEnv(env, interface)`: a PettingZoo ParallelEnv a trainer steps in the policy's terms.
- `InterfaceAgent(policy, interface)`: a policy that takes raw observations and returns raw actions,
  so an agent trained on an interface plays in raw-env evaluations and tournaments
  (`agent_class(Policy, make_interface)` gives the ``Policy(config)`` class a spec string names).

Every method works on whole ``{agent: value}`` dicts, so transforms can vectorize across agents and
can change the keys (a team becomes one agent). Per step the wrappers call, in this order:
``observations(raw_obs)``, then ``outcome(outcome, raw_obs)``; the policy's answer goes back
through ``actions(actions, raw_obs)`` with the raw observations it answered.

Combinators:

- ``stack(A, B, ...)``: A then B (observations flow A to B, actions back from B to A).
- ``combine(config, *members)``: team-as-agent. Each team becomes one agent whose observation joins
  its members' (each seen through `members`, stacked along a leading axis of size
  PLAYER_TEAM_SIZE) and whose action is split among them.

Shipped transforms: `Flatten` (one fixed-length float vector), `ActionMask` (the masks under
PettingZoo's ``"action_mask"`` key), `RewardShaping` (weighted metric changes added to the reward),
`TeamSpirit` (alpha * team mean + (1 - alpha) * own reward), `Augment` (one of the 8
rotations/flips of the map per episode, consistent for tiles, positions, move directions and masks,
and exactly invertible) and `Team` (what `combine` builds).

An interface instance holds per-episode state (the drawn rotation, team seats, last metric
values): give each env or agent its own, e.g. from a ``make_interface(config)`` function.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from nmmo.config import Config
from nmmo.enums import EntityAttr, TileAttr
from nmmo.env import team_spirit
from nmmo.metrics import METRICS
from nmmo.rules import DELTAS

MASK_KEY = "action_mask"  # PettingZoo's convention: its API test samples actions with this mask
TARGETS_KEY = "ActionTargets"
#: Names of the per-lifetime metrics `RewardShaping` can weight (they arrive in infos["episode"]).
EPISODE_METRICS = METRICS
#: Names of the own-row Entity columns `RewardShaping` can weight (their change per step).
STEP_METRICS = tuple(attr.name.lower() for attr in EntityAttr)
#: Per-step values the env reports in infos that `RewardShaping` can weight (the achievement
#: points an agent reached this step: weight 1/15 is DESIGN.md's achievement reward).
INFO_METRICS = ("achievement_points",)

__all__ = [
    "MASK_KEY",
    "ActionMask",
    "Augment",
    "Flatten",
    "Interface",
    "InterfaceAgent",
    "InterfaceEnv",
    "Outcome",
    "RewardShaping",
    "Stack",
    "Team",
    "TeamSpirit",
    "agent_class",
    "combine",
    "dihedral_inverse",
    "dihedral_matrix",
    "stack",
]


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


# ---------------------------------------------------------------- flatten
def _leaf_bounds(space: spaces.Space) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest value of each element of a leaf space, flattened."""
    if isinstance(space, spaces.Box):
        return space.low.ravel().astype(np.float64), space.high.ravel().astype(np.float64)
    if isinstance(space, spaces.MultiBinary):
        size = int(np.prod(space.shape))
        return np.zeros(size), np.ones(size)
    if isinstance(space, spaces.Discrete):
        return np.array([space.start], dtype=np.float64), np.array([space.start + space.n - 1], dtype=np.float64)
    if isinstance(space, spaces.MultiDiscrete):
        low = np.broadcast_to(space.start, space.nvec.shape).ravel().astype(np.float64)
        return low, low + space.nvec.ravel() - 1
    raise TypeError(f"cannot flatten a {type(space).__name__} space")


def _space_leaves(space: spaces.Space, path: tuple = ()) -> list[tuple[tuple, spaces.Space]]:
    """(path, leaf space) pairs in flattening order: dict keys sorted, tuples in order."""
    if isinstance(space, spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in _space_leaves(space.spaces[key], (*path, key))]
    if isinstance(space, spaces.Tuple):
        return [leaf for i, sub in enumerate(space.spaces) for leaf in _space_leaves(sub, (*path, i))]
    return [(path, space)]


def _value_leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, int]]:
    """(path, size) pairs of an observation in the same order as `_space_leaves` gives."""
    if isinstance(value, Mapping):
        return [leaf for key in sorted(value) for leaf in _value_leaves(value[key], (*path, key))]
    if isinstance(value, (tuple, list)):
        return [leaf for i, sub in enumerate(value) for leaf in _value_leaves(sub, (*path, i))]
    return [(path, int(np.size(value)))]


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


class Flatten(Interface):
    """Observations as one fixed-length vector (float32 by default): every leaf of the observation
    space, dict keys sorted, Discrete values as they are (no one-hot). A top-level ``action_mask``
    is left out of the vector; when present the result is PettingZoo's
    ``{"observation": vector, "action_mask": mask}`` pair. `keys` picks (and orders) the top-level
    keys to flatten; the others are dropped. `layout` names the slice of each leaf."""

    def __init__(self, keys: Sequence[str] | None = None, dtype: Any = np.float32) -> None:
        self.keys = None if keys is None else list(keys)
        self.dtype = np.dtype(dtype)
        self._paths: list[tuple[tuple, slice]] | None = None

    def _top_keys(self, keys: Sequence[Any]) -> list:
        if self.keys is None:
            return sorted(k for k in keys if k != MASK_KEY)
        missing = [k for k in self.keys if k not in keys]
        if missing:
            raise KeyError(f"Flatten keys {missing} are not in the observation (it has {sorted(keys)})")
        return self.keys

    def _set_layout(self, sizes: list[tuple[tuple, int]]) -> int:
        """Remember where each leaf goes; the total length."""
        offsets = np.cumsum([0, *(size for _, size in sizes)])
        self._paths = [(path, slice(int(a), int(b)))
                       for (path, _), a, b in zip(sizes, offsets[:-1], offsets[1:], strict=True)]
        return int(offsets[-1])

    @property
    def layout(self) -> dict[str, slice]:
        """{"Entity": slice, "ActionTargets.Move.Direction": slice, ...} once the layout is known."""
        if self._paths is None:
            raise RuntimeError("the layout is known after observation_space() or observations()")
        return {".".join(map(str, path)): where for path, where in self._paths}

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        if not isinstance(space, spaces.Dict):
            raise TypeError(f"Flatten needs a Dict observation space, got {type(space).__name__}")
        leaves = [leaf for key in self._top_keys(list(space.spaces))
                  for leaf in _space_leaves(space.spaces[key], (key,))]
        length = self._set_layout([(path, int(np.prod(leaf.shape or (1,)))) for path, leaf in leaves])
        bounds = [_leaf_bounds(leaf) for _, leaf in leaves]
        low = np.concatenate([b[0] for b in bounds]) if bounds else np.zeros(0)
        high = np.concatenate([b[1] for b in bounds]) if bounds else np.zeros(0)
        vector = spaces.Box(low.astype(self.dtype), high.astype(self.dtype), (length,), self.dtype)
        if MASK_KEY in space.spaces:
            return spaces.Dict({"observation": vector, MASK_KEY: space.spaces[MASK_KEY]})
        return vector

    def observations(self, obs: dict) -> dict:
        """All agents at once: one (agents, length) matrix, one row per agent."""
        if not obs:
            return {}
        first = next(iter(obs.values()))
        if self._paths is None:
            keys = self._top_keys(list(first))
            self._set_layout([leaf for key in keys for leaf in _value_leaves(first[key], (key,))])
        length = self._paths[-1][1].stop if self._paths else 0
        values = list(obs.values())
        matrix = np.empty((len(values), length), dtype=self.dtype)
        for path, where in self._paths:
            matrix[:, where] = np.stack([np.asarray(_get(ob, path)) for ob in values]).reshape(len(values), -1)
        if MASK_KEY in first:
            return {agent: {"observation": row, MASK_KEY: ob[MASK_KEY]}
                    for (agent, ob), row in zip(obs.items(), matrix, strict=True)}
        return dict(zip(obs, matrix, strict=True))


# ------------------------------------------------------------ action mask
class ActionMask(Interface):
    """The ActionTargets masks under ``action_mask``, laid out like the action space, which is the
    key PettingZoo tools sample with (``space.sample(mask=obs["action_mask"])``). `keep_targets`
    also keeps them under ActionTargets."""

    def __init__(self, keep_targets: bool = False) -> None:
        self.keep_targets = keep_targets

    def _move(self, items: Mapping) -> dict:
        if not isinstance(items, Mapping) or TARGETS_KEY not in items:
            raise ValueError(f"ActionMask reads the raw {TARGETS_KEY} masks: put it before interfaces that change the "
                             "observation's keys (Flatten, combine), or pass it as a member: combine(config, "
                             "ActionMask())")
        out = {k: v for k, v in items.items() if self.keep_targets or k != TARGETS_KEY}
        out[MASK_KEY] = items[TARGETS_KEY]
        return out

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        return spaces.Dict(self._move(space.spaces))

    def observations(self, obs: dict) -> dict:
        return {agent: self._move(ob) for agent, ob in obs.items()}


# --------------------------------------------------------- reward shaping
class RewardShaping(Interface):
    """Reward = env_weight * env reward + the weighted sum of metrics.

    Two kinds of names may be weighted:

    - ``STEP_METRICS`` (lower-case `EntityAttr` names: "health", "food", "melee", ...): the change of
      that column of the agent's own Entity row since its previous observation, every step.
    - ``INFO_METRICS`` ("achievement_points"): a value the env reports in ``infos[agent]`` on
      the step it happens (achievement points reached that step; each tier once per agent).
    - ``EPISODE_METRICS`` ("achievement", "explore", ...): the lifetime value, once, on the step
      its ``infos[agent]["episode"]`` arrives (death or the horizon).

    ``RewardShaping({"achievement_points": 1 / 15})`` pays achievements as they are earned, as the
    REWARD_ACHIEVEMENT config key does inside the env.
    """

    def __init__(self, weights: Mapping[str, float], env_weight: float = 1.0) -> None:
        unknown = sorted(set(weights) - set(STEP_METRICS) - set(INFO_METRICS) - set(EPISODE_METRICS))
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; per step: {', '.join(STEP_METRICS + INFO_METRICS)}; "
                             f"per lifetime: {', '.join(EPISODE_METRICS)}")
        self.env_weight = float(env_weight)
        step = [(EntityAttr[name.upper()], float(w)) for name, w in weights.items() if name in STEP_METRICS]
        self._columns = np.array([c for c, _ in step], dtype=np.int64)
        self._step_weights = np.array([w for _, w in step], dtype=np.float64)
        self._episode_weights = {name: float(w) for name, w in weights.items() if name in EPISODE_METRICS}
        self._info_weights = {name: float(w) for name, w in weights.items() if name in INFO_METRICS}
        self.env_reports = frozenset(self._info_weights)
        self._last: dict[Any, np.ndarray] = {}

    def reset(self, seed: int | None = None) -> None:
        self._last = {}

    def _step_terms(self, obs: dict) -> dict:
        """{agent: weighted change of its own-row metrics since its last observation} (0 the first time)."""
        if not obs or not self._columns.size:
            return {}
        _require_raw(obs, "RewardShaping", ("Entity",))
        agents = list(obs)
        now = np.stack([obs[a]["Entity"][0] for a in agents])[:, self._columns].astype(np.float64)
        before = np.stack([self._last.get(a, row) for a, row in zip(agents, now, strict=True)])
        self._last.update(zip(agents, now, strict=True))
        return dict(zip(agents, ((now - before) @ self._step_weights).tolist(), strict=True))

    def _episode_term(self, info: Mapping) -> float:
        if not isinstance(info, Mapping):
            return 0.0
        value = sum(w * float(info.get(name, 0)) for name, w in self._info_weights.items())
        episode = info.get("episode")
        if not episode or not self._episode_weights:
            return value
        return value + sum(w * float(episode[name]) for name, w in self._episode_weights.items())

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        terms = self._step_terms(obs)
        rewards = {agent: self.env_weight * float(r) + terms.get(agent, 0.0)
                   + self._episode_term(outcome.infos.get(agent, {})) for agent, r in outcome.rewards.items()}
        for agent, done in (*outcome.terminations.items(), *outcome.truncations.items()):
            if done:
                self._last.pop(agent, None)  # ids are never reused: forget finished agents
        return replace(outcome, rewards=rewards)


class TeamSpirit(Interface):
    """Reward = alpha * (mean reward of the agent's team this step) + (1 - alpha) * own reward.

    The interface form of the engine's ``PLAYER_TEAM_SPIRIT`` blend (`nmmo.team_spirit`, the same
    formula), for rewards the env does not compute itself: stack it after `RewardShaping` to blend
    shaped rewards, or give different alphas to different training runs of one env config. Teams
    are read from the TEAM column of each agent's own Entity row, so it needs the raw observations
    (put it before `Flatten`). The mean runs over the team's agents that get a reward this step.
    """

    def __init__(self, alpha: float) -> None:
        if not (isinstance(alpha, (int, float)) and 0.0 <= alpha <= 1.0):
            raise ValueError(f"team-spirit alpha must be a number in [0, 1], got {alpha!r}")
        self.alpha = float(alpha)

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        agents = list(outcome.rewards)
        if not agents or self.alpha == 0.0:
            return outcome
        missing = [a for a in agents if a not in obs or "Entity" not in obs[a]]
        if missing:
            raise ValueError(f"TeamSpirit reads each agent's team from its raw Entity table; agents {missing[:5]} "
                             "have none (put TeamSpirit before interfaces that remove it, such as Flatten)")
        teams = np.array([int(obs[a]["Entity"][0, EntityAttr.TEAM]) for a in agents])
        values = np.array([float(outcome.rewards[a]) for a in agents])
        blended = team_spirit(values, teams, self.alpha)
        return replace(outcome, rewards=dict(zip(agents, blended.tolist(), strict=True)))


# ----------------------------------------------------------- augmentation
_QUARTER = np.array([[0, -1], [1, 0]])  # np.rot90's quarter turn on (row, col) offsets: (dr, dc) -> (-dc, dr)
_MIRROR = np.array([[1, 0], [0, -1]])  # east-west mirror: (dr, dc) -> (dr, -dc)


def dihedral_matrix(index: int) -> np.ndarray:
    """The 2x2 integer matrix of transform `index` (0..7) on (row, col) offsets: `index % 4`
    quarter turns (as np.rot90), after an east-west mirror when `index >= 4`. 0 is the identity."""
    if not (isinstance(index, (int, np.integer)) and 0 <= index < 8):
        raise ValueError(f"dihedral transform index must be an int in 0..7, got {index!r}")
    turn = np.linalg.matrix_power(_QUARTER, int(index) % 4)
    return turn @ _MIRROR if index >= 4 else turn


def dihedral_inverse(index: int) -> int:
    """The index of the transform that undoes transform `index`."""
    inverse = dihedral_matrix(index).T  # orthogonal: the inverse is the transpose
    return next(j for j in range(8) if np.array_equal(dihedral_matrix(j), inverse))


class Augment(Interface):
    """Rotates/flips the world each episode: one of the 8 symmetries of the square map, drawn at
    ``reset(seed)`` (deterministic; without a seed, from the stream started by `seed` here) unless
    `transform` fixes it. Before the first reset it is the identity.

    What the policy sees is what it would see on the transformed map: the Tile window is rotated
    and its ROW/COL hold transformed map coordinates, the Entity ROW/COL are transformed (rows with
    ID 0 are padding and stay 0), and the Move mask is permuted with the directions. Move
    directions in actions are mapped back to raw ones. Entity rows keep their order, so Attack
    Target indices and masks need no change (ties in distance stay in the raw row-major order).
    The transform is exactly invertible: `dihedral_inverse` gives the one that undoes it.
    """

    #: Mixed into reset seeds, so the drawn transform is independent of what the env draws from
    #: the same seed (the map: without it, every map would always show in one orientation).
    SALT = 0xA06

    def __init__(self, config: Config, transform: int | None = None, seed: int | None = 0) -> None:
        self.map_size = config.MAP_SIZE
        self.radius = config.PLAYER_VISION_RADIUS
        self.fixed = None if transform is None else int(transform)
        self._rng = np.random.default_rng(None if seed is None else [int(seed), self.SALT])
        self._prepare(0 if transform is None else transform)

    def reset(self, seed: int | None = None) -> None:
        if self.fixed is None:
            rng = self._rng if seed is None else np.random.default_rng([int(seed), self.SALT])
            self._prepare(int(rng.integers(8)))

    def _prepare(self, index: int) -> None:
        """Precompute the window permutation and direction maps of transform `index`."""
        matrix = dihedral_matrix(index)
        self.transform, self._matrix = int(index), matrix
        side = 2 * self.radius + 1
        dr, dc = np.divmod(np.arange(side * side), side)
        moved = np.stack([dr - self.radius, dc - self.radius], axis=1) @ matrix.T + self.radius
        destination = moved[:, 0] * side + moved[:, 1]  # raw cell i lands on cell destination[i]
        self._source = np.argsort(destination)  # view cell j shows raw cell _source[j]
        turned = DELTAS.astype(np.int64) @ matrix.T
        self._to_view = np.array([_row_index(DELTAS, d) for d in turned], dtype=np.int64)
        self._to_raw = np.argsort(self._to_view)

    def _map_coords(self, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map coordinates on the transformed map. Offsets from the centre are doubled so that even
        and odd map sizes both stay in integers."""
        last = self.map_size - 1
        r2, c2 = 2 * rows.astype(np.int64) - last, 2 * cols.astype(np.int64) - last
        (a, b), (c, d) = self._matrix
        return (a * r2 + b * c2 + last) // 2, (c * r2 + d * c2 + last) // 2

    def _tiles(self, tiles: np.ndarray) -> np.ndarray:
        out = tiles[:, self._source]
        rows, cols = self._map_coords(out[..., TileAttr.ROW], out[..., TileAttr.COL])
        out[..., TileAttr.ROW], out[..., TileAttr.COL] = rows, cols
        return out

    def _entities(self, out: np.ndarray) -> np.ndarray:
        """Transform positions in place (`out` is a fresh stack); rows with ID 0 are padding."""
        valid = out[..., EntityAttr.ID] != 0
        rows, cols = self._map_coords(out[..., EntityAttr.ROW], out[..., EntityAttr.COL])
        out[..., EntityAttr.ROW] = np.where(valid, rows, out[..., EntityAttr.ROW])
        out[..., EntityAttr.COL] = np.where(valid, cols, out[..., EntityAttr.COL])
        return out

    def _masks(self, masks: Mapping, move: np.ndarray) -> dict:
        return {**masks, "Move": {**masks["Move"], "Direction": move}}

    def observations(self, obs: dict) -> dict:
        """All agents at once: stacked tiles and entity tables, transformed, split back per agent."""
        _require_raw(obs, "Augment", ("Tile", "Entity"))
        if self.transform == 0 or not obs:
            return obs
        values = list(obs.values())
        tiles = self._tiles(np.stack([ob["Tile"] for ob in values]))
        entities = self._entities(np.stack([ob["Entity"] for ob in values]))
        out = {}
        for i, (agent, ob) in enumerate(obs.items()):
            view = {**ob, "Tile": tiles[i], "Entity": entities[i]}
            for key in (TARGETS_KEY, MASK_KEY):
                if key in ob:
                    view[key] = self._masks(ob[key], ob[key]["Move"]["Direction"][self._to_raw])
            out[agent] = view
        return out

    def actions(self, actions: dict, obs: dict) -> dict:
        """Move directions back to raw ones; anything else (and malformed moves) passes unchanged."""
        if self.transform == 0:
            return actions
        return {agent: self._action(action) for agent, action in actions.items()}

    def _action(self, action: Any) -> Any:
        move = action.get("Move") if isinstance(action, Mapping) else None
        direction = move.get("Direction") if isinstance(move, Mapping) else None
        if isinstance(direction, np.ndarray) and direction.ndim == 0:
            direction = direction.item()
        if isinstance(direction, bool) or not isinstance(direction, (int, np.integer)) or not 0 <= direction < 5:
            return action
        return {**action, "Move": {**move, "Direction": int(self._to_raw[direction])}}


def _row_index(table: np.ndarray, row: np.ndarray) -> int:
    return int(np.flatnonzero((table == row).all(axis=1))[0])


# ------------------------------------------------------------------ teams
def _stack_space(space: spaces.Space, n: int) -> spaces.Space:
    """The space of `n` values of `space` stacked along a new leading axis."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({k: _stack_space(s, n) for k, s in space.spaces.items()})
    if isinstance(space, spaces.Tuple):
        return spaces.Tuple([_stack_space(s, n) for s in space.spaces])
    if isinstance(space, spaces.Box):
        return spaces.Box(np.stack([space.low] * n), np.stack([space.high] * n), dtype=space.dtype)
    if isinstance(space, spaces.MultiBinary):
        return spaces.MultiBinary([n, *np.atleast_1d(space.n)])
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(np.full(n, space.n), start=np.full(n, space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.MultiDiscrete(np.stack([space.nvec] * n), start=np.stack([space.start] * n))
    raise TypeError(f"cannot stack a {type(space).__name__} space")


def _tuple_space(space: spaces.Space, n: int) -> spaces.Space:
    """A mask space for stacked actions: each leaf becomes a tuple of `n` (MultiDiscrete's mask format)."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({k: _tuple_space(s, n) for k, s in space.spaces.items()})
    return spaces.Tuple([space] * n)


def _stack_values(values: list) -> Any:
    """Stack `n` values of the same structure along a new leading axis (dicts recurse)."""
    first = values[0]
    if isinstance(first, Mapping):
        return {k: _stack_values([v[k] for v in values]) for k in first}
    if isinstance(first, tuple):
        return tuple(_stack_values([v[i] for v in values]) for i in range(len(first)))
    return np.stack([np.asarray(v) for v in values])


def _tuple_values(values: list) -> Any:
    if isinstance(values[0], Mapping):
        return {k: _tuple_values([v[k] for v in values]) for k in values[0]}
    return tuple(np.asarray(v) for v in values)


def _zeros_like(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _zeros_like(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_zeros_like(v) for v in value)
    return np.zeros_like(np.asarray(value))


def _plain(value: Any) -> Any:
    """A numpy scalar or 0-d array as a Python scalar (the env's fast path wants ints), anything else unchanged."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def _split_action(action: Any, n: int) -> list:
    """A team action as `n` member actions: a list/tuple of them, or a structure whose leaves have a
    leading axis of `n` (what sampling the team action space gives)."""
    if isinstance(action, (list, tuple)):
        if len(action) != n:
            raise ValueError(f"a team action list needs {n} member actions, got {len(action)}")
        return list(action)
    if isinstance(action, Mapping):
        parts = {k: _split_action(v, n) for k, v in action.items()}
        return [{k: p[i] for k, p in parts.items()} for i in range(n)]
    array = np.asarray(action)
    if array.ndim == 0 or array.shape[0] != n:
        raise ValueError(f"team action leaves need a leading axis of {n} (one per member), got shape {array.shape}")
    return [_plain(row) for row in array]


class Team(Interface):
    """Team-as-agent: each team is one agent (key: its team number, 0..n_teams-1).

    Members are found from the raw observation (the TEAM column of the observer's Entity row) and
    keep a seat 0..team_size-1 while they live; a newcomer takes the lowest free seat. A member's
    final observation keeps its seat on the step it dies, unless a teammate spawned on that tick
    needs the seat. A team's observation is ``{"Members": member observations stacked along a leading
    axis of team_size (empty seats zero), "Present": which seats hold a member}``, plus, when
    members have an ``action_mask``, the team's ``action_mask`` in the format the team action
    space samples with. A team's action has the member action's structure with a leading axis of
    team_size (or is a list of member actions); seat i's part goes to the member in seat i.

    The team's reward is the mean (or sum) of its members' rewards that step; its info is
    ``{"members": {agent: info}}``. With respawn a team lives until the horizon (truncated), even
    while all its members wait to respawn; without respawn it ends with its last member.
    `member` (an interface) is applied to each member before joining and after splitting.
    """

    def __init__(self, team_size: int, n_teams: int, respawn: bool = True, member: Interface | None = None,
                 reward: str = "mean") -> None:
        if reward not in ("mean", "sum"):
            raise ValueError(f"team reward must be 'mean' or 'sum', got {reward!r}")
        self.team_size, self.n_teams, self.respawn = int(team_size), int(n_teams), bool(respawn)
        self.member = member if member is not None else Interface()
        self.reward = reward
        self._clear()

    def reset(self, seed: int | None = None) -> None:
        self.member.reset(seed)
        self._clear()

    def _clear(self) -> None:
        """Forget the episode's seats and teams (the members keep their own state)."""
        self._seats: dict[int, list] = {}  # team -> agent in each seat (None: empty)
        self._team_of: dict[Any, int] = {}
        self._live: set[int] = set()
        self._keys: list[int] = []
        self._zero: Any = None

    def possible_agents(self, agents: list) -> list:
        return list(range(self.n_teams))

    def observation_space(self, space: spaces.Space) -> spaces.Space:
        inner = self.member.observation_space(space)
        mask = inner.spaces.get(MASK_KEY) if isinstance(inner, spaces.Dict) else None
        if mask is not None:
            inner = spaces.Dict({k: s for k, s in inner.spaces.items() if k != MASK_KEY})
        out = {"Members": _stack_space(inner, self.team_size), "Present": spaces.MultiBinary(self.team_size)}
        if mask is not None:
            out[MASK_KEY] = _tuple_space(mask, self.team_size)
        return spaces.Dict(out)

    def action_space(self, space: spaces.Space) -> spaces.Space:
        return _stack_space(self.member.action_space(space), self.team_size)

    def _seat(self, obs: dict) -> None:
        """Find each observed agent's team and keep or give it a seat; free the seats of agents gone."""
        for agent, ob in obs.items():
            if "Entity" not in ob:
                raise ValueError("Team reads teams from the raw Entity table: put it before interfaces that "
                                 "remove it (Flatten), or pass those as its members: combine(config, Flatten())")
            self._team_of[agent] = int(ob["Entity"][0, EntityAttr.TEAM])
        for seats in self._seats.values():
            seats[:] = [a if a in obs else None for a in seats]
        # A member's final observation (health 0) arrives on the step it dies and keeps its seat
        # for that step, unless a teammate spawned on the same tick needs the seat.
        gone = {agent for agent, ob in obs.items() if ob["Entity"][0, EntityAttr.HEALTH] <= 0}
        for agent in obs:
            seats = self._seats.setdefault(self._team_of[agent], [None] * self.team_size)
            if agent in seats or agent in gone:
                continue
            free = [i for i, a in enumerate(seats) if a is None] or [i for i, a in enumerate(seats) if a in gone]
            if free:
                seats[free[0]] = agent

    def _join(self, members: list) -> dict:
        present = np.array([m is not None for m in members], dtype=np.int8)
        filled = [m if m is not None else self._zero for m in members]
        masks = None
        if isinstance(self._zero, Mapping) and MASK_KEY in self._zero:
            masks = _tuple_values([m[MASK_KEY] for m in filled])
            filled = [{k: v for k, v in m.items() if k != MASK_KEY} for m in filled]
        out = {"Members": _stack_values(filled), "Present": present}
        if masks is not None:
            out[MASK_KEY] = masks
        return out

    def observations(self, obs: dict) -> dict:
        inner = self.member.observations(obs)
        self._seat(obs)
        if self._zero is None and inner:
            self._zero = _zeros_like(next(iter(inner.values())))
        seen = {self._team_of[a] for a in obs}
        self._keys = sorted(self._live | seen)
        return {team: self._join([inner.get(a) if a is not None else None
                                  for a in self._seats.get(team, [None] * self.team_size)])
                for team in self._keys}

    def actions(self, actions: dict, obs: dict) -> dict:
        member_actions = {}
        for team, action in actions.items():
            if team not in self._seats:
                raise ValueError(f"action for team {team!r}, which has no members (teams seen: {sorted(self._seats)})")
            for agent, part in zip(self._seats[team], _split_action(action, self.team_size), strict=True):
                if agent is not None and part is not None:
                    member_actions[agent] = part
        return self.member.actions(member_actions, obs)

    def outcome(self, outcome: Outcome, obs: dict) -> Outcome:
        outcome = self.member.outcome(outcome, obs)
        members: dict[int, list] = defaultdict(list)
        for agent in {**outcome.rewards, **outcome.infos, **outcome.terminations, **outcome.truncations}:
            if agent in self._team_of:
                members[self._team_of[agent]].append(agent)
        live_raw = {self._team_of[a] for a in outcome.agents if a in self._team_of}
        over = not outcome.agents
        rewards, terminations, truncations, infos, live = {}, {}, {}, {}, set()
        for team in self._keys:
            agents = members[team]
            values = [float(outcome.rewards[a]) for a in agents if a in outcome.rewards]
            rewards[team] = (float(np.mean(values)) if self.reward == "mean" else sum(values)) if values else 0.0
            infos[team] = {"members": {a: outcome.infos[a] for a in agents if a in outcome.infos}}
            alive = team in live_raw or (self.respawn and not over)
            truncated = not alive and (self.respawn or any(outcome.truncations.get(a, False) for a in agents))
            terminations[team], truncations[team] = not alive and not truncated, truncated
            if alive:
                live.add(team)
        self._live = live
        return Outcome(rewards, terminations, truncations, infos, sorted(live))


def combine(config: Config, *members: Interface, reward: str = "mean") -> Team:
    """Team-as-agent for `config`'s teams (PLAYER_TEAM_SIZE players each), each member seen
    through ``stack(*members)``: the team's observations are split among members' interfaces and
    their actions merged (see `Team`)."""
    size = config.PLAYER_TEAM_SIZE
    respawn = bool(config.PLAYER_RESPAWN and config.PLAYER_SPAWN_ATTEMPTS > 0)
    member = stack(*members) if members else None
    return Team(size, math.ceil(config.PLAYER_N / size), respawn=respawn, member=member, reward=reward)
