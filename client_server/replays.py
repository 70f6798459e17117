"""Replays as the server holds them: decoded once per file, shared by every viewer, off the event loop.

`ReplayCache.get(path)` returns the decoded `nmmo.replay.Replay` of a file, decoding it at most
once per version of the file (path, size and modification time) however many viewers open it,
and keeping the most recently used few. Decoding runs in a worker thread (`aget`), so a big file
never stalls the server's other connections, and a file whose arrays would decode to more than
`max_bytes` is refused before it is decoded (a small file can hold a huge, compressible array).
`listing(directory)` describes every replay of a directory from its header alone; a file that
cannot be read is listed as unreadable, it never breaks the list.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from nmmo.replay import Replay, ReplayError, load_replay, read_header

#: Default limit on a replay's decoded arrays (a 1024-tick Large replay decodes to about 600 MiB).
MAX_REPLAY_MB = 1024


class ReplayCache:
    """Decoded replays shared between viewers (see the module notes)."""

    def __init__(self, max_bytes: int = MAX_REPLAY_MB * 2**20, keep: int = 4) -> None:
        self.max_bytes, self.keep = max_bytes, keep
        self._replays: OrderedDict[tuple, Replay] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}
        self.decodes = 0  # how many times a file was decoded (tests and benchmarks read it)

    def get(self, path: Path) -> Replay:
        """The decoded replay of `path` (ReplayError if it cannot be read or is too big)."""
        try:
            stat = path.stat()
        except OSError:
            raise ReplayError(path, "does not exist") from None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if key in self._replays:
                self._replays.move_to_end(key)
                return self._replays[key]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one decode per file, however many viewers ask at once
            with self._lock:
                if key in self._replays:
                    return self._replays[key]
            replay = load_replay(path, max_bytes=self.max_bytes)
            with self._lock:
                self.decodes += 1
                self._replays[key] = replay
                self._loading.pop(key, None)
                while len(self._replays) > self.keep:
                    self._replays.popitem(last=False)
        return replay

    async def aget(self, path: Path) -> Replay:
        """`get` in a worker thread: the event loop keeps serving while a replay decodes."""
        return await asyncio.to_thread(self.get, path)


def listing(directory: Path) -> list[dict[str, Any]]:
    """Every ``*.replay`` file of `directory`, described from its header; unreadable ones say why
    (without paths: these go to any viewer)."""
    out = []
    for path in sorted(directory.glob("*.replay")):
        try:
            header = read_header(path)
            out.append({"name": path.name, "bytes": path.stat().st_size, "ticks": header["ticks"],
                        "config": header.get("config_name")})
        except (ReplayError, OSError) as err:
            reason = err.reason if isinstance(err, ReplayError) else (err.strerror or type(err).__name__)
            out.append({"name": path.name, "unreadable": reason})
    return out
