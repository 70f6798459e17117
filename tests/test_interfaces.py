import textwrap
import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import nmmo
from evaluation.tournament import run_tournament
from nmmo import config
from nmmo.core.enums import Direction, EntityAttr, TileAttr
from nmmo.core.systems.movement import DELTAS
from nmmo.interfaces import (
    MASK_KEY,
    ActionMask,
    Augment,
    Flatten,
    Interface,
    InterfaceAgent,
    InterfaceEnv,
    Outcome,
    RewardShaping,
    Team,
    TeamSpirit,
    agent_class,
    combine,
    dihedral_inverse,
    dihedral_matrix,
    stack,
)


class Quick(config.Small, config.Resource, config.Combat):
    """Small with Resource and Combat, few agents and short episodes: each env test takes milliseconds."""

    PLAYER_N = 8
    HORIZON = 16


class QuickTeams(Quick):
    PLAYER_TEAM_SIZE = 4
    COMBAT_FRIENDLY_FIRE = False


def quick(**keys) -> config.Config:
    conf = Quick()
    for key, value in keys.items():
        conf.set(key, value)
    return conf


def teams(**keys) -> config.Config:
    conf = QuickTeams()
    for key, value in keys.items():
        conf.set(key, value)
    return conf


# interface factories: (name, config factory, make_interface(config))
SOLO = [
    ("augment+mask+flatten", quick, lambda c: stack(Augment(c), ActionMask(), Flatten())),
    ("shaping+augment", quick, lambda c: stack(RewardShaping({"health": 0.1, "achievement": 1.0}), Augment(c, 5))),
    ("stack of stacks", quick, lambda c: stack(stack(Augment(c, 3)), stack(ActionMask(keep_targets=True)))),
]
TEAMS = [
    ("team", teams, lambda c: combine(c)),
    ("team no respawn", lambda: teams(PLAYER_RESPAWN=False), lambda c: combine(c)),
    ("team of flat members", teams, lambda c: combine(c, Augment(c), ActionMask(), Flatten())),
    ("augment, team, flatten", teams, lambda c: stack(Augment(c), combine(c, ActionMask()), Flatten())),
]
CASES = SOLO + TEAMS


def wrapped(make_config, make_interface, seed=0) -> InterfaceEnv:
    conf = make_config()
    return InterfaceEnv(nmmo.Env(conf, seed=seed), make_interface(conf))


def sample(env: InterfaceEnv, obs: dict) -> dict:
    """Masked samples where the observation carries a mask, the way PettingZoo's tests act."""
    out = {}
    for agent in env.agents:
        mask = obs[agent].get(MASK_KEY) if isinstance(obs[agent], dict) else None
        out[agent] = env.action_space(agent).sample(mask=mask)
    return out


# ------------------------------------------------------------ PettingZoo API
@pytest.mark.parametrize(("name", "make_config", "make_interface"), CASES, ids=[c[0] for c in CASES])
def test_stacked_and_combined_envs_pass_the_parallel_api_test(name, make_config, make_interface):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no agents but not all possible agents finished" is expected
        parallel_api_test(wrapped(make_config, make_interface), num_cycles=100)


@pytest.mark.parametrize(("name", "make_config", "make_interface"), [SOLO[0], TEAMS[2]], ids=["solo", "teams"])
def test_wrapped_envs_replay_from_their_seed(name, make_config, make_interface):
    conf = make_config()
    parallel_seed_test(lambda: InterfaceEnv(nmmo.Env(conf), make_interface(conf)), num_cycles=20)


@pytest.mark.parametrize(("name", "make_config", "make_interface"), CASES, ids=[c[0] for c in CASES])
def test_observations_fit_the_transformed_spaces(name, make_config, make_interface):
    env = wrapped(make_config, make_interface)
    obs, infos = env.reset(seed=2)
    assert set(env.agents) <= set(obs) and set(env.agents) <= set(infos)
    space = env.observation_space(env.agents[0])
    for _ in range(4):
        assert all(space.contains(ob) for ob in obs.values())
        obs, rewards, terminations, truncations, infos = env.step(sample(env, obs))
        assert set(rewards) == set(terminations) == set(truncations) == set(obs)
    assert env.unwrapped.realm.state.tick == 4


