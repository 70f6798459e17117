"""Replay memory under hostile files: sizes known before decoding, the server's cache bounded by bytes."""

import argparse
import io
import json
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import nmmo
from client_server.replays import ReplayCache
from nmmo.replays.replay import FIELDS, ReplayError, load_replay, read_header

MiB = 2**20


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_claiming(shape: tuple, dtype=np.uint8, data: bytes = b"") -> bytes:
    """A .npy member whose header declares `shape` but which carries only `data`."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                  "fortran_order": False, "shape": shape})
    return buffer.getvalue() + data


def record(path, ticks: int):
    env = nmmo.Env(nmmo.config.Small().set("PLAYER_N", 8), seed=ticks, record=True)
    env.reset()
    for _ in range(ticks):
        env.step({})
    return env.save_replay(path)


def members_of(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_zip(path, members: dict[str, bytes], lie: dict[str, int] | None = None,
              method: dict[str, int] | None = None):
    """A zip of `members`; `lie` makes the directory declare a smaller decoded size (and that
    prefix's CRC) than a member's stream really holds, `method` picks a member's compression."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, blob in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = (method or {}).get(name, zipfile.ZIP_DEFLATED)
            archive.writestr(info, blob)
            if name in (lie or {}):
                info.file_size, info.CRC = lie[name], zlib.crc32(blob[: lie[name]])
    return path


def peak_mib(call) -> tuple[float, str]:
    """Peak memory (MiB) that `call` allocates (numpy buffers included) and why it raised ReplayError."""
    tracemalloc.start()
    try:
        with pytest.raises(ReplayError) as err:
            call()
        return tracemalloc.get_traced_memory()[1] / MiB, err.value.reason
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return record(tmp_path_factory.mktemp("cache") / "good.replay", ticks=3)


def test_a_header_bomb_is_refused_unread(good, tmp_path):
    members = members_of(good)
    meta = json.loads(np.load(io.BytesIO(members["header.npy"])).tobytes())
    text = json.dumps(meta).encode()
    members["header.npy"] = npy(np.frombuffer(text + b" " * (16 * MiB), dtype=np.uint8))  # valid JSON, 16 MiB
    bomb = write_zip(tmp_path / "bomb.replay", members)
    assert bomb.stat().st_size < MiB
    for call in (lambda: read_header(bomb), lambda: load_replay(bomb, max_bytes=8 * MiB)):
        peak, reason = peak_mib(call)
        assert "16 MiB header" in reason and peak < 2, (peak, reason)


def test_a_member_never_inflates_past_its_declared_size(good, tmp_path):
    stream = npy_claiming((16,), data=bytes(16 * MiB))  # declares 16 bytes, its stream holds 16 MiB
    declared = len(npy_claiming((16,))) + 16
    for method, why in ((zipfile.ZIP_BZIP2, "zip method 12"), (zipfile.ZIP_DEFLATED, "more than its declared size")):
        members = {**members_of(good), "f_padding.npy": stream}
        path = write_zip(tmp_path / "liar.replay", members, lie={"f_padding.npy": declared},
                         method={"f_padding.npy": method})
        peak, reason = peak_mib(lambda p=path: load_replay(p, max_bytes=8 * MiB))
        assert why in reason and peak < 4, (method, peak, reason)


def test_an_array_is_sized_from_its_header_and_checked_before_allocating(good, tmp_path):
    members = {**members_of(good), "f_padding.npy": npy_claiming((1536 * MiB,), data=b"\0" * 16)}
    path = write_zip(tmp_path / "claims.replay", members)
    peak, reason = peak_mib(lambda: load_replay(path, max_bytes=8 * MiB))
    assert "declares (1610612736,) uint8 but holds 16 bytes" in reason and peak < 2, (peak, reason)


def test_decoding_takes_about_the_decoded_size(good, tmp_path):
    with np.load(good) as archive:
        arrays = {key: archive[key] for key in archive.files}
    header = json.loads(arrays["header"].tobytes())
    header.update(ticks=95, slots=4096)  # 43 bytes a cell: about 16 MiB of frames
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    for name, dtype in FIELDS.items():  # positions stay put (on the map); the other fields count up
        arrays[f"f_{name}"] = (np.zeros if name in ("row", "col") else np.ones)((96, 4096), dtype=dtype)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    (tmp_path / "wide.replay").write_bytes(buffer.getvalue())
    tracemalloc.start()
    try:
        replay = load_replay(tmp_path / "wide.replay")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    decoded = sum(array.nbytes for key, array in arrays.items() if key != "header")
    assert decoded > 16 * MiB and peak < 1.3 * decoded, (decoded, peak)  # no second copy, no int64 sums
    assert replay.nbytes == decoded
    assert replay.frame(95)["alive"].tolist() == [96] * 4096  # the deltas summed, in their own type
    assert replay.frame(95)["id"].dtype == np.int32


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """Three real replays of growing size, and their decoded sizes."""
    directory = tmp_path_factory.mktemp("three")
    paths = [record(directory / f"r{ticks}.replay", ticks) for ticks in (4, 6, 8)]
    return paths, [load_replay(path).nbytes for path in paths]


def kept(cache: ReplayCache) -> list[str]:
    return [key[0].rsplit("/", 1)[-1] for key in cache._replays]


def test_the_cache_evicts_by_bytes_least_recently_used_first(three):
    (a, b, c), (size_a, size_b, size_c) = three
    cache = ReplayCache(max_bytes=MiB, cache_bytes=size_a + size_c)  # a and b fit, then b and c, not all
    assert size_a < size_b < size_c
    cache.get(a)
    cache.get(b)
    assert (cache.decodes, kept(cache), cache.held_bytes) == (2, ["r4.replay", "r6.replay"], size_a + size_b)
    cache.get(a)  # a hit: a becomes the most recent
    cache.get(c)  # over budget: b (least recently used) goes, a stays
    assert (cache.decodes, kept(cache), cache.held_bytes) == (3, ["r4.replay", "r8.replay"], size_a + size_c)
    cache.get(b)  # decoded again; a and c cannot both stay beside it
    assert cache.decodes == 4 and kept(cache) == ["r6.replay"] and cache.held_bytes == size_b
    assert cache.held_bytes <= cache.cache_bytes


def test_a_replay_over_the_budget_is_served_not_kept_and_one_in_use_is_not_decoded_twice(three):
    (a, b, _), (size_a, *_) = three
    cache = ReplayCache(max_bytes=MiB, cache_bytes=size_a)
    watched = cache.get(b)  # bigger than the whole budget: served, not kept
    assert cache.held_bytes == 0 and kept(cache) == []
    assert cache.get(b) is watched and cache.decodes == 1  # a viewer still holds it: shared, not decoded
    del watched
    cache.get(b)
    assert cache.decodes == 2  # nobody held it: decoded again
    with pytest.raises(ReplayError, match="over the 0 MiB limit"):
        ReplayCache(max_bytes=1024, cache_bytes=MiB).get(a)  # the per-replay limit still refuses first


def test_the_server_takes_the_budget_as_a_flag_and_an_argument(three, tmp_path):
    pytest.importorskip("fastapi")
    from client_server.cli import add_server_flags, check_server_flags
    from client_server.server import create_app

    parser = argparse.ArgumentParser()
    add_server_flags(parser)
    assert parser.parse_args([]).replay_cache_mb == 2048
    args = parser.parse_args(["--replay-cache-mb", "-1", "--port", "0"])
    with pytest.raises(ValueError, match="--replay-cache-mb must be 0 or more"):
        check_server_flags(args)
    cache = create_app(replay_dir=tmp_path, replay_cache_mb=3, max_replay_mb=2).state.replay_cache
    assert (cache.cache_bytes, cache.max_bytes) == (3 * MiB, 2 * MiB)
