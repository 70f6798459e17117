"""Only the viewer's own page (or a program) may use the server: foreign Hosts and Origins get 403."""

import asyncio
import http.client

import pytest

pytest.importorskip("fastapi")
import websockets  # noqa: E402

import nmmo  # noqa: E402
from client_server.guard import AllowedPeers, normalize_origin  # noqa: E402
from client_server.server import create_app  # noqa: E402
from client_server.sessions import LiveSession  # noqa: E402

from .conftest import running  # noqa: E402

FOREIGN_ORIGINS = ("http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A live session and a replay directory behind one real uvicorn server; yields its port."""
    directory = tmp_path_factory.mktemp("guard_replays")
    conf = nmmo.config.Small().set("PLAYER_N", 4).set("HORIZON", 20)
    env = nmmo.Env(conf, seed=0, record=True)
    env.reset()
    for _ in range(3):
        env.step({})
    env.save_replay(directory / "run.replay")
    session = LiveSession(nmmo.config.Small().set("PLAYER_N", 4), "scripted:Meander", seed=0, speed=20.0)
    with running(lambda port: create_app(replay_dir=directory, live=session, port=port)) as port:
        yield port


def handshake(port: int, path: str, origin: str | None) -> int:
    """Open a websocket with this Origin (None: no header); the HTTP status the server answered."""

    async def attempt() -> int:
        try:
            async with websockets.connect(f"ws://127.0.0.1:{port}{path}", origin=origin, open_timeout=10) as ws:
                await asyncio.wait_for(ws.recv(), timeout=10)  # the server streams to it
                return 101
        except websockets.exceptions.InvalidStatus as err:
            return err.response.status_code

    return asyncio.run(attempt())


def get(port: int, path: str, host: str, origin: str | None = None, upgrade: bool = False) -> tuple[int, bytes]:
    """A raw GET with exactly these Host and Origin headers (`upgrade`: a websocket handshake)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host} if origin is None else {"Host": host, "Origin": origin}
    if upgrade:
        headers.update({"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    connection.putrequest("GET", path, skip_host=True)
    for key, value in headers.items():
        connection.putheader(key, value)
    connection.endheaders()
    response = connection.getresponse()
    return response.status, response.read()


@pytest.mark.parametrize("path", ["/ws/live", "/ws/replay/run.replay"])
@pytest.mark.parametrize("origin", FOREIGN_ORIGINS)
def test_foreign_origin_is_refused_on_websockets(served, path, origin):
    assert handshake(served, path, origin) == 403


@pytest.mark.parametrize("path", ["/ws/live", "/ws/replay/run.replay"])
def test_own_page_and_programs_may_connect(served, path):
    for origin in (f"http://127.0.0.1:{served}", f"http://localhost:{served}", None):
        assert handshake(served, path, origin) == 101, origin


def test_websocket_with_a_foreign_host_is_refused(served):
    assert get(served, "/ws/live", host=f"attacker.example:{served}", upgrade=True)[0] == 403
    assert get(served, "/ws/live", host=f"127.0.0.1:{served}", upgrade=True)[0] == 101  # the same, named right


@pytest.mark.parametrize("path", ["/api/health", "/", "/api/replays"])
def test_foreign_host_gets_403(served, path):
    status, body = get(served, path, host=f"attacker.example:{served}")
    assert status == 403 and b"Host" in body
    assert get(served, path, host="attacker.example")[0] == 403
    assert get(served, path, host=f"127.0.0.1:{served + 1}")[0] == 403  # another port is another site


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_own_host_is_served(served, host):
    status, body = get(served, "/api/health", host=f"{host}:{served}")
    assert status == 200 and b'"ok":true' in body
    assert get(served, "/api/health", host=f"{host}:{served}", origin="http://evil.example")[0] == 403


def test_allow_origin_widens_both_checks(tmp_path):
    session = LiveSession(nmmo.config.Small().set("PLAYER_N", 4), "scripted:Meander", seed=0, speed=20.0)
    make = lambda port: create_app(live=session, port=port, allow_origins=["http://viewer.example:9000"])  # noqa: E731
    with running(make) as port:
        assert handshake(port, "/ws/live", "http://viewer.example:9000") == 101
        assert handshake(port, "/ws/live", "http://evil.example") == 403
        assert get(port, "/api/health", host="viewer.example:9000")[0] == 200


def test_allowed_peers_rules():
    peers = AllowedPeers("0.0.0.0", 8123, ["HTTP://Lab.Example:8123/"])
    assert peers.refusal("0.0.0.0:8123", "http://0.0.0.0:8123") is None  # the bound host itself
    assert peers.refusal("lab.example:8123", "http://lab.example:8123") is None
    assert peers.refusal("[::1]:8123", None) is None
    assert "Host" in peers.refusal(None, None)
    assert "Origin" in peers.refusal("localhost:8123", "null")
    assert AllowedPeers("::1", 80).refusal("[::1]", "http://[::1]") is None  # default port left out
    with pytest.raises(ValueError, match="--allow-origin expects an origin"):
        normalize_origin("evil.example")
    with pytest.raises(ValueError, match="--allow-origin expects an origin"):
        normalize_origin("http://evil.example/page")


def test_serve_rejects_a_bad_allow_origin(tmp_path, capsys):
    from nmmo.cli import main

    replay = tmp_path / "x.replay"
    env = nmmo.Env(nmmo.config.Small().set("PLAYER_N", 4), seed=0, record=True)
    env.reset()
    env.save_replay(replay)
    assert main(["serve", "--replay", str(replay), "--allow-origin", "not-an-origin"]) == 2
    assert "--allow-origin expects an origin" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "query"), [([], ""), (["--overlay", "value"], "&overlay=value"),
                                              (["--overlay", "value landscape"], "&overlay=value%20landscape")])
def test_serve_builds_a_replay_app_and_prints_its_link(tmp_path, capsys, monkeypatch, extra, query):
    """`nmmo serve --replay` (with or without --overlay) reaches the server with a replay app and
    prints the link that opens that replay (and that overlay, its name quoted for a URL)."""
    import client_server.server
    from nmmo.cli import main

    replay = tmp_path / "x.replay"
    env = nmmo.Env(nmmo.config.Small().set("PLAYER_N", 4), seed=0, record=True)
    env.reset()
    env.save_replay(replay)
    served = {}
    monkeypatch.setattr(client_server.server, "serve", lambda app, host, port: served.update(app=app, host=host))
    assert main(["serve", "--replay", str(replay), "--port", "8125", *extra]) == 0
    assert served["host"] == "127.0.0.1" and served["app"] is not None
    link = "http://127.0.0.1:8125/?replay=x.replay" + query
    assert link in capsys.readouterr().out


def test_serve_live_builds_a_live_app_and_prints_its_link(capsys, monkeypatch):
    """`nmmo serve --live` reaches the server with a live app on the config and policy it names."""
    import client_server.server
    from nmmo.cli import main

    served = {}
    monkeypatch.setattr(client_server.server, "serve", lambda app, host, port: served.update(app=app, port=port))
    assert main(["serve", "--live", "--config", "Small", "--policy", "random", "--port", "8126"]) == 0
    assert served["port"] == 8126 and served["app"] is not None
    assert "http://127.0.0.1:8126/?live=1" in capsys.readouterr().out


def test_serve_viewer_takes_a_replay_or_a_live_run_not_both(tmp_path):
    from client_server.cli import LiveRun, serve_viewer

    with pytest.raises(ValueError, match="either a live run or a replay"):
        serve_viewer(replay_dir=tmp_path, live=LiveRun("Small"))
    with pytest.raises(ValueError, match="either a live run or a replay"):
        serve_viewer()


def test_demo_serves_its_first_replay(tmp_path, capsys, monkeypatch):
    """`nmmo demo --serve` ends by serving its replays, opened on episode 0 (and on the baseline's
    value landscape when the baseline played), with its own server flags."""
    import importlib.util

    import client_server.server
    from nmmo.cli import main

    monkeypatch.setenv("NMMO_CACHE_DIR", str(tmp_path / "cache"))
    served = {}
    monkeypatch.setattr(client_server.server, "serve", lambda app, host, port: served.update(app=app, port=port))
    out_dir = tmp_path / "demo"
    assert main(["demo", "--config", "Default", "--ticks", "5", "--episodes", "1", "--workers", "0", "--out",
                 str(out_dir), "--serve", "--port", "8127"]) == 0
    assert served["port"] == 8127 and served["app"] is not None
    link = "http://127.0.0.1:8127/?replay=episode_000.replay"
    if importlib.util.find_spec("torch") is not None:
        link += "&overlay=value%20landscape"
    assert link + "  (Ctrl-C" in capsys.readouterr().out
