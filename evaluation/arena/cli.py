"""``nmmo arena serve | add | remove | status | recompute``: the arena from the command line.

Every command takes ``--db PATH`` (the SQLite file; made by the first ``add`` or ``serve``). ``status``
and ``recompute`` only read it, so they work while a server runs; ``add`` and ``remove`` write one
small transaction, which the running server sees at its next seating.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.table import Table

from evaluation.arena.matchmaking import MAX_SEATS, SEATS

#: What an entry's name may hold: it appears in URLs (/api/entries/NAME/...) and tables.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}")
DEFAULT_PORT = 8090


def _database_errors(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A file that is not an arena database is one error line naming it, not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except sqlite3.DatabaseError as err:
            raise ValueError(f"--db {args.db}: {err}") from None

    return run


# ------------------------------------------------------------------ serve
def _cmd_serve(args: argparse.Namespace) -> int:
    from evaluation.arena.server import ArenaServer, ServeOptions
    from evaluation.arena.settings import requested_format
    from evaluation.arena.uploads import UploadLimits

    requested = requested_format(args.config, args.ticks, args.seats, args.time_budget)
    limits = UploadLimits(int(args.upload_mb * 2**20), args.upload_files, args.uploads_per_hour)
    options = ServeOptions(args.workers, args.host, args.port, args.ray_address, args.max_episodes, args.viewer_port,
                           args.keep_replays, args.replay_mb, limits, args.allow_unsandboxed_uploads)
    return ArenaServer(args.db, requested, options, args.seed).run()


def _check_serve(args: argparse.Namespace) -> None:
    from nmmo.cli import check_port

    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    if args.max_episodes is not None and args.max_episodes < 1:
        raise ValueError(f"--max-episodes must be >= 1, got {args.max_episodes}")
    if args.port != 0:  # 0: any free port, said in the log
        check_port(args.host, args.port)
    for flag in ("keep_replays", "upload_files", "uploads_per_hour"):
        if getattr(args, flag) < 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be >= 0, got {getattr(args, flag)}")
    for flag in ("upload_mb", "replay_mb"):
        if not getattr(args, flag) > 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if args.viewer_port not in (None, 0):
        check_port(args.host, args.viewer_port)


def _serve_interrupted(args: argparse.Namespace, resume: str) -> str:
    from nmmo.cli import cli_command

    return (f"stopped; every finished episode is committed in {args.db}, and the episodes being played are kept as "
            f"claims, played again first by the next: {cli_command()} arena serve --db {args.db}")


# -------------------------------------------------------------------- add
def default_name(spec: str) -> str:
    """An entry's name from its spec: its display name, with what a URL path cannot hold made '-'."""
    from nmmo.policy import display_names

    name = re.sub(r"[^A-Za-z0-9_.:+-]", "-", display_names([spec])[spec]).strip("-.") or "entry"
    return name[:64]


def _cmd_add(args: argparse.Namespace) -> int:
    from evaluation.arena import db
    from evaluation.arena.server import open_arena
    from evaluation.sandbox.host import Limits
    from evaluation.submission import check_private, check_spec, is_trusted, worker_spec
    from nmmo.cli import console

    name = args.name or default_name(args.spec)
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"--name {name!r}: an entry's name is 1-64 letters, digits and _ . : + - (it appears in URLs)")
    limits = Limits()
    check_spec(args.spec, limits.init_timeout, limits)  # a typo is an error now, not an entry idling for days
    spec = args.spec if is_trusted(args.spec) else worker_spec(args.spec)  # paths absolute: the server's cwd differs
    with closing(open_arena(args.db)) as conn:
        others = [e.spec for e in db.entries(conn) if e.kind == "submission" and not is_trusted(e.spec)]
        check_private([*others, spec])
        entry = db.add_entry(conn, name, spec, "submission")
    console.print(f"added {entry.name} ({entry.spec}) to {args.db}: a running server seats it from its next episode")
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    from evaluation.arena import db
    from evaluation.arena.server import open_arena
    from nmmo.cli import console

    with closing(open_arena(args.db)) as conn:
        db.set_active(conn, args.name, False)
    console.print(f"retired {args.name}: seated in no new episode; its episodes stay in the log and its rating on "
                  "the leaderboard")
    return 0


