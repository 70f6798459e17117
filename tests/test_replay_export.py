import os
import stat

import numpy as np
import pytest

import nmmo
from nmmo.cli import main
from nmmo.core.render import overlay_rgb, upscale
from nmmo.replays.replay import load_replay

Image = pytest.importorskip("PIL.Image")

FAKE_FFMPEG = """#!/bin/sh
# stands in for ffmpeg: counts the raw frame bytes it is fed into its last argument (the output)
for last; do :; done
wc -c > "$last"
"""


def gif_frames(path) -> tuple[list[np.ndarray], list[int]]:
    with Image.open(path) as gif:
        pictures, durations = [], []
        for index in range(gif.n_frames):
            gif.seek(index)
            pictures.append(np.asarray(gif.convert("RGB")))
            durations.append(gif.info["duration"])
    return pictures, durations


def test_replay_export_draws_what_render_shows(tmp_path, capsys, monkeypatch):
    conf = nmmo.config.load("small_maps").set("PLAYER_N", 16).set("HORIZON", 20)
    env = nmmo.Env(conf, seed=5, record=True, render_mode="rgb_array")
    obs, _ = env.reset()
    size = conf.MAP_SIZE
    env.overlays.register("value", np.add.outer(np.arange(size), np.arange(size)).astype(float))
    renders, rng = [env.render()], np.random.default_rng(0)
    for _ in range(10):
        obs, *_ = env.step({a: {"Move": {"Direction": int(rng.integers(4))}} for a in env.agents})
        renders.append(env.render())
    path = env.save_replay(tmp_path / "run.replay")

    # ticks 2, 4, 6, 8, 10 at 3 px a tile: each frame the env's own picture, upscaled
    out = tmp_path / "gifs" / "run.gif"
    assert main(["replay", "export", str(path), "--gif", str(out), "--scale", "3", "--start", "2", "--stride", "2",
                 "--fps", "5"]) == 0
    printed = capsys.readouterr().out
    assert "5/5 frames" in printed
    assert f"GIF: {out}  (5 frames: ticks 2..10 every 2, {3 * size}x{3 * size} px" in printed
    pictures, durations = gif_frames(out)
    assert len(pictures) == 5 and durations == [200] * 5
    for picture, tick in zip(pictures, range(2, 11, 2), strict=True):
        assert picture.shape == (3 * size, 3 * size, 3)
        assert np.array_equal(picture, upscale(renders[tick], 3)), tick
    assert sorted(os.listdir(out.parent)) == ["run.gif"]  # written atomically: no temporary file left

    # the overlay under the entities, as the viewer blends it
    assert main(["replay", "export", str(path), "--gif", str(out), "--scale", "1", "--stop", "0",
                 "--overlay", "value"]) == 0
    (picture,), _ = gif_frames(out)
    replay = load_replay(path)
    entities = np.all(renders[0] == 255, axis=2) | np.all(renders[0] == 0, axis=2)
    blended = overlay_rgb(replay.material_at(0), replay.overlay_at("value", 0)[0])
    error = np.abs(picture.astype(int) - blended)[~entities]
    assert error.max() <= 4, error.max()  # a 256-colour palette's rounding
    assert np.array_equal(picture[entities], renders[0][entities])
    assert not np.array_equal(picture, renders[0])

    # an overlay the replay lacks, a tick past its end: one error line naming it, exit status 2
    assert main(["replay", "export", str(path), "--gif", str(out), "--overlay", "valu"]) == 2
    assert "has no overlay 'valu'; it has visits, food" in capsys.readouterr().out
    assert main(["replay", "export", str(path), "--gif", str(out), "--stop", "11"]) == 2
    assert "--stop 11 is outside ticks 0..10" in capsys.readouterr().out

    # MP4 through the ffmpeg on PATH: every frame's raw pixels fed to it, its output moved into place
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ffmpeg").write_text(FAKE_FFMPEG)
    (bin_dir / "ffmpeg").chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    mp4 = tmp_path / "run.mp4"
    assert main(["replay", "export", str(path), "--mp4", str(mp4), "--scale", "2"]) == 0
    assert int(mp4.read_text()) == 11 * (2 * size) ** 2 * 3
