"""Reading untrusted torch checkpoints within bounds: every member sized before anything is inflated.

A checkpoint is the zip archive ``torch.save`` writes, and ``torch.load`` reads it with its own zip
reader (miniz), which allocates whatever size a member declares and inflates a compressed member
into it: a 1 MB file can declare a member of 1 GiB of zeros, and ``weights_only`` only guards what
is unpickled, after the storages are read. So `check` reads the zip directory with the stdlib
first and refuses (`ArchiveError`, naming the file and the member) a file or directory past its
caps, a member that declares more than `MAX_MEMBER_BYTES`, members that together declare more than
`MAX_TOTAL_BYTES`, members that share bytes, and a compressed member that does not decode to
exactly its declared size (decoded in chunks by `nmmo.io.npz`'s bounded inflater, never held
whole). ``torch.save`` stores its members uncompressed, so for its files only the directory and
the local headers are read. `load` then gives torch the very handle it checked.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from nmmo.io.npz import DAMAGED, _data_start, _inflate

#: The most one member may declare (its decoded size): 64M float32 weights in one tensor. Our
#: checkpoints are a few MB (the shipped baselines 0.3 MB; a training checkpoint, Adam's two
#: moments included, about 4x its weights), so this leaves a hundredfold room.
MAX_MEMBER_BYTES = 256 * 2**20
#: The most all members together may declare: about what loading the file may take in memory.
MAX_TOTAL_BYTES = 512 * 2**20
#: The largest file read: stored members (what torch.save writes) decode to their own bytes, so a
#: bigger file would hold more than `MAX_TOTAL_BYTES` anyway.
MAX_FILE_BYTES = MAX_TOTAL_BYTES
#: The most members (torch.save writes one per storage, plus five): the directory is parsed whole.
MAX_MEMBERS = 16_384
#: The largest zip directory (about 100 bytes a member for torch.save's names).
MAX_DIRECTORY_BYTES = 8 * 2**20

_END = struct.Struct("<4s4H2LH")  # end of central directory record (22 bytes)
_LOCATOR = struct.Struct("<4sLQL")  # zip64 end of central directory locator (20 bytes)
_END64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end of central directory record (56 bytes)
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what torch's reader (miniz) decodes


class ArchiveError(ValueError):
    """A checkpoint that is not a zip archive, or one whose members could take more memory than the caps allow."""


def _directory(handle: BinaryIO, size: int, label: str) -> tuple[int, int]:
    """(members, directory offset) from the end records, which must close the file with no comment
    and sit right after the directory: where both Python's reader and torch's look for them."""
    not_zip = ArchiveError(f"{label}: not a zip archive (a checkpoint is the zip torch.save writes, read "
                           "with torch.load(weights_only=True))")
    if size < _END.size:
        raise not_zip
    handle.seek(size - _END.size)
    signature, _, _, _, count, directory_size, offset, comment = _END.unpack(handle.read(_END.size))
    if signature != zipfile.stringEndArchive or comment:
        raise not_zip
    end = size - _END.size
    if size >= _END.size + _LOCATOR.size + _END64.size:
        handle.seek(end - _LOCATOR.size)
        locator = _LOCATOR.unpack(handle.read(_LOCATOR.size))
        if locator[0] == zipfile.stringEndArchive64Locator:
            end -= _LOCATOR.size + _END64.size  # where Python reads the zip64 record
            if locator[2] != end:  # where torch reads it
                raise ArchiveError(f"{label}: its zip64 end record is not where its locator says")
            handle.seek(end)
            record = _END64.unpack(handle.read(_END64.size))
            if record[0] != zipfile.stringEndArchive64:
                raise ArchiveError(f"{label}: its zip64 end record is damaged")
            count, directory_size, offset = record[7], record[8], record[9]
    if offset + directory_size != end:
        raise ArchiveError(f"{label}: its zip directory is not where its end record says (data before or after)")
    if count > MAX_MEMBERS or directory_size > MAX_DIRECTORY_BYTES:
        raise ArchiveError(f"{label}: its zip directory lists {count:,} members in {directory_size:,} bytes "
                           f"(at most {MAX_MEMBERS:,} in {MAX_DIRECTORY_BYTES:,})")
    return count, offset


def _check_declared(info: zipfile.ZipInfo, label: str, max_member_bytes: int) -> None:
    """What the directory says of one member: readable by torch, and within the member cap."""
    where = f"{label}: member {info.filename!r}"
    if info.flag_bits & 1:
        raise ArchiveError(f"{where} is encrypted")
    if info.compress_type not in _READABLE:
        raise ArchiveError(f"{where} uses zip method {info.compress_type} (torch reads stored or deflated members)")
    if info.file_size > max_member_bytes:
        raise ArchiveError(f"{where} would inflate to {info.file_size:,} bytes (a member may hold at most "
                           f"{max_member_bytes:,})")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise ArchiveError(f"{where} is stored with two different sizes ({info.compress_size:,} and "
                           f"{info.file_size:,} bytes)")


def _check_data(handle: BinaryIO, info: zipfile.ZipInfo, end: int, label: str) -> None:
    """One member's bytes: before `end` (the next member's header), and, compressed, decoding to
    exactly its declared size (declared sizes can lie; torch's reader would trust them)."""
    where = f"{label}: member {info.filename!r}"
    try:
        if _data_start(handle, info) + info.compress_size > end:
            raise ArchiveError(f"{where} runs into the next member or the directory")
        if info.compress_type == zipfile.ZIP_DEFLATED:
            for _ in _inflate(handle, info, info.file_size):  # exactly file_size bytes, 1 MiB at a time
                pass
    except ArchiveError:
        raise
    except DAMAGED as err:  # npz's messages name the member
        raise ArchiveError(f"{label}: {err}" if info.filename in str(err) else f"{where}: {err}") from None


def check(handle: BinaryIO, label: str, *, max_member_bytes: int = MAX_MEMBER_BYTES,
          max_total_bytes: int = MAX_TOTAL_BYTES) -> list[zipfile.ZipInfo]:
    """The members of the zip open in `handle` (seekable), checked as the module says: the directory
    first, then each member's bytes, nothing inflated past a declared size; ArchiveError whose
    message starts with `label` (which names the file) and names the member at fault."""
    size = handle.seek(0, os.SEEK_END)
    count, directory_offset = _directory(handle, size, label)
    try:
        infos = sorted(zipfile.ZipFile(handle).infolist(), key=lambda info: info.header_offset)
    except DAMAGED as err:
        raise ArchiveError(f"{label}: its zip directory cannot be read ({err})") from None
    names = [info.filename for info in infos]
    if len(infos) != count or len(set(names)) < len(names):
        raise ArchiveError(f"{label}: its zip directory holds {len(infos)} members ({len(set(names))} names), "
                           f"its end record says {count}")
    if not infos or infos[0].header_offset != 0:  # torch.load reads a file not starting so as a legacy pickle
        raise ArchiveError(f"{label}: the zip does not start with a member")
    for info in infos:
        _check_declared(info, label, max_member_bytes)
    total = sum(info.file_size for info in infos)
    if total > max_total_bytes:
        raise ArchiveError(f"{label}: its members would inflate to {total:,} bytes together (at most "
                           f"{max_total_bytes:,}; the largest is {max(infos, key=lambda i: i.file_size).filename!r})")
    ends = [info.header_offset for info in infos[1:]] + [directory_offset]
    for info, end in zip(infos, ends, strict=True):
        _check_data(handle, info, end, label)
    handle.seek(0)
    return infos


@contextmanager
def open_checked(path: str | os.PathLike, label: str | None = None, *, max_file_bytes: int = MAX_FILE_BYTES,
                 **caps: int) -> Iterator[BinaryIO]:
    """The file at `path`, open for reading and `check`ed (`caps`: its keyword caps), at offset 0.
    Read through this handle, not by path again: a file swapped in meanwhile (atomic writes replace
    the file) is never the one read. OSError when it cannot be opened."""
    label = label or repr(os.fspath(path))
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_file_bytes:
            raise ArchiveError(f"{label}: the file has {size:,} bytes (a checkpoint may have at most "
                               f"{max_file_bytes:,})")
        check(handle, label, **caps)
        yield handle


def load(source: str | os.PathLike | bytes, label: str | None = None, map_location: str = "cpu") -> Any:
    """``torch.load(weights_only=True)`` of `source` (a path, or a file's bytes already read within
    bounds), after `check`: ArchiveError before torch reads a byte; torch's own errors otherwise."""
    import torch

    if isinstance(source, bytes):
        handle = io.BytesIO(source)
        check(handle, label or "checkpoint")
        return torch.load(handle, map_location=map_location, weights_only=True)
    with open_checked(source, label) as handle:
        return torch.load(handle, map_location=map_location, weights_only=True)
