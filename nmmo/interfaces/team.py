"""Team-as-agent: `Team` and `combine` (each team one agent, its members' views stacked)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from nmmo.config import Config
from nmmo.core.enums import EntityAttr
from nmmo.interfaces.base import MASK_KEY, Interface, Outcome, stack


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
