"""Where uploaded agents are kept: content-addressed folders under the arena's folder, written atomically.

An upload is the bytes of one file: a policy file (``.py``), an archive of a folder (``.tar``,
``.tar.gz``, ``.tgz``, ``.zip``: the folder's ``__init__.py`` at its root, or in its one top-level
folder) or a checkpoint (``.pt``, ``.pth``, ``.ckpt``). It is stored under
``ARENA/store/ab/abcdef...`` (the sha256 of its bytes), the policy file as ``agent.py``, the
checkpoint as ``model`` + its suffix, an archive unpacked; each version in a folder of its own, so
that in the sandbox it sees its own files only (`evaluation.sandbox.namespaces.visible_paths`).

Why so strict about archives: an archive names its own paths. Members that are links, devices,
absolute, or reach outside with ``..`` are refused, and so are more than `UploadLimits.files`
members or more than `UploadLimits.bytes` unpacked (a compression bomb). A tar is read as a stream
(its compression from its name only: ``.tar`` none, ``.tar.gz``/``.tgz`` gzip), counting members
and decompressed bytes as it goes, so a bomb is refused after reading at most about the limit, not
after decompressing it all (a header's own data, such as a long name, counts too); the members are
written one by one (never ``extractall``). Anything unreadable is a refusal, never an error. The
folder is built beside its final place and renamed into it, so a crash leaves either the whole
version or a temporary folder (named per upload) that nothing reads.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import secrets
import shutil
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")
CHECKPOINTS = (".pt", ".pth", ".ckpt")


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may be (the operator's flags: --upload-mb, --upload-files, --uploads-per-hour)."""

    bytes: int = 50 * 2**20
    files: int = 1000
    per_hour: int = 10


@dataclass(frozen=True)
class Stored:
    """An upload on disk: its hash, kind (file, folder, checkpoint), size and the path its spec names."""

    sha256: str
    kind: str
    size: int
    path: Path

    def spec(self, class_name: str | None) -> str:
        """The policy spec a worker loads it by (absolute paths)."""
        return f"ckpt:{self.path}" if self.kind == "checkpoint" else f"{self.path}:{class_name}"


def arena_dir(db_path: str | Path) -> Path:
    """The arena's folder (uploads and replays) beside its database: ``arena.db`` -> ``arena.files``."""
    path = Path(db_path).resolve()
    return path.with_name(path.stem + ".files")


def kind_of(filename: str) -> str:
    """file, folder or checkpoint, from the upload's name (ValueError naming what is accepted)."""
    name = filename.lower()
    if name.endswith(".py"):
        return "file"
    if name.endswith(ARCHIVES):
        return "folder"
    if name.endswith(CHECKPOINTS):
        return "checkpoint"
    raise ValueError(f"upload {filename!r}: send a policy file (.py), a folder as {', '.join(ARCHIVES)} or a "
                     f"checkpoint ({', '.join(CHECKPOINTS)})")


def store(root: Path, data: bytes, filename: str, limits: UploadLimits) -> Stored:
    """Keep `data` under ``root/store`` (see the module docstring); ValueError says why it is refused."""
    if len(data) > limits.bytes:
        raise ValueError(f"upload of {len(data)} bytes is over the limit of {limits.bytes} bytes")
    kind = kind_of(filename)
    sha = hashlib.sha256(data).hexdigest()
    final = root / "store" / sha[:2] / sha
    if not final.exists():
        building = final.with_name(f".{sha}.{secrets.token_hex(8)}.tmp")  # one per upload, threads included
        building.mkdir(parents=True)
        try:
            _write(building, data, filename, kind, limits)
            try:
                os.rename(building, final)
            except OSError:
                if not final.is_dir():  # else the same bytes were stored meanwhile by another upload
                    raise
                shutil.rmtree(building, ignore_errors=True)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
    return Stored(sha, kind, len(data), _entry_point(final, filename, kind))


def store_folder(stored: Stored) -> Path:
    """The content-addressed folder that holds `stored` (``store/ab/<sha256>``)."""
    path = stored.path
    while path.name != stored.sha256:
        path = path.parent
    return path


def _write(folder: Path, data: bytes, filename: str, kind: str, limits: UploadLimits) -> None:
    if kind == "file":
        _write_file(folder / "agent.py", data)
    elif kind == "checkpoint":
        _write_file(folder / ("model" + Path(filename.lower()).suffix), data)
    elif filename.lower().endswith(".zip"):
        _unzip(folder, data, limits)
    else:
        _untar(folder, data, limits, compressed=not filename.lower().endswith(".tar"))


