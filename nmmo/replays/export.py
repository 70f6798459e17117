"""Replays as animations: a GIF (Pillow) or an MP4 (ffmpeg, where installed), one frame a tick.

Each frame is `nmmo.core.render`'s picture of the tick, the one ``env.render()`` returns (players
white, NPCs black), upscaled `scale` x `scale` so a tile reads as a square; with `overlay`, the
overlay at that tick is blended under the entities as the viewer blends it (recorded overlays such
as ``value``, or the built-ins computed from the frames as the viewer server computes them).

A replay is untrusted input: it is read by `nmmo.replays.replay.load_replay` (its checks and its
`max_bytes` bound), and an export is refused before any frame is drawn when it would hold more than
`MAX_EXPORT_PIXELS` in memory (Pillow keeps every frame of a GIF until it writes the file). Output
files are written atomically (a reader sees the old file or the whole new one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmmo.core.render import entities_rgb, overlay_rgb, upscale
from nmmo.io.files import atomic_path, atomic_write_bytes
from nmmo.replays.replay import Replay, quantize

#: Pixels of all frames together that an export may hold (a GIF's frames, one byte a pixel once
#: paletted): 2**30 is 1024 frames of 1024 x 1024.
MAX_EXPORT_PIXELS = 2**30
#: Default smallest width of a frame when the scale is chosen for you (`auto_scale`).
MIN_WIDTH = 512


@dataclass(frozen=True)
class Export:
    """What to draw: `ticks` (a range within the replay), `scale` (pixels a tile), `overlay` (a name
    or None), `opacity` of the overlay, `fps` (frames a second)."""

    ticks: range
    scale: int
    overlay: str | None = None
    opacity: float = 0.75
    fps: float = 10.0


def auto_scale(size: int, min_width: int = MIN_WIDTH) -> int:
    """The smallest integer scale that makes a `size`-tile map at least `min_width` pixels wide."""
    return max(1, -(-min_width // max(size, 1)))


def tick_range(ticks: int, start: int = 0, stop: int | None = None, stride: int = 1) -> range:
    """Ticks `start`..`stop` (inclusive; None: the last) every `stride` of a replay with `ticks`
    ticks (frames 0..ticks); ValueError naming the flag for any outside it."""
    stop = ticks if stop is None else stop
    if stride < 1:
        raise ValueError(f"--stride must be >= 1, got {stride}")
    if not 0 <= start <= ticks:
        raise ValueError(f"--start {start} is outside the replay's ticks 0..{ticks}")
    if not start <= stop <= ticks:
        raise ValueError(f"--stop {stop} is outside ticks {start}..{ticks} (--start to the replay's last)")
    return range(start, stop + 1, stride)


def check_export(replay: Replay, plan: Export) -> None:
    """Refuse an export that names an overlay the replay lacks or would not fit in memory."""
    if plan.overlay is not None and plan.overlay not in _overlay_names(replay):
        raise ValueError(f"the replay has no overlay {plan.overlay!r}; it has {', '.join(_overlay_names(replay))}")
    if plan.scale < 1:
        raise ValueError(f"--scale must be >= 1, got {plan.scale}")
    if not 0.0 <= plan.opacity <= 1.0:
        raise ValueError(f"--opacity must be in 0..1, got {plan.opacity}")
    if not 0 < plan.fps <= 100:
        raise ValueError(f"--fps must be in (0, 100], got {plan.fps}")
    pixels = len(plan.ticks) * (replay.size * plan.scale) ** 2
    if pixels > MAX_EXPORT_PIXELS:
        raise ValueError(f"{len(plan.ticks)} frames of {replay.size * plan.scale} px square are {pixels / 2**20:.0f} "
                         f"Mpx, over the {MAX_EXPORT_PIXELS // 2**20} Mpx an export may hold: raise --stride, lower "
                         "--scale or export fewer ticks (--start, --stop)")
    if plan.overlay is not None and plan.overlay not in replay.overlay_names:
        _geometry(replay)  # a built-in reads the map's geometry from the header


def _overlay_names(replay: Replay) -> list[str]:
    from nmmo.replays.overlays import builtin_names

    tasks = isinstance(replay.header.get("tasks"), dict)
    return [*builtin_names(tasks), *replay.overlay_names]


class _Overlays:
    """An overlay of a replay tick after tick: recorded ones as stored, built-ins computed from the
    frames as the viewer server computes them (visits and task completions counted from tick 0)."""

    def __init__(self, replay: Replay, name: str) -> None:
        self.replay, self.name, self.upto = replay, name, -1
        size = replay.size
        self.visits = np.zeros((size, size), dtype=np.float32)
        self.completions = np.zeros((size, size), dtype=np.float32)
        self.border, self.center = (0, 0) if name in replay.overlay_names else _geometry(replay)

    def at(self, tick: int) -> np.ndarray | None:
        """The overlay at `tick` (0..255 per tile), None where it has no data yet; ticks ascending."""
        from nmmo.replays.overlays import add_completions, add_visits, builtin_heatmap

        replay = self.replay
        if self.name in replay.overlay_names:
            stored = replay.overlay_at(self.name, tick)
            return None if stored is None else stored[0]
        for t in range(self.upto + 1, tick + 1):
            add_visits(self.visits, replay.frame(t))
            add_completions(self.completions, replay.frame(t), replay.frame(t - 1) if t > 0 else None)
        self.upto = max(self.upto, tick)
        heat = builtin_heatmap(self.name, replay.frame(tick), replay.material_at(tick), self.border, self.center,
                               self.visits, self.completions)
        return quantize(heat)[0]


def _geometry(replay: Replay) -> tuple[int, int]:
    """The header's map border and centre (untrusted: whole numbers within the map, or refused)."""
    border, center = replay.header.get("border"), replay.header.get("center")
    if not all(type(v) is int and 0 <= v <= replay.size for v in (border, center)):
        raise ValueError("the replay's header gives no map border and centre within its map: its built-in "
                         "overlays cannot be drawn (its recorded ones can)")
    return border, center


