"""Replays as the server holds them: decoded once per file, shared by every viewer, off the event loop.

`ReplayCache.get(path)` returns the decoded `nmmo.replays.replay.Replay` of a file, decoding it at most
once per version of the file (path, size and modification time) however many viewers open it.
Memory is bounded by bytes, not by count (a small file can decode to a gigabyte):

- a file whose arrays would decode to more than `max_bytes` (``--max-replay-mb``) is refused
  before anything is decoded;
- the cache keeps decoded replays whose summed `Replay.nbytes` is at most `cache_bytes`
  (``--replay-cache-mb``), evicting the least recently used first; a replay bigger than the whole
  budget is served but not kept;
- one file decodes at a time (in a worker thread, `aget`), so at most one replay is in flight;
- a replay that left the cache while viewers still watch it stays in memory until they leave (it
  is then not counted), and is handed out again rather than decoded twice.

So the server holds at most `cache_bytes` + `max_bytes`, plus the replays its viewers pin.
`listing(directory)` describes every replay of a directory from its header alone; a file that
cannot be read is listed as unreadable, it never breaks the list.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from nmmo.replays.replay import Replay, ReplayError, load_replay, read_header

#: Default limit on a replay's decoded arrays (a 1024-tick Large replay decodes to about 600 MiB).
MAX_REPLAY_MB = 1024
#: Default budget of the decoded replays a server keeps (two of the largest allowed by default).
REPLAY_CACHE_MB = 2048


class ReplayCache:
    """Decoded replays shared between viewers, at most `cache_bytes` of them (see the module notes)."""

    def __init__(self, max_bytes: int = MAX_REPLAY_MB * 2**20, cache_bytes: int = REPLAY_CACHE_MB * 2**20) -> None:
        self.max_bytes, self.cache_bytes = max_bytes, cache_bytes
        self._replays: OrderedDict[tuple, Replay] = OrderedDict()  # least recently used first
        self._in_use: weakref.WeakValueDictionary[tuple, Replay] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()  # guards the tables above
        self._decoding = threading.Lock()  # one decode at a time
        self.held_bytes = 0  # summed nbytes of the kept replays
        self.decodes = 0  # how many times a file was decoded (tests and benchmarks read it)

    def get(self, path: Path) -> Replay:
        """The decoded replay of `path` (ReplayError if it cannot be read or is too big)."""
        try:
            stat = path.stat()
        except OSError:
            raise ReplayError(path, "does not exist") from None
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        replay = self._lookup(key)
        if replay is None:
            with self._decoding:  # whoever waited here for the same file finds it decoded
                replay = self._lookup(key)
                if replay is None:
                    replay = load_replay(path, max_bytes=self.max_bytes)
                    with self._lock:
                        self.decodes += 1
                        self._keep(key, replay)
        return replay

    def _lookup(self, key: tuple) -> Replay | None:
        """A kept replay (now the most recent), or one a viewer still holds (kept again)."""
        with self._lock:
            if key in self._replays:
                self._replays.move_to_end(key)
                return self._replays[key]
            replay = self._in_use.get(key)
            if replay is not None:
                self._keep(key, replay)
            return replay

    def _keep(self, key: tuple, replay: Replay) -> None:
        """Keep `replay` within the byte budget, evicting the least recently used (caller holds the lock)."""
        self._in_use[key] = replay
        size = replay.nbytes
        if size > self.cache_bytes:
            return  # served, not kept: it alone would overflow the budget
        self._replays[key] = replay
        self.held_bytes += size
        while self.held_bytes > self.cache_bytes:
            _, evicted = self._replays.popitem(last=False)
            self.held_bytes -= evicted.nbytes

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
