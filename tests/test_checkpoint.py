"""Checkpoints hold data, never code: a crafted pickle is refused before it can run."""

import builtins
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines import checkpoint  # noqa: E402
from baselines.model import Policy  # noqa: E402
from baselines.ppo import Args, load_checkpoint  # noqa: E402


class CreatesFile:
    """Unpickling this calls open(path, "w"): a file appears if the loader runs what the pickle names."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


@pytest.fixture
def crafted(tmp_path):
    marker = tmp_path / "created_by_unpickling"
    path = tmp_path / "shared.pt"
    model = Policy(side=15, hidden=16)
    torch.save({"model": model.state_dict(), "model_kwargs": model.kwargs, "step": 1, "payload": CreatesFile(marker)},
               path)
    return path, marker


def test_crafted_checkpoint_is_refused_and_runs_nothing(crafted):
    path, marker = crafted
    refused = r"shared\.pt.*more than tensors and plain data.*(builtins|io)\.open"
    with pytest.raises(checkpoint.CheckpointError, match=refused):
        load_checkpoint(path)
    assert not marker.exists()


def test_crafted_checkpoint_is_refused_as_a_policy_spec(crafted):
    path, marker = crafted
    policy_class = nmmo.policy.load_policy_class(f"ckpt:{path}")
    with pytest.raises(ValueError, match="refused"):
        policy_class(nmmo.config.load("train_small"))
    assert not marker.exists()


def test_crafted_checkpoint_is_refused_by_the_cli(crafted, capsys):
    from nmmo.cli import main

    path, marker = crafted
    assert main(["run", "--config", "train_small", "--policy", f"ckpt:{path}", "--ticks", "2"]) == 2
    assert "refused" in capsys.readouterr().out
    assert not marker.exists()


def test_checkpoint_written_the_old_way_still_loads(tmp_path):
    """Round 1 wrote torch.save of a dict of state dicts, asdict(Args) (tuples) and the numpy RNG
    state (nested dicts of big ints): all plain data, so the weights-only loader reads it."""
    model = Policy(side=15, hidden=16)
    optimizer = torch.optim.Adam(model.parameters())
    rng = np.random.default_rng(3)
    old = {"model": model.state_dict(), "model_kwargs": model.kwargs, "optimizer": optimizer.state_dict(),
           "args": dataclasses.asdict(Args()), "step": 7, "iteration": 1, "config_toml": "x", "config_name": "y",
           "rng": rng.bit_generator.state}
    torch.save(old, tmp_path / "old.pt")
    loaded = load_checkpoint(tmp_path / "old.pt")
    assert loaded["args"]["league_bots"] == Args().league_bots
    assert loaded["rng"] == rng.bit_generator.state
    fresh = Policy(**loaded["model_kwargs"])
    fresh.load_state_dict(loaded["model"])


def test_save_makes_data_plain_and_refuses_objects(tmp_path):
    path = checkpoint.save(tmp_path / "c.pt", {"n": np.int64(3), "where": tmp_path, "a": np.arange(3),
                                               "tags": {"b", "a"}, "nested": [{"x": np.float32(0.5)}]})
    data = checkpoint.load(path)
    assert data["n"] == 3 and type(data["n"]) is int
    assert data["where"] == str(tmp_path) and data["tags"] == ["a", "b"] and data["nested"][0]["x"] == 0.5
    assert torch.equal(data["a"], torch.arange(3))
    with pytest.raises(checkpoint.CheckpointError, match=r"checkpoint\['bad'\] is a .*CreatesFile"):
        checkpoint.save(tmp_path / "d.pt", {"bad": CreatesFile(tmp_path / "x")})
    assert not (tmp_path / "d.pt").exists()


def test_unreadable_checkpoint_names_the_file(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoint.CheckpointError, match=r"junk\.pt.*cannot be read"):
        load_checkpoint(tmp_path / "junk.pt")
    with pytest.raises(checkpoint.CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
