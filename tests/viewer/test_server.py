import asyncio
import base64
import json

import numpy as np
import pytest

pytest.importorskip("fastapi")
import websockets  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

import nmmo  # noqa: E402
import scripted  # noqa: E402
from client_server.packets import SENT_FIELDS  # noqa: E402
from client_server.protocol import parse_command  # noqa: E402
from client_server.server import create_app  # noqa: E402
from client_server.sessions import LiveSession  # noqa: E402
from nmmo.replays.overlays import BUILTIN_BLANK, USER_BLANK, VALUE_BLANK  # noqa: E402
from nmmo.replays.replay import load_replay  # noqa: E402

from .conftest import running  # noqa: E402


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("replays")
    conf = nmmo.config.Default().set("PLAYER_N", 24).set("HORIZON", 80)
    env = nmmo.Env(conf, seed=5, record=True)
    bot = scripted.Combat(conf, 0)
    obs, _ = env.reset()
    env.overlays.register("mine", np.ones((conf.MAP_SIZE,) * 2))
    for _ in range(40):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
    env.save_replay(directory / "run.replay")
    (directory / "secret.txt").write_text("not a replay")
    (directory.parent / "outside.replay").write_bytes((directory / "run.replay").read_bytes())
    return directory


def apply(state: dict, packet: dict) -> None:
    """Client-side merge of a tick packet into {id: {field: value}}."""
    if packet["full"]:
        state.clear()
    columns = packet["entities"]
    for i, entity_id in enumerate(columns["id"]):
        state[entity_id] = {name: columns[name][i] for name in SENT_FIELDS}
    for entity_id in packet["removed"]:
        state.pop(entity_id, None)


def expected(replay, tick: int) -> dict:
    frame = replay.frame(tick)
    alive = np.flatnonzero(frame["alive"])
    return {int(frame["id"][r]): {name: int(frame[name][r]) for name in SENT_FIELDS} for r in alive}


def receive_until(ws, kind: str, limit: int = 50) -> dict:
    for _ in range(limit):
        packet = json.loads(ws.receive_text())
        if packet["type"] == kind:
            return packet
    raise AssertionError(f"no {kind} packet")


BASE = "http://127.0.0.1:8000"  # where create_app's defaults say the server is: requests must name it


def local_client(**kwargs) -> TestClient:
    return TestClient(create_app(**kwargs), base_url=BASE)


def ws_url(path: str) -> str:
    return BASE.replace("http", "ws") + path


def test_replay_stream_reconstructs_the_recorded_state(replay_dir):
    replay = load_replay(replay_dir / "run.replay")
    client = local_client(replay_dir=replay_dir)
    with client.websocket_connect(ws_url("/ws/replay/run.replay")) as ws:
        header = receive_until(ws, "header")
        material = np.frombuffer(base64.b64decode(header["material"]), dtype=np.uint8)
        assert header["size"] == replay.size and np.array_equal(material.reshape(replay.size, -1), replay.material)
        assert "mine" in header["overlays"] and "visits" in header["overlays"]
        # every overlay's legend can say what its tiles without data show
        assert set(header["overlay_blank"]) == set(header["overlays"])
        blank = header["overlay_blank"]
        assert blank["mine"] == USER_BLANK and blank["visits"] == BUILTIN_BLANK["visits"]
        state: dict = {}
        apply(state, receive_until(ws, "tick"))
        assert state == expected(replay, 0)
        for tick in range(1, replay.ticks + 1):
            ws.send_text(json.dumps({"cmd": "step"}))
            packet = receive_until(ws, "tick")
            assert packet["tick"] == tick and not packet["full"]
            apply(state, packet)
            assert state == expected(replay, tick), tick
        ws.send_text(json.dumps({"cmd": "seek", "tick": 7}))
        packet = receive_until(ws, "tick")
        assert packet["full"] and packet["tick"] == 7
        apply(state, packet)
        assert state == expected(replay, 7)
        ws.send_text(json.dumps({"cmd": "overlay", "name": "mine"}))
        packet = receive_until(ws, "tick")
        assert packet["overlay"]["name"] == "mine" and packet["overlay"]["min"] == 1.0
        assert len(base64.b64decode(packet["overlay"]["data"])) == replay.size**2