def test_dead_team_members_free_their_seat_and_a_team_without_respawn_ends_with_its_last():
    env = wrapped(lambda: teams(PLAYER_RESPAWN=False), lambda c: combine(c))
    obs, _ = env.reset(seed=0)
    ent = env.unwrapped.realm.state.entities
    ent.health[:4], ent.food[:4], ent.water[:4] = 1, 0, 0  # team 0 (slots 0..3) starves this tick
    obs, rewards, terminations, truncations, infos = env.step({})
    assert terminations == {0: True, 1: False} and truncations == {0: False, 1: False}
    assert env.agents == [1] and rewards[0] == -1.0 and rewards[1] == 0.0
    assert sorted(infos[0]["members"]) == [1, 2, 3, 4]
    assert obs[0]["Present"].tolist() == [1, 1, 1, 1]  # their final observations
    obs, *_ = env.step({})
    assert list(obs) == [1]


def test_members_spawned_on_the_tick_their_team_died_take_the_seats_at_once():
    env = wrapped(teams, lambda c: combine(c))
    env.reset(seed=0)
    ent = env.unwrapped.realm.state.entities
    ent.health[:8], ent.food[:8], ent.water[:8] = 1, 0, 0  # everyone starves this tick; respawns follow at once
    env.step({})
    newcomers = sorted(a for a in env.unwrapped.agents)
    assert newcomers and min(newcomers) > 8
    stay = {"Move": {"Direction": [int(Direction.NORTH)] * 4}}
    raw = env.interface.actions({team: stay for team in env.agents}, env._raw_obs)
    assert set(newcomers) <= set(raw)  # seated at once: the actions reach them (the dead ones' are ignored)


def test_teams_with_respawn_live_until_the_horizon():
    env = wrapped(lambda: teams(HORIZON=3), lambda c: combine(c))
    env.reset(seed=0)
    ent = env.unwrapped.realm.state.entities
    ent.health[:4], ent.food[:4], ent.water[:4] = 1, 0, 0
    _, _, terminations, truncations, _ = env.step({})
    assert env.agents == [0, 1] and not any(terminations.values()) and not any(truncations.values())
    env.step({})
    _, _, terminations, truncations, _ = env.step({})
    assert env.agents == [] and truncations == {0: True, 1: True} and terminations == {0: False, 1: False}


# ------------------------------------------------------------------ flatten
def test_flatten_length_is_fixed_and_equals_the_space_shape():
    conf = quick()
    flatten = Flatten()
    env = InterfaceEnv(nmmo.Env(conf, seed=0), flatten)
    space = env.observation_space(1)
    length = (2 * conf.PLAYER_VISION_RADIUS + 1) ** 2 * len(TileAttr) + conf.PLAYER_N_OBS * len(EntityAttr) \
        + 5 + 3 + conf.PLAYER_N_OBS + 1 + 2  # tiles, entities, masks, AgentId and CurrentTick
    assert space.shape == (length,) and space.dtype == np.float32
    raw_env = nmmo.Env(conf, seed=0)
    raw, _ = raw_env.reset()
    obs, _ = env.reset()
    for _ in range(3):
        assert all(ob.shape == space.shape and space.contains(ob) for ob in obs.values())
        obs, *_ = env.step({})
    # the layout names where each leaf went: the vector holds the raw values
    layout = flatten.layout
    assert list(layout) == ["ActionTargets.Attack.Style", "ActionTargets.Attack.Target",
                            "ActionTargets.Move.Direction", "AgentId", "CurrentTick", "Entity", "Tile"]
    vector = Flatten().observations(raw)[1]  # no space given: the same layout from the observation
    assert vector.shape == (length,)
    np.testing.assert_array_equal(vector[layout["Entity"]], raw[1]["Entity"].ravel())
    np.testing.assert_array_equal(vector[layout["Tile"]], raw[1]["Tile"].ravel())
    assert vector[layout["AgentId"]].tolist() == [1.0]


