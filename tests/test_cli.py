import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nmmo.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_maps_generate_writes_cache_and_previews(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NMMO_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "previews"
    assert main(["maps", "generate", "--config", "Small", "--n", "3", "--preview", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["train_00000.png", "train_00001.png", "train_00002.png"]
    assert len(list((tmp_path / "cache" / "maps").glob("*.npy"))) == 3
    assert "mean fraction" in capsys.readouterr().out


def test_maps_show_prints_stats(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NMMO_CACHE_DIR", str(tmp_path))
    assert main(["maps", "show", "2", "--config", "Small", "--split", "eval"]) == 0
    out = capsys.readouterr().out
    assert "reachable from spawns" in out and "fraction water" in out


def test_bad_cli_input_is_a_clear_error(capsys):
    assert main(["maps", "generate", "--config", "smal_maps", "--n", "1"]) == 2
    assert "Did you mean: small_maps" in capsys.readouterr().out
    assert main(["maps", "show", "999", "--config", "Small", "--split", "eval"]) == 2
    assert "outside the eval pool" in capsys.readouterr().out


def test_config_commands(capsys):
    assert main(["config", "list"]) == 0
    assert "large_maps" in capsys.readouterr().out
    assert main(["config", "show", "team_play"]) == 0
    assert "PLAYER_TEAM_SIZE = 4" in capsys.readouterr().out
    assert main(["config", "diff", "small_maps", "foraging"]) == 0
    assert "COMBAT_MELEE_REACH" in capsys.readouterr().out


@pytest.mark.slow
def test_wheel_ships_the_canonical_configs(tmp_path):
    """A non-editable install must find configs/*.toml as nmmo.configs."""
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*build, "-w", str(tmp_path), str(ROOT)], check=True)
    wheel = next(tmp_path.glob("flatmmo-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "nmmo/configs/small_maps.toml" in names and "nmmo/configs/large_maps.toml" in names
    # load from the unpacked wheel alone, outside the checkout
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "import nmmo; c = nmmo.config.load('large_maps'); print(c.MAP_CENTER, nmmo.__file__)"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                            capture_output=True, text=True, check=True)
    assert result.stdout.split()[0] == "1024" and str(site) in result.stdout


def test_run_prints_the_metric_table(capsys):
    assert main(["run", "--config", "Small", "--policy", "idle", "--ticks", "20"]) == 0
    out = capsys.readouterr().out
    assert "lifetime" in out and "achievement" in out and "agent-steps/s" in out


def test_run_loads_a_policy_from_a_file(tmp_path, capsys):
    path = tmp_path / "mine.py"
    path.write_text(
        "class StayPut:\n"
        "    def __init__(self, config):\n"
        "        self.calls = 0\n"
        "    def act(self, observations):\n"
        "        return {agent: {'Move': {'Direction': 4}} for agent in observations}\n"
    )
    assert main(["run", "--config", "Small", "--policy", f"{path}:StayPut", "--ticks", "5"]) == 0
    assert main(["run", "--config", "Small", "--policy", f"{path}:Missing", "--ticks", "5"]) == 2
    assert "defines no 'Missing'" in capsys.readouterr().out


def test_demo_runs_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NMMO_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "demo"
    args = ["demo", "--config", "Default", "--ticks", "20", "--episodes", "2", "--workers", "0", "--out", str(out_dir)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tournament" in out and "Leaderboard" in out and "scripted:Forage" in out
    assert (out_dir / "demo_map.png").is_file() and (out_dir / "results.json").is_file()
    assert sorted(p.name for p in (out_dir / "replays").iterdir()) == ["episode_000.replay", "episode_001.replay"]
