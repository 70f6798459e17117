"""The server under hostile input: bad and oversized replays, many viewers, no paths in errors."""

import asyncio
import io
import json
import zipfile

import numpy as np
import pytest

pytest.importorskip("fastapi")
import websockets  # noqa: E402

import nmmo  # noqa: E402
from client_server.server import create_app  # noqa: E402
from client_server.sessions import LiveSession  # noqa: E402

from .conftest import running  # noqa: E402


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hardening")
    env = nmmo.Env(nmmo.config.Small().set("PLAYER_N", 8), seed=0, record=True)
    env.reset()
    for _ in range(10):
        env.step({})
    env.save_replay(directory / "good.replay")
    (directory / "empty.replay").write_bytes(b"")
    (directory / "noise.replay").write_bytes(np.random.default_rng(0).bytes(4000))
    (directory / "folder.replay").mkdir()
    header = io.BytesIO()
    np.save(header, np.frombuffer(b"[1, 2]", dtype=np.uint8))
    with zipfile.ZipFile(directory / "listheader.replay", "w") as archive:
        archive.writestr("header.npy", header.getvalue())
    # a bomb: a few hundred kB on disk whose arrays decode to 64 MiB
    with np.load(directory / "good.replay") as good:
        arrays = {key: good[key] for key in good.files}
    arrays["f_padding"] = np.zeros(64 * 2**20, dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (directory / "bomb.replay").write_bytes(buffer.getvalue())
    # a header bomb: 16 MiB of valid JSON (spaces) in a 16 kB file; listing must not decode it
    meta = json.loads(arrays["header"].tobytes())
    arrays["header"] = np.frombuffer(json.dumps(meta).encode() + b" " * 2**24, dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{key: arrays[key] for key in arrays if key != "f_padding"})
    (directory / "headerbomb.replay").write_bytes(buffer.getvalue())
    return directory


def get(port, path):
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read()


def watch(port, path, limit=4):
    """Open a websocket and return the first `limit` packets (or fewer if the server closes)."""

    async def attempt():
        packets = []
        async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=2**26) as ws:
            try:
                while len(packets) < limit:
                    packets.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=30)))
            except websockets.exceptions.ConnectionClosed as closed:
                packets.append({"closed": closed.rcvd.code if closed.rcvd else None})
        return packets

    return asyncio.run(attempt())


def test_bad_replays_are_listed_as_unreadable_and_never_break_the_list(replay_dir):
    with running(lambda port: create_app(replay_dir=replay_dir, port=port, max_replay_mb=8)) as port:
        status, body = get(port, "/api/replays")
    assert status == 200
    listed = {row["name"]: row for row in json.loads(body)}
    assert listed["good.replay"]["ticks"] == 10 and "unreadable" not in listed["good.replay"]
    for name in ("empty.replay", "noise.replay", "listheader.replay"):
        assert listed[name]["unreadable"], name
    assert "16 MiB header" in listed["headerbomb.replay"]["unreadable"]
    assert str(replay_dir) not in body.decode()  # no absolute paths for remote eyes


def test_a_replay_that_decodes_too_big_is_refused_without_paths(replay_dir):
    with running(lambda port: create_app(replay_dir=replay_dir, port=port, max_replay_mb=8)) as port:
        packets = watch(port, "/ws/replay/bomb.replay")
        status, body = get(port, "/api/replays/noise.replay")
        assert get(port, "/api/health")[0] == 200
    assert packets[0]["type"] == "error" and "over the 8 MiB limit" in packets[0]["message"]
    assert packets[-1] == {"closed": 4400}
    assert status == 400 and b"noise.replay" in body and str(replay_dir).encode() not in body


def test_viewers_share_one_decoded_replay(replay_dir):
    made = {}

    def make(port):
        made["app"] = create_app(replay_dir=replay_dir, port=port)
        return made["app"]

    async def five(port):
        async def one():
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws/replay/good.replay") as ws:
                return json.loads(await ws.recv())["type"]
        return await asyncio.gather(*(one() for _ in range(5)))

    with running(make) as port:
        kinds = asyncio.run(five(port))
    assert kinds == ["header"] * 5
    assert made["app"].state.replay_cache.decodes == 1  # one decode, five viewers


def test_the_viewer_cap_refuses_clearly(replay_dir):
    session = LiveSession(nmmo.config.Small().set("PLAYER_N", 4), "scripted:Meander", seed=0, speed=20.0)

    async def scenario(port):
        first = await websockets.connect(f"ws://127.0.0.1:{port}/ws/live")
        second = await websockets.connect(f"ws://127.0.0.1:{port}/ws/replay/good.replay")
        try:
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws/live") as third:
                refusal = json.loads(await asyncio.wait_for(third.recv(), timeout=10))
                with pytest.raises(websockets.exceptions.ConnectionClosed) as closed:
                    await asyncio.wait_for(third.recv(), timeout=10)
        finally:
            await first.close()
            await second.close()
        await asyncio.sleep(0.2)
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws/live") as fourth:  # a seat freed up
            welcome = json.loads(await asyncio.wait_for(fourth.recv(), timeout=10))
        return refusal, closed.value.rcvd.code, welcome

    with running(lambda port: create_app(replay_dir=replay_dir, live=session, port=port, max_viewers=2)) as port:
        refusal, code, welcome = asyncio.run(scenario(port))
    assert refusal["type"] == "error" and "already has 2 viewers" in refusal["message"]
    assert code == 1013 and welcome["type"] == "header"
