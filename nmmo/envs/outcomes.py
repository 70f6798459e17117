"""What a step of `nmmo.Env` gives each agent besides its observation: reward, termination,
truncation, infos and, when its life ends, its episode metrics.

env.py advances the world and observes it; this module accounts for the tick that just ran, for
the dict API (`Outcomes.dicts`) and the batched API (`Outcomes.batch`, a `BatchStep`). A reward is
one rule for both APIs and for the fused engine (`nmmo.engines.fused` calls `earned_points` and
`mix_rewards` too): -1 on death else 0 (or the user's `Env.reward`), plus achievement points /
`nmmo.core.metrics.REWARD_SCALE` when REWARD_ACHIEVEMENT is on, then team spirit
(`nmmo.core.rules.team_spirit`) when PLAYER_TEAM_SPIRIT > 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nmmo.config import Config
from nmmo.core.metrics import REWARD_SCALE, achievement_points, achievement_values, lifetime_metrics
from nmmo.core.obs import Observations
from nmmo.core.rules import team_spirit
from nmmo.core.state import Entities, State

if TYPE_CHECKING:
    from nmmo.core.realm import TickResult
    from nmmo.envs.tasking import Tasking


@dataclass
class BatchStep:
    """One step of the batched API; every array has one row per agent slot."""

    obs: Observations
    rewards: np.ndarray  # float32
    terminated: np.ndarray  # bool
    truncated: np.ndarray  # bool
    agent_ids: np.ndarray  # int64 id of the agent each row belongs to (0: empty slot)
    alive: np.ndarray  # bool: the slot holds a live agent after this step
    episodes: dict[str, np.ndarray] | None = None  # lifetime metrics of the slots that finished (terminated
    #                                               or truncated) this step, one entry per such slot
    episode_slots: np.ndarray | None = None


def earned_points(entities: Entities, slots: np.ndarray, paid: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Achievement points the agents in `slots` reached since they were last accounted, recording
    them in the per-slot ledgers `paid` and `owner` (updated in place). The ledger is keyed by slot
    and agent id because slots are reused: a slot's next agent starts from zero, and each tier
    counts once per agent."""
    ids = entities.id[slots]
    points = achievement_points(achievement_values(entities, slots))
    before = np.where(owner[slots] == ids, paid[slots], 0)
    paid[slots] = points
    owner[slots] = ids
    return points - before


def mix_rewards(config: Config, values: np.ndarray, earned: np.ndarray | None, teams: np.ndarray,
                tasks: np.ndarray | None = None) -> np.ndarray:
    """`values` (the base rewards) plus `earned` achievement points / REWARD_SCALE when
    REWARD_ACHIEVEMENT is on; with `tasks` (the weighted task rewards) that survival reward is
    weighted by TASK_SURVIVAL_REWARD and the task reward added; then team spirit within `teams`
    (any labels that are equal exactly within a team: the fused engine makes them unique per world)."""
    if config.REWARD_ACHIEVEMENT and earned is not None and earned.size:
        values = values + earned / REWARD_SCALE
    if tasks is not None:
        values = values * config.TASK_SURVIVAL_REWARD + tasks
    alpha = config.PLAYER_TEAM_SPIRIT
    if alpha > 0 and values.size:
        values = team_spirit(values, teams, alpha)
    return values


#: Where an agent's lifetime metrics arrive in its infos when its life ends (death or horizon).
LIFE_KEY = "life"
def problem_infos(problems: dict, details: bool) -> dict:
    """What infos say about an agent's dropped sub-actions: numbers (how many were invalid, 1 when
    an attack was out of reach), and with `details` the reasons as strings."""
    notes = problems.get("invalid_actions") or []
    reach = problems.get("attack_out_of_reach")
    out: dict = {}
    if notes:
        out["invalid_actions"] = len(notes)
    if reach:
        out["attack_out_of_reach"] = 1
    if details:
        out["invalid_action_details"] = [*notes, *([reach] if reach else [])]
    return out


