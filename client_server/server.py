"""The viewer server: FastAPI + uvicorn, a websocket per viewer, live runs and replays.

- Live (`/ws/live`): the shared `sessions.LiveSession`; play, pause, step and speed act on it.
- Replay (`/ws/replay/{name}`): each viewer has its own `sessions.ReplayViewer` of a replay file
  from the replay directory, with seek. Names are file names in that directory; anything else is
  a 404.
- HTTP: `/api/health`, `/api/replays`, `/api/replays/{name}`, and the built viewer at `/`.

Binds 127.0.0.1 by default and answers only requests that name it (Host) from its own page or a
program (Origin): see `client_server.guard`. Commands are parsed by `client_server.protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from client_server.guard import AllowedPeers, HostOriginGuard
from client_server.packets import dumps, tick_packet
from client_server.protocol import CommandError, error_frame, parse_command
from client_server.replays import MAX_REPLAY_MB, REPLAY_CACHE_MB, ReplayCache, listing
from client_server.sessions import LiveSession, LiveViewer, ReplayViewer
from nmmo.replays.replay import ReplayError, read_header

WEB_DIST = Path(__file__).resolve().parent / "web" / "dist"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.replay$")
#: Websocket viewers served at once by default (live and replays together).
MAX_VIEWERS = 256


# --------------------------------------------------------------- replays
def replay_path(directory: Path, name: str) -> Path:
    """The replay file `name` inside `directory`, or a 404 (no paths, no traversal)."""
    if not NAME.match(name):
        raise HTTPException(status_code=404, detail=f"no replay named {name!r}")
    path = (directory / name).resolve()
    if path.parent != directory.resolve() or not path.is_file():
        raise HTTPException(status_code=404, detail=f"no replay named {name!r}")
    return path


# ------------------------------------------------------------------- app
def create_app(replay_dir: str | Path | None = None, live: LiveSession | None = None,
               web_dir: Path = WEB_DIST, host: str = "127.0.0.1", port: int = 8000,
               allow_origins: Sequence[str] = (), max_viewers: int = MAX_VIEWERS,
               max_replay_mb: int = MAX_REPLAY_MB, replay_cache_mb: int = REPLAY_CACHE_MB) -> FastAPI:
    """The server app: replays from `replay_dir`, a live session if given, the viewer from `web_dir`.

    `host` and `port` are where it will be served: requests must name it (Host) and websockets
    come from its own page (Origin) or from a program (no Origin); `allow_origins` widens that
    (see `client_server.guard`). Everything else gets 403. At most `max_viewers` websockets at
    once (more are refused with an error frame); replays are decoded once, shared, off the event
    loop, and refused when their arrays would decode to more than `max_replay_mb` MiB; the decoded
    replays kept for later viewers take at most `replay_cache_mb` MiB (see `client_server.replays`)."""
    peers = AllowedPeers(host, port, allow_origins)
    cache = ReplayCache(max_bytes=max_replay_mb * 2**20, cache_bytes=replay_cache_mb * 2**20)
    viewers = {"open": 0}
    directory = Path(replay_dir).resolve() if replay_dir is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        if live is not None:
            live.task = asyncio.create_task(live.run())
        yield
        if live is not None and live.task is not None:
            live.task.cancel()

    app = FastAPI(title="flatmmo viewer server", lifespan=lifespan)
    app.state.replay_cache = cache
    app.add_middleware(HostOriginGuard, peers=peers)

    @app.get("/api/health")
    def health() -> dict:
        return {"ok": True, "live": live is not None, "replays": directory is not None}

    @app.get("/api/replays")
    async def replays() -> JSONResponse:
        if directory is None:
            return JSONResponse([])
        return JSONResponse(await asyncio.to_thread(listing, directory))

    @app.get("/api/replays/{name}")
    async def replay_info(name: str) -> dict:
        if directory is None:
            raise HTTPException(status_code=404, detail="this server has no replay directory")
        path = replay_path(directory, name)
        try:
            header = await asyncio.to_thread(read_header, path)
        except ReplayError as err:
            raise HTTPException(status_code=400, detail=f"replay {name!r} {err.reason}") from None
        return {"name": name, "ticks": header["ticks"], "size": header["size"], "config": header.get("config_name")}

    @contextlib.asynccontextmanager
    async def viewer_seat(websocket: WebSocket):
        """Count the viewer in (refusing it with an error frame when the server is full)."""
        if viewers["open"] >= max_viewers:
            await websocket.accept()
            await websocket.send_text(error_frame(f"this server already has {max_viewers} viewers (its "
                                                  "--max-viewers limit); try again later"))
            await websocket.close(code=1013)
            yield False
            return
        viewers["open"] += 1
        try:
            yield True
        finally:
            viewers["open"] -= 1

    @app.websocket("/ws/replay/{name}")
    async def replay_socket(websocket: WebSocket, name: str) -> None:
        if directory is None:
            await websocket.close(code=4404)
            return
        try:
            path = replay_path(directory, name)
        except HTTPException:
            await websocket.close(code=4404)
            return
        async with viewer_seat(websocket) as seated:
            if not seated:
                return
            try:
                replay = await cache.aget(path)
            except ReplayError as err:
                await websocket.accept()
                await websocket.send_text(error_frame(f"replay {name!r} {err.reason}"))
                await websocket.close(code=4400)
                return
            await websocket.accept()
            viewer = ReplayViewer(websocket, replay, name)
            await viewer.send_header()
            await viewer.send_tick(full=True)
            await viewer.send_status()
            player = asyncio.create_task(viewer.play_loop())
            try:
                await _command_loop(websocket, viewer.handle)
            finally:
                player.cancel()

    @app.websocket("/ws/live")
    async def live_socket(websocket: WebSocket) -> None:
        if live is None:
            await websocket.close(code=4404)
            return
        async with viewer_seat(websocket) as seated:
            if seated:
                await _watch_live(websocket, live)

    if (web_dir / "index.html").is_file():
        app.mount("/", StaticFiles(directory=web_dir, html=True), name="viewer")
    else:
        @app.get("/")
        def not_built() -> HTMLResponse:
            return HTMLResponse("<h1>flatmmo viewer</h1><p>The viewer is not built: run <code>make</code> "
                                "(npm ci && npm run build in client_server/web). The API is up: "
                                "<a href='/api/replays'>/api/replays</a>.</p>")
    return app


async def _watch_live(websocket: WebSocket, live: LiveSession) -> None:
    """One viewer of the live run: its queue gets the header, the state now, then every tick."""
    await websocket.accept()
    viewer = LiveViewer(websocket, live)
    with live.lock:
        viewer._put(dumps(live.header()))
        viewer._put(dumps(tick_packet(live.env.tick, live.frame, None, fields=live.fields)))
    viewer._put(dumps(live.status()))
    live.viewers.add(viewer)
    sender = asyncio.create_task(viewer.sender())
    try:
        await _command_loop(websocket, viewer.handle)
    finally:
        live.viewers.discard(viewer)
        sender.cancel()


async def _command_loop(websocket: WebSocket, handle) -> None:
    """Read commands until the viewer leaves; a bad command gets an error frame, never a crash."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            try:
                if message.get("text") is None:
                    raise CommandError("frames must be JSON text, got a binary frame")
                await handle(parse_command(message["text"]))
            except CommandError as err:
                await websocket.send_text(error_frame(str(err)))
    except (WebSocketDisconnect, RuntimeError):
        return


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:  # pragma: no cover - blocking
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", ws="websockets-sansio")


__all__: list[Any] = ["create_app", "replay_path", "serve"]