def test_flatten_picks_keys_and_keeps_the_action_mask_apart():
    raw, _ = nmmo.Env(quick(), seed=0).reset()
    only = Flatten(keys=["CurrentTick", "AgentId"])
    assert only.observations(raw)[3].tolist() == [0.0, 3.0]
    assert only.observation_space(nmmo.Env(quick()).observation_space(1)).shape == (2,)
    masked = stack(ActionMask(), Flatten()).observations(raw)[3]
    assert set(masked) == {"observation", MASK_KEY}
    assert masked[MASK_KEY] is raw[3]["ActionTargets"]
    with pytest.raises(KeyError, match="Tiles"):
        Flatten(keys=["Tiles"]).observations(raw)


# -------------------------------------------------------------- action mask
def test_the_action_mask_appears_in_the_observation_and_masked_samples_are_valid():
    env = InterfaceEnv(nmmo.Env(quick(), seed=0), ActionMask())
    raw_env = nmmo.Env(quick(), seed=0)
    raw, _ = raw_env.reset()
    obs, _ = env.reset()
    assert "ActionTargets" not in obs[1]
    assert set(obs[1]) == {"Tile", "Entity", "AgentId", "CurrentTick", MASK_KEY}
    for agent, ob in obs.items():
        for key in ("Move", "Attack"):
            for sub, mask in ob[MASK_KEY][key].items():
                np.testing.assert_array_equal(mask, raw[agent]["ActionTargets"][key][sub])
    assert env.observation_space(1)[MASK_KEY] == raw_env.observation_space(1)["ActionTargets"]
    for _ in range(8):
        obs, _, _, _, infos = env.step(sample(env, obs))
        assert not any("invalid_actions" in info for info in infos.values())
    kept = ActionMask(keep_targets=True).observations(raw)[1]
    assert kept["ActionTargets"] is kept[MASK_KEY]


# ----------------------------------------------------------- reward shaping
def own_row(**values) -> dict:
    entity = np.zeros((3, len(EntityAttr)), dtype=np.int32)
    for name, value in values.items():
        entity[0, EntityAttr[name.upper()]] = value
    return {"Entity": entity}


def test_reward_shaping_is_the_weighted_sum_on_a_hand_built_case():
    shaping = RewardShaping({"health": 0.5, "food": -0.25, "melee": 2.0, "achievement": 0.1, "explore": 1.0},
                            env_weight=3.0)
    shaping.reset()
    first = {7: own_row(health=10, food=20, melee=1), 8: own_row(health=5, food=5, melee=1)}
    out = shaping.outcome(Outcome({}, {}, {}, {7: {}, 8: {}}, [7, 8]), first)  # a reset: nothing to reward yet
    assert out.rewards == {}
    second = {7: own_row(health=8, food=24, melee=2), 8: own_row(health=0, food=4, melee=1)}
    infos = {7: {}, 8: {"life": {"achievement": 30, "explore": 4, "lifetime": 99}}}
    out = shaping.outcome(Outcome({7: 0.0, 8: -1.0}, {7: False, 8: True}, {7: False, 8: False}, infos, [7]), second)
    assert out.rewards[7] == pytest.approx(3.0 * 0 + 0.5 * -2 - 0.25 * 4 + 2.0 * 1)
    assert out.rewards[8] == pytest.approx(3.0 * -1 + 0.5 * -5 - 0.25 * -1 + 0.1 * 30 + 1.0 * 4)
    assert out.terminations == {7: False, 8: True} and out.infos is infos and out.agents == [7]
    # a newcomer's first step earns no change; the finished agent is forgotten
    third = {7: own_row(health=9, food=24, melee=2), 9: own_row(health=10)}
    out = shaping.outcome(Outcome({7: 1.0, 9: 0.0}, {}, {}, {}, [7, 9]), third)
    assert out.rewards == {7: pytest.approx(3.0 + 0.5), 9: 0.0}
    assert set(shaping._last) == {7, 9}