def test_http_lists_replays_and_refuses_traversal(replay_dir):
    client = local_client(replay_dir=replay_dir)
    assert client.get("/api/health").json()["ok"]
    listing = client.get("/api/replays").json()
    assert [r["name"] for r in listing] == ["run.replay"] and listing[0]["ticks"] == 40
    assert client.get("/api/replays/run.replay").status_code == 200
    for name in ("..%2Foutside.replay", "../outside.replay", "secret.txt", "%2Fetc%2Fpasswd", "missing.replay"):
        assert client.get(f"/api/replays/{name}").status_code in (400, 404), name
    with pytest.raises(Exception), client.websocket_connect(ws_url("/ws/replay/..%2Foutside.replay")) as ws:  # noqa: B017
        ws.receive_text()


def test_malformed_frames_get_error_frames_and_the_server_lives(replay_dir):
    client = local_client(replay_dir=replay_dir)
    with client.websocket_connect(ws_url("/ws/replay/run.replay")) as ws:
        receive_until(ws, "status")
        bad_frames = ("not json", "[1, 2]", '{"cmd": "jump"}', '{"cmd": "speed", "value": "fast"}',
                      '{"cmd": "seek", "tick": -3}', '{"cmd": "seek", "tick": 999}',
                      '{"cmd": "overlay", "name": "nope"}')
        for bad in bad_frames:
            ws.send_text(bad)
            error = receive_until(ws, "error")
            assert error["message"]
        ws.send_bytes(b"\x00\x01")
        assert "binary" in receive_until(ws, "error")["message"]
        ws.send_text(json.dumps({"cmd": "seek", "tick": 3}))
        assert receive_until(ws, "tick")["tick"] == 3  # still serving
    assert client.get("/api/health").status_code == 200


def test_parse_command_accepts_the_protocol():
    assert parse_command('{"cmd": "speed", "value": 20}') == {"cmd": "speed", "value": 20.0}
    assert parse_command('{"cmd": "overlay", "name": null}') == {"cmd": "overlay", "name": None}
    assert parse_command('{"cmd": "follow", "id": -4}') == {"cmd": "follow", "id": -4}


def test_twenty_live_viewers_receive_the_same_ticks():
    conf = nmmo.config.Default().set("PLAYER_N", 32).set("HORIZON", 500)
    session = LiveSession(conf, "scripted:Forage", seed=1, speed=40.0)

    async def viewer(n_ticks: int, port: int) -> list[int]:
        ticks = []
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/live", max_size=2**24) as ws:
            while len(ticks) < n_ticks:
                packet = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
                if packet["type"] == "tick" and not packet["full"]:
                    ticks.append(packet["tick"])
        return ticks

    async def all_viewers(port: int) -> list[list[int]]:
        return await asyncio.gather(*(viewer(25, port) for _ in range(20)))

    with running(lambda port: create_app(live=session, port=port)) as port:
        results = asyncio.run(all_viewers(port))
    start = max(r[0] for r in results)
    end = min(r[-1] for r in results)
    assert end - start >= 10
    shared = [[t for t in r if start <= t <= end] for r in results]
    assert all(s == list(range(start, end + 1)) for s in shared)  # same ticks, none missed


def test_a_slow_live_viewer_is_resynchronised_with_a_full_packet():
    from client_server.sessions import LiveViewer

    conf = nmmo.config.Default().set("PLAYER_N", 8).set("HORIZON", 100)
    session = LiveSession(conf, "scripted:Meander", seed=0)

    async def scenario() -> list[dict]:
        viewer = LiveViewer(websocket=None, session=session)
        viewer.queue = asyncio.Queue(maxsize=2)
        for _ in range(4):  # nobody drains the queue: the oldest deltas are dropped
            text, reset = session.advance()
            viewer.push(text, reset)
        text, reset = session.advance()
        viewer.push(text, reset)
        return [json.loads(viewer.queue.get_nowait()) for _ in range(viewer.queue.qsize())]

    packets = asyncio.run(scenario())
    assert packets[-1]["type"] == "tick" and packets[-1]["full"]


