from collections import deque

import numpy as np
import pytest

import nmmo
import scripted
from nmmo.core.enums import Direction, EntityAttr, Material, NPCType, Style, TileAttr
from scripted.core import stack, step_towards, walk_distances

R = 7
SIDE = 2 * R + 1
N_OBS = 100
DELTA = {Direction.NORTH: (-1, 0), Direction.SOUTH: (1, 0), Direction.EAST: (0, 1), Direction.WEST: (0, -1)}


def config():
    return nmmo.config.Default()


AT = (26, 80)  # in the outer band (10 tiles from the top edge of the default 128-tile map)


def make_obs(material: np.ndarray, me: dict | None = None, others: list[dict] | None = None, at=AT):
    """A hand-built observation: `material` is the 15x15 window around the agent at `at`."""
    row0, col0 = at[0] - R, at[1] - R
    rr, cc = np.divmod(np.arange(SIDE * SIDE), SIDE)
    entities = [{"ID": 1, "ROW": at[0], "COL": at[1], "HEALTH": 10, "FOOD": 10, "WATER": 10,
                 "COMBAT_LEVEL": 3, **(me or {})}] + list(others or [])
    occupied = np.zeros((SIDE, SIDE), dtype=bool)
    entity = np.zeros((N_OBS, len(EntityAttr)), dtype=np.int32)
    for i, e in enumerate(entities):
        for key, value in e.items():
            entity[i, EntityAttr[key]] = value
        occupied[e["ROW"] - row0, e["COL"] - col0] = True
    entity[0, EntityAttr.IS_SELF] = 1
    tile = np.zeros((SIDE * SIDE, 4), dtype=np.int16)
    tile[:, TileAttr.MATERIAL] = material.ravel()
    tile[:, TileAttr.OCCUPIED] = occupied.ravel()
    tile[:, TileAttr.ROW] = row0 + rr
    tile[:, TileAttr.COL] = col0 + cc
    move = np.ones(5, dtype=np.int8)
    for d, (dr, dc) in DELTA.items():
        m = material[R + dr, R + dc]
        enterable = m in (Material.GRASS, Material.SCRUB, Material.FOREST, Material.LAVA)
        move[d] = enterable and not occupied[R + dr, R + dc]
    target = np.zeros(N_OBS + 1, dtype=np.int8)
    target[N_OBS] = 1
    style = np.zeros(3, dtype=np.int8)
    for i, e in enumerate(entities[1:], start=1):
        dist = max(abs(e["ROW"] - at[0]), abs(e["COL"] - at[1]))
        if dist <= 4:
            target[i] = 1
            style[[s for s, reach in enumerate((1, 3, 4)) if dist <= reach]] = 1
    return {"Tile": tile, "Entity": entity,
            "ActionTargets": {"Move": {"Direction": move}, "Attack": {"Style": style, "Target": target}},
            "AgentId": 1, "CurrentTick": 0}


def grass():
    return np.full((SIDE, SIDE), Material.GRASS, dtype=np.int16)


