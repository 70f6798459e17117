"""The arena's endpoints and pages, on the standard library's HTTP server.

Why the standard library: the endpoints are a handful of small reads and two small writes, and
the arena then needs no extra to run (the viewer's FastAPI server is the ``[serve]`` extra). Every
request is checked like the viewer's (`client_server.guard.AllowedPeers`): its Host must name this
server (127.0.0.1, localhost, [::1] or the bound --host, with the port), so a DNS-rebinding page is
refused, and a browser's Origin must be the server's own, so another site's page cannot post (and
the writes need a Bearer token, which a browser never attaches on its own). Each request opens a
connection of its own, so a slow reader never holds up a commit.

GET (JSON): ``/api/status``, ``/api/leaderboard``, ``/api/entries``,
``/api/entries/NAME/episodes?limit=50&before=ID``, ``/api/entries/NAME/faults?limit=50&before=ID``,
``/api/participants``, ``/api/participants/NAME`` (its versions, episodes and faults), ``/api/me``.
GET (HTML, `evaluation.arena.pages`): ``/`` (the leaderboard), ``/participants/NAME``, ``/submit``.
POST (``Authorization: Bearer TOKEN``): ``/api/submit`` (the upload as the raw body, its name in
``X-Arena-Filename``, the class in ``X-Arena-Class``; bounded by Content-Length before a byte is
read) and ``/api/withdraw``.

What only an owner sees: its refusal reasons and its fault messages (they may quote its code).
What nobody is ever sent: an upload's files, or the path they are stored at (specs of uploaded
entries read ``upload``).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from client_server.guard import AllowedPeers
from evaluation.arena import db, pages, participants, queries
from evaluation.arena.participants import Participant, Unauthorized
from evaluation.arena.uploads import UploadLimits, arena_dir

ENDPOINTS = ("/api/status", "/api/leaderboard", "/api/entries", "/api/entries/NAME/episodes",
             "/api/entries/NAME/faults", "/api/participants", "/api/participants/NAME", "/api/me",
             "POST /api/submit", "POST /api/withdraw", "/", "/participants/NAME", "/submit")
REDACTED = "only its owner sees fault messages"


@dataclass
class Participation:
    """Where uploads go and what they may be; the viewer's port, for the replay links (None: no links)."""

    root: Path | None = None  # None: the database's arena folder (`arena_dir`)
    limits: UploadLimits = field(default_factory=UploadLimits)
    viewer_port: int | None = None
    unsandboxed: bool = False  # accept uploads without the namespace sandbox (the operator's risk)


class ArenaHTTPServer(ThreadingHTTPServer):
    """The endpoints of one arena database; `live` adds what only the running server knows."""

    daemon_threads = True
    allow_reuse_address = True
    #: Requests served at once; more are answered 503 at once (a slow client cannot hold them all).
    max_requests = 32

    def __init__(self, host: str, port: int, db_path: Path, live: Callable[[], dict[str, Any]],
                 participation: Participation | None = None) -> None:
        super().__init__((host, port), _Handler)
        self.db_path, self.live = Path(db_path), live
        self.participation = participation or Participation()
        self.root = self.participation.root or arena_dir(self.db_path)
        self.peers = AllowedPeers(host, self.server_address[1])
        self._slots = threading.BoundedSemaphore(self.max_requests)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve in a thread while a slot is free; else answer 503 and close."""
        if not self._slots.acquire(blocking=False):
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _int(query: dict[str, list[str]], key: str, default: int | None) -> int | None:
    values = query.get(key)
    if not values:
        return default
    try:
        value = int(values[0])
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {values[0]!r}") from None
    if not 0 <= value < 2**63:
        raise ValueError(f"{key} must be an integer from 0 to 2**63 - 1, got {values[0]!r}")
    return value


def public_entry(row: dict[str, Any]) -> dict[str, Any]:
    """An entry as anyone may see it: an upload's spec (its stored path) replaced by ``upload``."""
    return {**row, "spec": "upload"} if row.get("participant") else row