#: What reading a damaged archive can raise (each becomes a refusal naming it): for a compression
#: method it lacks, zipfile raises `NotImplementedError`; for an encrypted member, RuntimeError;
#: gzip OSError/EOFError for a truncated stream, tarfile UnicodeError for undecodable names.
UNREADABLE = (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
              RuntimeError, UnicodeError)


class _Capped(io.RawIOBase):
    """A stream that refuses to give more than `cap` bytes (a decompression bomb stops here)."""

    def __init__(self, source, cap: int) -> None:
        self.source, self.left = source, cap

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self.source.read(size if size is not None and size >= 0 else self.left + 1)
        self.left -= len(chunk)
        if self.left < 0:
            raise ValueError("the archive unpacks to more than the upload limit allows (a compression bomb?)")
        return chunk


def _entry_point(final: Path, filename: str, kind: str) -> Path:
    if kind == "file":
        return final / "agent.py"
    if kind == "checkpoint":
        return final / ("model" + Path(filename.lower()).suffix)
    if (final / "__init__.py").is_file():
        return final
    tops = [p for p in final.iterdir() if not p.name.startswith(".")]
    if len(tops) == 1 and (tops[0] / "__init__.py").is_file():
        return tops[0]
    raise ValueError("the archive has no __init__.py at its root or in its one top-level folder: a folder "
                     "submission is a package (its __init__.py defines or imports the class)")


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def safe_member(name: str) -> PurePosixPath:
    """An archive member's path, relative and inside the archive (ValueError for traversal)."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or ":" in name:
        raise ValueError(f"archive member {name!r}: its path leaves the folder (absolute, '..' or a drive)")
    return path


def _check_totals(count: int, total: int, limits: UploadLimits) -> None:
    if count > limits.files:
        raise ValueError(f"the archive holds {count} members, over the limit of {limits.files}")
    if total > limits.bytes:
        raise ValueError(f"the archive unpacks to {total} bytes, over the limit of {limits.bytes} bytes")


def _untar(folder: Path, data: bytes, limits: UploadLimits, compressed: bool) -> None:
    raw = io.BytesIO(data)
    headers = 3 * 512 * (limits.files + 2)  # a member's headers (long names count as data, below)
    stream = _Capped(gzip.GzipFile(fileobj=raw) if compressed else raw, limits.bytes + headers)
    try:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            count = total = 0
            for member in archive:
                count, total = count + 1, total + member.size
                _check_totals(count, total, limits)
                _untar_member(folder, archive, member)
    except UNREADABLE as err:
        raise ValueError(f"not a readable tar archive ({type(err).__name__}: {err})") from None


def _untar_member(folder: Path, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
    path = safe_member(member.name)
    if member.isdir() or not path.parts:
        (folder / path).mkdir(parents=True, exist_ok=True)
    elif member.isreg():
        source = archive.extractfile(member)
        _write_file(folder / path, source.read() if source else b"")
    else:
        raise ValueError(f"archive member {member.name!r} is a link or a device: only files and folders")


def _unzip(folder: Path, data: bytes, limits: UploadLimits) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            _check_totals(len(members), sum(m.file_size for m in members), limits)
            for member in members:
                _unzip_member(folder, archive, member)
    except UNREADABLE as err:
        raise ValueError(f"not a readable zip archive ({type(err).__name__}: {err})") from None


def _unzip_member(folder: Path, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> None:
    path = safe_member(member.filename)
    kind = stat.S_IFMT(member.external_attr >> 16)  # 0: no type recorded (e.g. ZipFile.writestr)
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        raise ValueError(f"archive member {member.filename!r} is a link or a device: only files and folders")
    if member.is_dir() or not path.parts:
        (folder / path).mkdir(parents=True, exist_ok=True)
    else:  # read at most its declared size (zipfile checks the length and the CRC)
        _write_file(folder / path, archive.read(member))


def pack_folder(folder: Path) -> bytes:
    """A folder as the tar.gz bytes `store` takes (what ``nmmo arena submit path/folder:Class`` sends);
    links are refused here already, with the path that is one."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            if path.is_symlink():
                raise ValueError(f"{path} is a link: a submission's folder holds files and folders only")
            archive.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buffer.getvalue()
