"""`RewardShaping` (weighted metric changes added to the reward) and `TeamSpirit` (team blend)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from nmmo.core.enums import EntityAttr
from nmmo.core.metrics import METRICS
from nmmo.core.rules import team_spirit
from nmmo.interfaces.base import Interface, Outcome, _require_raw

#: Names of the per-lifetime metrics `RewardShaping` can weight (they arrive in infos["life"]).
EPISODE_METRICS = METRICS
#: Names of the own-row Entity columns `RewardShaping` can weight (their change per step).
STEP_METRICS = tuple(attr.name.lower() for attr in EntityAttr)
#: Per-step values the env reports in infos that `RewardShaping` can weight (the achievement
#: points an agent reached this step: weight 1/15 is DESIGN.md's achievement reward).
INFO_METRICS = ("achievement_points",)


# --------------------------------------------------------- reward shaping
class RewardShaping(Interface):
    """Reward = env_weight * env reward + the weighted sum of metrics.

    Two kinds of names may be weighted:

    - ``STEP_METRICS`` (lower-case `EntityAttr` names: "health", "food", "melee", ...): the change of
      that column of the agent's own Entity row since its previous observation, every step.
    - ``INFO_METRICS`` ("achievement_points"): a value the env reports in ``infos[agent]`` on
      the step it happens (achievement points reached that step; each tier once per agent).
    - ``EPISODE_METRICS`` ("achievement", "explore", ...): the lifetime value, once, on the step
      its ``infos[agent]["life"]`` arrives (death or the horizon).

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
        episode = info.get("life")
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
