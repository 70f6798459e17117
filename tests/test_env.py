import hashlib
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test, parallel_seed_test

import nmmo
from nmmo import config
from nmmo.core.actions import NO_OP_ROW
from nmmo.core.enums import EntityAttr, TileAttr
from nmmo.testing import check_env, random_actions


class AllSmall(config.Small, config.Resource, config.Combat, config.Progression, config.NPC):
    """Small map with every system on."""


class TeamSmall(config.Small, config.Resource, config.Combat):
    PLAYER_TEAM_SIZE = 4
    PLAYER_TEAM_SPIRIT = 0.5
    COMBAT_FRIENDLY_FIRE = False


@pytest.mark.parametrize("conf", [config.Small, AllSmall, TeamSmall], ids=["Small", "AllSystems", "Teams"])
def test_parallel_api(conf):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no agents but not all possible agents finished" is expected
        parallel_api_test(nmmo.Env(conf(), seed=0), num_cycles=200)


@pytest.mark.parametrize("conf", [config.Small, AllSmall], ids=["Small", "AllSystems"])
def test_pettingzoo_seed_test(conf):
    parallel_seed_test(lambda: nmmo.Env(conf()), num_cycles=100)


def test_spaces_are_cached_objects_and_observations_fit_them():
    env = nmmo.Env(AllSmall(), seed=3)
    obs, _ = env.reset()
    assert env.observation_space(1) is env.observation_space(2)
    assert env.action_space(1) is env.action_space(1)
    for ob in obs.values():
        assert env.observation_space(1).contains(ob)
    with pytest.raises(ValueError, match="not an agent id"):
        env.observation_space(0)


def _digest(env, obs) -> str:
    h = hashlib.sha256()
    ent = env.realm.state.entities
    for array in (ent.alive, ent.id, ent.row, ent.col, ent.health, ent.food, ent.water, ent.level, ent.xp,
                  ent.armour, env.realm.state.tiles.material, env.realm.state.tiles.occupancy):
        h.update(array.tobytes())
    for agent in sorted(obs):
        h.update(obs[agent]["Entity"].tobytes())
        h.update(obs[agent]["Tile"].tobytes())
    return h.hexdigest()


