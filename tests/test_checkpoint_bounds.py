"""A checkpoint's zip members are sized before anything is inflated, in every loader: a 1 MB file
declaring (or inflating to) 1 GiB is refused, naming the file and the member, and the process's
peak memory barely moves. Real checkpoints still load."""

import collections
import io
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from baselines import checkpoint  # noqa: E402
from nmmo.io import torchzip  # noqa: E402
from nmmo.policy import load_policy_class  # noqa: E402

GIB = 2**30
CHUNK = 2**20
MEMBER = "archive/data/0"
#: How much a refused load may raise the process's peak RSS (inflating the attack would take 1 GiB).
MAX_GROWTH = 64 * 2**20


# ------------------------------------------------------------ crafting archives
def deflated_zeros(size: int) -> tuple[bytes, int]:
    """Raw deflate of `size` zero bytes (a multiple of 1 MiB) and its CRC, without holding them:
    after a full flush the compressor starts afresh, so every MiB compresses to the same block."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(bytes(CHUNK)) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc, zeros = 0, bytes(CHUNK)
    for _ in range(size // CHUNK):
        crc = zlib.crc32(zeros, crc)
    return block * (size // CHUNK) + compressor.flush(), crc


def data_pkl(numel: int) -> bytes:
    """What torch.save pickles for ``{"model": <float32 tensor of numel>}``, its storage 'archive/data/0'."""
    storage = object()

    class Tensor:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (storage, 0, (numel,), (1,), False, collections.OrderedDict()))

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if obj is storage else None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=2).dump({"model": Tensor()})
    return buffer.getvalue()


def stored(name: str, payload: bytes) -> tuple:
    return name, payload, zipfile.ZIP_STORED, len(payload), zlib.crc32(payload)


def zipped(members: list[tuple], prefix: bytes = b"") -> bytes:
    """A zip of (name, payload, method, declared size, crc) members, sizes as given (they may lie)."""
    out, directory = bytearray(prefix), bytearray()
    for name, payload, method, size, crc in members:
        raw = name.encode()
        fields = (20, 0, method, 0, 0, crc, len(payload), size, len(raw))
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, len(out)) + raw
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, 0) + raw + payload
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), len(out), 0)
    return bytes(out + directory + end)


def torch_like(data_member: tuple, numel: int) -> bytes:
    """A checkpoint as torch.save lays it out, its one storage `data_member`."""
    return zipped([stored("archive/data.pkl", data_pkl(numel)), stored("archive/byteorder", b"little"),
                   data_member, stored("archive/version", b"3\n")])


@pytest.fixture(scope="module")
def attacks(tmp_path_factory) -> dict[str, Path]:
    """The attack files: `bomb` declares and inflates to 1 GiB, `liar` declares 4 KiB and inflates to
    1 GiB, `sb3_inner` is an SB3 zip whose policy.pth is the bomb, `sb3_outer` one whose policy.pth
    itself inflates to 1 GiB, `sb3_liar` one whose policy.pth is the liar."""
    folder = tmp_path_factory.mktemp("attacks")
    body, crc = deflated_zeros(GIB)
    bomb = torch_like((MEMBER, body, zipfile.ZIP_DEFLATED, GIB, crc), GIB // 4)
    liar = torch_like((MEMBER, body, zipfile.ZIP_DEFLATED, 4096, crc), 1024)
    files = {"bomb": bomb, "liar": liar,
             "sb3_inner": zipped([stored("data", b"{}"), stored("policy.pth", bomb)]),
             "sb3_outer": zipped([stored("data", b"{}"), ("policy.pth", body, zipfile.ZIP_DEFLATED, GIB, crc)]),
             "sb3_liar": zipped([stored("data", b"{}"), stored("policy.pth", liar)])}
    for name, data in files.items():
        (folder / f"{name}.pt").write_bytes(data)
    return {name: folder / f"{name}.pt" for name in files}


def test_the_bomb_is_a_small_file_declaring_a_gibibyte(attacks):
    assert attacks["bomb"].stat().st_size < 1.1 * 2**20
    info = zipfile.ZipFile(attacks["bomb"]).getinfo(MEMBER)
    assert (info.compress_type, info.file_size) == (zipfile.ZIP_DEFLATED, GIB)


# ------------------------------------------------------------ measuring
def _status_bytes(field: str) -> int:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def refused(load, *args) -> tuple[str, int | None]:
    """`load(*args)`'s ValueError message, and how far it raised the process's peak RSS (None where
    Linux cannot reset the peak: writing 5 to /proc/self/clear_refs sets VmHWM to the current RSS)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_bytes("VmRSS")
    except (OSError, StopIteration):
        before = None
    with pytest.raises(ValueError) as err:
        load(*args)
    return str(err.value), None if before is None else _status_bytes("VmHWM") - before


def loader(scheme: str):
    """The function behind `scheme` that reads a file (the integrations' packages are optional)."""
    if scheme == "ckpt":
        return checkpoint.load
    if scheme == "ckpt-spec":
        return lambda path: load_policy_class(f"ckpt:{path}")
    pytest.importorskip({"sb3": "stable_baselines3", "torchrl": "torchrl", "pufferlib": "pufferlib"}[scheme])
    if scheme == "sb3":
        from nmmo.integrations import sb3
        return sb3.read_model
    if scheme == "torchrl":
        from nmmo.integrations import torchrl
        return torchrl.load_weights
    from nmmo.integrations import pufferlib
    return pufferlib.policy_class


