"""nmmo.testing: the checkers catch what they claim to catch, and pass on the engine and a wrapper."""

import warnings

import numpy as np
import pytest

import nmmo
from nmmo.interfaces import Flatten, InterfaceEnv, RewardShaping, stack
from nmmo.testing import StateError, check_api, check_env, check_state


def fresh_env():
    env = nmmo.Env(nmmo.config.Default().set("PLAYER_N", 16).set("HORIZON", 60), seed=1)
    env.reset()
    return env


@pytest.mark.parametrize(("breakage", "message"), [
    (lambda ent, tiles: ent.health.__setitem__(0, -1), "negative health"),
    (lambda ent, tiles: ent.health.__setitem__(0, 99), "health above max health"),
    (lambda ent, tiles: ent.food.__setitem__(0, 50), "food outside 0..capacity"),
    (lambda ent, tiles: ent.level.__setitem__((0, 3), 0), "skill level outside"),
    (lambda ent, tiles: ent.col.__setitem__(0, 0), "unwalkable tiles|in lava"),
    (lambda ent, tiles: tiles.occupancy.__setitem__((ent.row[0], ent.col[0]), -1), "occupancy grid"),
    (lambda ent, tiles: ent.id.__setitem__(1, ent.id[0]), "share an id"),
    (lambda ent, tiles: ent.id.__setitem__(0, 0), "player with an id"),
])
def test_check_state_names_each_broken_rule(breakage, message):
    env = fresh_env()
    check_state(env.realm.state)  # a fresh world is fine
    breakage(env.realm.state.entities, env.realm.state.tiles)
    with pytest.raises(StateError, match=message):
        check_state(env.realm.state)


def test_check_env_catches_a_stale_agent_list():
    env = fresh_env()
    check_env(env)
    env.agents = [*env.agents, 999]
    with pytest.raises(StateError, match=r"env.agents lists \[999\]"):
        check_env(env)


def test_check_api_passes_on_the_engine_and_on_a_wrapper():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo warns that a finished env has no agents
        check_api(lambda: nmmo.Env(nmmo.config.Default().set("PLAYER_N", 8).set("HORIZON", 40)), steps=30)

        def flat_actions(env, obs, rng):
            return {agent: {"Move": {"Direction": int(rng.integers(5))}} for agent in env.agents}

        check_api(lambda: InterfaceEnv(nmmo.Env(nmmo.config.Small().set("PLAYER_N", 8).set("HORIZON", 40)),
                                       stack(RewardShaping({"food": 0.1}), Flatten())), steps=20, actions=flat_actions)


def test_check_api_catches_a_nondeterministic_env():
    class Jittery(nmmo.Env):
        def reward(self, agent_id):
            return float(np.random.random())  # the global RNG: not the env's seeded one

    with warnings.catch_warnings(), pytest.raises(AssertionError, match="diverged by step 0"):
        warnings.simplefilter("ignore")
        check_api(lambda: Jittery(nmmo.config.Small().set("PLAYER_N", 4).set("HORIZON", 20)), steps=5)
