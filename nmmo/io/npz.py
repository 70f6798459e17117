"""Reading untrusted NumPy ``.npz`` archives (replays) within bounds: nothing decoded past what is declared.

A small file can hold members that inflate to gigabytes, and its zip directory and ``.npy``
headers can lie. So `members` sizes every array from its own ``.npy`` header, checked against the
zip directory, before anything is decoded, and `read` inflates with ``max_length``, never past a
member's declared size, into one buffer of exactly that size; a member that decodes to more or
less than declared, or fails its CRC, is refused (one of `DAMAGED`).
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

#: Most members a replay archive may have (one has 27).
MAX_MEMBERS = 64
_CHUNK = 2**20  # decoded bytes per inflate call
_NPY_PREFIX = 16 + 10_000  # magic, version, length and numpy's largest accepted .npy header
DAMAGED = (OSError, EOFError, ValueError, struct.error, zipfile.BadZipFile, zlib.error)


@dataclass(frozen=True)
class Member:
    """One ``.npy`` member, described from the zip directory and its .npy header (nothing decoded)."""

    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran: bool
    offset: int  # where the array's bytes start in the decoded member

    @property
    def nbytes(self) -> int:
        return self.info.file_size - self.offset


def _data_start(handle: BinaryIO, info: zipfile.ZipInfo) -> int:
    """Where a member's stored bytes start (after its local header)."""
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"member {info.filename!r} has no local header")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_length + extra_length


def _inflate(handle: BinaryIO, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The first `limit` decoded bytes of a member, in chunks of at most `_CHUNK`. The inflater is
    never asked for more than is still wanted (`max_length`), so a stream that decodes to more than
    its directory entry says costs no memory; read in full, the member must end where declared."""
    handle.seek(_data_start(handle, info))
    raw_left, want = info.compress_size, min(limit, info.file_size)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS) if info.compress_type == zipfile.ZIP_DEFLATED else None
    pending, crc = b"", 0

    def more() -> bytes:
        nonlocal raw_left
        data = handle.read(min(_CHUNK, raw_left))
        raw_left -= len(data)
        return data

    while want > 0:
        pending = pending or more()
        if not pending:
            raise ValueError(f"member {info.filename!r} ends before its declared size")
        if inflater is None:
            chunk, pending = pending[:want], pending[want:]
        else:
            chunk, pending = inflater.decompress(pending, min(_CHUNK, want)), inflater.unconsumed_tail
            if inflater.eof and len(chunk) < want:
                raise ValueError(f"member {info.filename!r} decodes to less than its declared size")
        want -= len(chunk)
        crc = zlib.crc32(chunk, crc)
        yield chunk
    if limit >= info.file_size:
        _check_end(info, inflater, pending, more, crc)


def _check_end(info: zipfile.ZipInfo, inflater: Any, pending: bytes, more: Callable[[], bytes], crc: int) -> None:
    """A member read in full must stop at its declared size and match its CRC."""
    while inflater is not None and not inflater.eof:
        pending = pending or more()
        if not pending:
            raise ValueError(f"member {info.filename!r} is cut short")
        if inflater.decompress(pending, 1):
            raise ValueError(f"member {info.filename!r} decodes to more than its declared size")
        pending = inflater.unconsumed_tail
    if crc != info.CRC:
        raise ValueError(f"member {info.filename!r} fails its CRC check")


def _describe(handle: BinaryIO, info: zipfile.ZipInfo) -> Member:
    """A member's array shape and type from its .npy header, checked against its declared size."""
    if info.flag_bits & 1:
        raise ValueError(f"member {info.filename!r} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"member {info.filename!r} uses zip method {info.compress_type} (replays use deflate)")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise ValueError(f"member {info.filename!r} is stored with two different sizes")
    prefix = io.BytesIO(b"".join(_inflate(handle, info, _NPY_PREFIX)))
    version = np.lib.format.read_magic(prefix)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f"member {info.filename!r} is .npy format {version}")
    shape, fortran, dtype = readers[version](prefix)
    member = Member(info, tuple(shape), dtype, fortran, prefix.tell())
    if (dtype.hasobject or dtype.itemsize == 0 or any(length < 0 for length in shape)
            or member.nbytes != math.prod(shape) * dtype.itemsize):
        raise ValueError(f"member {info.filename!r} declares {shape} {dtype} but holds {member.nbytes} bytes")
    return member


def members(handle: BinaryIO) -> dict[str, Member]:
    """Every member of the archive open in `handle`, by name without ``.npy``, described from the
    directory and the .npy headers (nothing else decoded); ValueError for a suspicious archive."""
    infos = zipfile.ZipFile(handle).infolist()  # the directory only
    names = [info.filename for info in infos]
    if len(infos) > MAX_MEMBERS or len(set(names)) < len(names):
        raise ValueError(f"{len(infos)} members, {len(infos) - len(set(names))} of them repeated")
    if not all(name.endswith(".npy") for name in names):
        raise ValueError("a member is not a .npy array")
    return {info.filename[:-4]: _describe(handle, info) for info in infos}


def read(handle: BinaryIO, member: Member) -> np.ndarray:
    """One member's array, decoded into one buffer of exactly its declared size."""
    flat, filled = np.empty(member.nbytes, dtype=np.uint8), -member.offset  # < 0: in the .npy header
    into = memoryview(flat)
    for chunk in _inflate(handle, member.info, member.info.file_size):
        usable = chunk[max(0, -filled):]
        into[max(0, filled):max(0, filled) + len(usable)] = usable
        filled += len(chunk)
    return flat.view(member.dtype).reshape(member.shape, order="F" if member.fortran else "C")


def running_sum(values: np.ndarray) -> np.ndarray:
    """A delta-coded array's values: its deltas summed along the first axis in place, so no memory
    beyond the array, and exact (integer wrap-around gives what an int64 sum cast back would). Row
    by row when rows are wide: numpy's in-place cumsum down columns is about 30x slower there."""
    if values.ndim != 2 or values.shape[1] < 64:
        return np.cumsum(values, axis=0, out=values)
    for tick in range(1, len(values)):
        np.add(values[tick], values[tick - 1], out=values[tick])
    return values
