"""Only the viewer's own page may use the server: Host and Origin checks on every request.

A local server is reachable from any page the user has open. Two checks close that door:

- **Host.** Every HTTP request and websocket handshake must name the server as the user reached
  it: ``127.0.0.1``, ``localhost`` or ``[::1]``, or the ``--host`` it was bound to, with its port.
  A DNS-rebinding page reaches the port under its own name (``Host: attacker.example``) and is
  refused.
- **Origin.** A browser says which page opened a websocket (or sent a cross-origin request); it
  must be the server's own origin (``http://`` + an allowed Host). ``null`` (sandboxed frames,
  files) and foreign pages are refused. A request with no Origin comes from a program, not a
  page, and passes (Python clients, curl).

Everything else gets 403 before the app sees it. ``allow_origins`` (``--allow-origin``, repeatable)
adds origins, and their host names to the allowed Hosts (to reach a server bound to 0.0.0.0 from
another machine, or to use another front end).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _host_name(host: str) -> str:
    """An address as it appears in a Host header (IPv6 literals in brackets)."""
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, without path or trailing slash; ValueError if `origin`
    is not one."""
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/") or parts.query:
        raise ValueError(f"--allow-origin expects an origin like http://host:port, got {origin!r}")
    return f"{parts.scheme}://{parts.netloc}".lower()


class AllowedPeers:
    """The Host values and Origins a server bound to (`host`, `port`) accepts."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8000, allow_origins: Iterable[str] = ()) -> None:
        names = {*LOOPBACK_NAMES, _host_name(host)}
        self.hosts = {f"{name}:{port}" for name in names}
        if port == 80:  # browsers leave the default port out of Host
            self.hosts |= names
        extra = [normalize_origin(origin) for origin in allow_origins]
        self.hosts |= {origin.split("://", 1)[1] for origin in extra}
        self.origins = {f"http://{host}" for host in self.hosts} | set(extra)

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused, or None when it is allowed."""
        if host is None or host.lower() not in self.hosts:
            return f"Host {host!r} is not this server (allowed: {', '.join(sorted(self.hosts))})"
        if origin is not None and origin.lower().rstrip("/") not in self.origins:
            return (f"Origin {origin!r} may not use this server (allowed: its own page; widen with "
                    "--allow-origin ORIGIN)")
        return None


class HostOriginGuard:
    """ASGI middleware: 403 for HTTP requests and websocket handshakes that `peers` refuses."""

    def __init__(self, app, peers: AllowedPeers) -> None:
        self.app, self.peers = app, peers

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {}
            for key, value in scope.get("headers", ()):
                headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
            reason = self.peers.refusal(headers.get("host"), headers.get("origin"))
            if reason is not None:
                await _forbid(scope, receive, send, reason)
                return
        await self.app(scope, receive, send)


async def _forbid(scope, receive, send, reason: str) -> None:
    body = f"403 Forbidden: {reason}\n".encode()
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        return
    await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):  # say why, with a real 403
        await send({"type": "websocket.http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # closing before accepting rejects the handshake with 403
        await send({"type": "websocket.close", "code": 1008})
