"""One observation field added to the layout (`nmmo.core.layout.FIELDS`) reaches every consumer: the
env's dicts, spaces and batches, the vector buffers, a submission's worker across the channel, an
in-process policy's batch and the neural policy's encoder input; nothing else is edited."""

import numpy as np
import pytest
import torch

import nmmo
from evaluation.sandbox.channel import decode_observations, encode_observations
from evaluation.submission import InProcessPolicy, SubprocessPolicy
from nmmo.core import layout
from nmmo.core.enums import EntityAttr
from nmmo.policy import ArrayPolicy, load_policy_class

from .conftest import small_config, write_policy


def probe_values(env, slots: np.ndarray) -> np.ndarray:
    """The new field: each agent's slot and health (what a test can predict from the state)."""
    ent = env.realm.state.entities
    return np.stack([slots, ent.health[slots]], axis=1).astype(np.float32)


PROBE = layout.Field("probe", ("Extra", "Probe"), lambda config: (2,), np.dtype(np.float32), fill=probe_values)


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.setattr(layout, "FIELDS", [*layout.FIELDS, PROBE])


def expected(env, ids) -> np.ndarray:
    ids_now, slots = env.live_players()
    slot_of = dict(zip(ids_now.tolist(), slots.tolist(), strict=True))
    ent = env.realm.state.entities
    return np.array([[slot_of[a], ent.health[slot_of[a]]] for a in ids], dtype=np.float32)


class ProbeReader(ArrayPolicy):
    """Moves by the new field: direction = slot % 4 (so the test can tell it was read)."""

    seen: list = []

    def act_arrays(self, batch):
        ProbeReader.seen.append(np.array(batch["probe"]))
        rows = np.full((batch.n, 3), -1, dtype=np.int64)
        rows[:, 0] = batch["probe"][:, 0].astype(np.int64) % 4
        return rows


READER = """
    class Agent:
        def __init__(self, config):
            pass

        def act(self, observations):
            return {agent: {"Move": {"Direction": int(ob["Extra"]["Probe"][0]) % 4}}
                    for agent, ob in observations.items()}
"""


def test_a_new_field_travels_from_the_env_to_every_policy(probe, tmp_path):
    config = small_config()
    env = nmmo.Env(config, seed=3)
    obs, _ = env.reset()
    ids = list(obs)
    # the env: dicts, the observation space, the array batch
    assert np.array_equal(np.stack([obs[a]["Extra"]["Probe"] for a in ids]), expected(env, ids))
    assert env.observation_space(ids[0]).contains(obs[ids[0]])
    batch = env.observations()
    assert np.array_equal(batch["probe"], expected(env, batch.ids.tolist()))
    # the worker channel: the frame carries it, with its dict path
    decoded = decode_observations(encode_observations(batch))
    assert np.array_equal(decoded["probe"], batch["probe"])
    assert np.array_equal(decoded.to_dicts()[ids[0]]["Extra"]["Probe"], batch["probe"][0])
    # an in-process policy's batch, and a sandboxed submission (whose process never heard of it)
    want = {a: {"Move": {"Direction": int(slot) % 4}} for a, slot in zip(ids, expected(env, ids)[:, 0], strict=True)}
    for handle in (InProcessPolicy(f"{__name__}:ProbeReader", config),
                   SubprocessPolicy(write_policy(tmp_path, "reader", READER), config, time_budget=30.0)):
        handle.reset(0)
        handle.submit(batch)
        assert handle.collect() == want, handle.faults.messages
        handle.close()
    assert np.array_equal(ProbeReader.seen[-1], batch["probe"])
    # the neural policy: the encoder is handed every field
    policy = load_policy_class("baseline:small")(config)
    inputs = {}
    encode = policy.model.encode
    policy.model.encode = lambda tensors: inputs.update(tensors) or encode(tensors)
    policy.act_arrays(batch)
    assert torch.equal(inputs["probe"], torch.as_tensor(batch["probe"]))


def test_a_new_field_fills_the_vector_buffers(probe):
    config = small_config()
    vec = nmmo.VectorEnv(config, num_envs=2, seed=5)
    assert vec.engine == "loop"  # the fused engine computes only the built fields
    obs = vec.reset()
    for k, env in enumerate(vec._impl.block.envs):
        rows = slice(k * config.PLAYER_N, (k + 1) * config.PLAYER_N)
        alive = env.realm.state.entities.alive[: config.PLAYER_N]
        slots = np.flatnonzero(alive)
        assert np.array_equal(obs["probe"][rows][slots], probe_values(env, slots))
    with pytest.raises(ValueError, match="probe"):
        nmmo.VectorEnv(config, num_envs=2, engine="fused")


def test_the_layout_without_extra_fields_is_the_builders():
    config = small_config()
    assert list(layout.layout(config)) == list(layout.BUILT)
    env = nmmo.Env(config, seed=1)
    obs, _ = env.reset()
    batch = env.observations()
    assert batch.to_dicts().keys() == obs.keys()
    first = batch.ids[0]
    assert np.array_equal(batch.to_dicts()[first]["Entity"], obs[first]["Entity"])
    assert batch["entity"][0, 0, EntityAttr.ID] == first