# ----------------------------------------------------------------- status
def _cmd_status(args: argparse.Namespace) -> int:
    from evaluation.arena import db, queries, schema
    from nmmo.cli import console
    from nmmo.cli.tables import print_table

    with closing(db.connect(args.db, readonly=True)) as conn:
        if schema.schema_version(conn) == 0:
            raise ValueError(f"--db {args.db} is not an arena database (no schema_version)")
        summary, board = queries.summary(conn), queries.leaderboard(conn)
    if args.json:
        print(json.dumps({"status": summary, "leaderboard": board}, default=str))
        return 0
    console.print(status_line(args.db, summary))
    print_table(console, leaderboard_table(board), keys=2)
    if summary["claims"]:
        console.print("being played: " + "; ".join(f"claim {c['claim']} ({', '.join(c['entries'])}; attempt "
                                                   f"{c['attempts']})" for c in summary["claims"]))
    return 0


def status_line(path: Path, summary: dict[str, Any]) -> str:
    server = summary["server"]
    if server.get("running"):
        state = f"served by pid {server['pid']} at {server.get('url')}"
    else:
        state = "no server running"
    last = summary["last_commit"]
    ago = "" if last is None else f" (last {time.time() - last:.0f} s ago)"
    form = summary["format"] or {}
    about = f"{form.get('config_name')}, {form.get('ticks')} ticks, anchor + {form.get('seats')} seats" if form else \
        "format not settled (no serve yet)"
    return (f"{path}: {summary['episodes']} episodes{ago}, {len(summary['claims'])} being played, "
            f"{summary['replayed']} replayed, {summary['dropped']} dropped; {summary['entries']} entries; {about}; "
            f"{state}")


def leaderboard_table(board: list[dict[str, Any]]) -> Table:
    table = Table(title="arena leaderboard (SR 1500 = the anchor)")
    for column in ("rank", "entry", "SR", "95 % CI", "episodes", "faults", "kind"):
        table.add_column(column, justify="left" if column in ("entry", "kind") else "right")
    for row in board:
        faults = row["faults"]
        total = faults["exception"] + faults["timeout"] + faults["malformed"]
        fault_text = "-" if not total and not faults["not_started"] else \
            f"{total}" + (f" ({faults['not_started']} unstarted)" if faults["not_started"] else "")
        table.add_row("-" if row["rank"] is None else str(row["rank"]), row["name"],
                      "-" if row["sr"] is None else f"{row['sr']:.0f}",
                      "-" if row["sr"] is None else f"{row['ci_low']:.0f}..{row['ci_high']:.0f}",
                      str(row["episodes"]), fault_text, row["kind"] + ("" if row["active"] else ", retired"))
    return table


@_database_errors
def _cmd_recompute(args: argparse.Namespace) -> int:
    from evaluation.arena import db
    from evaluation.arena.server import check_ratings
    from nmmo.cli import console

    with closing(db.connect(args.db, readonly=True)) as conn:
        computed, lines = check_ratings(conn, write=False)
        count = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    for line in lines:
        console.print(line)
    if lines:
        console.print(f"the stored ratings differ from a recompute of the {count} episodes in {len(lines)} place(s); "
                      "the next serve replaces them")
        return 1
    console.print(f"the stored ratings of {len(computed)} entries equal a recompute of the {count} episodes in the log")
    return 0


