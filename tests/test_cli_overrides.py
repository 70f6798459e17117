"""``--set KEY=VALUE`` (`nmmo.cli.overrides`) on the commands that take a config, and ``nmmo run --tasks``."""


from nmmo.cli import main
from nmmo.replays.replay import load_replay


def test_set_changes_keys_typed_as_toml_and_names_what_is_wrong(capsys):
    assert main(["config", "show", "small_maps", "--set", "HORIZON=77", "--set", "PLAYER_RESPAWN=false",
                 "--set", "TASKS=foraging"]) == 0
    shown = capsys.readouterr().out
    assert "HORIZON = 77" in shown and "PLAYER_RESPAWN = false" in shown and 'TASKS = "foraging"' in shown
    for pair, said in (("HORIZN=5", "Did you mean: HORIZON"), ("HORIZON=abc", "HORIZON expects int"),
                       ("HORIZON", "expected KEY=VALUE"), ("HORIZON=-3", "out of range")):
        assert main(["config", "show", "small_maps", "--set", pair]) == 2, pair
        assert f"--set {pair}" in (out := capsys.readouterr().out) and said in out, out


def test_a_command_runs_the_changed_config_and_train_checks_its_preset_s(capsys):
    assert main(["run", "--config", "small_maps", "--set", "PLAYER_N=3", "--policy", "idle", "--ticks", "2"]) == 0
    assert "idle on small_maps: 3 lifetimes, 2 ticks" in capsys.readouterr().out  # the name of the config it changed
    assert main(["train", "--preset", "small", "--set", "PLAYER_NN=3"]) == 2  # before any work: the preset's config
    assert "Did you mean: PLAYER_N" in capsys.readouterr().out
    assert main(["run", "--game", "race_to_centre", "--set", "HORIZON=9"]) == 2
    assert "--config race_to_centre --set" in capsys.readouterr().out


def test_run_gives_tasks_reports_them_and_records_them(tmp_path, capsys):
    replay = tmp_path / "tasks.replay"
    assert main(["run", "--config", "small_maps", "--tasks", "foraging", "--policy", "scripted:Forage",
                 "--ticks", "12", "--record", str(replay)]) == 0
    out = capsys.readouterr().out
    assert "tasks of foraging" in out and "completed" in out
    loaded = load_replay(replay)
    assert loaded.header["tasks"]["name"] == "foraging" and len(loaded.header["tasks"]["names"]) > 1
    assert (loaded.frame(loaded.ticks - 1)["task"] >= 0).any()  # the players' slots hold their tasks
