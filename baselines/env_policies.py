"""Policies that act on a VectorEnv's rows, one per training env: the league's opponents and the
teacher (`baselines.teacher`).

A policy that keeps state (a scripted bot's map memory) must see one episode at a time: each env
has its own policy, and it is reset when that env starts a new episode (its rows are truncated at
the horizon and then hold the next episode's agents, on a new map) or when the env is given a
policy of another spec. A policy kept from one PPO iteration to the next keeps its memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nmmo.config import Config
from nmmo.core.actions import NO_OP_ROW
from nmmo.core.layout import ObsBatch
from nmmo.policy import act_rows, load_policy_class


class EnvPolicies:
    """One policy per env of a VectorEnv (any policy spec), acting for the rows it is asked about."""

    def __init__(self, config: Config, num_envs: int, seed: int) -> None:
        self.config, self.slots, self.seed = config, config.PLAYER_N, seed
        self.specs: list[str | None] = [None] * num_envs
        self.policies: list[Any] = [None] * num_envs
        self.episodes = np.zeros(num_envs, np.int64)  # episodes each env has started (seeds the resets)

    def assign(self, k: int, spec: str) -> None:
        """Env `k` plays `spec` from now on; a new spec starts a fresh policy, the same one keeps its own."""
        if spec != self.specs[k]:
            self.specs[k], self.policies[k] = spec, load_policy_class(spec)(self.config)
            self._reset(k)

    def _reset(self, k: int) -> None:
        if hasattr(self.policies[k], "reset"):
            seeds = np.random.SeedSequence([self.seed, k, int(self.episodes[k])]).generate_state(1)
            self.policies[k].reset(int(seeds[0]))

    def new_episodes(self, truncated: np.ndarray) -> None:
        """Reset the policy of every env whose rows were just truncated (a new episode, a new map)."""
        for k in np.flatnonzero(truncated.reshape(len(self.policies), self.slots).any(axis=1)):
            self.episodes[k] += 1
            if self.policies[k] is not None:
                self._reset(int(k))

    def act(self, obs: dict[str, np.ndarray], ids: np.ndarray, rows: np.ndarray,
            missing: np.ndarray | tuple = NO_OP_ROW) -> np.ndarray:
        """(all rows, 3) actions: each env's policy's for its rows where `rows` is True (an array
        batch of those rows, `nmmo.policy.act_rows`), `missing` elsewhere and for the rows a
        policy's reply could not fill (an agent it left out, an unreadable action)."""
        actions = np.tile(missing, (len(ids), 1))
        for k, policy in enumerate(self.policies):
            mine = k * self.slots + np.flatnonzero(rows[k * self.slots:(k + 1) * self.slots])
            if policy is None or mine.size == 0:
                continue
            batch = ObsBatch(ids[mine].astype(np.int64), {name: values[mine] for name, values in obs.items()})
            agents, chosen, _ = act_rows(policy, batch)
            found = np.isin(agents, batch.ids) & (chosen[:, 0] >= 0)  # its own agents, readable actions
            order = np.argsort(batch.ids)
            actions[mine[order[np.searchsorted(batch.ids, agents[found], sorter=order)]]] = chosen[found]
        return actions
