"""The arena's JSON endpoints, on the standard library's HTTP server (GET only).

Why the standard library: the endpoints are a handful of small reads, and the arena then needs no
extra to run (the viewer's FastAPI server is the ``[serve]`` extra). Every request is checked like
the viewer's (`client_server.guard.AllowedPeers`): its Host must name this server (127.0.0.1,
localhost, [::1] or the bound --host, with the port), so a DNS-rebinding page is refused, and a
browser's Origin must be the server's own. Each request reads through a read-only connection of
its own, so a slow reader never holds up a commit.

- ``/api/status``: the log (episodes, last commit, replayed, dropped), claims in flight, the format,
  and the live server: its pid, RSS and each worker's pid and episode.
- ``/api/leaderboard``: every entry with SR, its 95 % interval, mu, sigma, episodes and fault totals.
- ``/api/entries``: the pool (names, kinds, specs).
- ``/api/entries/NAME/episodes?limit=50&before=ID``: an entry's episodes, newest first, paged.
- ``/api/entries/NAME/faults?limit=50&before=ID``: its episodes with a fault, newest first, paged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from client_server.guard import AllowedPeers
from evaluation.arena import db, queries

ENDPOINTS = ("/api/status", "/api/leaderboard", "/api/entries", "/api/entries/NAME/episodes",
             "/api/entries/NAME/faults")


class ArenaHTTPServer(ThreadingHTTPServer):
    """The endpoints of one arena database; `live` adds what only the running server knows."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, db_path: Path, live: Callable[[], dict[str, Any]]) -> None:
        super().__init__((host, port), _Handler)
        self.db_path, self.live = Path(db_path), live
        self.peers = AllowedPeers(host, self.server_address[1])


def _int(query: dict[str, list[str]], key: str, default: int | None) -> int | None:
    values = query.get(key)
    if not values:
        return default
    try:
        return int(values[0])
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {values[0]!r}") from None


class _Handler(BaseHTTPRequestHandler):
    server: ArenaHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        """Quiet: the server's log is for episodes, not requests."""

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
            status, body = self._route(conn, parts, query)
        except KeyError as err:
            status, body = HTTPStatus.NOT_FOUND, {"error": f"no entry named {err.args[0]!r}"}
        except ValueError as err:
            status, body = HTTPStatus.BAD_REQUEST, {"error": str(err)}
        finally:
            conn.close()
        self._send(status, body)

    def _route(self, conn: sqlite3.Connection, parts: list[str],
               query: dict[str, list[str]]) -> tuple[HTTPStatus, Any]:
        limit, before = _int(query, "limit", 50), _int(query, "before", None)
        if parts == ["api", "status"]:
            return HTTPStatus.OK, {**queries.summary(conn), "live": self.server.live()}
        if parts == ["api", "leaderboard"]:
            return HTTPStatus.OK, {"leaderboard": queries.leaderboard(conn)}
        if parts == ["api", "entries"]:
            return HTTPStatus.OK, {"entries": [{"name": e.name, "kind": e.kind, "spec": e.spec, "active": e.active}
                                               for e in db.entries(conn)]}
        if len(parts) == 4 and parts[:2] == ["api", "entries"] and parts[3] == "episodes":
            return HTTPStatus.OK, queries.entry_episodes(conn, parts[2], limit, before)
        if len(parts) == 4 and parts[:2] == ["api", "entries"] and parts[3] == "faults":
            return HTTPStatus.OK, queries.entry_faults(conn, parts[2], limit, before)
        if parts in ([""], ["api"]):
            return HTTPStatus.OK, {"endpoints": list(ENDPOINTS)}
        return HTTPStatus.NOT_FOUND, {"error": f"no endpoint {'/' + '/'.join(parts)}", "endpoints": list(ENDPOINTS)}

    def _refuse_method(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "the arena's endpoints are read-only: GET only"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_method  # noqa: N815 - the base class's names

    def _send(self, status: HTTPStatus, body: Any) -> None:
        data = json.dumps(body, allow_nan=False, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(data)
