"""The arena's two writes over HTTP: ``POST /api/submit`` and ``POST /api/withdraw``.

Why the upload is the raw request body (``application/octet-stream``, its name in
``X-Arena-Filename``, its class in ``X-Arena-Class``) and not a multipart form: the standard
library has no multipart parser left (``cgi`` is deprecated), and a raw body is what both the page
(``fetch`` with a File as the body) and ``nmmo arena submit`` send easily. The body's size is known
from Content-Length before a byte is read: over the limit is refused at once (413) and the
connection closed, so an oversized upload costs the server nothing; no length (chunked) is 411.
"""

from __future__ import annotations

from contextlib import closing
from http import HTTPStatus
from typing import Any

from evaluation.arena import db, participants, smoke
from evaluation.arena.participants import RateLimited, Unauthorized


def post(handler: Any, path: str) -> tuple[HTTPStatus, Any]:
    """Answer a POST of `handler` (an `evaluation.arena.api._Handler`) to `path`."""
    if path not in ("/api/submit", "/api/withdraw"):
        handler.close_connection = True
        return HTTPStatus.METHOD_NOT_ALLOWED, {"error": "GET, or POST to /api/submit and /api/withdraw"}
    server = handler.server
    length = handler.headers.get("Content-Length")
    if length is None or not length.isdigit():
        handler.close_connection = True
        return HTTPStatus.LENGTH_REQUIRED, {"error": "send the upload with a Content-Length (no chunked bodies)"}
    if int(length) > server.participation.limits.bytes:
        handler.close_connection = True  # the body is never read
        return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {
            "error": f"upload of {length} bytes is over the limit of {server.participation.limits.bytes} bytes"}
    body = handler.rfile.read(int(length))
    try:
        with closing(db.connect(server.db_path)) as conn:
            token = (handler.headers.get("Authorization") or "").partition(" ")[2].strip()
            who = participants.authenticate(conn, token)
            if path == "/api/withdraw":
                count = participants.withdraw(conn, who)
                return HTTPStatus.OK, {"participant": who.name, "withdrawn": count}
            verdict = smoke.submit(conn, server.root, who, body, handler.headers.get("X-Arena-Filename") or "",
                                   handler.headers.get("X-Arena-Class"), server.participation.limits,
                                   smoke.current_format(conn))
    except Unauthorized as err:
        return HTTPStatus.UNAUTHORIZED, {"error": str(err)}
    except RateLimited as err:
        return HTTPStatus.TOO_MANY_REQUESTS, {"error": str(err)}
    except ValueError as err:
        return HTTPStatus.BAD_REQUEST, {"error": str(err)}
    status = HTTPStatus.CREATED if verdict.status == "accepted" else HTTPStatus.UNPROCESSABLE_ENTITY
    return status, {"participant": who.name, **verdict.as_dict()}
