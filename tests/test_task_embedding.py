"""The versioned task embedding (`nmmo.tasks.embedding`): version 1 frozen (what baseline:tasks
reads), version 2 carrying every argument of every leaf (it decodes back exactly), the config key
TASK_EMBEDDING choosing the observation's, a version-1 network playing on version 2, and NearTile."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import nmmo
from nmmo.config import ConfigError
from nmmo.tasks import EMBEDDING_SIZE, decode, embed, embedding_size, load_task_set, task_set_from_data
from nmmo.tasks.embedding import EMBEDDING_SIZES, convert, version_of
from nmmo.tasks.embedding_v2 import CHOICES, HEADER, LEAF, NUMBERS
from nmmo.tasks.flat import flatten

from .systems.helpers import add_player, grass_map, make_config, make_state

#: The sets shipped before version 2 (heldout_v1 was heldout); their version-1 vectors must never change.
V1_SETS = ("combat", "exploration", "foraging", "heldout_v1", "npc_hunting", "team", "train")
V1_SHA256 = "1cf4619d97445963a12430551cc5433687ead66b2d8003027413d21287a5b68a"
DIRECTED = ("directed", "heldout")


def specs(*names):
    return [spec for name in names for spec in load_task_set(name)]


def test_version_1_is_frozen_byte_for_byte():
    rows = np.stack([embed(spec, 1) for spec in specs(*V1_SETS)])
    assert rows.shape == (86, 276) and hashlib.sha256(rows.tobytes()).hexdigest() == V1_SHA256


def test_version_2_round_trips_every_argument_of_every_shipped_task():
    for spec in specs(*V1_SETS, *DIRECTED):
        vector = embed(spec)
        assert vector.shape == (EMBEDDING_SIZE,) == (EMBEDDING_SIZES[2],) and vector.dtype == np.float32
        assert decode(vector) == flatten(spec), spec.name  # header, leaves, and each leaf's every argument
        assert np.array_equal(convert(vector[None], 1)[0], embed(spec, 1)), spec.name  # what v1 networks read
    directed = specs(*DIRECTED)
    assert len({embed(spec).tobytes() for spec in directed}) == len(directed)


def test_choices_are_one_hot_and_coordinates_linear_in_tiles():
    quads = task_set_from_data([{"predicate": "SeizeQuadCenter", "args": {"quadrant": q, "num_ticks": 5}}
                                for q in ("first", "second", "third", "fourth")])
    blocks = np.stack([embed(spec)[HEADER + CHOICES: HEADER + LEAF] for spec in quads])
    assert (blocks.sum(axis=1) == 1).all() and len({row.tobytes() for row in blocks}) == 4
    near = task_set_from_data([{"predicate": "NearTile", "args": {"row": r, "col": 60, "dist": 2}}
                               for r in (20, 21, 140)])
    rows = [embed(spec)[HEADER + NUMBERS] for spec in near]
    assert rows[1] - rows[0] == pytest.approx(1 / 128) and rows[2] == pytest.approx(140 / 128)
    with pytest.raises(ValueError, match="version-2 task embedding has 730 floats"):
        decode(np.zeros(276, np.float32))
    with pytest.raises(ValueError, match="version 1 does not carry its tasks"):
        convert(np.zeros((1, 276), np.float32), 2)
    with pytest.raises(ValueError, match="unknown task embedding version 3"):
        embed(near[0], 3)
    assert version_of(276) == 1 and embedding_size(2) == 730


def test_the_writers_fill_the_widths_the_observation_layout_declares():
    """`nmmo.core.layout` sizes the Task field without importing `nmmo.tasks` (which sits above it):
    its table of widths and the versions' writers must agree."""
    from nmmo.core.layout import TASK_WIDTHS
    from nmmo.tasks.embedding import VERSIONS

    assert TASK_WIDTHS == EMBEDDING_SIZES and set(TASK_WIDTHS) == set(VERSIONS)


def test_the_config_key_chooses_the_observations_version():
    config = nmmo.config.load("train_small").set("HORIZON", 4)
    for version in (1, 2):
        env = nmmo.Env(config.set("TASK_EMBEDDING", version), tasks="heldout", seed=0)
        obs, _ = env.reset(seed=0)
        assert next(iter(obs.values()))["Task"].shape == (embedding_size(version),)
        assert env.observation_space(next(iter(obs)))["Task"].shape == (embedding_size(version),)
    with pytest.raises(ConfigError, match="TASK_EMBEDDING"):
        config.set("TASK_EMBEDDING", 3)


def test_a_network_trained_on_version_1_plays_the_same_on_version_2(tmp_path):
    """A checkpoint whose task input is version 1's width (as the first baseline:tasks was) plays
    on version 2's observations: each vector rewritten as version 1's, the same actions on either."""
    import torch

    from baselines import checkpoint, model
    from baselines.policy import checkpoint_class

    config = nmmo.config.load("train_small").set("HORIZON", 8).set("TASKS", "heldout_v1")
    torch.manual_seed(0)
    network = model.Policy(side=2 * config.PLAYER_VISION_RADIUS + 1, task_dim=embedding_size(1))
    path = checkpoint.save(tmp_path / "v1.pt", {"model": network.state_dict(), "model_kwargs": network.kwargs,
                                                "step": 0})
    actions = []
    for version in (1, 2):
        world = config.set("TASK_EMBEDDING", version)
        env, policy = nmmo.Env(world, seed=3), checkpoint_class(str(path))(world, seed=0)
        env.reset(seed=3)
        batch = env.observations()
        assert batch["task"].shape[1] == embedding_size(version)
        actions.append(policy.act_arrays(batch))
    assert np.array_equal(actions[0], actions[1])


def test_near_tile_is_one_within_dist_and_grows_on_the_way():
    config = make_config(PLAYER_N=2, NPC_N=1, MAP_BORDER=3, MAP_CENTER=10, PLAYER_VISION_RADIUS=2, HORIZON=100)
    state = make_state(grass_map(16, 3), 2, 0)
    add_player(state, 0, 5, 5, team=0)
    add_player(state, 1, 12, 12, team=1)
    from nmmo.tasks import TaskState

    near = task_set_from_data([{"predicate": "NearTile", "args": {"row": 6, "col": 7, "dist": 2}}])
    tasks = TaskState(near, config)
    tasks.reset(state, assignment=np.zeros(2, dtype=np.int64))
    step = tasks.evaluate(state)
    assert step.progress[0] == 1.0 and step.completed[0]  # Chebyshev 2 from (6, 7)
    assert step.progress[1] == pytest.approx(1 - (6 - 2) / 5)  # 6 away, 4 beyond dist, MAP_CENTER // 2 = 5
    state.entities.alive[1] = False
    assert tasks.evaluate(state).progress[1] == 0.0
