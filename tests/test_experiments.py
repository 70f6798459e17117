"""`nmmo experiment population|maps|progression` at a tiny budget: the results file, tables, plots, resume.

Each experiment trains one PPO iteration or two per run on a 32x32 world and evaluates on 8-tick
episodes; the tests check that the files are written and well-formed, not what the agents learn.
"""

import json
import struct

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from baselines.args import PRESETS  # noqa: E402
from baselines.experiments import maps, population, progression  # noqa: E402
from baselines.experiments.run import Budget, recipe_args  # noqa: E402
from baselines.experiments.stats import seed_interval  # noqa: E402
from nmmo.cli import main  # noqa: E402

RESOURCE = """
preset = "Small"
systems = ["Resource", "Progression"]

[keys]
MAP_CENTER = 32
PLAYER_N = 4
PLAYER_N_OBS = 8
HORIZON = 32
"""
ALL_SYSTEMS = """
preset = "Small"
systems = ["Resource", "Combat", "Progression", "NPC"]

[keys]
MAP_CENTER = 32
PLAYER_N = 8
PLAYER_N_OBS = 8
NPC_N = 4
HORIZON = 32
"""
TINY = ["--steps", "100", "--eval-ticks", "8"]


def write(tmp_path, text):
    path = tmp_path / "tiny.toml"
    path.write_text(text)
    return str(path)


def png_size(path):
    """Width and height of a PNG, after checking its signature and IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def check_results(path, experiment, keys):
    """The results file: reproducibility fields, one finished entry per run key, a summary."""
    saved = json.loads(path.read_text())  # strict JSON: no NaN
    assert saved["format"] == "flatmmo-experiment" and saved["experiment"] == experiment
    for field in ("settings", "seeds", "reward", "trainer", "command", "versions", "summary"):
        assert saved[field], field
    assert saved["command"].startswith(f"nmmo experiment {experiment} ") and "-1 at death" in saved["reward"]
    assert set(saved["runs"]) == set(keys)
    for entry in saved["runs"].values():
        assert entry["steps"] >= saved["settings"]["steps"] and entry["history"]
        assert entry["train_command"].startswith("nmmo train --config ") and entry["maps_seen"] >= 1
        assert len(entry["map_seeds_seen"]) == entry["maps_seen"]
        # minibatches sized by live agent-steps: about one gradient step per minibatch_agent_steps
        per = saved["settings"]["minibatch_agent_steps"]
        assert entry["updates"] >= 1
        assert entry["updates"] <= entry["iterations"] * 2 * (entry["steps"] / entry["iterations"] / per + 1)
    return saved


def test_experiments_learn_from_the_reward_alone():
    """The shipped recipe imitates a scripted teacher at first; the paper's experiments must not."""
    assert PRESETS["small"]["args"].get("teacher") and PRESETS["small"]["args"].get("teacher_steps")
    kept = recipe_args()
    assert not {"teacher", "teacher_steps", "teacher_coef"} & set(kept)
    assert kept["minibatches"] == PRESETS["small"]["args"]["minibatches"]


def test_population_experiment_writes_results_table_and_plot(tmp_path, capsys):
    out = tmp_path / "population"
    argv = ["experiment", "population", "--config", write(tmp_path, RESOURCE), "--caps", "2", "4", "--test-cap", "4",
            "--seeds", "0", "1", "--rows", "8", "--eval-episodes", "1", "--out", str(out), *TINY]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Population size and exploration" in text and "explore @4" in text and "reward: survival" in text
    saved = check_results(out / "population.json", "population", ["cap2-seed0", "cap4-seed0", "cap2-seed1",
                                                                   "cap4-seed1"])
    rows = saved["summary"]["rows"]
    assert [row["cap"] for row in rows] == [2, 4]
    for row in rows:
        for key in ("explore_train_cap", "explore_test_cap", "lifetime_train_cap", "lifetime_test_cap"):
            cell = row[key]
            assert cell["n"] == 2 and cell["kind"] == "t over seeds" and cell["low"] <= cell["mean"] <= cell["high"]
    assert any("Explore at the common test cap 4" in line for line in saved["summary"]["verdict"])
    visits = saved["runs"]["cap2-seed0"]["eval"]["test_cap"]["visits"]
    assert len(visits) == len(visits[0]) == 32 and sum(map(sum, visits)) > 0
    assert saved["runs"]["cap2-seed0"]["eval"]["test_cap"]["population_cap"] == 4
    assert min(png_size(out / "population.png")) > 100

    seen = []  # every run is in the results file: a resume trains nothing and rebuilds the summary
    budget = Budget(100, rows=8, eval_episodes=1, eval_ticks=8, progress=False)
    again = population.run_population(argv[3], (2, 4), (0, 1), 4, budget, out, resume=True, on_run=seen.append)
    assert seen == [] and again["summary"]["rows"] == rows
    with pytest.raises(ValueError, match="other settings"):
        population.run_population(argv[3], (2, 4), (0, 1), 4, Budget(200, rows=8, eval_episodes=1, eval_ticks=8),
                                  out, resume=True)


