"""Files are data: a policy spec read back from a league file is imported only when it is data or
shipped code (built-ins, scripted:NAME, baseline:NAME, weights-only ckpt:PATH), or when the same
spec was given on the command line this run."""

import json

import pytest

torch = pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines.args import Args  # noqa: E402
from baselines.league import LEAGUE_FILE, League, Opponents  # noqa: E402
from baselines.model import Policy  # noqa: E402
from baselines.ppo import save_checkpoint  # noqa: E402
from nmmo.cli import main  # noqa: E402
from nmmo.policy import is_data_spec  # noqa: E402

from .test_train import tiny_args  # noqa: E402

TRAIN = ["train", "--config", "train_small", "--num-envs", "2", "--rollout-len", "8", "--iterations", "1",
         "--minibatches", "2", "--epochs", "1", "--no-progress"]


def planted_module(path, marker):
    """A policy module that leaves `marker` behind when it is imported (what an attacker's would run)."""
    path.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
                    "from nmmo.policy import Idle as Policy\n")
    return path


def resumable_run(out, members):
    """OUT as a league run that `--resume --league` continues: a checkpoint at iteration 0 and a
    league.json whose pool is `members`."""
    config = nmmo.config.load("train_small")
    model = Policy(side=2 * config.PLAYER_VISION_RADIUS + 1, hidden=Args().hidden)
    optimizer = torch.optim.Adam(model.parameters())
    save_checkpoint(out / "checkpoint.pt", model, optimizer, tiny_args(out), 0, 0, config)
    league = League.create(out, ["scripted:Combat"])
    data = league.to_dict()
    data["members"] = [{**data["members"][0], "spec": spec} for spec in members]
    (out / LEAGUE_FILE).write_text(json.dumps(data))


@pytest.mark.parametrize("spec, data", [
    ("random", True), ("idle", True), ("scripted:Forage", True), ("baseline:small", True),
    ("ckpt:out/league/learner_000010.pt", True), ("ckpt:evil.py:Policy", True),  # read weights-only
    ("evil.py:Policy", False), ("/tmp/evil.py:Policy", False), ("pkg.mod:Policy", False),
    ("scripted:evil.py:Policy", False), ("scripted.bots:Forage", False), ("scripted:", False),
    ("nosuchscheme:x", False), ("", False), (42, False), (None, False),
])
def test_which_specs_a_file_may_name(spec, data):
    assert is_data_spec(spec) is data


def test_train_resume_refuses_a_league_member_that_imports_a_file_unless_given_again(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "ran"
    spec = f"{planted_module(tmp_path / 'evil.py', marker)}:Policy"
    resumable_run(tmp_path, [spec])

    def no_env(*args, **kwargs):
        raise AssertionError("an env was built before the league file was checked")

    with monkeypatch.context() as patch:
        patch.setattr("baselines.ppo.VectorEnv", no_env)
        assert main([*TRAIN, "--out", str(tmp_path), "--resume", "--league"]) == 2
    error = capsys.readouterr().out
    assert spec in error and str(tmp_path / LEAGUE_FILE) in error and "--league-bots" in error
    assert not marker.exists()

    assert main([*TRAIN, "--out", str(tmp_path), "--resume", "--league", "--league-bots", spec]) == 0
    assert marker.exists()  # given on the command line this run: it joins and plays
    assert [m["spec"] for m in json.loads((tmp_path / LEAGUE_FILE).read_text())["members"]] == [spec]


def test_league_load_checks_every_member_before_importing_any(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    file_spec = f"{planted_module(tmp_path / 'evil.py', tmp_path / 'file_ran')}:Policy"
    module_spec = f"{planted_module(tmp_path / 'evil_mod.py', tmp_path / 'module_ran').stem}:Policy"
    data_specs = ["random", "scripted:Forage", "baseline:small", f"ckpt:{tmp_path / 'checkpoint.pt'}"]
    resumable_run(tmp_path, [*data_specs, file_spec, module_spec])

    with pytest.raises(ValueError, match="evil.py:Policy.*--league-bots"):
        League.load(tmp_path)
    with pytest.raises(ValueError, match="'evil_mod:Policy'"):
        League.load(tmp_path, allowed={file_spec})
    assert not (tmp_path / "file_ran").exists() and not (tmp_path / "module_ran").exists()

    allowed = Args(league_bots=(file_spec,), teacher=module_spec).given_specs()
    league = League.load(tmp_path, allowed=allowed)
    Opponents(nmmo.config.load("train_small"), len(league.members), seed=0).play(league.members)
    assert (tmp_path / "file_ran").exists() and (tmp_path / "module_ran").exists()
    resumable_run(tmp_path, data_specs)  # data and shipped code need no leave
    assert [m.spec for m in League.load(tmp_path).members] == data_specs


def test_a_syntax_error_in_a_policy_file_names_the_file_and_line(tmp_path):
    from nmmo.policy import load_policy_class

    bad = tmp_path / "bad.py"
    bad.write_text("class Agent:\n    def __init__(self, config)\n        pass\n")
    with pytest.raises(ValueError) as caught:
        load_policy_class(f"{bad}:Agent")
    assert str(caught.value) == f"{bad}:2: syntax error: expected ':': def __init__(self, config)"