# --------------------------------------------------------------- parsers
def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """`nmmo arena serve`, `add`, `remove`, `status`, `recompute`."""
    from nmmo.cli import add_command, command_group
    from nmmo.policy import spec_forms

    arena = command_group(subparsers, "arena", "an always-on tournament over a database: serve, add, status")

    def command(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002
        parser = add_command(arena, name, help)
        parser.add_argument("--db", type=Path, required=True, metavar="PATH", help="the arena's SQLite file")
        return parser

    serve = command("serve", "play episodes without end and commit each one; JSON endpoints on --host:--port")
    serve.add_argument("--workers", type=int, default=2, help="episodes played at once (one process each)")
    serve.add_argument("--host", default="127.0.0.1", help="address of the JSON endpoints (127.0.0.1: this machine "
                       "only)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port of the JSON endpoints (0: any free one, "
                       "said in the log)")
    serve.add_argument("--config", default=None, help="a new arena's config name, preset or TOML path (None: "
                       "tournament, the canonical format; an arena with episodes keeps its own)")
    serve.add_argument("--ticks", type=int, default=None,
                       help="ticks per episode (None: the config's HORIZON, or the arena's)")
    serve.add_argument("--seats", type=int, default=None,
                       help=f"policies per episode besides the anchor, 1..{MAX_SEATS} (None: {SEATS}, or the arena's)")
    serve.add_argument("--time-budget", type=float, default=None, help="seconds per tick for each submission "
                       "(None: 1.0, or the arena's)")
    serve.add_argument("--seed", type=int, default=None, help="a new arena's seed (seats and episode seeds derive "
                       "from it; None: 0, or the arena's)")
    serve.add_argument("--ray-address", default=None, metavar="ADDR",
                       help="play the episodes on Ray actors of this cluster (auto, ray://head:10001)")
    serve.add_argument("--max-episodes", type=int, default=None, metavar="N",
                       help="stop once the log holds N episodes (None: never)")
    serve.add_argument("--viewer-port", type=int, default=None, metavar="P", help="also serve the recorded replays "
                       "in the viewer on --host:P, linked from the participants' pages (0: any free port; needs the "
                       "[serve] extra and the built viewer)")
    serve.add_argument("--keep-replays", type=int, default=200, metavar="N",
                       help="record every episode and keep the newest N replays (0: record none)")
    serve.add_argument("--replay-mb", type=float, default=2048.0, metavar="MB", help="and at most MB MiB of them")
    serve.add_argument("--upload-mb", type=float, default=50.0, metavar="MB", help="the largest upload, MiB (the "
                       "archive, and the folder it unpacks to)")
    serve.add_argument("--upload-files", type=int, default=1000, metavar="N", help="the most members in an "
                       "uploaded archive")
    serve.add_argument("--uploads-per-hour", type=int, default=10, metavar="N", help="uploads a participant may "
                       "send in any hour (refused ones count)")
    serve.add_argument("--allow-unsandboxed-uploads", action="store_true", help="take uploads where the namespace "
                       "sandbox (bubblewrap) cannot run: a submission could then read the database and other "
                       "uploads (docs/arena.md, the trust model)")
    serve.set_defaults(func=_database_errors(_cmd_serve), check=_check_serve, interrupted=_serve_interrupted)

    add = command("add", "put a policy in the arena's pool (checked now: a typo is an error)")
    add.add_argument("spec", metavar="SPEC", help=f"the policy: {spec_forms()}; anything but the registered names "
                     "runs in the sandbox")
    add.add_argument("--name", default=None, help="its name in tables and URLs (None: its display name)")
    add.set_defaults(func=_database_errors(_cmd_add))

    remove = command("remove", "retire a submission: no new episodes; its log and rating stay")
    remove.add_argument("name", metavar="NAME", help="the entry's name")
    remove.set_defaults(func=_database_errors(_cmd_remove))

    status = command("status", "the leaderboard and what is being played, read from the database")
    status.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    status.set_defaults(func=_database_errors(_cmd_status))

    recompute = command("recompute", "check the stored ratings against a recompute from the episode log "
                        "(exit status 1 when they differ)")
    recompute.set_defaults(func=_cmd_recompute)

    from evaluation.arena.participant_cli import add_participant_commands

    add_participant_commands(arena, command)
