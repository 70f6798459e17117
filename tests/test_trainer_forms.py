"""The env's conventions trainers rely on, and the forms made for them (`nmmo.interfaces.slots`,
`nmmo.integrations.parallel_env`): PettingZoo's own tests raw and behind each form, the "life"
infos key, numeric infos, no all-zero mask, fixed seats under respawn, flat actions, `state()`."""

import copy
import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, state_test
from pettingzoo.utils.conversions import parallel_to_aec

import nmmo
from nmmo.core.actions import ActionError, flat_action_space, flat_mask, split_flat_mask
from nmmo.integrations import parallel_env
from nmmo.interfaces import SLOT_INFO_KEYS, AgentNames, FlatActions, Flatten, InterfaceEnv, stack
from nmmo.policy import load_policy_class
from nmmo.testing import random_actions

CONFIG = "trainers_small"


def raw_env():
    return nmmo.Env(CONFIG, seed=0)


def named_env():
    return InterfaceEnv(nmmo.Env(CONFIG, seed=0), AgentNames())


def flat_env():
    return InterfaceEnv(nmmo.Env(CONFIG, seed=0), stack(FlatActions(), Flatten()))


def slot_env():
    return parallel_env(CONFIG, seed=0)


@pytest.mark.parametrize("make", [raw_env, named_env, flat_env, slot_env], ids=["raw", "names", "flat", "slots"])
def test_pettingzoo_tests_pass_raw_and_behind_each_form(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no agents but not all possible agents finished" is expected with respawn
        parallel_api_test(make(), num_cycles=140)  # past the horizon: the episode ends and resets
        parallel_seed_test(make)
        api_test(parallel_to_aec(make()), num_cycles=20)
        state_test(parallel_to_aec(make()), make(), num_cycles=5)


def _play(env, ticks, seed=0):
    """Random valid actions for `ticks` steps; every step's (obs, rewards, terms, truncs, infos)."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    steps = [(obs, {}, {}, {}, infos)]
    for _ in range(ticks):
        if not env.agents:
            break
        if "action_mask" in next(iter(obs.values())):  # the flat form: sample with its flat mask
            for agent in env.agents:
                env.action_space(agent).seed(int(rng.integers(2**31)))
            actions = {a: env.action_space(a).sample(mask=obs[a]["action_mask"]) for a in env.agents}
        else:
            actions = random_actions(env, obs, rng)
        obs, *rest = env.step(actions)
        steps.append((obs, *rest))
    return steps


def test_lifetime_metrics_arrive_under_life_and_never_under_episode():
    """SB3 and gymnasium's wrappers read "episode" as their own {r, l, t}: the raw env never emits it."""
    env = raw_env()
    lives = [info for *_, infos in _play(env, 127) for info in infos.values() if "life" in info]
    assert lives and all(set(nmmo.interfaces.EPISODE_METRICS) <= set(info["life"]) for info in lives)
    assert not any("episode" in info for *_, infos in _play(env, 127) for info in infos.values())
    assert not hasattr(env, "legacy_episode_key")


def test_infos_hold_numbers_only_and_no_mask_is_ever_all_zeros():
    env = raw_env()
    observations = 0
    for obs, _, _, _, infos in _play(env, 127):
        for info in infos.values():
            flat = {**info, **info.get("life", {})}
            flat.pop("life", None)
            flat.pop("episode", None)
            assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat.values()), info
        for ob in obs.values():
            masks = ob["ActionTargets"]
            for mask in (masks["Move"]["Direction"], masks["Attack"]["Style"], masks["Attack"]["Target"]):
                assert mask.any()
            if not masks["Attack"]["Target"][:-1].any():  # nobody in reach: any style, the no-op target only
                assert masks["Attack"]["Style"].all() and masks["Attack"]["Target"][-1] == 1
            observations += 1
    assert observations > 500


def test_baseline_small_plays_as_it_did_under_the_old_style_mask():
    """The styles a mask now allows when nobody is in reach change nothing the env does: the target
    is the no-op. The shipped baseline picks the same moves and attacks under both masks."""
    env = nmmo.Env("train_small", seed=3)
    obs, _ = env.reset()
    policy = load_policy_class("baseline:small")(env.config)
    n_obs = env.config.PLAYER_N_OBS
    for _ in range(3):
        old = copy.deepcopy(obs)
        for ob in old.values():
            if not ob["ActionTargets"]["Attack"]["Target"][:-1].any():
                ob["ActionTargets"]["Attack"]["Style"][:] = 0  # the mask before this release
        policy.reset(11)
        now = policy.act(obs)
        policy.reset(11)
        before = policy.act(old)

        def effect(actions):
            return {a: (act["Move"]["Direction"], act.get("Attack", {}).get("Target", n_obs),
                        act["Attack"]["Style"] if act.get("Attack", {}).get("Target", n_obs) < n_obs else None)
                    for a, act in actions.items()}

        assert effect(now) == effect(before)
        obs, *_ = env.step(now)


