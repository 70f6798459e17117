"""Tasks in a tournament episode: every policy's agents hold the same tasks.

With tasks drawn independently per agent, one policy could draw easier tasks than another by
chance, and a ranking by task reward would reward the draw. So the episode draws one multiset of
tasks (by the specs' weights, from the episode seed and the tournament's secret) and deals it to
each policy's units (agent slots, or teams with TASK_ASSIGN = "team") in an order of its own. A
policy with one unit more than the others (the deal's remainder) gets one extra draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nmmo.tasks import TaskState

#: Stream of the episode seed the tasks are dealt from (apart from the env's and the agents' deal).
TASK_DEAL_STREAM = 0x7A5D


def unit_policies(tasks: TaskState, team_policy: np.ndarray) -> np.ndarray:
    """The policy of each unit tasks are assigned to: each agent slot's team's, or each team's."""
    config = tasks.config
    if tasks.assign == "team":
        return np.asarray(team_policy, dtype=np.int64)
    return np.asarray(team_policy, dtype=np.int64)[np.arange(config.PLAYER_N) // config.PLAYER_TEAM_SIZE]


def deal_tasks(tasks: TaskState, team_policy: np.ndarray, n_policies: int, seed: int,
               salt: Sequence[int] = ()) -> np.ndarray:
    """A spec index per unit such that every policy's units hold the same multiset (up to the
    remainder); reproducible from `seed` and `salt`."""
    owner = unit_policies(tasks, team_policy)
    counts = np.bincount(owner, minlength=n_policies)
    rng = np.random.default_rng(np.random.SeedSequence([seed, TASK_DEAL_STREAM, *salt]))
    drawn = rng.choice(len(tasks.tasks), size=int(counts.max()), p=tasks.weights)
    out = np.empty(len(owner), dtype=np.int64)
    for policy in range(n_policies):
        mine = np.flatnonzero(owner == policy)
        out[mine] = rng.permutation(drawn[: mine.size])
    return out
