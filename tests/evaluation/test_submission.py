import multiprocessing

import numpy as np
import pytest

import nmmo
from evaluation.submission import (
    Faults,
    InProcessPolicy,
    SubprocessPolicy,
    check_spec,
    is_trusted,
    make_handle,
    validate_actions,
)
from nmmo.core.actions import ActionError, clean_action
from nmmo.core.layout import ObsBatch

from .conftest import CRASHING, small_config, write_policy


def test_trusted_specs_run_in_process():
    assert is_trusted("random") and is_trusted("idle") and is_trusted("scripted:Combat")
    assert not is_trusted("my_agent.py:Agent") and not is_trusted("pkg.module:Agent")
    assert isinstance(make_handle("random", small_config()), InProcessPolicy)
    assert isinstance(make_handle("x.py:Agent", small_config()), SubprocessPolicy)


@pytest.mark.parametrize("action", [
    "north", None, 3, {"Move": {"Direction": 1.0}}, {"Move": {"Direction": True}}, {"Move": {"Direction": "1"}},
    {"Move": {"Direction": 2**63}}, {"Move": {"Direction": np.array([1])}}, {"Move": {"Dir": 1}},
    {"Move": {"Direction": 1, "x": 2}}, {"Attack": {"Style": 0}}, {"Attack": {"Style": 0, "Target": 1.5}},
    {"Jump": 1}, {"Move": 1},
])
def test_malformed_actions_are_rejected(action):
    """The sandbox and the env read actions with one validator (nmmo.core.actions): the env raises on
    these, the sandbox drops them."""
    with pytest.raises(ActionError):
        clean_action(7, action)
    env = nmmo.Env(small_config(), seed=0)
    env.reset()
    with pytest.raises(ActionError, match=f"agent {env.agents[0]}"):
        env.step({env.agents[0]: action})


def test_clean_actions_are_plain_ints():
    action = {"Move": {"Direction": np.int8(2)}, "Attack": {"Style": np.array(1), "Target": 99}}
    assert clean_action(1, action) == {"Move": {"Direction": 2}, "Attack": {"Style": 1, "Target": 99}}
    assert type(clean_action(1, action)["Move"]["Direction"]) is int
    assert clean_action(1, {}) == {} and clean_action(1, {"Move": None}) == {}
    assert clean_action(1, {"Move": {"Direction": 77}}) == {"Move": {"Direction": 77}}  # out of range: env drops it
    assert clean_action(1, {"Move": {"Direction": 2**40}}) == {"Move": {"Direction": 2**40}}  # int64, as the env


def full(direction=4, style=-1, target=-1):
    if style == target == -1:
        return {"Move": {"Direction": direction}}
    return {"Move": {"Direction": direction}, "Attack": {"Style": style, "Target": target}}


def test_validate_actions_drops_per_agent_and_counts():
    clean, dropped, problem = validate_actions({1: {"Move": {"Direction": 0}}, 2: "x", 5: {}}, {1, 2, 3})
    assert clean == {1: full(0)} and dropped == 2
    assert "agent 2" in problem
    assert validate_actions([1, 2], {1})[:2] == ({}, 1)
    assert validate_actions({np.int64(3): {}}, {3})[0] == {3: full()}
    # rows outside the action space are dropped and counted here, not left to the env
    actions = {1: {"Move": {"Direction": 9}}, 2: {"Attack": {"Style": 1, "Target": 99}},
               3: {"Attack": {"Style": 2, "Target": 8}}}
    clean, dropped, problem = validate_actions(actions, {1, 2, 3}, n_obs=8)
    assert clean == {3: full(4, 2, 8)} and dropped == 2 and "agent 1" in problem and "outside" in problem


def test_validated_garbage_never_stops_the_env():
    env = nmmo.Env(small_config(HORIZON=8), seed=0)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    junk = ["x", {"Move": {"Direction": 0.5}}, {"Attack": {"Style": 0}}, {"Move": {"Direction": 2}},
            {"Move": {"Direction": 9}}, {"Attack": {"Style": 1, "Target": 100}}]
    while env.agents:
        actions = {agent: junk[rng.integers(len(junk))] for agent in env.agents}
        actions[10**6] = {}
        clean, _, _ = validate_actions(actions, set(env.agents))
        obs, *_ = env.step(clean)


