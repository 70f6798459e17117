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
                 "--workers", "0", "--out", str(out)])
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
                 "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "Leaderboard" in text and "SR after each episode" in text and "SR 1500 = Combat" in text
    assert "exception 4" in text and "boom on an even call" in text
    assert f"crashy:Agent = {spec}" in text  # short labels, and what they stand for
    saved = json.loads((out / "results.json").read_text())
    assert saved["settings"]["metric"] == "lifetime" and saved["settings"]["time_budget"] == 2.0
    assert saved["settings"]["population"] == 15  # PLAYER_N 16 cut to equal shares of 3 policies
    assert saved["policies"] == [spec, "scripted:Meander", "scripted:Combat"]


def test_tournament_output_reads_at_100_columns(tmp_path, config_path, capsys):
    specs = [write_policy(tmp_path, "an_agent_with_a_rather_long_file_name", CRASHING), "scripted:ForageNoExplore",
             "scripted:CombatNoExplore", "scripted:Meander", "random", "idle"]
    assert main(["tournament", "--config", config_path, "--policies", *specs, "--episodes", "2", "--ticks", "4",
                 "--workers", "0", "--out", str(tmp_path / "tour")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("Leaderboard" in line for line in lines) and any("Metrics" in line for line in lines)
    tables = [line for line in lines if set(line) & set("┃│┏┡└━") or "Leaderboard" in line or "episode(s) of" in line]
    assert len(tables) > 20 and max(len(line) for line in tables) <= 100, [line for line in tables if len(line) > 100]


def test_quiet_prints_the_result_paths_and_faults_only(tmp_path, config_path, capsys):
    spec = write_policy(tmp_path, "crashy", CRASHING)
    out = tmp_path / "tour"
    assert main(["tournament", "--config", config_path, "--policies", spec, "idle", "--episodes", "2", "--ticks", "4",
                 "--workers", "0", "--quiet", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "results: " + ", ".join(str(out / name) for name in
                                                ("results.json", "leaderboard.csv", "episodes.csv", "payoff.csv"))
    assert lines[:-1] and all("boom on an even call" in line for line in lines[:-1])  # the faults, nothing else


def test_all_way_ties_are_reported(tmp_path, config_path, capsys):
    # 3 ticks: nobody earns a point or dies, so every policy scores the same in every episode
    assert main(["tournament", "--config", config_path, "--policies", "idle", "scripted:Meander", "--episodes", "2",
                 "--ticks", "3", "--workers", "0", "--out", str(tmp_path / "tour")]) == 0
    assert "2 of 2 episode(s) were all-way ties" in capsys.readouterr().out
    saved = json.loads((tmp_path / "tour" / "results.json").read_text())
    assert all(set(entry["ranks"].values()) == {0} for entry in saved["episodes"])  # draws, not a lottery


def test_a_submission_that_never_ran_is_failed_not_ranked(tmp_path, config_path, capsys):
    spec = write_policy(tmp_path, "broken", """
        class Agent:
            def __init__(self, config):
                raise RuntimeError("cannot build")

            def act(self, observations):
                return {}
    """)
    out = tmp_path / "tour"
    code = main(["tournament", "--config", config_path, "--policies", spec, "idle", "--episodes", "2", "--ticks", "6",
                 "--workers", "0", "--quiet", "--out", str(out)])
    text = capsys.readouterr().out
    assert code != 0 and "never acted" in text
    saved = json.loads((out / "results.json").read_text())  # the results are still written
    row = next(r for r in saved["leaderboard"] if r["policy"] == spec)
    assert row["failed"] and row["rank"] is None
    assert [r["rank"] for r in saved["leaderboard"] if r["policy"] != spec] == [1, 2]
    assert all(entry["ranks"][spec] is None for entry in saved["episodes"])


def test_bad_input_is_a_clear_error(tmp_path, config_path, capsys):
    missing = "a_policy_file_with_a_name_long_enough_to_wrap_an_80_column_line.py"
    assert main(["tournament", "--config", config_path, "--policies", f"{missing}:Agent", "--quiet",
                 "--out", str(tmp_path / "tour")]) == 2
    assert f"{missing}' does not exist" in capsys.readouterr().out  # one line, never wrapped
    assert main(["eval", "--config", config_path, "--policy", "random", "--episodes", "0", "--quiet"]) == 2
    assert "episodes must be a positive int" in capsys.readouterr().out
    out = ["--out", str(tmp_path / "tour")]  # fresh: the rule on non-empty output folders comes first
    assert main(["tournament", "--config", "smal_maps", "--policies", "random", "--quiet", *out]) == 2
    assert "Did you mean" in capsys.readouterr().out
    assert main(["tournament", "--config", config_path, "--policies", "scripted:Forgae", "--quiet", *out]) == 2
    assert "did you mean scripted:Forage" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["tournament", "--policies", "random", "--metric", "gold"])


def test_recorded_tournament_replays_name_their_policies(tmp_path, config_path, capsys):
    import nmmo

    replays = tmp_path / "replays"
    code = main(["tournament", "--config", config_path, "--policies", "random", "scripted:Meander", "--episodes", "2",
                 "--ticks", "4", "--workers", "0", "--quiet", "--record", str(replays),
                 "--out", str(tmp_path / "tour")])
    assert code == 0
    assert f"replays: {replays}/ (watch them:" in capsys.readouterr().out
    names = sorted(path.name for path in replays.glob("*.replay"))
    assert names == ["episode_000.replay", "episode_001.replay"]
    replay = nmmo.replays.replay.load_replay(replays / names[0])
    assert replay.header["policies"] == ["random", "scripted:Meander", "scripted:Combat"]
    # which policy played each team, as dealt: 15 of 16 slots, five each
    assert sorted(replay.header["team_policy"]) == [0] * 5 + [1] * 5 + [2] * 5


def test_save_replay_checks_the_policy_names(tmp_path):
    import nmmo

    env = nmmo.Env(nmmo.config.Small(), seed=0, record=True)
    env.reset()
    for bad in ("random", [], ["random", 3]):
        with pytest.raises(ValueError, match="policies must be a non-empty list of names"):
            env.save_replay(tmp_path / "x.replay", policies=bad)
    assert not (tmp_path / "x.replay").exists()