def test_reward_shaping_names_are_checked_and_the_env_rewards_change():
    with pytest.raises(ValueError, match="unknown metrics \\['gold'\\]"):
        RewardShaping({"gold": 1.0})
    env = InterfaceEnv(nmmo.Env(quick(), seed=0), RewardShaping({"time_alive": 1.0}))
    env.reset()
    _, rewards, *_ = env.step({})
    assert set(rewards) == set(env.agents) and all(r == 1.0 for r in rewards.values())  # one tick older each


def test_team_spirit_reward_equals_the_formula_on_a_hand_built_case():
    spirit = TeamSpirit(0.25)
    obs = {1: own_row(team=0), 2: own_row(team=0), 3: own_row(team=1), 4: own_row(team=0), 5: own_row(team=1)}
    rewards = {1: 4.0, 2: 0.0, 3: -1.0, 4: 2.0, 5: 3.0}
    out = spirit.outcome(Outcome(rewards, {}, {}, {}, list(rewards)), obs)
    team0, team1 = (4.0 + 0.0 + 2.0) / 3, (-1.0 + 3.0) / 2
    assert out.rewards == {1: pytest.approx(0.25 * team0 + 0.75 * 4.0), 2: pytest.approx(0.25 * team0),
                           3: pytest.approx(0.25 * team1 - 0.75), 4: pytest.approx(0.25 * team0 + 0.75 * 2.0),
                           5: pytest.approx(0.25 * team1 + 0.75 * 3.0)}
    assert TeamSpirit(1.0).outcome(Outcome({1: 4.0, 2: 0.0}, {}, {}, {}, [1, 2]), obs).rewards == {1: 2.0, 2: 2.0}
    for alpha in (-0.1, 1.5, "0.5"):
        with pytest.raises(ValueError, match="alpha must be a number in \\[0, 1\\]"):
            TeamSpirit(alpha)
    with pytest.raises(ValueError, match="before interfaces that remove it"):
        TeamSpirit(0.5).outcome(Outcome({1: 1.0}, {}, {}, {}, [1]), {1: {"flat": np.zeros(3)}})


def test_team_spirit_interface_matches_the_engine_blend():
    """On top of a custom reward, the interface gives what PLAYER_TEAM_SPIRIT gives inside the env."""

    def reward(env, agent_id):
        return float(agent_id * (1 + env.realm.players[agent_id].food)) if agent_id in env.realm.players else -1.0

    wrapped = InterfaceEnv(nmmo.Env(teams(), seed=3, reward_fn=reward), stack(TeamSpirit(0.5), Flatten()))
    engine = nmmo.Env(teams(PLAYER_TEAM_SPIRIT=0.5), seed=3, reward_fn=reward)
    wrapped.reset(seed=3)
    engine.reset(seed=3)
    own = nmmo.Env(teams(), seed=3, reward_fn=reward)
    own.reset(seed=3)
    changed = 0
    for _ in range(12):
        _, got, *_ = wrapped.step({})
        _, want, *_ = engine.step({})
        _, raw, *_ = own.step({})
        assert got == pytest.approx(want) and set(got) == set(want)
        changed += got != pytest.approx(raw)
    assert changed == 12  # the blend changed the rewards of every step


# ------------------------------------------------------------- augmentation
def test_the_eight_transforms_form_the_dihedral_group():
    matrices = [dihedral_matrix(i) for i in range(8)]
    assert len({m.tobytes() for m in matrices}) == 8
    assert np.array_equal(matrices[0], np.eye(2))
    for i, m in enumerate(matrices):
        assert np.array_equal(matrices[dihedral_inverse(i)] @ m, np.eye(2))
    with pytest.raises(ValueError, match="0..7"):
        dihedral_matrix(8)


