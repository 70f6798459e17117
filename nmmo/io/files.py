"""Files written atomically: a reader (or a crash) sees the old file or the new one, never half.

Every file the project writes (maps, replays, checkpoints, results, logs' snapshots) goes through
`atomic_write_bytes`: the data goes to a temporary file beside the target (``.NAME.XXXX.tmp``),
is flushed to disk, then replaces the target in one `os.replace`. A process killed in between
leaves only the temporary file behind; `remove_stale_temps` clears those when a directory is
used again.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TEMP_SUFFIX = ".tmp"


def _read_umask() -> int:
    """The process umask (read once: os.umask can only be read by setting it, so set it back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Files written atomically get the mode open() would give them (mkstemp makes them 0600).
FILE_MODE = 0o666 & ~_read_umask()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """A temporary file beside `path` for a writer that needs a file name (an external program):
    moved onto `path` when the block ends without an error, removed when it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` so readers see the old file or the new one, never a partial one."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """`atomic_write_bytes` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | os.PathLike, data: Any, indent: int | None = 1) -> Path:
    """`atomic_write_bytes` of a JSON document (NaN and infinities refused: they are not JSON)."""
    return atomic_write_bytes(path, json.dumps(data, indent=indent, allow_nan=False).encode())


def remove_stale_temps(directory: str | os.PathLike, name: str | None = None, min_age: float = 0.0) -> list[Path]:
    """Delete temporary files an interrupted atomic write left in `directory` (those of `name`
    only, when given); returns what was removed. In a directory other processes write at the same
    time (the map cache), `min_age` seconds spares the temporary files of writes still going on."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    pattern = f".{name}.*{TEMP_SUFFIX}" if name else f".*{TEMP_SUFFIX}"
    removed = []
    now = time.time()
    for path in directory.glob(pattern):
        try:
            if path.is_file() and now - path.stat().st_mtime >= min_age:
                path.unlink(missing_ok=True)
                removed.append(path)
        except FileNotFoundError:  # its writer finished meanwhile
            continue
    return removed
