"""``nmmo arena register | submit | withdraw``: participants from the command line.

``register`` is the operator's (it writes the database on the serving machine) and prints the
token once. ``submit`` and ``withdraw`` are the participant's: they talk HTTP to a running server
(``--url``), or, on the serving machine, write the database directly (``--db``: the same checks).
The token comes from ``--token`` or the environment (``NMMO_ARENA_TOKEN``, which keeps it out of
the shell's history).
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from evaluation.arena.uploads import ARCHIVES, CHECKPOINTS, pack_folder

TOKEN_ENV = "NMMO_ARENA_TOKEN"


def read_spec(spec: str) -> tuple[bytes, str, str | None]:
    """What `submit` sends for a spec: (bytes, file name, class name). A file (``agent.py:Agent``), a
    folder (``path/folder:Agent``, sent as a .tar.gz), an archive (``agent.tar.gz:Agent``) or a
    checkpoint (``ckpt:model.pt``)."""
    scheme, sep, argument = spec.partition(":")
    if sep and scheme == "ckpt":
        path = Path(argument)
        if not path.is_file() or not path.name.lower().endswith(CHECKPOINTS):
            raise ValueError(f"SPEC {spec!r}: no checkpoint file ({', '.join(CHECKPOINTS)}) at {path}")
        return path.read_bytes(), path.name, None
    where, sep, class_name = spec.rpartition(":")
    if not sep or not class_name.isidentifier():
        raise ValueError(f"SPEC {spec!r}: give PATH:Class (a .py file, a folder or an archive) or ckpt:PATH")
    path = Path(where)
    if path.is_dir():
        return pack_folder(path), f"{path.resolve().name}.tar.gz", class_name
    if path.is_file() and path.name.lower().endswith((".py", *ARCHIVES)):
        return path.read_bytes(), path.name, class_name
    raise ValueError(f"SPEC {spec!r}: {path} is not a .py file, a folder or an archive ({', '.join(ARCHIVES)})")


def _token(args: argparse.Namespace) -> str:
    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise ValueError(f"give your token with --token TOKEN or in ${TOKEN_ENV}")
    return token


def http_post(url: str, path: str, token: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(url.rstrip("/") + path, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=600) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        try:
            answer = json.loads(err.read())
        except ValueError:
            answer = {}
        if "status" in answer:  # a refused version: the verdict, with its reason
            return answer
        raise ValueError(f"{url}{path}: {err.code} {answer.get('error', err.reason)}") from None
    except urllib.error.URLError as err:
        raise ValueError(f"--url {url}: no arena server answers there ({err.reason})") from None


def _offline(args: argparse.Namespace, act: Callable[[Any, Any], dict[str, Any]]) -> dict[str, Any]:
    from evaluation.arena import participants
    from evaluation.arena.server import open_arena

    with closing(open_arena(args.db)) as conn:
        return act(conn, participants.authenticate(conn, _token(args)))


def _cmd_register(args: argparse.Namespace) -> int:
    from evaluation.arena import participants
    from evaluation.arena.server import open_arena

    with closing(open_arena(args.db)) as conn:
        token = participants.register(conn, args.name)
    print(f"registered {args.name}; its token (shown this once, only its hash is stored):\n{token}")
    return 0


def _cmd_submit(args: argparse.Namespace) -> int:
    from evaluation.arena import smoke, uploads
    from nmmo.cli import console

    data, filename, class_name = read_spec(args.spec)
    if args.url:
        verdict = http_post(args.url, "/api/submit", _token(args), data,
                        {"X-Arena-Filename": filename, "X-Arena-Class": class_name or ""})
    else:
        verdict = _offline(args, lambda conn, who: {"participant": who.name, **smoke.submit(
            conn, uploads.arena_dir(args.db), who, data, filename, class_name, uploads.UploadLimits(),
            smoke.current_format(conn)).as_dict()})
    if verdict["status"] == "accepted":
        console.print(f"{verdict['participant']} v{verdict['version']} accepted: entry {verdict['entry']} plays from "
                      "the next episode; the previous version retired from seating")
        return 0
    console.print(f"{verdict['participant']} v{verdict['version']} refused: {verdict['reason']}", markup=False)
    return 1


def _cmd_withdraw(args: argparse.Namespace) -> int:
    from evaluation.arena import participants
    from nmmo.cli import console

    if args.url:
        answer = http_post(args.url, "/api/withdraw", _token(args), b"", {})
    else:
        answer = _offline(args, lambda conn, who: {"participant": who.name,
                                                   "withdrawn": participants.withdraw(conn, who)})
    console.print(f"{answer['participant']}: " + ("withdrawn: seated in no new episode; its episodes and rating stay"
                                                  if answer["withdrawn"] else "no accepted version to withdraw"))
    return 0


def add_participant_commands(arena: argparse._SubParsersAction, command: Callable[..., Any]) -> None:
    """`nmmo arena register`, `submit`, `withdraw` (`command` makes a sub-command with --db)."""
    from nmmo.cli import add_command

    register = command("register", "add a participant and print its token (once: only its hash is stored)")
    register.add_argument("name", metavar="NAME", help="the participant's name: 1-32 letters, digits, _ and -")
    register.set_defaults(func=_cmd_register)
    for name, help_text, func in (("submit", "upload a new version of your agent: smoke-tested, then it replaces "
                                   "your entry", _cmd_submit),
                                  ("withdraw", "retire your entry from seating (its episodes and rating stay)",
                                   _cmd_withdraw)):
        parser = add_command(arena, name, help_text)
        if name == "submit":
            parser.add_argument("spec", metavar="SPEC", help="agent.py:Agent, path/folder:Agent, agent.tar.gz:Agent "
                                "or ckpt:model.pt")
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--url", default=None, help="the arena server, e.g. http://127.0.0.1:8090")
        where.add_argument("--db", type=Path, default=None, metavar="PATH", help="or its database, on the serving "
                           "machine")
        parser.add_argument("--token", default=None, help=f"your token (default: ${TOKEN_ENV})")
        parser.set_defaults(func=func)