def _rollout(seed: int, ticks: int, conf=AllSmall) -> list[str]:
    env = nmmo.Env(conf().set("HORIZON", ticks + 1), seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    digests = [_digest(env, obs)]
    for _ in range(ticks):
        obs, *_ = env.step(random_actions(env, obs, rng))
        digests.append(_digest(env, obs))
    return digests


def test_determinism_1000_ticks_same_seed_same_everything():
    a, b = _rollout(7, 1000), _rollout(7, 1000)
    assert a == b
    assert _rollout(8, 5)[:5] != a[:5]


def test_episode_seed_replays_any_episode_on_a_fresh_env():
    env = nmmo.Env(AllSmall().set("HORIZON", 6))  # unseeded: still replayable
    rng = np.random.default_rng(1)
    for _ in range(2):  # the second episode's seed is derived from the first episode's RNG
        obs, _ = env.reset()
        seed, log, digests = env.episode_seed, [], [_digest(env, obs)]
        assert isinstance(seed, int)
        while env.agents:
            log.append(random_actions(env, obs, rng))
            obs, *_ = env.step(log[-1])
            digests.append(_digest(env, obs))
    fresh = nmmo.Env(AllSmall().set("HORIZON", 6))
    obs, _ = fresh.reset(seed=seed)
    replayed = [_digest(fresh, obs)]
    for actions in log:
        obs, *_ = fresh.step(actions)
        replayed.append(_digest(fresh, obs))
    assert replayed == digests and fresh.episode_seed == seed


def test_idle_agents_starve_on_their_14th_update():
    class Foraging(config.Small, config.Resource):
        pass

    env = nmmo.Env(Foraging().set("PLAYER_RESPAWN", False), seed=0)
    env.reset()
    ent = env.realm.state.entities
    # put every agent somewhere with no water and no forest in reach: the spawn ring is grass,
    # so check only agents whose tile and neighbours have neither.
    tiles = env.realm.state.tiles
    deaths = {}
    for tick in range(1, 20):
        _, rewards, terms, _, infos = env.step({})
        for agent, done in terms.items():
            if done:
                deaths[agent] = tick
                assert rewards[agent] == -1.0
                assert infos[agent]["life"]["lifetime"] == tick
    starving = [a for a, t in deaths.items() if t == 14]
    assert starving, deaths
    assert all(t >= 14 for t in deaths.values())
    del ent, tiles


def test_respawned_agents_count_time_alive_from_their_first_observation():
    class Foraging(config.Small, config.Resource):
        pass

    env = nmmo.Env(Foraging().set("HORIZON", 64), seed=0)
    obs, _ = env.reset()
    first_seen = {agent: 0 for agent in obs}
    lifetimes = {}
    for tick in range(1, 64):
        obs, _, terms, _, infos = env.step({})
        for agent, ob in obs.items():
            if agent not in first_seen:
                first_seen[agent] = tick
                assert ob["Entity"][0, EntityAttr.TIME_ALIVE] == 0, agent
            assert ob["Entity"][0, EntityAttr.TIME_ALIVE] == tick - first_seen[agent]
        for agent, done in terms.items():
            if done:
                lifetimes[agent] = infos[agent]["life"]["lifetime"]
                assert lifetimes[agent] == tick - first_seen[agent], agent
    respawned_dead = [a for a in lifetimes if first_seen[a] > 0]
    assert respawned_dead and min(lifetimes[a] for a in respawned_dead) >= 14  # idle: starve at 14


def test_bad_actions():
    env = nmmo.Env(AllSmall(), seed=0)
    obs, _ = env.reset()
    agent = env.agents[0]
    with pytest.raises(ValueError, match="actions must be a dict"):
        env.step([1, 2])
    with pytest.raises(ValueError, match=rf"agent {agent}: unknown action key 'Jump'"):
        env.step({agent: {"Jump": {}}})
    with pytest.raises(ValueError, match=rf"agent {agent}: action\['Move'\]\['Direction'\] must be an integer"):
        env.step({agent: {"Move": {"Direction": 1.0}}})
    with pytest.raises(ValueError, match=r"must be an integer, got nan"):
        env.step({agent: {"Move": {"Direction": float("nan")}}})
    with pytest.raises(ValueError, match=r"must be an integer, got '1'"):
        env.step({agent: {"Move": {"Direction": "1"}}})
    with pytest.raises(ValueError, match=r"is missing 'Target'"):
        env.step({agent: {"Attack": {"Style": 0}}})
    with pytest.raises(ValueError, match=rf"agent {agent}: action must be a dict"):
        env.step({agent: 3})
    with pytest.raises(ValueError, match="action for unknown agent 9999"):
        env.step({9999: {}})
    tick = env.realm.state.tick
    assert tick == 0  # none of the malformed calls advanced or changed the world

    # out of range or masked sub-actions are dropped and reported; numpy scalars are fine
    _, _, _, _, infos = env.step({agent: {"Move": {"Direction": np.int64(7)},
                                          "Attack": {"Style": np.int8(0), "Target": 98}}})
    assert infos[agent]["invalid_actions"] == 2  # infos hold numbers by default
    assert "invalid_action_details" not in infos[agent]
    assert env.realm.state.tick == 1
    env.info_details = True  # the reasons, as strings, on request
    _, _, _, _, infos = env.step({agent: {"Move": {"Direction": np.int64(7)},
                                          "Attack": {"Style": np.int8(0), "Target": 98}}})
    problems = infos[agent]["invalid_action_details"]
    assert any("Move.Direction=7" in p for p in problems)
    assert any("Target=98" in p for p in problems)


def test_enum_members_are_action_indices():
    env = nmmo.Env(AllSmall(), seed=0)
    env.reset()
    agent = env.agents[0]
    _, _, _, _, infos = env.step({agent: {"Move": {"Direction": nmmo.Direction.STAY},
                                          "Attack": {"Style": nmmo.Style.MELEE, "Target": env.n_obs}}})
    assert "invalid_actions" not in infos[agent]


def test_an_index_too_large_for_int64_is_a_value_error_naming_the_agent():
    env = nmmo.Env(AllSmall(), seed=0)
    env.reset()
    agent = env.agents[0]
    with pytest.raises(ValueError, match=rf"agent {agent}: .*too large"):
        env.step({agent: {"Move": {"Direction": 2**63}}})
    assert env.realm.state.tick == 0


def test_stepping_past_the_horizon_is_an_error():
    env = nmmo.Env(AllSmall().set("HORIZON", 3), seed=0)
    env.reset()
    for _ in range(3):
        env.step({})
    assert env.agents == []
    with pytest.raises(RuntimeError, match=r"episode is over \(tick 3, HORIZON = 3\); call reset"):
        env.step({})
    with pytest.raises(RuntimeError, match="call reset"):
        env.step_arrays(np.full((env.n_slots, 3), -1))
    assert env.realm.state.tick == 3
    env.reset()
    env.step({})  # a new episode steps again


def _melee_out_of_reach(env, obs):
    """An (agent, target index) where Melee is a valid style and the target row a valid target, but
    the target stands 2+ tiles away (beyond Melee's reach of 1)."""
    for agent, ob in obs.items():
        masks, rows = ob["ActionTargets"]["Attack"], ob["Entity"]
        if not masks["Style"][0]:
            continue
        me = rows[0]
        for index in np.flatnonzero(masks["Target"][:-1]):
            offset = rows[index, [EntityAttr.ROW, EntityAttr.COL]] - me[[EntityAttr.ROW, EntityAttr.COL]]
            dist = int(np.abs(offset).max())
            if dist >= 2:
                return agent, int(index)
    return None


def test_an_attack_beyond_the_chosen_styles_reach_is_reported():
    env = nmmo.Env(AllSmall(), seed=0)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        found = _melee_out_of_reach(env, obs)
        if found:
            break
        obs, *_ = env.step(random_actions(env, obs, rng))
    assert found, "no agent had a Melee-valid style and a target 2+ tiles away in 200 ticks"
    agent, index = found
    _, _, _, _, infos = env.step({agent: {"Attack": {"Style": 0, "Target": index}}})
    assert infos[agent]["attack_out_of_reach"] == 1, infos[agent]
    assert "invalid_actions" not in infos[agent]  # each head was a valid choice: no mask was ignored


def test_dead_agents_actions_are_ignored():
    env = nmmo.Env(TeamSmall().set("PLAYER_RESPAWN", False), seed=0)
    env.reset()
    ent = env.realm.state.entities
    ent.health[0], ent.food[0], ent.water[0] = 1, 0, 0  # starves this tick
    dead = int(env.realm.state.entities.id[0])
    _, _, terms, _, _ = env.step({})
    assert terms[dead]
    env.step({dead: {"Move": {"Direction": 0}}})  # no error


def test_observations_do_not_change_under_the_user():
    env = nmmo.Env(AllSmall(), seed=1)
    obs, _ = env.reset()
    first = {a: (o["Entity"].copy(), o["Tile"].copy()) for a, o in obs.items()}
    rng = np.random.default_rng(0)
    env.step(random_actions(env, obs, rng))
    for agent, (entity, tile) in first.items():
        assert np.array_equal(obs[agent]["Entity"], entity) and np.array_equal(obs[agent]["Tile"], tile)


def test_observation_content():
    env = nmmo.Env(AllSmall(), seed=2)
    obs, _ = env.reset()
    ent = env.realm.state.entities
    for agent, ob in obs.items():
        view = env.realm.players[agent]
        me = ob["Entity"][0]
        assert me[EntityAttr.ID] == agent and me[EntityAttr.IS_SELF] == 1
        assert (me[EntityAttr.ROW], me[EntityAttr.COL]) == view.pos
        assert me[EntityAttr.HEALTH] == view.health == 10
        centre = ob["Tile"][len(ob["Tile"]) // 2]
        assert (centre[TileAttr.ROW], centre[TileAttr.COL]) == view.pos and centre[TileAttr.OCCUPIED] == 1
        rows = ob["Entity"][:, EntityAttr.ID] != 0
        dist = np.maximum(abs(ob["Entity"][rows, EntityAttr.ROW] - view.row),
                          abs(ob["Entity"][rows, EntityAttr.COL] - view.col))
        assert (np.diff(dist) >= 0).all() and dist.max() <= 7  # sorted by distance, within vision
        seen = int(rows.sum())
        truth = int(((np.maximum(abs(ent.row - view.row), abs(ent.col - view.col)) <= 7) & ent.alive).sum())
        assert seen == min(truth, env.n_obs)


def test_tile_rows_follow_the_grids_as_forests_are_eaten_and_regrow():
    """The Tile rows come from packed rows kept in step with the few tiles that change (`TileCodes`):
    after every tick each agent's window equals one computed afresh from the grids (moves, deaths,
    harvests, regrowth: a stale tile would show here)."""
    env = nmmo.Env(AllSmall().set("RESOURCE_FOREST_REGROW_PROB", 0.2), seed=4)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    harvests = 0
    for _ in range(60):
        obs, *_ = env.step(random_actions(env, obs, rng))
        tiles, ent = env.realm.state.tiles, env.realm.state.entities
        harvests += int(tiles.depleted.size > 0)
        radius = env.config.PLAYER_VISION_RADIUS
        for agent, ob in obs.items():
            if agent not in env.agents:
                continue
            row, col = env.realm.players[agent].pos
            window = (slice(row - radius, row + radius + 1), slice(col - radius, col + radius + 1))
            tile = ob["Tile"].reshape(2 * radius + 1, 2 * radius + 1, -1)
            assert np.array_equal(tile[..., TileAttr.MATERIAL], tiles.material[window])
            assert np.array_equal(tile[..., TileAttr.OCCUPIED], tiles.occupancy[window] >= 0)
            rows, cols = np.mgrid[window]
            assert np.array_equal(tile[..., TileAttr.ROW], rows) and np.array_equal(tile[..., TileAttr.COL], cols)
    assert harvests > 0 and ent.alive.any()


def test_entity_rows_truncate_when_crowded():
    env = nmmo.Env(config.Small().set("PLAYER_N_OBS", 3), seed=0)
    obs, _ = env.reset()
    assert all(o["Entity"].shape == (3, len(EntityAttr)) for o in obs.values())
    assert any((o["Entity"][:, EntityAttr.ID] != 0).sum() == 3 for o in obs.values())


def test_custom_reward_and_team_spirit():
    class MyEnv(nmmo.Env):
        def reward(self, agent_id):
            return float(self.realm.players[agent_id].food) if agent_id in self.realm.players else -1.0

    env = MyEnv(config.Small(), seed=0)
    obs, _ = env.reset()
    _, rewards, *_ = env.step({})
    assert all(r == env.realm.players[a].food for a, r in rewards.items())

    env = nmmo.Env(config.Small(), seed=0, reward_fn=lambda e, a: float(a))
    env.reset()
    _, rewards, *_ = env.step({})
    assert rewards[5] == 5.0

    # team spirit on a hand-built case: alpha * team mean + (1 - alpha) * own
    got = nmmo.team_spirit(np.array([1.0, 0.0, -1.0, 4.0]), np.array([0, 0, 1, 1]), 0.5)
    assert np.allclose(got, [0.5 * 0.5 + 0.5 * 1.0, 0.25, 0.5 * 1.5 - 0.5, 0.5 * 1.5 + 2.0])


def test_episode_infos_and_log_hook_at_horizon():
    env = nmmo.Env(config.Small().set("HORIZON", 5), seed=0, log_fn=lambda e, a: {"my_scalar": 1.5})
    env.reset()
    for _ in range(5):
        _, _, terms, truncs, infos = env.step({})
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    episode = next(iter(infos.values()))["life"]
    assert set(episode) >= {"lifetime", "player_kills", "equipment", "explore", "forage", "achievement",
                            "my_scalar"}
    assert episode["lifetime"] == 5 and episode["forage"] == 10.0


@pytest.mark.parametrize("conf", [AllSmall, TeamSmall], ids=["AllSystems", "TeamSpirit"])
def test_batched_api_matches_the_dict_api(conf):
    a, b = nmmo.Env(conf(), seed=4), nmmo.Env(conf(), seed=4)
    obs_a, _ = a.reset()
    b.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        actions = random_actions(a, obs_a, rng)
        array = np.tile(np.array(NO_OP_ROW, dtype=np.int64), (b.n_slots, 1))
        for agent, action in actions.items():
            slot = a._id_to_slot[agent]
            array[slot, 0] = action["Move"]["Direction"]
            if "Attack" in action:
                array[slot, 1:] = action["Attack"]["Style"], action["Attack"]["Target"]
        obs_a, rewards, terms, _, _ = a.step(actions)
        batch = b.step_arrays(array)
        for agent, ob in obs_a.items():
            slot = int(np.flatnonzero(batch.agent_ids == agent)[0])
            assert np.array_equal(ob["Entity"], batch.obs.entity[slot])
            assert rewards[agent] == pytest.approx(batch.rewards[slot]) and terms[agent] == batch.terminated[slot]
    with pytest.raises(ValueError, match="shape"):
        b.step_arrays(np.zeros((3, 3), dtype=np.int64))


def test_object_views_read_the_tables():
    env = nmmo.Env(AllSmall(), seed=0)
    env.reset()
    player = env.realm.players[1]
    env.realm.state.entities.food[player.slot] = 3
    assert player.food == 3 and player.max_health == 10 and player.melee_level == 1
    with pytest.raises(AttributeError):
        player.food = 4
    assert all(npc_id < 0 for npc_id in env.realm.npcs)
    with pytest.raises(KeyError, match="no live entity"):
        env.realm.players[12345]


action_strategy = st.fixed_dictionaries(
    {},
    optional={
        "Move": st.fixed_dictionaries({"Direction": st.integers(-2, 6)}),
        "Attack": st.fixed_dictionaries({"Style": st.integers(-1, 3), "Target": st.integers(-1, 102)}),
    },
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), actions=st.lists(action_strategy, min_size=500, max_size=500))
def test_invariants_hold_under_fuzzed_actions(seed, actions):
    """12 examples x 500 ticks = 6k fuzzed steps (20 cost 35 s of a suite that must stay under 10
    minutes); every agent gets a fuzzed (often invalid) action."""
    env = nmmo.Env(AllSmall().set("HORIZON", 600), seed=seed)
    env.reset()
    for tick, action in enumerate(actions):
        env.step({agent: action for agent in env.agents})
        if tick % 25 == 0:
            check_env(env)
    check_env(env)


def test_agents_list_is_empty_only_at_the_end_even_if_everyone_dies_at_once():
    class Foraging(config.Small, config.Resource):
        pass

    env = nmmo.Env(Foraging().set("HORIZON", 40), seed=0)
    env.reset()
    steps = 0
    while env.agents:  # idle agents all starve on the same tick (14)
        _, _, terms, truncs, _ = env.step({})
        steps += 1
    assert env.realm.state.tick == 40 and all(terms[a] or truncs[a] for a in terms) and any(truncs.values())
    assert steps == 39  # one step covered two ticks: the mass death and the respawn tick after it


def test_reset_can_name_the_map():
    from nmmo.core import world

    conf = config.Small()
    held_out = world.map_seed(conf, 2, "eval")
    env = nmmo.Env(conf, seed=0)
    env.reset(options={"map_seed": held_out})
    assert env.realm.map.seed == held_out
    assert np.array_equal(env.realm.map.material, world.get_map(conf, held_out).material)
    with pytest.raises(ValueError, match="map_seed"):
        env.reset(options={"map_seed": -3})


def test_each_observation_belongs_to_its_agent_through_deaths_and_respawns():
    """Regression: spawned slots are appended after the others, so the slot list can be a
    permutation of a contiguous range ([0, 2, 1, 3]); rows must still follow the ids."""
    env = nmmo.Env(AllSmall().set("PLAYER_SPAWN_ATTEMPTS", 8).set("HORIZON", 300), seed=11)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    checked = 0
    while env.agents:
        obs, _, terms, _, _ = env.step(random_actions(env, obs, rng))
        for agent, ob in obs.items():
            assert ob["AgentId"] == agent
            if not terms[agent]:
                assert ob["Entity"][0, EntityAttr.ID] == agent and ob["Entity"][0, EntityAttr.IS_SELF] == 1
                checked += 1
    assert checked > 1000


def test_a_failure_mid_step_leaves_the_env_unusable_until_reset():
    calls = {"n": 0}

    def flaky_reward(env, agent_id):
        calls["n"] += 1
        if calls["n"] == 40:
            raise ArithmeticError("reward bug")
        return 0.0

    env = nmmo.Env(AllSmall().set("PLAYER_N", 8), seed=0, reward_fn=flaky_reward)
    env.reset()
    with pytest.raises(ArithmeticError, match="reward bug"):
        for _ in range(10):
            env.step({})
    tick = env.realm.state.tick
    refused = r"failed in the middle of a step \(ArithmeticError: reward bug\).*reset"
    for call in (lambda: env.step({}), lambda: env.step_arrays(np.full((8, 3), -1))):
        with pytest.raises(RuntimeError, match=refused):
            call()
    assert env.realm.state.tick == tick  # refused before anything moved
    env.reset()
    env.step({})  # a fresh episode works


def test_a_malformed_action_does_not_make_the_env_unusable():
    env = nmmo.Env(AllSmall(), seed=0)
    env.reset()
    with pytest.raises(ValueError, match="unknown action key"):
        env.step({env.agents[0]: {"Jump": 1}})
    env.step({})  # the world never changed: stepping goes on


@st.composite
def random_configs(draw):
    """Small worlds with every combination of systems and capacities the engine should run."""
    systems = [s for s in ("Resource", "Combat", "Progression", "NPC") if draw(st.booleans())]
    if "NPC" in systems and "Combat" not in systems:
        systems.append("Combat")
    radius = draw(st.integers(1, 7))
    center = draw(st.integers(max(4, 2 * radius + 1), 40))
    keys = {"MAP_CENTER": center, "MAP_BORDER": draw(st.integers(radius + 1, radius + 4)),
            "PLAYER_VISION_RADIUS": radius, "PLAYER_N_OBS": draw(st.integers(1, (2 * radius + 1) ** 2)),
            "PLAYER_N": draw(st.integers(1, min(48, 4 * (center - 1)))), "HORIZON": draw(st.integers(5, 60)),
            "PLAYER_TEAM_SIZE": draw(st.integers(1, 4)), "PLAYER_RESPAWN": draw(st.booleans()),
            "PLAYER_SPAWN_ATTEMPTS": draw(st.integers(0, 4)), "IMMORTAL": draw(st.booleans()),
            "REWARD_ACHIEVEMENT": draw(st.booleans()), "MAP_N": 2}
    keys["PLAYER_TEAM_SIZE"] = min(keys["PLAYER_TEAM_SIZE"], keys["PLAYER_N"])
    if "Combat" in systems:
        keys["COMBAT_FRIENDLY_FIRE"] = draw(st.booleans())
    if "NPC" in systems:
        keys.update(NPC_N=draw(st.integers(0, min(24, center * center))),
                    NPC_VISION_RADIUS=draw(st.integers(1, keys["MAP_BORDER"])))
    return config.from_spec({"preset": "Small", "systems": systems, "keys": keys})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conf=random_configs(), seed=st.integers(0, 2**16))
