import json

import pytest

from nmmo.cli import main

from .conftest import CRASHING, write_policy

CONFIG = """
preset = "Small"
systems = ["Resource", "Combat"]

[keys]
PLAYER_N = 16
"""


@pytest.fixture
def config_path(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(CONFIG)
    return str(path)


def test_eval_prints_the_metric_table_and_saves(tmp_path, config_path, capsys):
    out = tmp_path / "eval"
    code = main(["eval", "--config", config_path, "--policy", "scripted:Forage", "--ticks", "5", "--episodes", "2",
                 "--workers", "0", "--quiet", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    for label in ("Lifetime", "Achievement", "Player Kills", "Equipment", "Explore", "Forage", "lifetimes"):
        assert label in text
    saved = json.loads((out / "results.json").read_text())
    assert saved["settings"]["ticks"] == 5 and saved["policies"] == ["scripted:Forage"]
    assert (out / "metrics.csv").is_file() and (out / "episodes.csv").is_file()


def test_tournament_prints_leaderboard_history_and_faults(tmp_path, config_path, capsys):
    spec = write_policy(tmp_path, "crashy", CRASHING)
    out = tmp_path / "tour"
    code = main(["tournament", "--config", config_path, "--policies", spec, "scripted:Meander", "--episodes", "2",
                 "--ticks", "4", "--workers", "1", "--time-budget", "2", "--metric", "lifetime", "--seed", "3",
                 "--quiet", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "Leaderboard" in text and "SR after each episode" in text and "scripted:Combat" in text
    assert "exception 4" in text and "boom on an even call" in text
    saved = json.loads((out / "results.json").read_text())
    assert saved["settings"]["metric"] == "lifetime" and saved["settings"]["time_budget"] == 2.0
    assert saved["policies"] == [spec, "scripted:Meander", "scripted:Combat"]


def test_bad_input_is_a_clear_error(tmp_path, config_path, capsys):
    missing = "a_policy_file_with_a_name_long_enough_to_wrap_an_80_column_line.py"
    assert main(["tournament", "--config", config_path, "--policies", f"{missing}:Agent", "--quiet"]) == 2
    assert f"{missing}' does not exist" in capsys.readouterr().out  # one line, never wrapped
    assert main(["eval", "--config", config_path, "--policy", "random", "--episodes", "0", "--quiet"]) == 2
    assert "episodes must be a positive int" in capsys.readouterr().out
    assert main(["tournament", "--config", "smal_maps", "--policies", "random", "--quiet"]) == 2
    assert "Did you mean" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["tournament", "--policies", "random", "--metric", "gold"])


def test_recorded_tournament_replays_name_their_policies(tmp_path, config_path, capsys):
    import nmmo

    replays = tmp_path / "replays"
    code = main(["tournament", "--config", config_path, "--policies", "random", "scripted:Meander", "--episodes", "2",
                 "--ticks", "4", "--workers", "0", "--quiet", "--record", str(replays)])
    assert code == 0
    assert f"replays: {replays}/ (watch them:" in capsys.readouterr().out
    names = sorted(path.name for path in replays.glob("*.replay"))
    assert names == ["episode_000.replay", "episode_001.replay"]
    replay = nmmo.replay.load_replay(replays / names[0])
    assert replay.header["policies"] == ["random", "scripted:Meander", "scripted:Combat"]


def test_save_replay_checks_the_policy_names(tmp_path):
    import nmmo

    env = nmmo.Env(nmmo.config.Small(), seed=0, record=True)
    env.reset()
    for bad in ("random", [], ["random", 3]):
        with pytest.raises(ValueError, match="policies must be a non-empty list of names"):
            env.save_replay(tmp_path / "x.replay", policies=bad)
    assert not (tmp_path / "x.replay").exists()