DECLARES, LIES = "would inflate to 1,073,741,824", "decodes to more than its declared size"
CASES = [(scheme, attack, reason) for scheme in ("ckpt", "ckpt-spec", "torchrl", "pufferlib")
         for attack, reason in (("bomb", DECLARES), ("liar", LIES))]
CASES += [("sb3", "sb3_inner", DECLARES), ("sb3", "sb3_outer", DECLARES), ("sb3", "sb3_liar", LIES),
          ("sb3", "bomb", DECLARES)]


@pytest.mark.parametrize(("scheme", "attack", "reason"), CASES)
def test_every_loader_refuses_the_attack_before_inflating_it(attacks, scheme, attack, reason):
    message, growth = refused(loader(scheme), str(attacks[attack]))
    member = "policy.pth" if attack == "sb3_outer" else MEMBER
    assert str(attacks[attack]) in message and f"{member!r} {reason}" in message, message
    assert growth is None or growth < MAX_GROWTH, f"peak RSS rose {growth / 2**20:.0f} MB"
    if attack == "sb3_inner":
        assert "policy.pth" in message  # the member of the outer zip, then the inner one


def test_a_member_lying_under_the_cap_is_streamed_never_held(tmp_path):
    body, crc = deflated_zeros(GIB)
    path = tmp_path / "liar64.pt"
    path.write_bytes(torch_like((MEMBER, body, zipfile.ZIP_DEFLATED, 64 * CHUNK, crc), 16 * CHUNK))
    message, growth = refused(torchzip.load, path)
    assert f"{MEMBER!r} decodes to more than its declared size" in message
    assert growth is None or growth < MAX_GROWTH, f"peak RSS rose {growth / 2**20:.0f} MB"


# ------------------------------------------------------------ the check itself
def saved(data) -> bytes:
    buffer = io.BytesIO()
    torch.save(data, buffer)
    return buffer.getvalue()


def check(data: bytes, **caps):
    return torchzip.check(io.BytesIO(data), "x.pt", **caps)


def test_real_checkpoints_pass_and_load(tmp_path):
    for shipped in sorted((Path(checkpoint.__file__).parent / "weights").glob("*.pt")):
        with torchzip.open_checked(shipped):
            pass
    data = {"model": {"w": torch.arange(12.0).reshape(3, 4)}, "step": 3}
    infos = check(saved(data))  # torch.save: zip64 end records, every member stored
    assert all(info.compress_type == zipfile.ZIP_STORED for info in infos)
    path = checkpoint.save(tmp_path / "c.pt", data)
    assert torch.equal(checkpoint.load(path)["model"]["w"], data["model"]["w"])


def test_a_deflated_checkpoint_is_verified_and_loads(tmp_path):
    """torch.save never compresses, but torch reads deflated members: such a file is checked by inflating."""
    source = zipfile.ZipFile(io.BytesIO(saved({"w": torch.zeros(1000)})))
    path = tmp_path / "deflated.pt"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, source.read(info))
    assert torch.equal(torchzip.load(path)["w"], torch.zeros(1000))


def test_the_caps_are_the_callers(tmp_path):
    data = saved({"w": torch.zeros(1000)})
    with pytest.raises(ValueError, match=r"x\.pt: member 'archive/data/0' would inflate to 4,000 bytes"):
        check(data, max_member_bytes=3999)
    with pytest.raises(ValueError, match=r"x\.pt: its members would inflate to [\d,]+ bytes together"):
        check(data, max_total_bytes=4000)
    (tmp_path / "big.pt").write_bytes(data)
    with pytest.raises(ValueError, match=r"big\.pt'?: the file has"):
        with torchzip.open_checked(tmp_path / "big.pt", max_file_bytes=1000):
            pass


def test_malformed_archives_are_refused_naming_the_member():
    payload = bytes(100)
    cases = {
        "not a zip": b"not a checkpoint at all, just text",
        "stored with two different sizes": zipped([("archive/data.pkl", payload, 0, 10**6, zlib.crc32(payload))]),
        "uses zip method 12": zipped([("archive/data.pkl", payload, 12, 100, 0)]),
        "does not start with a member": zipped([stored("archive/data.pkl", payload)], prefix=b"junk"),
    }
    overlapping = bytearray(zipped([stored("a", payload), stored("b", payload)]))
    second = overlapping.index(b"PK\x01\x02", overlapping.index(b"PK\x01\x02") + 4)
    overlapping[second + 42:second + 46] = struct.pack("<L", 0)  # b's header is a's: the members share bytes
    cases["runs into the next member"] = bytes(overlapping)
    commented = bytearray(zipped([stored("a", payload)]))
    commented[-2:] = struct.pack("<H", 3)
    cases["not a zip archive"] = bytes(commented) + b"hey"  # a comment: Python and torch may find different ends
    for reason, data in cases.items():
        with pytest.raises(ValueError, match=rf"x\.pt: .*{reason}"):
            check(data)
