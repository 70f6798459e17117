"""What the trainers' tests share: a guard that the native envs make no per-agent dicts, a saved
policy's sandboxed play checked against the same policy in-process, and RLlib's seats."""

from __future__ import annotations

import pytest

import nmmo
import nmmo.core.actions
import nmmo.core.layout
import nmmo.envs.env


def forbid_dict_translations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `to_dicts` and `parse_actions` (where they are defined and where the env imported them)
    raise: a native env must never reach them; the PettingZoo trainer form always does."""

    def refuse(*args, **kwargs):
        raise AssertionError("a per-agent dict translation ran")

    for module, name in ((nmmo.envs.env, "to_dicts"), (nmmo.envs.env, "parse_actions"),
                         (nmmo.core.layout, "to_dicts"), (nmmo.core.actions, "parse_actions")):
        monkeypatch.setattr(module, name, refuse)


def plays_in_the_sandbox(spec: str, config: nmmo.config.Config, seed: int, steps: int = 3) -> list[dict]:
    """Play `spec` for `steps` ticks as a tournament does (a submission: a worker in the sandbox) beside
    the same policy in this process: the same actions for every live agent, no fault. Returns each
    tick's infos."""
    from evaluation.submission import SubprocessPolicy, make_handle
    from nmmo.policy import load_policy_class

    handle = make_handle(spec, config)
    assert isinstance(handle, SubprocessPolicy)  # a file of weights is a submission
    local = load_policy_class(spec)(config)
    env = nmmo.Env(config, seed=2)
    obs, _ = env.reset()
    handle.reset(seed)
    local.reset(seed)
    ticks = []
    try:
        for _ in range(steps):
            live = {a: o for a, o in obs.items() if a in env.agents}
            handle.submit(live)
            actions = handle.collect()
            assert actions == local.act(live) and set(actions) == set(live)
            obs, _, _, _, infos = env.step(actions)
            ticks.append(infos)
    finally:
        handle.close()
    assert handle.faults.messages == [] and handle.faults.dropped_actions == 0
    return ticks


#: The seats of trainers_small's trainer form.
SEATS = {f"player_{i}" for i in range(8)}


def check_seats(env) -> None:
    """RLlib's wrapper's agents and spaces are trainers_small's 8 fixed seats (a Box vector each)."""
    from gymnasium import spaces

    assert set(env.agents) == set(env.possible_agents) == SEATS
    assert set(env.observation_space.spaces) == set(env.action_space.spaces) == SEATS
    for seat in SEATS:
        assert isinstance(env.observation_space[seat], spaces.Box) and len(env.observation_space[seat].shape) == 1
        assert env.action_space[seat] == spaces.MultiDiscrete([5, 3, 17])
