"""Forage's memory, planning and safety: cheap behavioural checks on hand-built observations, plus
short real runs. Nothing here compares against numbers the bots produced in an earlier run."""

from collections import Counter, deque

import numpy as np
import pytest

import nmmo
import scripted
from nmmo.core.enums import Direction, Material, NPCType
from scripted import memory
from scripted.memory import FAR, UNKNOWN, closed_border, distance_field
from tests.bots.test_bots import AT, DELTA, R, config, grass, make_obs

BOTS = ["Meander", "Forage", "Combat", "ForageNoExplore", "CombatNoExplore"]


def move_of(actions: dict) -> Direction:
    return Direction(actions[1]["Move"]["Direction"])


def test_memory_pools_what_every_agent_sees_and_reset_clears_it():
    bot = scripted.Forage(config(), seed=0)
    first, second = grass(), grass()
    first[R, R + 2] = Material.FOREST
    second[R - 3, R] = Material.WATER
    far_away = (AT[0] + 40, AT[1] + 30)
    bot.act({1: make_obs(first), 2: make_obs(second, at=far_away)})
    seen = bot.memory.material
    assert seen[AT[0], AT[1] + 2] == Material.FOREST  # map coordinates, from agent 1's window
    assert seen[far_away[0] - 3, far_away[1]] == Material.WATER  # and from agent 2's
    assert (seen != UNKNOWN).sum() == 2 * (2 * R + 1) ** 2  # nothing but the two windows
    bot.reset(1)  # a new episode: a new map
    assert (bot.memory.material == UNKNOWN).all()
    assert len(bot.book.goal) == 0


def test_a_hungry_agent_walks_to_a_forest_it_saw_before_out_of_view():
    material = grass()
    material[R, R + 6] = Material.FOREST  # the only forest: east edge of the first view
    material[R - 2, R - 6] = Material.WATER
    bot = scripted.Forage(config(), seed=0)
    bot.act({1: make_obs(material)})
    away = grass()
    away[R - 2, R + 1] = Material.WATER  # the same lake, seen from 7 tiles west
    for step in range(3):  # the forest stays out of view (more than 7 tiles east) and is remembered
        at = (AT[0], AT[1] - 7 + step)
        window = np.roll(away, -step, axis=1)
        assert not (window == Material.FOREST).any()
        assert move_of(bot.act({1: make_obs(window, me={"FOOD": 3, "WATER": 9}, at=at)})) == Direction.EAST


@pytest.mark.parametrize("seed", range(4))
def test_a_thirsty_agent_searches_unseen_ground_nearby_before_a_long_walk_to_known_water(seed):
    bot = scripted.Forage(config(), seed=seed)
    here = grass()
    here[R, R] = Material.FOREST  # fed on the spot: water is the errand
    teammate = grass()
    teammate[R, 0] = Material.WATER  # the only water known: 21 steps west, through known ground
    west = (AT[0], AT[1] - 15)
    actions = bot.act({1: make_obs(here, me={"FOOD": 10, "WATER": 4}), 2: make_obs(teammate, at=west)})
    # unseen ground lies 7 steps north, south and east: a search there beats the 21-step walk
    assert move_of(actions) != Direction.WEST
    bot = scripted.Forage(config(), seed=seed)
    teammate[R, 0], teammate[R, 10] = Material.GRASS, Material.WATER  # known water 11 steps west
    actions = bot.act({1: make_obs(here, me={"FOOD": 10, "WATER": 4}), 2: make_obs(teammate, at=west)})
    assert move_of(actions) == Direction.WEST  # near enough: no search


@pytest.mark.parametrize("bot", ["Forage", "Combat", "ForageNoExplore"])
@pytest.mark.parametrize("seed", range(4))
def test_no_step_onto_lava_even_when_the_food_lies_beyond_it(bot, seed):
    material = grass()
    material[R - 1, :] = Material.LAVA  # a lava row just north ...
    material[R - 3, R] = Material.FOREST  # ... between the hungry agent and the only forest
    material[R + 2, R] = Material.WATER
    policy = getattr(scripted, bot)(config(), seed=seed)
    for _ in range(5):
        assert move_of(policy.act({1: make_obs(material, me={"FOOD": 2})})) != Direction.NORTH


@pytest.mark.parametrize("bot", ["Forage", "ForageNoExplore", "Combat"])
def test_flees_a_hostile_npc_and_not_into_lava(bot):
    material = grass()
    material[R, R - 1] = Material.LAVA  # straight away from the NPC is lava
    hostile = {"ID": -7, "ROW": AT[0], "COL": AT[1] + 2, "NPC_TYPE": NPCType.HOSTILE, "COMBAT_LEVEL": 30,
               "HEALTH": 30}
    move = move_of(getattr(scripted, bot)(config(), seed=0).act({1: make_obs(material, others=[hostile])}))
    assert move in (Direction.NORTH, Direction.SOUTH)  # not toward it, not staying, not into lava
    far_hostile = dict(hostile, COL=AT[1] + 6)  # within its berth but far enough to step straight away
    move = move_of(scripted.Forage(config(), seed=0).act({1: make_obs(grass(), others=[far_hostile])}))
    assert move == Direction.WEST