def test_maps_experiment_counts_the_maps_each_run_saw(tmp_path, capsys):
    out = tmp_path / "maps"
    assert main(["experiment", "maps", "--config", write(tmp_path, ALL_SYSTEMS), "--maps", "1", "3", "--rows", "16",
                 "--eval-episodes", "2", "--out", str(out), *TINY]) == 0
    assert "Map pools and generalization" in capsys.readouterr().out
    saved = check_results(out / "maps.json", "maps", ["maps1-seed0", "maps3-seed0"])
    single = saved["runs"]["maps1-seed0"]
    assert single["map_seeds_seen"] == [0]  # a pool of one map: map seed 0, whatever the episodes
    assert {e["map_seed"] for e in single["eval"]["train_maps"]["episodes"]} == {0}
    assert all(e["map_seed"] >= 1_000_000 for e in single["eval"]["heldout"]["episodes"])  # held-out pool
    assert set(saved["runs"]["maps3-seed0"]["map_seeds_seen"]) <= {0, 1, 2}
    rows = saved["summary"]["rows"]
    assert [r["pool"] for r in rows] == [1, 3] and rows[0]["paper"]["test"] == maps.PAPER[1]["test"]
    assert rows[0]["gap"]["low"] <= rows[0]["gap"]["mean"] <= rows[0]["gap"]["high"]
    assert min(png_size(out / "maps.png")) > 100


def test_progression_experiment_summarizes_the_curves(tmp_path, capsys):
    out = tmp_path / "progression"
    assert main(["experiment", "progression", "--config", write(tmp_path, ALL_SYSTEMS), "--rows", "16",
                 "--out", str(out), "--steps", "900", "--eval-episodes", "1", "--eval-ticks", "8"]) == 0
    assert "Skill progression" in capsys.readouterr().out
    saved = check_results(out / "progression.json", "progression", ["seed0"])
    assert len(saved["runs"]["seed0"]["history"]) >= 2
    assert [r["metric"] for r in saved["summary"]["rows"]] == list(progression.CURVES)
    assert saved["summary"]["verdict"] and min(png_size(out / "progression.png")) > 100
    assert saved["runs"]["seed0"]["eval"]["heldout"]["metrics"]["lifetime"]["mean"] > 0  # the optional final eval


def test_an_early_rise_in_a_long_run_is_placed_where_it_happened():
    # 500 iterations; foraging rises from 10 to 12 at iteration 20 (4 % into the run), kills at 300
    history = [{"step": 1000 * (i + 1), "episodes": 250, "forage": 10.0 if i < 20 else 12.0,
                "player_kills": 0.0 if i < 300 else 0.5} for i in range(500)]
    forage = progression.describe(*progression.mean_curve([{"history": history}], "forage"), "forage")
    kills = progression.describe(*progression.mean_curve([{"history": history}], "player_kills"), "player_kills")
    assert forage["start"] == 10.0 and forage["end"] == 12.0 and forage["rises"]
    assert 15_000 <= forage["rise_step"] <= 25_000
    assert kills["rises"] and 290_000 <= kills["rise_step"] <= 310_000


def test_rises_and_intervals_are_read_as_documented():
    steps = [0, 100, 200, 300, 400]
    row = progression.describe(steps, [1.0, 1.0, 3.0, 5.0, 2.0], "explore")
    assert row["rises"] and row["rise_step"] == 200 and row["peak_step"] == 300 and row["end"] == 2.0
    flat = progression.describe(steps, [1.0, 1.5, 1.9, 1.0, 1.0], "explore")  # less than a tile
    assert not flat["rises"] and flat["rise_step"] is None
    cell = seed_interval([1.0, 2.0, 3.0])
    assert cell["mean"] == 2.0 and cell["low"] == pytest.approx(2 - 4.303 / 3**0.5, abs=1e-4)
    assert seed_interval([5.0])["low"] is None
    rows = [{"cap": 4, "explore_train_cap": {"mean": 1, "low": 0.5, "high": 1.5, "values": [1]},
             "explore_test_cap": {"mean": 1, "low": 0.5, "high": 1.5, "values": [1]},
             "lifetime_train_cap": {"mean": 20}, "lifetime_test_cap": {"mean": 10}},
            {"cap": 32, "explore_train_cap": {"mean": 3, "low": 2, "high": 4, "values": [3]},
             "explore_test_cap": {"mean": 1.2, "low": 0.1, "high": 2.0, "values": [1.2]},
             "lifetime_train_cap": {"mean": 20}, "lifetime_test_cap": {"mean": 20}}]
    said = population.verdict(rows, 32)
    assert "do not overlap" in said[0] and "within noise" in said[1] and "falls" in said[2]