def test_a_live_run_and_its_replay_send_the_same_overlay_bytes(tmp_path):
    from client_server.packets import overlay_field
    from client_server.sessions import REPLAY_OVERLAYS, ReplayViewer, replay_overlay

    conf = nmmo.config.Default().set("PLAYER_N", 24).set("HORIZON", 100)
    session = LiveSession(conf, "scripted:Combat", seed=4, record=True)
    for _ in range(15):
        session.advance()
    live = {name: session.overlay(name) for name in REPLAY_OVERLAYS}
    session.env.save_replay(tmp_path / "live.replay")
    replay = load_replay(tmp_path / "live.replay")
    tick = session.env.realm.state.tick
    viewer = ReplayViewer(websocket=None, replay=replay, name="live.replay")
    viewer._accumulate_visits(tick)
    for name in REPLAY_OVERLAYS:
        replayed = overlay_field(name, quantized=replay_overlay(replay, name, tick, viewer.visits))
        assert replayed == live[name], name
        assert live[name]["max"] > live[name]["min"], name  # a picture, not a blank


def test_a_live_run_of_the_shipped_baseline_paints_its_value_function(tmp_path):
    """`nmmo serve --live --policy baseline:small` offers a "value" overlay: the baseline's value
    estimates, averaged per tile where its agents stood, growing as the run goes on, and its
    "value landscape", the same bytes as a replay's of the same checkpoint and map; a scripted
    policy (no value estimates) offers neither."""
    pytest.importorskip("torch")
    from nmmo.cli.runner import simulate
    from nmmo.envs.landscape import BLANK, NAME

    conf = nmmo.config.load("tournament").set("HORIZON", 50)
    session = LiveSession(conf, "baseline:small", seed=3)
    header = session.header()
    assert "value" in header["overlays"] and NAME in header["overlays"]
    assert header["overlay_blank"][NAME] == BLANK and header["overlay_blank"]["value"] == VALUE_BLANK
    for _ in range(10):
        session.advance()
    painted = session.env.overlays.get("value")
    standing = [(view.row, view.col) for view in session.env.realm.players.values()]
    assert np.isfinite(painted).all() and np.ptp(painted) > 0
    assert (painted[tuple(np.array(standing).T)] != painted.min()).any()  # painted where agents stand
    simulate(conf, "baseline:small", 2, seed=3, progress=False, record=str(tmp_path / "run.replay"), value_overlay=True)
    replay = load_replay(tmp_path / "run.replay")
    from client_server.packets import overlay_field

    assert session.overlay(NAME) == overlay_field(NAME, quantized=replay.overlay_at(NAME, 0))
    assert replay.header["overlay_blank"][NAME] == BLANK
    scripted = LiveSession(conf, "scripted:Forage", seed=3)
    assert not {"value", NAME} & set(scripted.header()["overlays"])
    assert "values" not in scripted.header() and "value" not in scripted.header()["fields"]


def test_a_live_run_sends_each_agents_value_estimate_for_the_inspector(tmp_path):
    """With a policy that has value estimates, a live run's header says how to read them (`values`)
    and its frames carry each live agent's estimate of the tick shown, as a replay's do: the one the
    policy made from the observations of that tick (it acts as soon as it observes). A recorded live
    run keeps them."""
    pytest.importorskip("torch")
    from nmmo.replays.recording import NO_VALUE, VALUE_SCALE

    session = LiveSession(nmmo.config.load("tournament").set("HORIZON", 50), "baseline:small", seed=3, record=True)
    header = session.header()
    assert header["values"] == {"scale": VALUE_SCALE, "none": NO_VALUE} and header["fields"][-1] == "value"
    for _ in range(3):
        text, _ = session.advance()
        packet = json.loads(text)
        assert "value" in packet["entities"]
        full = json.loads(session.full_packet())["entities"]
        estimates = session.policy.last_values
        assert estimates and set(estimates) <= set(full["id"])
        for agent, value in zip(full["id"], full["value"], strict=True):
            expected = round(estimates[agent] * VALUE_SCALE) if agent in estimates else NO_VALUE
            assert value == expected, agent
    replay = load_replay(session.env.save_replay(tmp_path / "live.replay"))
    assert replay.header["values"] is True