def test_invariants_hold_in_random_configs(conf, seed):
    """Random worlds (systems, sizes, vision, teams, respawn, NPCs) stepped with random valid
    actions: the tables stay consistent and the API answers as it should."""
    env = nmmo.Env(conf, seed=seed)
    obs, _ = env.reset()
    rng = np.random.default_rng(seed)
    space = env.observation_space(1)
    while env.agents:
        obs, rewards, terms, truncs, infos = env.step(random_actions(env, obs, rng))
        assert all(space.contains(ob) for ob in obs.values())
        check_env(env)
    assert env.done or not conf.PLAYER_RESPAWN or conf.PLAYER_SPAWN_ATTEMPTS == 0


def test_the_plain_action_fast_path_reads_as_parse_action_does():
    """`parse_actions` reads a step of plain actions inline; any other form falls back to
    `parse_action`. Both must give the same indices for every form, alone or mixed."""
    from nmmo.core.actions import parse_action, parse_actions

    forms = [{"Move": {"Direction": 2}}, {"Attack": {"Style": 1, "Target": 5}},
             {"Move": {"Direction": 0}, "Attack": {"Style": 2, "Target": 100}}, {},
             {"Move": None}, {"Move": {"Direction": np.int64(3)}}, {"Attack": {"Style": nmmo.Style.MELEE, "Target": 1}},
             {"Move": {"Direction": -7}}, {"Move": {"Direction": True}}]
    for keep in (4, len(forms)):  # plain forms only (the fast path), then with the others
        actions = {agent: forms[agent % keep] for agent in range(1, 40)}
        ids = {agent: agent - 1 for agent in actions}
        if keep == len(forms):
            with pytest.raises(ValueError, match=r"agent 8: action\['Move'\]\['Direction'\] must be an integer"):
                parse_actions(actions, ids, 40)
            actions = {a: f for a, f in actions.items() if f != forms[-1]}
        slots, agent_ids, indices = parse_actions(actions, ids, 40)
        assert agent_ids == list(actions) and slots.tolist() == [a - 1 for a in actions]
        assert indices.tolist() == [list(parse_action(a, f)) for a, f in actions.items()]