def test_forage_keeps_out_of_a_hostile_npcs_reach_on_its_way():
    material = grass()
    material[R, R - 6] = Material.FOREST  # food west ...
    material[R + 3, R] = Material.WATER
    hostile = {"ID": -7, "ROW": AT[0] - 7, "COL": AT[1] - 3, "NPC_TYPE": NPCType.HOSTILE, "COMBAT_LEVEL": 30,
               "HEALTH": 30}  # ... and a hostile NPC north-west, 7 tiles away: out of its vision (5)
    move = move_of(scripted.Forage(config(), seed=0).act({1: make_obs(material, me={"FOOD": 3}, others=[hostile])}))
    assert move in (Direction.WEST, Direction.SOUTH)  # onward, never nearer to the NPC than its berth


def plain_bfs(open_: np.ndarray, sources: np.ndarray, heads: np.ndarray, width: int) -> np.ndarray:
    """Obviously correct reference: Dijkstra with unit steps, sources entering at their head start."""
    dist = np.full(open_.size, FAR, dtype=np.int64)
    order = sorted((int(h), int(s)) for s, h in zip(sources, heads, strict=True) if open_[s])
    queue = deque()
    for h, s in order:
        dist[s] = min(dist[s], h)
    pending = deque(order)
    step = 0
    while pending or queue:
        while pending and pending[0][0] <= step:
            h, s = pending.popleft()
            if dist[s] == h:
                queue.append(s)
        nxt = deque()
        while queue:
            t = queue.popleft()
            for d in (-width, width, -1, 1):
                u = t + d
                if open_[u] and dist[u] > dist[t] + 1:
                    dist[u] = dist[t] + 1
                    nxt.append(u)
        queue = nxt
        step += 1
    return dist


@pytest.mark.parametrize("dense", [True, False])
def test_distance_field_matches_a_plain_search(dense, monkeypatch):
    monkeypatch.setattr(memory, "DENSE_TILES", 1 << 30 if dense else 0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        size = int(rng.integers(8, 40))
        open_ = closed_border(rng.random(size * size) < 0.7, size)
        sources = rng.choice(size * size, size=int(rng.integers(1, 12)), replace=False)
        heads = rng.integers(0, 5, size=sources.size)
        ref = plain_bfs(open_, sources, heads, size)
        every = np.flatnonzero(open_)
        full = distance_field(open_, sources, heads, size, every, limit=10**4)
        assert np.array_equal(np.minimum(full, FAR), np.minimum(ref, FAR))
        # stopping early still gets the tiles asked for right
        ask = rng.choice(every, size=3)
        early = distance_field(open_, sources, heads, size, ask, limit=10**4)
        assert np.array_equal(early[ask], full[ask])


class Plenty(nmmo.config.Small, nmmo.config.Resource, nmmo.config.Progression):
    """A small map with only food and water to worry about, and plenty of both."""

    MAP_WATER_THRESHOLD = 0.4
    MAP_GRASS_THRESHOLD = 0.6


def starvation_deaths(policy_spec: str, seed: int, ticks: int = 160) -> Counter:
    conf = Plenty().set("PLAYER_N", 4).set("HORIZON", ticks)
    env = nmmo.Env(conf, seed=seed)
    policy = nmmo.policy.load_policy_class(policy_spec)(conf)
    if hasattr(policy, "reset"):
        policy.reset(seed)
    obs, _ = env.reset()
    deaths = Counter()
    while env.agents:
        obs, _, terminated, _, _ = env.step(policy.act({a: o for a, o in obs.items() if a in env.agents}))
        deaths["died"] += sum(terminated.values())
    return deaths


@pytest.mark.parametrize("seed", [0, 1])
def test_foragers_with_food_and_water_in_reach_never_starve(seed):
    assert starvation_deaths("idle", seed)["died"] > 0  # the run is long enough to starve in
    assert starvation_deaths("scripted:Forage", seed)["died"] == 0


@pytest.mark.parametrize("bot", BOTS)
def test_a_bot_never_chooses_a_step_onto_lava_in_a_real_game(bot):
    conf = nmmo.config.load("small_maps").set("PLAYER_N", 32).set("HORIZON", 60)
    env = nmmo.Env(conf, seed=3)
    policy = getattr(scripted, bot)(conf, seed=3)
    obs, _ = env.reset()
    while env.agents:
        live = {a: o for a, o in obs.items() if a in env.agents}
        actions = policy.act(live)
        for agent, action in actions.items():
            direction = action["Move"]["Direction"]
            if direction != Direction.STAY:
                dr, dc = DELTA[Direction(direction)]
                tiles = live[agent]["Tile"].reshape(2 * R + 1, 2 * R + 1, -1)
                assert tiles[R + dr, R + dc, 0] != Material.LAVA
        obs, *_ = env.step(actions)


def test_the_same_seed_gives_the_same_actions():
    conf = nmmo.config.load("small_maps").set("PLAYER_N", 16).set("HORIZON", 40)
    runs = []
    for _ in range(2):
        env = nmmo.Env(conf, seed=5)
        policy = scripted.Combat(conf, seed=11)
        obs, _ = env.reset()
        actions = []
        while env.agents:
            step = policy.act({a: o for a, o in obs.items() if a in env.agents})
            actions.append(step)
            obs, *_ = env.step(step)
        runs.append(actions)
    assert runs[0] == runs[1]