def test_a_live_run_with_tasks_and_its_replay_send_task_names_fields_and_the_tasks_done_overlay(tmp_path):
    """A live run with tasks names them in its header and sends every agent's task fields; its replay
    sends the same, and both paint the same tasks done overlay. A run without tasks sends neither
    (and keeps the packets it always had)."""
    from client_server.packets import TASK_SENT_FIELDS, overlay_field
    from client_server.sessions import ReplayViewer, replay_overlay

    conf = nmmo.config.Default().set("PLAYER_N", 24).set("HORIZON", 200)
    session = LiveSession(conf, "scripted:Forage", seed=2, record=True, tasks="foraging")
    header = session.header()
    names = [spec.name for spec in session.env.tasks.tasks]
    assert header["tasks"] == {"name": "foraging", "names": names}
    assert header["fields"] == TASK_SENT_FIELDS and "tasks done" in header["overlays"]
    assert header["overlay_blank"]["tasks done"] == BUILTIN_BLANK["tasks done"]
    for _ in range(120):
        text, _ = session.advance()
    packet = json.loads(session.full_packet())
    assert set(packet["entities"]) == set(TASK_SENT_FIELDS)
    assert max(packet["entities"]["task_done"]) == 1 and min(packet["entities"]["task"]) == -1  # NPCs: no task
    live = session.overlay("tasks done")
    assert live["max"] > 0
    session.env.save_replay(tmp_path / "tasks.replay")
    replay = load_replay(tmp_path / "tasks.replay")
    viewer = ReplayViewer(websocket=None, replay=replay, name="tasks.replay")
    viewer._accumulate_completions(replay.ticks)
    assert overlay_field("tasks done", quantized=replay_overlay(replay, "tasks done", replay.ticks,
                                                                 None, viewer.completions)) == live
    with local_client(replay_dir=tmp_path).websocket_connect(ws_url("/ws/replay/tasks.replay")) as ws:
        replayed = receive_until(ws, "header")
        assert replayed["tasks"] == header["tasks"] and replayed["fields"] == TASK_SENT_FIELDS
        assert "tasks done" in replayed["overlays"]
    plain = LiveSession(nmmo.config.Small().set("PLAYER_N", 4), "scripted:Meander", seed=0).header()
    assert "tasks" not in plain and plain["fields"] == SENT_FIELDS and "tasks done" not in plain["overlays"]


def test_a_minigame_sends_its_state_live_and_in_its_replay(tmp_path):
    """A live run of a minigame names it in its header and sends `env.game_state()` with every tick
    packet (protect the king: with each live king's entity id); its replay sends the same states
    tick by tick. A run without a game sends none."""
    session = LiveSession("protect_the_king", "scripted:Combat", seed=1, record=True)
    assert session.header()["game"] == {"name": "protect_the_king", "title": "Protect the king"}
    sent = [json.loads(session.tick_json)["game"]]
    for _ in range(6):
        text, _ = session.advance()
        sent.append(json.loads(text)["game"])
    assert json.loads(session.full_packet())["game"] == sent[-1]
    frame = session.env.frame()
    assert sent[-1]["king_ids"] == [int(frame["id"][k]) if frame["alive"][k] else None for k in sent[-1]["kings"]]
    assert [state["tick"] for state in sent] == list(range(7))
    session.env.save_replay(tmp_path / "game.replay")
    with local_client(replay_dir=tmp_path).websocket_connect(ws_url("/ws/replay/game.replay")) as ws:
        assert receive_until(ws, "header")["game"] == session.header()["game"]
        replayed = [receive_until(ws, "tick")["game"]]
        for _ in range(6):
            ws.send_text(json.dumps({"cmd": "step"}))
            replayed.append(receive_until(ws, "tick")["game"])
    assert replayed == sent
    plain = LiveSession(nmmo.config.Small().set("PLAYER_N", 4), "scripted:Meander", seed=0)
    assert "game" not in plain.header() and "game" not in json.loads(plain.advance()[0])
