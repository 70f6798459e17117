"""Progress for long work, on a terminal and in a log.

On a terminal, long commands keep tqdm's live bar. When the output is not a terminal (a CI log,
``make demo > log``, a pipe), a bar would print nothing useful until the end, so `progress` writes
plain lines instead: one as the work starts (nothing has to finish first for a log to show that
the command is running), then one per update (a finished episode, iteration or run), each with the
count, the elapsed time and the time left::

    tournament: 0/12 episodes, 0:00 elapsed
    tournament: 3/12 episodes, 0:41 elapsed, ETA 2:03

`enabled=False` (``--quiet``, ``--no-progress``) prints nothing.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether `stream` (stdout by default) is an interactive terminal."""
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def clock(seconds: float) -> str:
    """0:41, 12:03, 1:02:03."""
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class LineProgress:
    """tqdm's update interface, writing a plain line when it starts and one per update (at most one
    per `min_interval` seconds, the last one always)."""

    def __init__(self, total: int | None, desc: str, unit: str, initial: int = 0, stream: TextIO | None = None,
                 min_interval: float = 0.0) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n = initial
        self.initial = initial
        self.stream = stream if stream is not None else sys.stdout
        self.min_interval = min_interval
        self.started = time.monotonic()
        self._last_line = -float("inf")
        self.postfix = ""
        self._write(self.started)  # the work has started: say so now, not after its first step

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        done = self.total is not None and self.n >= self.total
        if done or now - self._last_line >= self.min_interval:
            self._write(now)

    def _write(self, now: float) -> None:
        self._last_line = now
        self.stream.write(self.line(now) + "\n")
        self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = (now if now is not None else time.monotonic()) - self.started
        count = f"{self.n:,}/{self.total:,}" if self.total is not None else f"{self.n:,}"
        text = f"{self.desc}: {count} {self.unit}s, {clock(elapsed)} elapsed"
        progressed = self.n - self.initial
        if self.total is not None and 0 < progressed and self.n < self.total:
            text += f", ETA {clock(elapsed / progressed * (self.total - self.n))}"
        return text + (f" ({self.postfix})" if self.postfix else "")

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def set_description(self, desc: str, refresh: bool = True) -> None:
        self.desc = desc

    def close(self) -> None:
        """Nothing to release (every line is written when it happens)."""

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Silent(LineProgress):
    def _write(self, now: float) -> None:
        """Silent: counts, writes nothing."""


def progress(total: int | None = None, desc: str = "", unit: str = "it", enabled: bool = True, initial: int = 0,
             min_interval: float = 0.0, stream: TextIO | None = None) -> Any:
    """A progress display with tqdm's interface (`update`, `set_postfix_str`, `close`, a context
    manager): tqdm's bar on a terminal, plain lines otherwise (see the module notes), nothing when
    not `enabled`."""
    if not enabled:
        return _Silent(total, desc, unit, initial, stream)
    if is_terminal(stream):
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, initial=initial, file=stream)
    return LineProgress(total, desc, unit, initial, stream, min_interval)
