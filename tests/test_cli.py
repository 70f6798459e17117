import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nmmo.cli import main
from nmmo.replays.replay import load_replay

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


IMPORT_EVERY_MODULE = """
import importlib, pathlib, pkgutil, sys
import nmmo
from nmmo.policy import load_policy_class
assert "site-packages" in nmmo.__file__ and sys.argv[1] not in nmmo.__file__, nmmo.__file__
names = []
for top in ("nmmo", "scripted", "evaluation", "baselines", "client_server"):
    package = importlib.import_module(top)
    names += [top] + [m.name for m in pkgutil.walk_packages(package.__path__, top + ".")
                      if not m.name.endswith("__main__")]  # python -m entry points run a command
for name in names:
    importlib.import_module(name)
config = nmmo.config.load("train_small")
policy = load_policy_class("baseline:small")(config)
env = nmmo.Env(config, seed=0)
obs, _ = env.reset()
env.step(policy.act(obs))
print(len(names), "modules", nmmo.config.load("large_maps").MAP_CENTER)
"""


@pytest.mark.slow
def test_the_wheel_installs_alone_and_every_module_imports(tmp_path):
    """The built wheel, installed in a fresh environment (its dependencies borrowed from this one),
    imports every module and plays baseline:small: nothing depends on the checkout."""
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    done = subprocess.run([*build, "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, check=True)
    assert "Warning" not in done.stderr, done.stderr  # packages and data found without complaint
    wheel = next(tmp_path.glob("flatmmo-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "nmmo/configs/small_maps.toml" in names and "baselines/weights/small.pt" in names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # numpy, torch and the rest from this environment, appended after the new one's own packages
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "borrowed.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True)
    result = subprocess.run([str(python), "-c", IMPORT_EVERY_MODULE, str(ROOT)], cwd=tmp_path,
                            capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
    assert result.returncode == 0, result.stderr[-3000:]
    count, _, center = result.stdout.split()
    assert int(count) > 60 and center == "1024"


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
    assert "tournament" in out and "Leaderboard" in out and "Forage" in out  # display names: nmmo.policy
    assert (out_dir / "demo_map.png").is_file() and (out_dir / "results.json").is_file()
    assert sorted(p.name for p in (out_dir / "replays").iterdir()) == ["episode_000.replay", "episode_001.replay"]
    if importlib.util.find_spec("torch") is not None:  # the shipped baseline plays and paints its value function
        assert "baseline:small" in out and "--overlay 'value landscape'" in out  # the link opens on the landscape
        replay = load_replay(out_dir / "replays" / "episode_000.replay")
        data, low, high = replay.overlay_at("value", 19)
        assert high > low
        data, low, high = replay.overlay_at("value landscape", 0)  # the whole map's, from the first frame
        assert high > low and np.unique(data).size > 50


# ------------------------------------------------------------ bad input
def test_brackets_in_paths_and_errors_print_as_typed(tmp_path, capsys):
    """User text is not rich markup: `[a]` in a path or `[keys]` in a message must survive."""
    record = tmp_path / "rr[a].replay"
    assert main(["run", "--config", "Small", "--ticks", "2", "--record", str(record)]) == 0
    assert record.exists()
    out = capsys.readouterr().out
    assert f"replay: {record}" in out and f"--replay {record}" in out
    assert main(["config", "show", str(tmp_path / "x[keys].toml")]) == 2
    assert "x[keys].toml" in capsys.readouterr().out


def test_os_errors_are_one_error_line_naming_the_path(tmp_path, capsys):
    folder = tmp_path / "folder.replay"
    folder.mkdir()
    assert main(["run", "--config", "Small", "--ticks", "2", "--record", str(folder)]) == 2
    out = capsys.readouterr().out
    assert "error:" in out and str(folder) in out and "Traceback" not in out
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["maps", "show", "0", "--config", "Small", "--preview", str(blocker / "map.png")]) == 2
    out = capsys.readouterr().out
    assert "error:" in out and str(blocker) in out and "Traceback" not in out


@pytest.mark.parametrize("argv, flag", [
    (["run", "--config", "Small", "--ticks", "0"], "--ticks"),
    (["run", "--config", "Small", "--ticks", "-5"], "--ticks"),
    (["run", "--config", "Small", "--ticks", "2", "--seed", "-1"], "--seed"),
    (["maps", "generate", "--config", "Small", "--n", "1", "--downscale", "0"], "--downscale"),
    (["maps", "generate", "--config", "Small", "--n", "1", "--downscale", "-1"], "--downscale"),
    (["maps", "show", "0", "--config", "Small", "--zoom", "-3"], "--zoom"),
    (["demo", "--ticks", "0"], "--ticks"),
    (["serve", "--live", "--speed", "0"], "--speed"),
    (["serve", "--live", "--speed", "-5"], "--speed"),
    (["serve", "--live", "--speed", "nan"], "--speed"),
    (["serve", "--live", "--speed", "61"], "--speed"),
])
def test_nonsense_numbers_are_rejected_naming_the_flag(argv, flag, capsys):
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert out.startswith("error:") and flag in out and "lifetimes" not in out


def test_serve_checks_its_paths_first(tmp_path, capsys):
    assert main(["serve", "--replay-dir", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().out
    assert main(["serve", "--replay", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().out


def test_serve_speed_range_is_the_websocket_range():
    pytest.importorskip("client_server.server")
    import numpy as np

    from client_server import cli, packets, protocol

    assert cli.SPEED_RANGE is protocol.SPEED_RANGE  # one definition: serve's check, the commands, the header
    header = packets.header_packet("live", np.zeros((4, 4), np.uint8), center=2, border=1, ticks=None, tick=0,
                                   overlays=[], config={})
    assert header["speed_range"] == list(protocol.SPEED_RANGE)


def test_atomic_writes_get_the_umask_mode(tmp_path):
    import os

    from nmmo.io import files

    mask = os.umask(0o022)
    os.umask(mask)
    path = tmp_path / "out.bin"
    files.atomic_write_bytes(path, b"data")
    assert path.read_bytes() == b"data"
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_eval_fails_when_the_policy_never_ran(tmp_path, capsys):
    broken = tmp_path / "broken.py"  # its class loads (the spec check passes); building it fails in every episode
    broken.write_text("class Agent:\n    def __init__(self, config):\n        raise RuntimeError('no weights')\n\n"
                      "    def act(self, observations):\n        return {}\n")
    argv = ["eval", "--config", "Small", "--policy", f"{broken}:Agent", "--ticks", "2", "--episodes", "1",
            "--workers", "0", "--quiet", "--out", str(tmp_path / "eval")]
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert "never acted" in out and "never started in 1 episode(s)" in out