@pytest.mark.parametrize("transform", range(8))
def test_augmentation_is_exactly_invertible(transform):
    conf = quick()
    raw, _ = nmmo.Env(conf, seed=4).reset()
    forward, backward = Augment(conf, transform), Augment(conf, dihedral_inverse(transform))
    view = forward.observations(raw)
    back = backward.observations(view)
    for agent, ob in raw.items():
        np.testing.assert_array_equal(back[agent]["Tile"], ob["Tile"])
        np.testing.assert_array_equal(back[agent]["Entity"], ob["Entity"])
        for key in ("Move", "Attack"):
            for sub, mask in ob["ActionTargets"][key].items():
                np.testing.assert_array_equal(back[agent]["ActionTargets"][key][sub], mask)
        assert back[agent]["Tile"].dtype == ob["Tile"].dtype and back[agent]["Entity"].dtype == ob["Entity"].dtype
    # actions: a raw action taken into the view's frame and mapped back is the raw action
    raw_actions = {agent: {"Move": {"Direction": d}, "Attack": {"Style": 1, "Target": 2}}
                   for agent, d in zip(raw, [0, 1, 2, 3, 4, 0, 1, 2], strict=True)}
    assert forward.actions(backward.actions(raw_actions, view), raw) == raw_actions
    if transform:
        assert backward.actions(raw_actions, view) != raw_actions


@pytest.mark.parametrize("transform", range(8))
def test_augmented_views_agree_with_the_world(transform):
    """Whatever the policy sees in a direction of its view is what lies that way in the world."""
    conf = quick()
    env = nmmo.Env(conf, seed=5)
    raw, _ = env.reset()
    augment = Augment(conf, transform)
    radius = conf.PLAYER_VISION_RADIUS
    side = 2 * radius + 1
    for _ in range(4):
        view = augment.observations(raw)
        actions = {}
        for agent in env.agents:
            ob, raw_ob = view[agent], raw[agent]
            me = ob["Entity"][0]
            centre = ob["Tile"][radius * side + radius]
            assert (me[EntityAttr.ROW], me[EntityAttr.COL]) == (centre[TileAttr.ROW], centre[TileAttr.COL])
            seen = ob["Entity"][:, EntityAttr.ID] != 0
            np.testing.assert_array_equal(ob["Entity"][~seen], raw_ob["Entity"][~seen])  # padding stays zero
            for d in Direction:
                raw_d = augment.actions({agent: {"Move": {"Direction": int(d)}}}, raw)[agent]["Move"]["Direction"]
                moves_seen, moves_raw = ob["ActionTargets"]["Move"], raw_ob["ActionTargets"]["Move"]
                assert moves_seen["Direction"][d] == moves_raw["Direction"][raw_d]
                r, c = DELTAS[d] + radius
                r_raw, c_raw = DELTAS[raw_d] + radius
                assert ob["Tile"][r * side + c, TileAttr.MATERIAL] == raw_ob["Tile"][r_raw * side + c_raw,
                                                                                     TileAttr.MATERIAL]
            moves = np.flatnonzero(ob["ActionTargets"]["Move"]["Direction"][:4])
            actions[agent] = {"Move": {"Direction": int(moves[0]) if moves.size else int(Direction.STAY)}}
        raw, _, _, _, infos = env.step(augment.actions(actions, raw))
        assert not any("invalid_actions" in info for info in infos.values())
        after = augment.observations(raw)
        for agent, action in actions.items():
            step = after[agent]["Entity"][0, [EntityAttr.ROW, EntityAttr.COL]] - \
                view[agent]["Entity"][0, [EntityAttr.ROW, EntityAttr.COL]]
            assert step.tolist() in (DELTAS[action["Move"]["Direction"]].tolist(), [0, 0])  # moved as seen, or blocked