def plain_bfs(free: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """The obviously-correct per-tile BFS the vectorized one is checked against."""
    ref = np.full(free.shape, -1)
    ref[start] = 0
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in DELTA.values():
            a, b = r + dr, c + dc
            if 0 <= a < free.shape[0] and 0 <= b < free.shape[1] and free[a, b] and ref[a, b] < 0:
                ref[a, b] = ref[r, c] + 1
                queue.append((a, b))
    return ref


def test_walk_distances_match_a_plain_bfs():
    rng = np.random.default_rng(0)
    free = rng.random((30, SIDE, SIDE)) < 0.7
    free[:, R, R] = True
    dist = walk_distances(free)
    for k in range(30):
        assert np.array_equal(plain_bfs(free[k], (R, R)), dist[k])


def test_step_towards_follows_a_shortest_path():
    rng = np.random.default_rng(1)
    free = rng.random((40, SIDE, SIDE)) < 0.75
    free[:, R, R] = True
    dist = walk_distances(free)
    reachable = [np.flatnonzero(d.ravel() > 0) for d in dist]
    goals = np.array([rng.choice(r) if r.size else 0 for r in reachable])
    has = np.array([r.size > 0 for r in reachable])
    moves = step_towards(dist, goals, has)
    for k in np.flatnonzero(has):
        dr, dc = DELTA[Direction(moves[k])]
        gr, gc = divmod(goals[k], SIDE)
        # the neighbour stepped onto is one step closer to the goal
        assert free[k, R + dr, R + dc]
        assert plain_bfs(free[k], (R + dr, R + dc))[gr, gc] == dist[k, gr, gc] - 1


def test_forage_goes_for_the_scarcer_resource():
    material = grass()
    material[R, R + 3] = Material.FOREST  # food three steps east
    material[R - 4, R] = Material.WATER  # water: stand three steps north to drink
    # fresh bots: a bot commits to an errand until it is done, so one bot would keep going north
    thirsty = scripted.Forage(config(), seed=0).act({1: make_obs(material, me={"FOOD": 8, "WATER": 3})})
    hungry = scripted.Forage(config(), seed=0).act({1: make_obs(material, me={"FOOD": 3, "WATER": 8})})
    assert thirsty[1]["Move"]["Direction"] == Direction.NORTH
    assert hungry[1]["Move"]["Direction"] == Direction.EAST


def test_forage_plans_around_walls_and_npcs():
    material = grass()
    material[R - 1 : R + 2, R + 1] = Material.STONE  # wall just east
    material[R, R + 3] = Material.FOREST
    bot = scripted.Forage(config(), seed=0)
    move = bot.act({1: make_obs(material, me={"FOOD": 2})})[1]["Move"]["Direction"]
    assert move in (Direction.NORTH, Direction.SOUTH)  # around the wall, never into it
    hostile = {"ID": -5, "ROW": AT[0] - 2, "COL": AT[1], "NPC_TYPE": NPCType.HOSTILE, "COMBAT_LEVEL": 20, "HEALTH": 20}
    move = bot.act({1: make_obs(material, me={"FOOD": 2}, others=[hostile])})[1]["Move"]["Direction"]
    assert move == Direction.SOUTH  # the north way passes next to a hostile NPC


def test_forage_explores_away_from_its_spawn_when_sated_and_no_explore_waits_by_water():
    material = grass()
    material[R - 1, R] = Material.WATER  # drinking where it stands
    material[R + 1, R - 2 : R + 3] = Material.FOREST  # food close by
    spawn, later = (26, 80), (26, 84)  # in the outer band (10 tiles from the top edge)
    bot = scripted.Forage(config(), seed=0)
    bot.act({1: make_obs(material, at=spawn)})  # its first position is its spawn
    move = bot.act({1: make_obs(material, at=later)})[1]["Move"]["Direction"]
    assert move in (Direction.EAST, Direction.SOUTH)  # both lead farther (L1) from the spawn
    stay = scripted.ForageNoExplore(config(), seed=0)
    stay.act({1: make_obs(material, at=spawn)})
    assert stay.act({1: make_obs(material, at=later)})[1]["Move"]["Direction"] == Direction.STAY


def test_meander_never_walks_into_lava_or_blocked_tiles():
    material = grass()
    material[R - 1, R] = Material.LAVA
    material[R + 1, R] = Material.WATER
    material[R, R + 1] = Material.STONE
    bot = scripted.Meander(config(), seed=0)
    moves = {bot.act({1: make_obs(material)})[1]["Move"]["Direction"] for _ in range(60)}
    assert moves <= {Direction.WEST, Direction.STAY} and Direction.WEST in moves


@pytest.mark.parametrize(("distance", "style"), [(1, Style.MELEE), (3, Style.RANGE), (4, Style.MAGE)])
def test_combat_attacks_weaker_entities_with_the_style_that_reaches(distance, style):
    weak = {"ID": -3, "ROW": AT[0], "COL": AT[1] + distance, "NPC_TYPE": NPCType.PASSIVE, "COMBAT_LEVEL": 1,
            "HEALTH": 3}
    action = scripted.Combat(config(), seed=0).act({1: make_obs(grass(), others=[weak])})[1]
    assert action["Attack"] == {"Style": style, "Target": 1}


def test_combat_leaves_equals_alone_and_flees_stronger_aggressors():
    equal = {"ID": 9, "ROW": AT[0], "COL": AT[1] + 1, "COMBAT_LEVEL": 3, "HEALTH": 10}
    action = scripted.Combat(config(), seed=0).act({1: make_obs(grass(), others=[equal])})[1]
    assert "Attack" not in action
    brute = {"ID": -4, "ROW": AT[0] - 1, "COL": AT[1], "NPC_TYPE": NPCType.HOSTILE, "COMBAT_LEVEL": 30, "HEALTH": 30}
    action = scripted.Combat(config(), seed=0).act({1: make_obs(grass(), others=[brute])})[1]
    assert action["Move"]["Direction"] == Direction.SOUTH and "Attack" not in action


@pytest.mark.parametrize("bot", ["Meander", "Forage", "Combat", "ForageNoExplore", "CombatNoExplore"])
def test_bots_drive_a_real_env_through_the_public_api(bot):
    conf = nmmo.config.Default().set("PLAYER_N", 32).set("HORIZON", 40)
    env = nmmo.Env(conf, seed=0)
    policy = nmmo.policy.load_policy_class(f"scripted:{bot}")(conf)
    obs, _ = env.reset()
    invalid = 0
    while env.agents:
        obs, _, _, _, infos = env.step(policy.act({a: o for a, o in obs.items() if a in env.agents}))
        invalid += sum("invalid_actions" in info for info in infos.values())
    assert invalid == 0  # every action a bot sends is valid under the masks
    assert stack(obs).n == len(obs)


def test_combat_forages_when_the_config_has_no_combat():
    conf = nmmo.config.Small()  # no game systems
    weak = {"ID": -3, "ROW": 30, "COL": 31, "NPC_TYPE": NPCType.PASSIVE, "COMBAT_LEVEL": 1, "HEALTH": 3}
    action = scripted.Combat(conf, seed=0).act({1: make_obs(grass(), others=[weak], at=(30, 30))})[1]
    assert "Attack" not in action
