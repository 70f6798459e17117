"""The arena's replays: each episode recorded to ``ARENA/replays/claim-N.replay``, the newest kept,
and the viewer serving them beside the arena (``nmmo arena serve --viewer-port P``).

Why named by claim: the claim number is known when the episode is handed to a worker (the episode's
id only when it commits) and is one to one with committed episodes; a claim played again writes
its file again. A replay is not part of the log: the worker writes it, and a kill -9 between the
commit and the write loses a replay, never an episode. Retention: after every commit the oldest
files go until at most `keep` remain and they take at most `max_mb` MiB.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any


def replay_path(root: Path, claim: int) -> Path:
    return root / "replays" / f"claim-{claim}.replay"


def prune(root: Path, keep: int, max_mb: float) -> int:
    """Delete the oldest replays beyond `keep` files or `max_mb` MiB; return how many went."""
    folder = root / "replays"
    if not folder.is_dir():
        return 0
    files = []
    for path in folder.glob("claim-*.replay"):
        try:
            files.append((int(path.stem.split("-", 1)[1]), path, path.stat().st_size))
        except (ValueError, OSError):
            continue
    files.sort(reverse=True)  # newest claim first
    kept_bytes, removed = 0, 0
    for index, (_, path, size) in enumerate(files):
        kept_bytes += size
        if index >= keep or kept_bytes > max_mb * 2**20:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def start_viewer(root: Path, host: str, port: int) -> tuple[Any, int]:
    """The viewer's app (client_server, the ``[serve]`` extra) over ``root/replays`` on host:port, in a
    daemon thread of the server (it dies with it). Returns the uvicorn server and its port."""
    try:
        import uvicorn

        from client_server.server import create_app
    except ImportError as err:
        raise ValueError(f"--viewer-port needs the viewer's server (pip install 'flatmmo[serve]'): {err}") from None
    port = port or free_port(host)
    (root / "replays").mkdir(parents=True, exist_ok=True)
    app = create_app(replay_dir=root / "replays", host=host, port=port)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", ws="websockets-sansio"))
    threading.Thread(target=server.run, name="arena-viewer", daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if not server.started:
        raise ValueError(f"the viewer did not start on {host}:{port}")
    return server, port
