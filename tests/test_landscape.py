"""The value landscape (`nmmo.envs.landscape`): the standard agent's observations are the env's own for a
fresh agent alone on a tile, every walkable tile gets its own estimate from a fresh memory, and the
shipped baseline's landscape on the demo's map has structure."""

import numpy as np
import pytest

import nmmo
from nmmo.core.enums import EntityAttr, Material
from nmmo.core.rules import WALKABLE
from nmmo.envs.landscape import BLANK, NAME, paint_landscape, standard_cells, standard_observations, value_landscape


def test_a_standard_agent_sees_what_the_env_shows_a_fresh_agent_alone():
    """Built for the tile of a real agent that sees nobody, the observation is the env's, array for
    array; only the TEAM column is the scratch env's first agent's."""
    conf = nmmo.config.Small().set("PLAYER_N", 6)
    env = nmmo.Env(conf, seed=1)
    obs, _ = env.reset()
    alone = [a for a, o in obs.items() if not o["Entity"][1:, EntityAttr.ID].any()]
    assert alone, "the seed should leave some agent alone"
    for agent in alone:
        real = obs[agent]
        me = real["Entity"][0]
        mine = standard_observations(env, [[me[EntityAttr.ROW], me[EntityAttr.COL]]], first_id=agent)[agent]
        assert mine["AgentId"] == real["AgentId"] and mine["CurrentTick"] == real["CurrentTick"] == 0
        assert np.array_equal(mine["Tile"], real["Tile"]) and mine["Tile"].dtype == real["Tile"].dtype
        entity = mine["Entity"].copy()
        entity[0, EntityAttr.TEAM] = me[EntityAttr.TEAM]
        assert np.array_equal(entity, real["Entity"]) and entity.dtype == real["Entity"].dtype
        for part, masks in real["ActionTargets"].items():
            for key, mask in masks.items():
                assert np.array_equal(mine["ActionTargets"][part][key], mask), (part, key)
                assert mine["ActionTargets"][part][key].dtype == mask.dtype


class WaterInView:
    """A stand-in critic: the value of an observation is the water it sees (plus a trace of its
    memory, which must be empty), and it records every id it was asked about."""

    def __init__(self) -> None:
        self.last_values: dict[int, float] = {}
        self.seen: dict[int, int] = {}
        self.calls = 0

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        self.calls += 1
        values = {}
        for agent, ob in observations.items():
            values[agent] = float((ob["Tile"][:, 0] == Material.WATER).sum()) + 1000.0 * (agent in self.seen)
            self.seen[agent] = self.seen.get(agent, 0) + 1
        self.last_values = values
        return {}


def test_every_walkable_tile_gets_its_own_estimate_and_the_rest_the_minimum():
    conf = nmmo.config.Small()
    env = nmmo.Env(conf, seed=0)
    env.reset()
    critic = WaterInView()
    landscape = value_landscape(critic, env, batch=100, progress=False)
    walkable = WALKABLE[env.material]
    cells = standard_cells(env.material)
    assert landscape.shape == env.material.shape and landscape.dtype == np.float32
    assert len(cells) == walkable.sum() and critic.calls == -(-len(cells) // 100)
    assert all(count == 1 for count in critic.seen.values())  # every batch had fresh ids: no memory
    radius = conf.PLAYER_VISION_RADIUS
    water = np.pad(env.material == Material.WATER, radius).astype(int)
    for row, col in cells[:: max(1, len(cells) // 50)]:  # each value is its own tile's window
        window = water[row : row + 2 * radius + 1, col : col + 2 * radius + 1]
        assert landscape[row, col] == window.sum()
    assert (landscape[~walkable] == landscape[walkable].min()).all()  # the cold end, as BLANK says
    paint_landscape(env, WaterInView(), progress=False)
    assert np.array_equal(env.overlays.get(NAME), landscape) and env.overlays.blank(NAME) == BLANK


def test_a_policy_without_value_estimates_has_no_landscape():
    env = nmmo.Env(nmmo.config.Small(), seed=0)
    env.reset()
    with pytest.raises(ValueError, match="no value estimates"):
        value_landscape(nmmo.policy.Random(env.config), env)


def test_the_baseline_landscape_of_the_demo_map_has_structure():
    """On the demo's map (held-out map 0 of the tournament config, evaluation/demo.py), the shipped
    baseline's critic tells walkable tiles apart: many distinct values, a spread of at least 5 % of
    the range; it is the same whatever the batch size (no memory leaks from batch to batch) and the
    playing env is untouched."""
    pytest.importorskip("torch")
    from nmmo.policy import load_policy_class

    conf = nmmo.config.load("tournament")
    env = nmmo.Env(conf, seed=0)
    env.reset(options={"map_seed": nmmo.core.world.map_seed(conf, 0, "eval")})
    before = env.frame()
    policy = load_policy_class("baseline:small")(conf)
    landscape = value_landscape(policy, env, progress=False)
    cells = standard_cells(env.material)
    values = landscape[cells[:, 0], cells[:, 1]]
    assert np.unique(values).size >= 50
    assert values.std() >= 0.05 * np.ptp(values)
    assert (landscape[~WALKABLE[env.material]] == values.min()).all()
    one_batch = value_landscape(policy, env, batch=len(cells), progress=False)
    np.testing.assert_allclose(one_batch, landscape, atol=1e-5)
    assert all(np.array_equal(before[k], v) for k, v in env.frame().items()) and env.tick == 0