def test_held_observations_never_change_once_some_slots_are_empty():
    """With deaths the live slots are no longer one run and the dict observations are views picked
    from the step's buffers: holding any of them keeps that buffer out of reuse."""
    env = nmmo.Env(AllSmall().set("PLAYER_RESPAWN", False), seed=4)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    held, copies = [], []
    for _ in range(60):
        obs, *_ = env.step(random_actions(env, obs, rng))
        if len(env.agents) < env.n_slots:  # a gap: the picked views, not one slice
            held.append(obs)
            copies.append({a: (o["Tile"].copy(), o["Entity"].copy(), o["ActionTargets"]["Move"]["Direction"].copy())
                           for a, o in obs.items()})
    assert len(held) >= 5
    for obs, copy in zip(held, copies, strict=True):
        for agent, (tile, entity, move) in copy.items():
            ob = obs[agent]
            assert np.array_equal(ob["Tile"], tile) and np.array_equal(ob["Entity"], entity)
            assert np.array_equal(ob["ActionTargets"]["Move"]["Direction"], move)


def test_the_collector_waits_for_a_step_and_is_restored_after_it():
    """`step` and `reset` pause the cyclic collector (a 1024-agent step's dicts all outlive it) and
    restore it however they end; a collector the caller disabled stays disabled."""
    import gc

    seen = []

    def reward(env, agent):
        seen.append(gc.isenabled())
        if env.realm.state.tick == 3:
            raise RuntimeError("a custom reward that fails")
        return 0.0

    assert gc.isenabled()
    env = nmmo.Env(AllSmall(), seed=0, reward_fn=reward)
    env.reset()
    env.step({})
    assert seen and not any(seen) and gc.isenabled()
    env.step({})
    with pytest.raises(RuntimeError, match="a custom reward that fails"):
        env.step({})
    assert gc.isenabled()
    gc.disable()
    try:
        env.reset()
        env.step({})
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_recycled_observation_buffers_equal_fresh_ones():
    """A recycled buffer is cleared of only what the new build does not overwrite (`_clear`,
    `_clear_rows`): after every tick, with deaths and respawns, it must hold exactly what a fresh
    builder writes into a zeroed buffer."""
    from nmmo.core.obs import ObservationBuilder

    env = nmmo.Env(AllSmall().set("PLAYER_N_OBS", 6), seed=5)
    obs, _ = env.reset()
    rng = np.random.default_rng(1)
    deaths = 0
    for _ in range(40):
        obs, _, terminated, *_ = env.step(random_actions(env, obs, rng))
        deaths += sum(terminated.values())
        fresh = ObservationBuilder(env.config, env.n_slots)
        live = np.flatnonzero(env.realm.state.entities.alive[: env.n_slots])
        # the agents that died this tick were observed too: the env's buffer has their final rows
        died = np.flatnonzero(env._obs.move_mask[:, 4] == 1)
        died = died[~np.isin(died, live)]
        expected = fresh.observe(env.realm.state, live, died, env)
        for name, values in expected.fields().items():
            assert np.array_equal(env._obs.fields()[name], values), name
        assert np.array_equal(env._obs.entity_rows, expected.entity_rows)
    assert deaths > 0