class _Handler(BaseHTTPRequestHandler):
    server: ArenaHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = 30  # seconds a client may stall on its socket (a slow body, an idle keep-alive)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        """Quiet: the server's log is for episodes, not requests."""

    # --------------------------------------------------------------- GET
    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        refusal = self.server.peers.refusal(self.headers.get("Host"), self.headers.get("Origin"))
        if refusal is not None:
            return self._send(HTTPStatus.FORBIDDEN, {"error": refusal})
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        try:
            conn = db.connect(self.server.db_path, readonly=True)
        except (ValueError, sqlite3.Error) as err:
            return self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(err)})
        try:
            who = self._who(conn)
            if parts[0] != "api":
                return self._page(conn, parts, query, who)
            status, body = self._route(conn, parts, query, who)
        except Unauthorized as err:
            status, body = HTTPStatus.UNAUTHORIZED, {"error": str(err)}
        except KeyError as err:
            status, body = HTTPStatus.NOT_FOUND, {"error": f"no entry named {err.args[0]!r}"}
        except ValueError as err:
            status, body = HTTPStatus.BAD_REQUEST, {"error": str(err)}
        finally:
            conn.close()
        self._send(status, body)

    def _who(self, conn: sqlite3.Connection) -> Participant | None:
        """The participant whose token the request carries (None: no token; Unauthorized: a wrong one)."""
        header = self.headers.get("Authorization")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            raise Unauthorized("send the token as Authorization: Bearer TOKEN")
        return participants.authenticate(conn, token.strip())

    def _route(self, conn: sqlite3.Connection, parts: list[str], query: dict[str, list[str]],
               who: Participant | None) -> tuple[HTTPStatus, Any]:
        limit, before = _int(query, "limit", 50), _int(query, "before", None)
        if parts == ["api", "status"]:
            return HTTPStatus.OK, {**queries.summary(conn), "live": self.server.live()}
        if parts == ["api", "leaderboard"]:
            return HTTPStatus.OK, {"leaderboard": [public_entry(r) for r in queries.leaderboard(conn)]}
        if parts == ["api", "entries"]:
            return HTTPStatus.OK, {"entries": [{k: r[k] for k in ("name", "kind", "spec", "active", "participant",
                                                                   "version")}
                                               for r in map(public_entry, queries.leaderboard(conn))]}
        if len(parts) == 4 and parts[:2] == ["api", "entries"] and parts[3] == "episodes":
            return HTTPStatus.OK, queries.entry_episodes(conn, parts[2], limit, before)
        if len(parts) == 4 and parts[:2] == ["api", "entries"] and parts[3] == "faults":
            return HTTPStatus.OK, self._faults(conn, parts[2], limit, before, who)
        if parts == ["api", "participants"]:
            return HTTPStatus.OK, {"participants": [r[0] for r in conn.execute(
                "SELECT name FROM participants ORDER BY id")]}
        if len(parts) == 3 and parts[:2] == ["api", "participants"]:
            return HTTPStatus.OK, self._participant(conn, parts[2], who)
        if parts == ["api", "me"]:
            if who is None:
                raise Unauthorized("send your token as Authorization: Bearer TOKEN")
            return HTTPStatus.OK, {"participant": who.name}
        if parts == ["api"]:
            return HTTPStatus.OK, {"endpoints": list(ENDPOINTS)}
        return HTTPStatus.NOT_FOUND, {"error": f"no endpoint {'/' + '/'.join(parts)}", "endpoints": list(ENDPOINTS)}

    def _faults(self, conn: sqlite3.Connection, name: str, limit: int | None, before: int | None,
                who: Participant | None) -> dict[str, Any]:
        body = queries.entry_faults(conn, name, limit or 50, before)
        owner = participants.owner_of(conn, name)
        if owner is not None and (who is None or who.id != owner):
            for fault in body["faults"]:
                fault["messages"] = [REDACTED] if fault["messages"] else []
        return body

    def _participant(self, conn: sqlite3.Connection, name: str, who: Participant | None) -> dict[str, Any]:
        owner = who is not None and who.name == name
        versions = participants.versions(conn, name, owner)
        entries = queries.participant_entries(conn, name)
        episodes = queries.participant_episodes(conn, entries) if entries else []
        for episode in episodes:
            replay = f"claim-{episode['claim']}.replay"
            episode["replay"] = replay if (self.server.root / "replays" / replay).is_file() else None
        faults = queries.participant_faults(conn, entries) if entries else []
        if not owner:
            for fault in faults:
                fault["messages"] = [REDACTED] if fault["messages"] else []
        return {**versions, "episodes": episodes, "faults": faults}

    # ------------------------------------------------------------- pages
    def _page(self, conn: sqlite3.Connection, parts: list[str], query: dict[str, list[str]],
              who: Participant | None) -> None:
        if parts in ([""], ["leaderboard"]):
            board = queries.leaderboard(conn)
            title, body = "arena leaderboard", pages.leaderboard_page(board, bool(query.get("all")))
        elif len(parts) == 2 and parts[0] == "participants":
            data = self._participant(conn, parts[1], who)
            title, body = f"participant {parts[1]}", pages.participant_page(data, data["episodes"], data["faults"],
                                                                             self._viewer())
        elif parts == ["submit"]:
            title, body = "upload a version", pages.upload_page()
        else:
            return self._send(HTTPStatus.NOT_FOUND, {"error": f"no page {'/' + '/'.join(parts)}"})
        nonce = secrets.token_urlsafe(16)
        self._send(HTTPStatus.OK, pages.page(title, body, nonce, refresh=parts != ["submit"]), nonce=nonce)

    def _viewer(self) -> str | None:
        port = self.server.participation.viewer_port
        if port is None:
            return None
        host = (self.headers.get("Host") or "127.0.0.1").rsplit(":", 1)[0]
        return f"http://{host}:{port}"

    # -------------------------------------------------------------- POST
    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        from evaluation.arena.writes import post

        refusal = self.server.peers.refusal(self.headers.get("Host"), self.headers.get("Origin"))
        if refusal is not None:
            self.close_connection = True
            return self._send(HTTPStatus.FORBIDDEN, {"error": refusal})
        status, body = post(self, urlsplit(self.path).path)
        self._send(status, body)

    def _refuse_method(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "GET, or POST to /api/submit and /api/withdraw"})

    do_PUT = do_DELETE = do_PATCH = _refuse_method  # noqa: N815 - the base class's names

    def _send(self, status: HTTPStatus, body: Any, nonce: str | None = None) -> None:
        if isinstance(body, str):
            data, kind = body.encode(), "text/html; charset=utf-8"
        else:
            data, kind = json.dumps(body, allow_nan=False, default=str).encode(), "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", f"default-src 'self'; script-src 'nonce-{nonce or 'none'}'; "
                         "style-src 'unsafe-inline'; frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(data)