def test_augment_draws_one_transform_per_episode_from_the_seed():
    conf = quick()
    augment = Augment(conf)
    assert augment.transform == 0  # identity until the first reset
    drawn = []
    for seed in range(40):
        augment.reset(seed)
        drawn.append(augment.transform)
        augment.reset(seed)
        assert augment.transform == drawn[-1]
    assert set(drawn) == set(range(8))
    unseeded = [Augment(conf, seed=1) for _ in range(2)]
    for a in unseeded:
        for _ in range(5):
            a.reset()
    assert unseeded[0].transform == unseeded[1].transform
    fixed = Augment(conf, transform=6)
    fixed.reset(123)
    assert fixed.transform == 6


def test_augment_draws_apart_from_the_map_and_replays_from_the_episode_seed():
    conf = quick(MAP_N=4)
    env = wrapped(lambda: conf, lambda c: Augment(c))
    seen: dict[int, set] = {}
    for seed in range(48):
        env.reset(seed=seed)
        seen.setdefault(env.unwrapped.realm.map.seed, set()).add(env.interface.transform)
    assert len(seen) == 4 and all(len(transforms) >= 3 for transforms in seen.values())  # not tied to the map

    draws = []
    for env_seed in (1, 2):
        unseeded = wrapped(lambda: conf, lambda c: Augment(c), seed=env_seed)
        episodes = []
        for _ in range(6):
            unseeded.reset()
            episodes.append((unseeded.unwrapped.episode_seed, unseeded.interface.transform))
        draws.append([t for _, t in episodes])
        for episode_seed, transform in episodes:  # each episode replays from its seed alone
            again = wrapped(lambda: conf, lambda c: Augment(c))
            again.reset(seed=episode_seed)
            assert again.interface.transform == transform
    assert draws[0] != draws[1]  # envs seeded apart rotate apart

    member = Augment(conf, seed=5)
    combine(teams(), member)
    assert member.transform == 0  # building a team does not reset its members


def test_interfaces_in_the_wrong_place_say_so():
    for make, message in [(lambda c: stack(Flatten(), Augment(c, transform=3)), "Augment reads the raw Tile/Entity"),
                          (lambda c: stack(Flatten(), RewardShaping({"food": 1.0})), "RewardShaping reads the raw"),
                          (lambda c: stack(combine(c), ActionMask()), "ActionMask reads the raw ActionTargets")]:
        env = wrapped(teams, make)
        with pytest.raises(ValueError, match=message):
            env.reset(seed=0)
            env.step({})


# -------------------------------------------------------------------- teams
def member_obs(agent: int, team: int) -> dict:
    entity = np.zeros((2, len(EntityAttr)), dtype=np.int32)
    entity[0, EntityAttr.ID], entity[0, EntityAttr.TEAM], entity[0, EntityAttr.HEALTH] = agent, team, 10
    return {"Entity": entity, "AgentId": agent, "Value": np.full(3, agent, dtype=np.float32)}