def test_seats_live_to_the_horizon_and_carry_each_life():
    env = slot_env()
    steps = _play(env, 200)
    assert env.possible_agents == [f"player_{i}" for i in range(8)]
    assert len(steps) == 129  # reset + HORIZON steps: seats never end before the horizon
    for _, rewards, terms, truncs, _infos in steps[1:-1]:
        assert set(rewards) == set(env.possible_agents) and not any(terms.values()) and not any(truncs.values())
    *_, terms, truncs, _ = steps[-1]
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    deaths = [(rewards[k], info) for _, rewards, _, _, infos in steps[1:] for k, info in infos.items()
              if info["died"]]
    assert deaths, "nobody died in a whole episode of random play"
    assert all(reward <= -1 + 1e-6 + 1 for reward, _ in deaths)  # the death's -1 reaches the seat
    assert all(info["life_ended"] == 1 and info["life_lifetime"] > 0 for _, info in deaths)
    ids = {info["agent_id"] for *_, infos in steps for info in infos.values() if info["agent_id"]}
    assert len(ids) > 8, "respawned lives took seats"
    for *_, infos in steps:  # the same numbers, for every seat, every step: tensor-friendly
        assert all(list(info) == list(SLOT_INFO_KEYS) for info in infos.values())


def test_an_empty_seat_sees_zeros_and_may_only_wait():
    env = slot_env()
    for obs, _, _, _, infos in _play(env, 127):
        for key, info in infos.items():
            if info["agent_id"] == 0:
                ob = obs[key]
                tick = env.interface.stages[-1].layout["CurrentTick"]
                assert not np.delete(ob["observation"], np.r_[tick]).any()  # zeros, but for the tick
                move, style, target = split_flat_mask(ob["action_mask"], env.unwrapped.config)
                assert move.tolist() == [0, 0, 0, 0, 1] and style.all() and target.tolist()[-1] == 1
                assert target.sum() == 1
                return
    pytest.fail("no seat was ever empty: respawn refilled every seat at once")


def test_flat_actions_are_the_batched_rows_and_bad_ones_are_named():
    env = nmmo.Env(CONFIG, seed=0)
    space = flat_action_space(env.config)
    assert space.nvec.tolist() == [5, 3, env.config.PLAYER_N_OBS + 1]
    obs, _ = env.reset()
    agent, ob = next(iter(obs.items()))
    targets = ob["ActionTargets"]
    mask = flat_mask(targets["Move"]["Direction"], targets["Attack"]["Style"], targets["Attack"]["Target"])
    for _ in range(20):
        row = space.sample(mask=mask)  # the flat mask works where gymnasium wants a tuple of masks
        assert mask[row[0]] and mask[5 + row[1]] and mask[8 + row[2]]
    form = flat_env()
    form.reset(seed=0)
    with pytest.raises(ActionError, match=rf"agent {form.agents[0]!r}: a flat action is 3 integers"):
        form.step({form.agents[0]: np.array([0.5, 0, 0])})
    named = named_env()
    named.reset(seed=0)
    with pytest.raises(ActionError, match="'agent_7', which is not an agent name"):
        named.step({"agent_7": {}})


def test_state_is_the_entity_table_and_the_tick():
    env = raw_env()
    env.reset(seed=0)
    first = env.state()
    assert env.state_space.contains(first) and first[-1] == 0
    env.step({})
    second = env.state()
    assert second[-1] == pytest.approx(1 / env.config.HORIZON)
    assert slot_env().state_space == env.state_space


@pytest.mark.parametrize("tasks", ["", "foraging"])
def test_the_array_layout_writes_the_trainer_form_s_vector_and_mask(tasks):
    """`FlatLayout` (the native env's rows, straight from the engine's arrays) and `Flatten` over the
    dict form (what `parallel_env` gives) agree element for element: checkpoints read either."""
    from nmmo.core.layout import from_dicts
    from nmmo.interfaces.arrays import FlatLayout

    config = nmmo.config.resolve(CONFIG)
    config.set("TASKS", tasks)
    env = nmmo.Env(config, seed=3)
    form = stack(FlatActions(), Flatten())
    form.observation_space(env.observation_space(1))
    layout = FlatLayout.of(config)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(12):
        views = form.observations(obs)
        batch = from_dicts(obs, config)
        rows = layout.write(np.zeros((batch.n, layout.size), np.float32), batch.arrays, batch.ids, batch.tick)
        masks = layout.write_mask(np.zeros((batch.n, layout.mask_size), np.int8), batch.arrays)
        assert rows.shape[1] == form.stages[-1]._paths[-1][1].stop
        for i, agent in enumerate(batch.ids.tolist()):
            assert np.array_equal(rows[i], views[agent]["observation"]), agent
            assert np.array_equal(masks[i], views[agent]["action_mask"]), agent
        obs, *_ = env.step(random_actions(env, obs, rng))