def frames(replay: Replay, plan: Export) -> Iterator[np.ndarray]:
    """The export's frames, H x W x 3 uint8, one per tick of `plan.ticks`."""
    overlays = _Overlays(replay, plan.overlay) if plan.overlay else None
    for tick in plan.ticks:
        material = replay.material_at(tick)
        heat = overlays.at(tick) if overlays else None
        base = None if heat is None else overlay_rgb(material, heat, plan.opacity)
        frame = replay.frame(tick)
        alive = frame["alive"].astype(bool)
        image = entities_rgb(material, frame["row"][alive], frame["col"][alive], frame["kind"][alive] == 0, base)
        yield upscale(image, plan.scale)


def write_gif(path: str | os.PathLike, images: Iterator[np.ndarray], fps: float,
              on_frame: Callable[[], None] = lambda: None) -> Path:
    """A looping GIF of `images` at `fps`, written atomically (Pillow encodes it; identical
    consecutive frames are merged into one longer frame, so the timing stays the same)."""
    import io

    try:
        from PIL import Image
    except ImportError:
        raise ValueError("GIF export needs Pillow: pip install -e '.[serve]' (or pip install pillow)") from None

    def pictures() -> Iterator[Image.Image]:
        for image in images:
            on_frame()
            # a palette of its own per frame, undithered: exact up to 256 colours (a frame without an
            # overlay has 8), and maximum coverage keeps an overlay's rarer colours close (median
            # cut, Pillow's default, was off by up to 27 of 255 on a value gradient; this by 2)
            yield Image.fromarray(image, "RGB").quantize(256, method=Image.Quantize.MAXCOVERAGE,
                                                         dither=Image.Dither.NONE)

    sequence = pictures()
    first = next(sequence, None)
    if first is None:
        raise ValueError("nothing to export: no ticks")
    buffer = io.BytesIO()
    # frame durations are whole milliseconds in Pillow (GIF keeps hundredths of a second)
    first.save(buffer, format="GIF", save_all=True, append_images=sequence, duration=round(1000 / fps), loop=0)
    return atomic_write_bytes(path, buffer.getvalue())


def write_mp4(path: str | os.PathLike, images: Iterator[np.ndarray], fps: float, width: int,
              on_frame: Callable[[], None] = lambda: None) -> Path:
    """An H.264 MP4 of `images` (each `width` px square) through the ffmpeg on PATH, written to a
    temporary file beside `path` and moved into place when ffmpeg succeeded."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise ValueError("MP4 export needs ffmpeg on PATH (apt-get install ffmpeg); --gif needs only Pillow")
    even = width + width % 2  # yuv420p needs even sides: pad one pixel where odd
    with atomic_path(path) as tmp:
        command = [ffmpeg, "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{width}",
                   "-r", f"{fps:g}", "-i", "-", "-vf", f"pad={even}:{even}", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                   "-f", "mp4", tmp]
        with subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            try:
                for image in images:
                    on_frame()
                    process.stdin.write(np.ascontiguousarray(image).tobytes())
            except BrokenPipeError:
                pass  # ffmpeg stopped: its status and message say why
            finally:
                process.stdin.close()
            message = process.stderr.read().decode(errors="replace").strip()
        if process.returncode != 0:
            raise ValueError(f"ffmpeg failed (status {process.returncode}): {message[-500:] or 'no message'}")
    return Path(path)