def test_team_as_agent_joins_observations_and_splits_actions():
    team = Team(team_size=3, n_teams=2)
    raw = {1: member_obs(1, 0), 2: member_obs(2, 0), 4: member_obs(4, 1)}
    obs = team.observations(raw)
    assert list(obs) == [0, 1]
    assert obs[0]["Present"].tolist() == [1, 1, 0] and obs[1]["Present"].tolist() == [1, 0, 0]
    assert obs[0]["Members"]["AgentId"].tolist() == [1, 2, 0]
    np.testing.assert_array_equal(obs[0]["Members"]["Value"], [[1, 1, 1], [2, 2, 2], [0, 0, 0]])
    np.testing.assert_array_equal(obs[1]["Members"]["Entity"][0], raw[4]["Entity"])
    # stacked leaves: seat i's part goes to the member in seat i; empty seats are dropped
    actions = team.actions({0: {"Move": {"Direction": np.array([0, 2, 3])}},
                            1: [{"Move": {"Direction": 1}}, None, {"Move": {"Direction": 4}}]}, raw)
    assert actions == {1: {"Move": {"Direction": 0}}, 2: {"Move": {"Direction": 2}}, 4: {"Move": {"Direction": 1}}}
    assert type(actions[1]["Move"]["Direction"]) is int
    out = team.outcome(Outcome({1: 1.0, 2: 0.0, 4: -1.0}, {1: False, 2: False, 4: False},
                               {1: False, 2: False, 4: False}, {1: {"a": 1}, 2: {}, 4: {}}, [1, 2, 4]), raw)
    assert out.rewards == {0: 0.5, 1: -1.0} and out.agents == [0, 1]
    assert out.infos[0] == {"members": {1: {"a": 1}, 2: {}}}
    # agent 2 leaves, 5 and 6 arrive: 5 takes the free seat 1, 6 the last one; seat 0 stays with 1
    raw = {1: member_obs(1, 0), 5: member_obs(5, 0), 6: member_obs(6, 0)}
    obs = team.observations(raw)
    assert obs[0]["Members"]["AgentId"].tolist() == [1, 5, 6]
    assert obs[1]["Present"].tolist() == [0, 0, 0]  # a live team without members still observes
    with pytest.raises(ValueError, match="3 member actions"):
        team.actions({0: [{}]}, raw)
    with pytest.raises(ValueError, match="team 7"):
        team.actions({7: {}}, raw)


def test_team_spaces_and_the_team_action_mask():
    conf = teams()
    env = InterfaceEnv(nmmo.Env(conf, seed=0), combine(conf, ActionMask()))
    obs, _ = env.reset()
    space, action_space = env.observation_space(0), env.action_space(0)
    assert env.possible_agents == [0, 1] and env.agents == [0, 1]
    assert action_space["Move"]["Direction"].nvec.tolist() == [5, 5, 5, 5]
    assert space["Members"]["Entity"].shape == (4, conf.PLAYER_N_OBS, len(EntityAttr))
    assert isinstance(obs[0][MASK_KEY]["Move"]["Direction"], tuple) and space.contains(obs[0])
    for _ in range(6):
        obs, _, _, _, infos = env.step({t: action_space.sample(mask=obs[t][MASK_KEY]) for t in env.agents})
        for info in infos.values():
            assert not any("invalid_actions" in member for member in info["members"].values())


def test_team_needs_the_raw_entity_table():
    conf = teams()
    raw, _ = nmmo.Env(conf, seed=0).reset()
    with pytest.raises(ValueError, match="combine\\(config, Flatten\\(\\)\\)"):
        stack(Flatten(), combine(conf)).observations(raw)


# ----------------------------------------------------------------- agents
class FirstFreeMove:
    """Acts on augmented, masked, flattened observations: the first move its mask allows."""

    def __init__(self, config):
        self.length = None

    def act(self, observations):
        actions = {}
        for agent, ob in observations.items():
            assert ob["observation"].ndim == 1
            moves = np.flatnonzero(ob[MASK_KEY]["Move"]["Direction"][:4])
            actions[agent] = {"Move": {"Direction": int(moves[0]) if moves.size else 4}}
        return actions


def make_interface(conf):
    return stack(Augment(conf), ActionMask(), Flatten())


def test_an_interface_agent_plays_the_raw_env_with_valid_actions():
    conf = quick()
    agent = agent_class(FirstFreeMove, make_interface)(conf)
    assert isinstance(agent, InterfaceAgent) and agent.config is conf
    env = nmmo.Env(conf, seed=1)
    moved = 0
    for episode in range(3):
        obs, _ = env.reset()
        agent.reset(seed=episode)
        start = {a: tuple(ob["Entity"][0, [EntityAttr.ROW, EntityAttr.COL]]) for a, ob in obs.items()}
        while env.agents:
            obs, _, _, _, infos = env.step(agent.act({a: obs[a] for a in env.agents}))
            assert not any("invalid_actions" in info for info in infos.values())
        where = {a: tuple(ob["Entity"][0, [EntityAttr.ROW, EntityAttr.COL]]) for a, ob in obs.items()}
        moved += sum(where[a] != start[a] for a in start if a in where)
    assert moved > 0