def test_gradient_steps_follow_live_agent_steps_and_the_note_flags_unequal_rates():
    from argparse import Namespace

    from baselines.experiments.stats import iterations_note
    from baselines.ppo import minibatch_count

    fixed = Namespace(minibatches=4, minibatch_agent_steps=0)
    sized = Namespace(minibatches=4, minibatch_agent_steps=256)
    assert minibatch_count(fixed, 10_000) == minibatch_count(fixed, 100) == 4
    assert minibatch_count(sized, 10_240) == 40 and minibatch_count(sized, 512) == 2
    assert minibatch_count(sized, 3) == 1  # never none
    equal = [{"cap": 4, "steps": [1000], "updates": [8]}, {"cap": 256, "steps": [2000], "updates": [16]}]
    assert iterations_note(equal, "cap") == []
    unequal = [{"cap": 4, "steps": [1000], "updates": [8]}, {"cap": 256, "steps": [1000], "updates": [40]}]
    (note,) = iterations_note(unequal, "cap")
    assert "cap 4: 8.00" in note and "cap 256: 40.00" in note


def test_tasks_experiment_compares_conditioned_blind_and_shuffled_agents_on_heldout_tasks(tmp_path, capsys,
                                                                                          monkeypatch):
    from baselines.experiments import tasks
    from baselines.policy import CheckpointPolicy

    out, tiny = tmp_path / "tasks", write(tmp_path, ALL_SYSTEMS)
    assert main(["experiment", "tasks", "--config", tiny, "--eval-config", tiny, "--seeds", "0", "--rows", "16",
                 "--eval-episodes", "2", "--out", str(out), *TINY]) == 0
    assert "Task generalization" in capsys.readouterr().out
    saved = json.loads((out / "tasks.json").read_text())
    assert saved["command"].startswith("nmmo experiment tasks ") and "--train-tasks directed" in saved["command"]
    assert saved["reward"].startswith("tasks: ") and "no -1 at death" in saved["reward"]  # this config's key
    assert "imitation of scripted:Follower" in saved["reward"] and "--init baseline:small" in saved["command"]
    assert set(saved["runs"]) == {"conditioned-seed0", "blind-seed0"}
    for key, entry in saved["runs"].items():
        blind = key.startswith("blind")
        assert "--tasks directed" in entry["train_command"] and "--init baseline:small" in entry["train_command"]
        assert "--teacher scripted:Follower --teacher-steps 1200000" in entry["train_command"]  # both arms alike
        assert "--teacher-play-steps 600000" in entry["train_command"] and "--lr 0.001" in entry["train_command"]
        assert ("--task-blind" in entry["train_command"]) == blind
        policy = CheckpointPolicy(tasks.config_module.resolve(tiny), path=entry["checkpoint"])
        assert ("task_dim" in policy.model.kwargs) != blind  # the blind network has no task input
        evaluation = entry["eval"]
        assert evaluation["tasks"] == "heldout" and len(evaluation["completion"]) == 2 and sum(evaluation["lives"]) >= 8
        assert set(evaluation["report"]["tags"]) >= {"heldout", "style", "gather"}
        assert ("shuffled" in evaluation) != blind  # the conditioned checkpoint also reads other agents' tasks
        assert evaluation["train_curve"]
    # every run and reference played the same held-out episodes
    plays = [e["eval"] for e in saved["runs"].values()] + [saved["runs"]["conditioned-seed0"]["eval"]["shuffled"]]
    plays += list(saved["references"].values())
    assert len({json.dumps(p["map_seeds"]) + json.dumps(p["seeds"]) for p in plays}) == 1
    assert set(saved["references"]) == {"scripted:Follower", "baseline:small"}
    summary = saved["summary"]
    assert [r["arm"] for r in summary["rows"]] == ["conditioned", "blind", "conditioned, shuffled input"]
    for key, (a, b) in (("conditioned_minus_blind", ("conditioned-seed0", None)),
                        ("own_minus_shuffled", ("conditioned-seed0", "shuffled"))):
        cond = saved["runs"][a]["eval"]["completion"]
        other = (saved["runs"]["blind-seed0"]["eval"] if b is None else saved["runs"][a]["eval"][b])["completion"]
        expected = np.mean([x - y for x, y in zip(cond, other, strict=True) if x is not None and y is not None])
        assert summary[key]["pooled"]["mean"] == pytest.approx(expected)  # paired episode by episode
    assert summary["verdict"][-1].startswith(("Not shown", "Shown"))
    assert min(png_size(out / "tasks.png")) > 100
    seen = []  # a resume trains nothing and plays nothing: the references are kept
    budget = Budget(100, rows=16, minibatch_agent_steps=1024, eval_episodes=2, eval_ticks=8, eval_seed=11,
                    progress=False)
    monkeypatch.setattr(tasks, "heldout_play", None)  # called, it would fail
    again = tasks.run_tasks(tiny, (0,), budget, out, resume=True, on_run=seen.append, eval_config=tiny)
    assert seen == [] and again["summary"]["rows"] == summary["rows"]
    assert again["summary"]["references"] == summary["references"]
    with pytest.raises(ValueError, match=r"--teacher-play-steps \(1300000\) must be between 0 and --teacher-steps"):
        tasks.run_tasks(tiny, (0,), budget, tmp_path / "refused", teacher_play_steps=1_300_000)