class Outcomes:
    """An env's accounting, as a component `nmmo.Env` holds (``env.outcomes``) and calls after each
    tick: rewards, terminations, truncations, infos and episode metrics, from the state tables, the
    env's tasks and whether the episode is over, handed in at each call (so it runs without an env).
    It keeps the achievement ledgers `points_paid` and `points_owner` (per slot; the fused engine
    copies them).

    Args:
        config: the env's config (its reward keys).
        n_slots: the agent slots (PLAYER_N).
        reward: a custom ``f(agent_id) -> float`` in place of -1 at death else 0 (the env's
            overridden `reward`, or its `reward_fn`), or None.
        log: a custom ``f(agent_id) -> dict`` of extra episode metrics, or None.

    """

    def __init__(self, config: Config, n_slots: int, reward: Callable[[int], float] | None = None,
                 log: Callable[[int], dict] | None = None) -> None:
        self.config, self.n_slots, self.reward, self.log = config, n_slots, reward, log
        self.clear_points()

    def metrics_now(self, state: State, ids: np.ndarray, slots: np.ndarray) -> dict[int, dict]:
        """The lifetime metrics of agents `ids` (in `slots`) as if their lives ended now."""
        columns = {name: array.tolist() for name, array in lifetime_metrics(state, slots).items()}
        return {agent: {name: column[i] for name, column in columns.items()} for i, agent in enumerate(ids.tolist())}

    def clear_points(self) -> None:
        """Empty achievement ledgers: at construction and at the start of every episode."""
        self.points_paid = np.zeros(self.n_slots, dtype=np.int64)
        self.points_owner = np.zeros(self.n_slots, dtype=np.int64)

    def achievements_earned(self, entities: Entities, slots: np.ndarray) -> np.ndarray:
        """Achievement points the agents in `slots` reached since they were last accounted (each
        tier counts once per agent id; see `earned_points`)."""
        return earned_points(entities, slots, self.points_paid, self.points_owner)

    def reward_values(self, entities: Entities, slots: np.ndarray, died: np.ndarray, tasking: Tasking,
                      earned: np.ndarray | None = None) -> np.ndarray:
        """Rewards of the agents in `slots` this step (`died` marks those that died; `earned`: their
        achievement points this step, paid as points / 15 when REWARD_ACHIEVEMENT is on)."""
        if self.reward is not None:
            values = np.array([self.reward(aid) for aid in entities.id[slots].tolist()], dtype=np.float64)
        else:
            values = np.where(died, -1.0, 0.0)
        return mix_rewards(self.config, values, earned, entities.team[slots], tasking.rewards(slots))

    def dicts(self, state: State, slots: np.ndarray, died: np.ndarray, invalid: dict, tasking: Tasking, done: bool,
              details: bool = False, report_achievements: bool = False) -> tuple[dict, dict, dict, dict]:
        """`step`'s rewards, terminations, truncations and infos for the agents in `slots` (`died`:
        the slots whose agent died this tick; `invalid`: {agent: problems} of dropped actions; `done`:
        the episode is over; `details`: reasons in infos; `report_achievements`: points in infos
        even with REWARD_ACHIEVEMENT off)."""
        entities = state.entities
        ids = entities.id[slots].tolist()
        dead = np.zeros(self.n_slots, dtype=bool)
        dead[died] = True
        is_dead = dead[slots]
        counted = self.config.REWARD_ACHIEVEMENT or report_achievements
        earned = self.achievements_earned(entities, slots) if counted else np.zeros(0, dtype=np.int64)
        values = self.reward_values(entities, slots, is_dead, tasking, earned)
        rewards = dict(zip(ids, values.tolist(), strict=True))
        terminations = dict(zip(ids, is_dead.tolist(), strict=True))
        truncations = dict(zip(ids, (~is_dead & done).tolist(), strict=True))
        infos: dict[int, dict] = {aid: {} for aid in ids}
        tasking.add_infos(infos, slots, ids)
        for aid, problems in invalid.items():
            if aid in infos:
                infos[aid].update(problem_infos(problems, details))
        for i in np.flatnonzero(earned).tolist():
            infos[ids[i]]["achievement_points"] = int(earned[i])
        finished = slots if done else died
        if finished.size:
            self.add_episode_infos(state, infos, finished)
        return rewards, terminations, truncations, infos

    def add_episode_infos(self, state: State, infos: dict, slots: np.ndarray) -> None:
        """``infos[agent]["life"]``: the lifetime metrics of the agents in `slots`, whose lives
        ended this step, plus what `log` adds."""
        metrics = lifetime_metrics(state, slots)
        ids = state.entities.id[slots].tolist()
        for i, aid in enumerate(ids):
            episode = {name: values[i].item() for name, values in metrics.items()}
            if self.log is not None:
                episode.update(self.log(aid))
            infos.setdefault(aid, {})[LIFE_KEY] = episode

    def batch(self, state: State, obs: Observations, ids_before: np.ndarray, alive_before: np.ndarray,
              result: TickResult, tasking: Tasking, done: bool) -> BatchStep:
        """`step_arrays`' result, given each slot's agent id and liveness before the tick: which
        rows died (terminated) or reached the horizon alive (truncated), their rewards, the agent
        each row belongs to (a newly spawned one where the slot was refilled), and the lifetime
        metrics of the rows that finished."""
        ent, n = state.entities, self.n_slots
        died = result.dead[result.dead < n]
        terminated = np.zeros(n, dtype=bool)
        terminated[died] = True
        rewarded = np.flatnonzero(alive_before | ent.alive[:n])
        rewards = np.zeros(n, dtype=np.float32)
        earned = self.achievements_earned(ent, rewarded) if self.config.REWARD_ACHIEVEMENT else None
        rewards[rewarded] = self.reward_values(ent, rewarded, terminated[rewarded], tasking, earned)
        truncated = np.zeros(n, dtype=bool)
        if done:
            truncated[:] = alive_before & ~terminated
        ids = np.where(alive_before, ids_before, 0)
        alive = ent.alive[:n].copy()
        ids = np.where(alive & ~terminated, ent.id[:n], ids)
        finished = np.flatnonzero(terminated | truncated)
        episodes = lifetime_metrics(state, finished) if finished.size else None
        return BatchStep(obs, rewards, terminated, truncated, ids, alive & ~truncated, episodes, finished)