def test_a_team_agent_plays_the_raw_env():
    conf = teams()

    class TeamMoves:
        def act(self, observations):
            return {t: [{"Move": {"Direction": int(np.flatnonzero(mask[:4])[0]) if mask[:4].any() else 4}}
                        for mask in ob[MASK_KEY]["Move"]["Direction"]] for t, ob in observations.items()}

    agent = InterfaceAgent(TeamMoves(), combine(conf, Augment(conf), ActionMask()))
    env = nmmo.Env(conf, seed=2)
    obs, _ = env.reset()
    agent.reset(seed=3)
    for _ in range(6):
        actions = agent.act({a: obs[a] for a in env.agents})
        assert set(actions) == set(env.agents)
        obs, _, _, _, infos = env.step(actions)
        assert not any("invalid_actions" in info for info in infos.values())


AGENT_FILE = """
    import numpy as np

    from nmmo.interfaces import MASK_KEY, ActionMask, Augment, Flatten, agent_class, stack


    def make_interface(config):  # the same interface the policy trained behind
        return stack(Augment(config), ActionMask(), Flatten())


    class FirstFreeMove:
        def __init__(self, config):
            self.config = config

        def act(self, observations):
            actions = {}
            for agent, ob in observations.items():
                assert set(ob) == {"observation", MASK_KEY} and ob["observation"].ndim == 1
                moves = np.flatnonzero(ob[MASK_KEY]["Move"]["Direction"][:4])
                actions[agent] = {"Move": {"Direction": int(moves[0]) if moves.size else 4}}
            return actions


    Agent = agent_class(FirstFreeMove, make_interface)
"""


@pytest.mark.parametrize("name", ["Agent", "FirstFreeMove"], ids=["behind its interface", "bare (control)"])
def test_an_agent_behind_its_training_interface_plays_a_raw_env_tournament(tmp_path, name):
    path = tmp_path / "interface_agent.py"
    path.write_text(textwrap.dedent(AGENT_FILE))
    spec = f"{path}:{name}"
    results = run_tournament(quick(), [spec, "random"], episodes=1, ticks=6, workers=0, progress=False)
    faults = results["faults"][spec]
    if name == "FirstFreeMove":  # raw observations fail its checks every tick: act runs and checks
        assert faults["exception"] == 6
        return
    assert (faults["exception"], faults["timeout"], faults["malformed"], faults["dropped_actions"]) == (0, 0, 0, 0)
    assert results["metrics"][spec]["lifetime"]["count"] > 0
    assert spec in [row["policy"] for row in results["leaderboard"]]


def test_the_identity_interface_and_stack_fallback():
    conf = quick()
    env = InterfaceEnv(nmmo.Env(conf, seed=0), Interface())
    obs, _ = env.reset()
    assert env.possible_agents == nmmo.Env(conf).possible_agents
    assert env.observation_space(1) is env.observation_space(2)
    with pytest.raises(ValueError, match="not an agent"):
        env.action_space(0)
    # a stack asked about observations it did not see last recomputes its stages' inputs
    interface = stack(Augment(conf, 1), ActionMask())
    view = interface.observations(obs)
    interface.observations({a: ob for a, ob in obs.items() if a != 1})
    actions = {a: {"Move": {"Direction": 0}} for a in view}
    assert interface.actions(actions, obs) == Augment(conf, 1).actions(actions, obs)
    with pytest.raises(RuntimeError, match="reset"):
        InterfaceEnv(nmmo.Env(conf), Interface()).step({})
