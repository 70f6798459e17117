"""The arena's two writes over HTTP: ``POST /api/submit`` and ``POST /api/withdraw``.

Why the upload is the raw request body (``application/octet-stream``, its name in
``X-Arena-Filename``, its class in ``X-Arena-Class``) and not a multipart form: the standard
library has no multipart parser left (``cgi`` is deprecated), and a raw body is what both the page
(``fetch`` with a File as the body) and ``nmmo arena submit`` send easily. The body's size is known
from Content-Length before a byte is read: over the limit is refused at once (413) and the
connection closed, so an oversized upload costs the server nothing; no length (chunked) is 411.
The token is checked before the body is read (a stranger's upload is never read), and uploads are
smoke-tested one at a time (`SMOKE_SLOTS`). Without the namespace sandbox, uploads are refused
unless the operator allows them (``--allow-unsandboxed-uploads``): the process sandbox alone does
not hide the database or other uploads from a submission.
"""

from __future__ import annotations

import threading
from contextlib import closing
from http import HTTPStatus
from typing import Any

from evaluation.arena import db, participants, smoke
from evaluation.arena.participants import RateLimited, Unauthorized

#: Uploads smoke-tested at once (each runs a sandboxed episode); the others wait their turn.
SMOKE_SLOTS = threading.BoundedSemaphore(1)


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
    if path == "/api/submit" and not server.participation.unsandboxed and not _sandboxed():
        handler.close_connection = True
        return HTTPStatus.SERVICE_UNAVAILABLE, {
            "error": "this arena takes no uploads: the namespace sandbox (bubblewrap) is not available here "
                     "(operator: install it, or pass --allow-unsandboxed-uploads to accept the risk)"}
    try:
        with closing(db.connect(server.db_path)) as conn:
            token = (handler.headers.get("Authorization") or "").partition(" ")[2].strip()
            who = participants.authenticate(conn, token)  # before a byte of the body is read
            body = handler.rfile.read(int(length))
            if len(body) != int(length):
                raise ValueError(f"the upload ended after {len(body)} of its {length} bytes")
            if path == "/api/withdraw":
                count = participants.withdraw(conn, who)
                return HTTPStatus.OK, {"participant": who.name, "withdrawn": count}
            with SMOKE_SLOTS:
                verdict = smoke.submit(conn, server.root, who, body, handler.headers.get("X-Arena-Filename") or "",
                                       handler.headers.get("X-Arena-Class"), server.participation.limits,
                                       smoke.current_format(conn))
    except Unauthorized as err:
        handler.close_connection = True  # the body was not read
        return HTTPStatus.UNAUTHORIZED, {"error": str(err)}
    except RateLimited as err:
        return HTTPStatus.TOO_MANY_REQUESTS, {"error": str(err)}
    except ValueError as err:
        return HTTPStatus.BAD_REQUEST, {"error": str(err)}
    status = HTTPStatus.CREATED if verdict.status == "accepted" else HTTPStatus.UNPROCESSABLE_ENTITY
    return status, {"participant": who.name, **verdict.as_dict()}


def _sandboxed() -> bool:
    """Whether submissions run in the namespace sandbox here (`evaluation.sandbox.namespaces`)."""
    from evaluation.sandbox import namespaces

    try:
        return namespaces.available()
    except Exception:  # noqa: BLE001 - NMMO_REQUIRE_SANDBOX=1 raises where it is missing: not available
        return False
