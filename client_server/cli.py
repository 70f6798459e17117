"""`nmmo serve`: the 3D viewer on a replay, a directory of replays or a live run.

Registered in the ``nmmo.commands`` entry point group; FastAPI and uvicorn (the [serve] extra)
are imported only when the command runs, so `nmmo --help` works without them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from client_server.guard import normalize_origin
from client_server.protocol import SPEED_RANGE
from nmmo import config as config_module
from nmmo.cli import add_command, check_port, console
from nmmo.cli.overrides import add_set_flag


def add_allow_origin(parser: argparse.ArgumentParser) -> None:
    """`--allow-origin ORIGIN` (repeatable): pages besides the viewer's own that may use the server."""
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="also accept websockets and requests from this origin, e.g. http://myhost:8000 "
                             "(repeatable; by default only the viewer's own page on 127.0.0.1/localhost)")


def add_server_flags(parser: argparse.ArgumentParser) -> None:
    """Where and how much to serve: --host, --port, --allow-origin, --max-viewers, --max-replay-mb,
    --replay-cache-mb, and the --overlay the viewer link opens with."""
    from client_server.replays import MAX_REPLAY_MB, REPLAY_CACHE_MB

    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on")
    add_allow_origin(parser)
    parser.add_argument("--max-viewers", type=int, default=256, help="websocket viewers served at once")
    parser.add_argument("--max-replay-mb", type=int, default=MAX_REPLAY_MB,
                        help="refuse replays whose arrays decode to more MiB than this")
    parser.add_argument("--replay-cache-mb", type=int, default=REPLAY_CACHE_MB,
                        help="keep decoded replays for later viewers up to this many MiB in all, least "
                             "recently used dropped first (0: keep none)")
    parser.add_argument("--overlay", default=None, metavar="NAME",
                        help="the overlay the printed viewer link opens with (e.g. 'value landscape', value, visits)")


def check_server_flags(args: argparse.Namespace) -> None:
    """Bad origins and a busy port fail before any work starts."""
    for origin in args.allow_origin:
        normalize_origin(origin)
    if args.max_viewers < 1 or args.max_replay_mb < 1:
        raise ValueError("--max-viewers and --max-replay-mb must be positive")
    if args.replay_cache_mb < 0:
        raise ValueError(f"--replay-cache-mb must be 0 or more, got {args.replay_cache_mb}")
    check_port(args.host, args.port)


def _check_serve(args: argparse.Namespace) -> None:
    low, high = SPEED_RANGE
    if not low <= args.speed <= high:  # also rejects nan
        raise ValueError(f"--speed must be in {low:g}..{high:g} ticks per second, got {args.speed:g}")
    if args.live == (args.replay is not None or args.replay_dir is not None):
        raise ValueError("give either --live or --replay PATH / --replay-dir DIR")
    if args.replay_dir is not None and not Path(args.replay_dir).is_dir():
        what = "is not a directory" if Path(args.replay_dir).exists() else "does not exist"
        raise ValueError(f"--replay-dir {args.replay_dir} {what}")
    if args.replay is not None and Path(args.replay).is_dir():
        raise ValueError(f"--replay {args.replay} is a directory (to serve every replay in it: --replay-dir)")
    check_server_flags(args)


class LiveRun(NamedTuple):
    """A simulation for `serve_viewer` to run and stream: its config (a name, preset or TOML path),
    the policy spec driving every agent, the env and policy seed, ticks per second, and the task set
    its agents get (a shipped name or a file; None: the config's TASKS, if any)."""

    config: str
    policy: str = "scripted:Combat"
    seed: int = 0
    speed: float = 10.0
    tasks: str | None = None