def test_in_process_exceptions_idle_the_agents(tmp_path):
    spec = write_policy(tmp_path, "crash", CRASHING)
    handle = InProcessPolicy(spec, small_config())
    handle.reset(0)
    replies = []
    for _ in range(4):
        handle.submit(ObsBatch(np.array([1, 2]), {}))  # the policy reads no field
        replies.append(handle.collect())
    assert replies[1] == replies[3] == {}
    assert replies[0] == {1: {"Move": {"Direction": 4}}, 2: {"Move": {"Direction": 4}}}
    assert handle.faults.exception == 2 and "boom" in handle.faults.messages[0]


HANG_ONCE = """
    import time

    class Agent:
        def __init__(self, config):
            self.calls = 0

        def act(self, observations):
            self.calls += 1
            if self.calls == 2:
                time.sleep(30)
            return {agent: {"Move": {"Direction": 1}} for agent in observations}
"""

DIES = """
    import os

    class Agent:
        def __init__(self, config):
            pass

        def act(self, observations):
            os._exit(3)
"""

BROKEN_INIT = """
    class Agent:
        def __init__(self, config):
            raise KeyError("no checkpoint")

        def act(self, observations):
            return {}
"""


def two_agents_observations():
    """Real observations of agents 1 and 2 (what crosses to a worker is the observation arrays)."""
    env = nmmo.Env(small_config(), seed=0)
    obs, _ = env.reset()
    return {1: obs[1], 2: obs[2]}


def _ticks(handle, n, obs=None):
    obs = obs or two_agents_observations()
    out = []
    for _ in range(n):
        handle.submit(obs)
        out.append(handle.collect())
    return out


def test_a_hung_worker_is_killed_and_restarted(tmp_path):
    handle = SubprocessPolicy(write_policy(tmp_path, "hang", HANG_ONCE), small_config(), time_budget=0.2)
    handle.reset(0)
    try:
        first, hung, after = _ticks(handle, 3)
    finally:
        handle.close()
    assert first == after == {1: {"Move": {"Direction": 1}}, 2: {"Move": {"Direction": 1}}}
    assert hung == {}
    assert (handle.faults.timeout, handle.faults.restarts, handle.faults.total) == (1, 1, 1)
    assert multiprocessing.active_children() == []


def test_a_dying_worker_counts_and_is_disabled_after_max_restarts(tmp_path):
    handle = SubprocessPolicy(write_policy(tmp_path, "dies", DIES), small_config(), max_restarts=1)
    handle.reset(0)
    try:
        replies = _ticks(handle, 4)
    finally:
        handle.close()
    assert replies == [{}] * 4
    assert handle.faults.exception == 2 and handle.faults.restarts == 1 and handle.faults.disabled == 1
    assert "exit code 3" in handle.faults.messages[0]


def test_a_policy_that_cannot_start_idles_without_raising(tmp_path):
    handle = SubprocessPolicy(write_policy(tmp_path, "broken", BROKEN_INIT), small_config())
    handle.reset(0)
    assert _ticks(handle, 2) == [{}, {}]
    handle.close()
    assert handle.faults.exception == 1 and handle.faults.disabled == 1
    assert "KeyError" in handle.faults.messages[0] and "no checkpoint" in handle.faults.messages[0]


def test_check_spec_reports_bad_specs_clearly(tmp_path):
    check_spec("scripted:Combat")
    with pytest.raises(ValueError, match="does not exist"):
        check_spec(str(tmp_path / "missing.py") + ":Agent")
    spec = write_policy(tmp_path, "ok", CRASHING)
    check_spec(spec)
    with pytest.raises(ValueError, match="defines no 'Agnet'"):
        check_spec(spec.replace(":Agent", ":Agnet"))


def test_faults_merge_and_round_trip():
    a, b = Faults(), Faults()
    a.record("timeout", "slow")
    b.record("malformed", "junk")
    b.dropped_actions = 3
    merged = a.merge(b)
    assert (merged.timeout, merged.malformed, merged.total) == (1, 1, 2)
    assert Faults.from_dict(merged.to_dict()) == merged
    assert merged.summary() == "timeout 1, malformed 1, 3 actions dropped"
