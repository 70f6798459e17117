"""Achievement as a reward: points / 15 on the tick they are earned, each tier once per agent."""

import numpy as np
import pytest

import nmmo
from nmmo.core.actions import NO_OP_ROW
from nmmo.interfaces import InterfaceEnv, RewardShaping

TIERS = {"player_kills": (1, 3, 6), "explore": (32, 64, 127)}  # from DESIGN.md section 6
POINTS = (4, 6, 11)


def small(**keys):
    conf = nmmo.config.load("small_maps").set("PLAYER_N", 4).set("HORIZON", 40).set("IMMORTAL", True)
    return conf.update(keys)


def first_agent(env):
    agent = env.agents[0]
    return agent, env._id_to_slot[agent]


def test_points_are_paid_on_the_tick_each_tier_is_reached_once():
    env = nmmo.Env(small(REWARD_ACHIEVEMENT=True), seed=0)
    env.reset()
    agent, slot = first_agent(env)
    kills = env.realm.state.entities.player_kills
    paid = []
    for value in (1, 1, 2, 3, 3, 6):  # the kill count the agent has reached before each step
        kills[slot] = value
        _, rewards, _, _, infos = env.step({})
        paid.append((rewards[agent], infos[agent].get("achievement_points", 0)))
    expected = [POINTS[0], 0, 0, POINTS[1], 0, POINTS[2]]
    assert [p for _, p in paid] == expected
    assert [r for r, _ in paid] == pytest.approx([p / 15 for p in expected])
    others = [a for a in env.agents if a != agent]
    _, rewards, _, _, infos = env.step({})
    assert all(rewards[a] == 0 for a in others) and all("achievement_points" not in infos[a] for a in others)


def test_points_are_reported_but_not_paid_when_asked_with_the_key_off():
    env = nmmo.Env(small(), seed=0)
    env.reset()
    agent, slot = first_agent(env)
    env.realm.state.entities.player_kills[slot] = 3
    _, rewards, _, _, infos = env.step({})
    assert "achievement_points" not in infos[agent] and rewards[agent] == 0  # not counted unless asked
    env.report_achievements = True
    env.realm.state.entities.player_kills[slot] = 6
    _, rewards, _, _, infos = env.step({})
    assert infos[agent]["achievement_points"] == sum(POINTS) and rewards[agent] == 0


def test_the_batched_api_pays_the_same():
    env = nmmo.Env(small(REWARD_ACHIEVEMENT=True), seed=0)
    env.reset()
    _, slot = first_agent(env)
    env.realm.state.entities.max_explore[slot] = 64  # explore easy and normal at once
    out = env.step_arrays(np.tile(NO_OP_ROW, (env.n_slots, 1)))
    assert out.rewards[slot] == pytest.approx((POINTS[0] + POINTS[1]) / 15)
    assert out.rewards.sum() == pytest.approx((POINTS[0] + POINTS[1]) / 15)
    assert env.step_arrays(np.tile(NO_OP_ROW, (env.n_slots, 1))).rewards[slot] == 0


def test_a_slots_next_agent_starts_from_zero():
    """Slots are reused: a newcomer is paid for its own tiers, never charged for its predecessor's."""
    conf = small(REWARD_ACHIEVEMENT=True).set("IMMORTAL", False).set("PLAYER_SPAWN_ATTEMPTS", 4)
    env = nmmo.Env(conf, seed=1)
    env.reset()
    agent, slot = first_agent(env)
    ent = env.realm.state.entities
    ent.player_kills[slot] = 6
    _, rewards, _, _, _ = env.step({})
    assert rewards[agent] == pytest.approx(sum(POINTS) / 15)
    ent.health[slot], ent.food[slot], ent.water[slot] = 1, 0, 0  # starves to death this tick
    _, rewards, terminations, _, _ = env.step({})
    assert terminations[agent] and rewards[agent] == pytest.approx(-1.0)
    for _ in range(3):
        _, rewards, _, _, _ = env.step({})
        if ent.alive[slot]:
            break
    newcomer = int(ent.id[slot])
    assert newcomer != agent and ent.player_kills[slot] == 0
    assert all(r >= 0 for a, r in rewards.items() if a == newcomer)
    ent.player_kills[slot] = 1
    _, rewards, _, _, _ = env.step({})
    assert rewards[newcomer] == pytest.approx(POINTS[0] / 15)


def test_reward_shaping_pays_the_same_as_the_config_key():
    def run(env, steps=12):
        out = []
        env.reset(seed=3)
        slot_agent = env.agents[0] if hasattr(env, "agents") else None
        for t in range(steps):
            base = env.unwrapped if hasattr(env, "unwrapped") else env
            kills = base.realm.state.entities.player_kills
            kills[base._id_to_slot[slot_agent]] = t // 3
            _, rewards, *_ = env.step({})
            out.append(rewards[slot_agent])
        return out

    keyed = run(nmmo.Env(small(REWARD_ACHIEVEMENT=True)))
    shaped = run(InterfaceEnv(nmmo.Env(small()), RewardShaping({"achievement_points": 1 / 15})))
    assert keyed == pytest.approx(shaped) and sum(keyed) > 0


@pytest.mark.parametrize("category", sorted(TIERS))
def test_tiers_match_the_design_table(category):
    assert nmmo.core.metrics.ACHIEVEMENT_TIERS[category] == TIERS[category]
    assert nmmo.core.metrics.TIER_POINTS == POINTS