def serve_viewer(*, replay: str | Path | None = None, replay_dir: str | Path | None = None,
                 live: LiveRun | None = None, overlay: str | None = None, host: str = "127.0.0.1",
                 port: int = 8000, allow_origins: Sequence[str] = (), max_viewers: int = 256,
                 max_replay_mb: int | None = None, replay_cache_mb: int | None = None) -> int:
    """Serve the viewer on a replay (opened first; the others in its directory, or in `replay_dir`,
    are listed beside it), a directory of replays, or a `live` run; blocks until Ctrl-C.

    `overlay` is the overlay the printed viewer link opens with; the rest are where and how much to
    serve (`max_replay_mb` and `replay_cache_mb`: None for the server's defaults). What `nmmo serve`
    and `nmmo demo --serve` call."""
    if (live is not None) == (replay is not None or replay_dir is not None):
        raise ValueError("serve either a live run or a replay / a replay directory")
    try:
        from client_server.server import create_app, serve
        from client_server.sessions import LiveSession
    except ImportError as err:
        raise ValueError(f"the viewer server needs the [serve] extra (pip install -e '.[serve]'): {err}") from None
    from client_server.replays import MAX_REPLAY_MB, REPLAY_CACHE_MB

    max_replay_mb = MAX_REPLAY_MB if max_replay_mb is None else max_replay_mb
    url = f"http://{host}:{port}/"
    guard = {"host": host, "port": port, "allow_origins": allow_origins, "max_viewers": max_viewers,
             "max_replay_mb": max_replay_mb,
             "replay_cache_mb": REPLAY_CACHE_MB if replay_cache_mb is None else replay_cache_mb}
    if live is not None:
        session = LiveSession(config_module.resolve(live.config), live.policy, seed=live.seed, speed=live.speed,
                              tasks=live.tasks)
        app, url = create_app(live=session, **guard), url + "?live=1"
    else:
        directory = Path(replay_dir) if replay_dir else Path(replay).parent
        if replay and Path(replay).parent.resolve() != directory.resolve():
            raise ValueError(f"--replay {replay} is not inside --replay-dir {directory}")
        if replay:
            from nmmo.replays.replay import ReplayError, decoded_bytes, read_header

            read_header(replay)  # a clear error now beats a blank viewer later
            if decoded_bytes(replay) > max_replay_mb * 2**20:
                raise ReplayError(replay, f"decodes to more than --max-replay-mb {max_replay_mb} MiB")
            url += f"?replay={Path(replay).name}"
        app = create_app(replay_dir=directory, **guard)
    if overlay:
        url += ("&" if "?" in url else "?") + f"overlay={quote(overlay)}"  # "value landscape": %20
    console.print(f"viewer: {url}  (Ctrl-C stops the server)", highlight=False)
    serve(app, host=host, port=port)
    return 0


def server_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `serve_viewer` keywords that the flags of `add_server_flags` set on a command's `args`."""
    return {"host": args.host, "port": args.port, "allow_origins": args.allow_origin,
            "max_viewers": args.max_viewers, "max_replay_mb": args.max_replay_mb,
            "replay_cache_mb": args.replay_cache_mb, "overlay": args.overlay}


def serve_command(args: argparse.Namespace) -> int:
    """`nmmo serve`: the viewer as its flags ask (replay, replay directory or live run)."""
    live = LiveRun(args.config, args.policy, args.seed, args.speed, args.tasks) if args.live else None
    return serve_viewer(replay=args.replay, replay_dir=args.replay_dir, live=live, **server_options(args))


def add_commands(sub: argparse._SubParsersAction) -> None:
    """`nmmo serve`."""
    from nmmo.policy import spec_forms

    srv = add_command(sub, "serve", "serve the 3D viewer for a replay, a directory of replays or a live run")
    srv.add_argument("--replay", default=None, metavar="PATH", help="a .replay file to watch")
    srv.add_argument("--replay-dir", default=None, metavar="DIR", help="serve every replay in DIR")
    srv.add_argument("--live", action="store_true", help="run a simulation and stream it")
    srv.add_argument("--config", default="small_maps", help="live: config name, preset or TOML path")
    add_set_flag(srv)
    srv.add_argument("--policy", default="scripted:Combat",
                     help=f"live: the policy driving every agent ({spec_forms()}); it runs in this process, "
                     "unsandboxed, with your privileges: name only code you trust")
    srv.add_argument("--seed", type=int, default=0, help="live: env and policy seed")
    srv.add_argument("--speed", type=float, default=10.0, help="live: ticks per second")
    srv.add_argument("--tasks", default=None, metavar="SET",
                     help="live: give every agent a task from this set (a shipped name, e.g. foraging, or a "
                          ".toml/.json path); the inspector shows each agent's task and progress")
    add_server_flags(srv)
    srv.set_defaults(func=serve_command, check=_check_serve)
