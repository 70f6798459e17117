"""The namespace sandbox a submission's worker starts in: bubblewrap (``bwrap``), as Flatpak uses it.

`wrap(command, spec)` returns the command that runs `command` inside:

- **a user namespace** as uid and gid 65534 (nobody) with no capabilities (``--cap-drop ALL``)
  and no further user namespaces (``--disable-userns``): it cannot mount, raise a hard rlimit,
  trace or signal anything outside; on the host it is a uid of its own (`HostUid`, when the
  tournament runs as root), so no per-user kernel count is shared with a rival;
- **its own PID namespace**, whose init is bubblewrap's reaper: it sees only its own processes in
  ``/proc``, and when the worker is stopped (its bubblewrap killed, ``--die-with-parent``) the
  kernel kills every process left in the namespace, however it forked or detached;
- **its own network, IPC, UTS and cgroup namespaces**: no network but its own loopback, no
  shared memory with anyone;
- **its own mount namespace** holding only what the submission needs, read-only: the system's
  libraries (``/usr``), the interpreter, the installed packages, this project's packages (one
  directory each, not the checkout: the output directories stay out) and its own spec file or
  checkpoint; a private ``/tmp`` (tmpfs, its HOME and working directory) is the only writable
  place.

Bubblewrap maps the sandbox's uid to the uid that started it, so a tournament running as root
starts each worker's bubblewrap as a uid of its own from `UID_RANGE` (`Unprivileged`, `HostUid`): no
process of a submission is root on the host, where some kernel checks (writing /proc/sys, root's
keyrings) go by uid rather than capability, and no two running submissions share a uid, so per-user
kernel limits (inotify instances and watches, keys, user namespaces) are each one's own. A
tournament run as a normal user starts every worker as that user (bubblewrap cannot map another
uid without privileges): its submissions then share that user's per-user counts.

Where bubblewrap is missing or cannot make a user namespace (macOS, an unprivileged container), the
tournament falls back to the process sandbox alone and says so once (`fallback_warning`);
``NMMO_REQUIRE_SANDBOX=1`` makes that an error instead (CI sets it).
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from nmmo.policy import PATH_SCHEMES, names_a_path

#: The uid and gid a submission runs as inside its user namespace.
NOBODY = 65534
#: This project's packages a worker may import (each bound on its own, never the whole checkout).
PACKAGES = ("nmmo", "evaluation", "scripted", "baselines")
#: Top-level system directories bound (or linked, where they are links, as on merged-/usr systems).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
REQUIRE_ENV = "NMMO_REQUIRE_SANDBOX"
#: Host uids of running submissions, one each, when the tournament runs as root: far above any
#: login (1000+), system (<1000) or /etc/subuid range (100000 + 65536 per user) a distribution hands
#: out. NMMO_SANDBOX_UIDS=FIRST-LAST picks another range.
UID_RANGE = range(1_879_048_192, 1_879_048_192 + 65536)
UIDS_ENV = "NMMO_SANDBOX_UIDS"


class SandboxUnavailable(OSError):
    """No namespace sandbox on this machine while NMMO_REQUIRE_SANDBOX=1 asks for one (an OSError:
    the command line reports it as one line, as it does a missing file)."""


@functools.cache
def unavailable_reason() -> str | None:
    """Why the namespace sandbox cannot run here (None: it can). Checked once per process by
    starting ``true`` in the same sandbox a worker gets, started the same way (as nobody, when
    this process is root)."""
    tool = shutil.which("bwrap")
    if tool is None:
        return "bubblewrap (bwrap) is not installed"
    uid = HostUid() if os.geteuid() == 0 else None  # its errors are the operator's to fix, not a fallback
    try:
        unprivileged = Unprivileged(readable_paths([]), uid=uid.uid) if uid is not None else None
        try:
            command, fd = launch(wrap(["/usr/bin/true"], [], tool, sources=unprivileged and unprivileged.sources))
            try:
                done = subprocess.run(command, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, env={},
                                      pass_fds=(fd,), preexec_fn=unprivileged and unprivileged.enter)
            finally:
                os.close(fd)
        finally:
            if unprivileged is not None:
                unprivileged.remove()
            if uid is not None:
                uid.release()
    except (OSError, subprocess.SubprocessError) as err:
        return f"bwrap does not start ({err})"
    if done.returncode != 0:
        return f"bwrap cannot make its namespaces here ({done.stderr.decode(errors='replace').strip()[:200]})"
    return None


def available() -> bool:
    """Whether workers start in the namespace sandbox; warns once when they fall back (or raises
    `SandboxUnavailable` when NMMO_REQUIRE_SANDBOX=1)."""
    reason = unavailable_reason()
    if reason is None:
        return True
    if os.environ.get(REQUIRE_ENV) == "1":
        raise SandboxUnavailable(f"{REQUIRE_ENV}=1 but {reason}; install bubblewrap (Debian: apt-get install "
                                 "bubblewrap) or run where user namespaces are allowed")
    fallback_warning(reason)
    return False


@functools.cache
def fallback_warning(reason: str) -> None:
    """Say once per process that submissions run in the process sandbox alone, and what that loses."""
    warnings.warn(f"submissions run without the namespace sandbox: {reason}. They keep their time, memory and "
                  "file limits but can read what you can read, use the network and signal your processes "
                  "(docs/evaluation.md, 'The trust model')", RuntimeWarning, stacklevel=3)


def wrap(command: list[str], spec_paths: list[str], tool: str | None = None, tmp_bytes: int | None = None,
         sources: dict[str, str] | None = None, env: dict[str, str] | None = None) -> list[str]:
    """Bubblewrap's arguments for `command` run inside the sandbox (see the module notes):
    `spec_paths` are the submission's own files (`visible_paths`), bound read-only at the same
    paths; `tmp_bytes` caps its private /tmp; `env` is its whole environment (HOME and TMPDIR
    become /tmp). `sources` says where bubblewrap finds a path it binds, when not at the path
    itself (`Unprivileged`). Start it with `launch`."""
    args = [tool or shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
            "--gid", str(NOBODY), "--disable-userns", "--die-with-parent", "--new-session",
            "--hostname", "submission", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    if tmp_bytes:
        args += ["--size", str(tmp_bytes)]
    args += ["--tmpfs", "/tmp", "--chdir", "/tmp", "--clearenv"]
    for key, value in {**(env or {}), "HOME": "/tmp", "TMPDIR": "/tmp"}.items():
        args += ["--setenv", key, value]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in readable_paths(spec_paths):
        args += ["--ro-bind", (sources or {}).get(path, path), path]
    return [*args, "--remount-ro", "/", "--", *command]


def launch(args: list[str]) -> tuple[list[str], int]:
    """The command that starts bubblewrap with `args` (from `wrap`), and the file descriptor it
    reads its options from: ``bwrap --args FD -- COMMAND``. Its own command line, which every
    process inside reads as /proc/1/cmdline, then holds only the worker's command (the
    interpreter, bound at the same path inside): no placeholder, bind or environment of the host.
    Start it with ``env={}`` for the same reason, passing the FD (``pass_fds``), then close the FD."""
    split = args.index("--")
    fd = os.memfd_create("nmmo-bwrap-args")
    try:
        os.write(fd, b"".join(arg.encode() + b"\0" for arg in args[1:split]))
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return [args[0], "--args", str(fd), *args[split:]], fd


class Unprivileged:
    """Start bubblewrap as `uid` (one of `UID_RANGE`, from `HostUid`) on the host when the
    tournament runs as root, so that the submission's uid maps to that uid outside, never to root
    (bubblewrap maps the uid it is started with: as root, kernel checks made by uid rather than
    capability, such as writing /proc/sys or root's keyrings, would pass).

    The paths a worker reads (the interpreter, the packages) may lie under a directory nobody
    cannot enter (/root is 0700). So the child, between fork and exec, makes a mount namespace of
    its own (private: nothing propagates to the host), binds each such path onto an empty
    placeholder in a directory nobody can enter, `stage`, then drops to nobody; bubblewrap binds
    the placeholders. The host's placeholders stay empty."""

    def __init__(self, paths: list[str], prefix: str = "nmmo-stage-", uid: int = NOBODY) -> None:
        self.uid = uid
        self.stage = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=stage_base())
        os.chmod(self.stage, 0o755)
        self.sources: dict[str, str] = {}
        for i, path in enumerate(paths):
            placeholder = os.path.join(self.stage, str(i))
            if os.path.isdir(path):
                os.mkdir(placeholder)
            else:
                open(placeholder, "wb").close()
            os.chmod(placeholder, 0o755)
            self.sources[path] = placeholder
        self._libc = ctypes.CDLL(None, use_errno=True)  # loaded now: the child must not import

    def remove(self) -> None:
        """Remove the placeholders (empty on the host: the binds lived in the child's namespace)."""
        shutil.rmtree(self.stage, ignore_errors=True)

    def enter(self) -> None:
        """In the child (a `preexec_fn`, after it joined its cgroup): the private mount namespace,
        the binds, then its uid (and the same gid) with no supplementary groups. Raises on any
        failure, so the worker never starts as root."""
        libc = self._libc
        if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "cannot make a private mount namespace")
        for path, placeholder in self.sources.items():
            if libc.mount(path.encode(), placeholder.encode(), None, MS_BIND | MS_REC, None) != 0:
                raise OSError(ctypes.get_errno(), f"cannot bind {path}")
        os.setgroups([])
        os.setgid(self.uid)
        os.setuid(self.uid)


CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x20000, 0x1000, 0x4000, 1 << 18


def stage_base() -> str:
    """A directory whose every ancestor anyone may enter (nobody must reach the placeholders):
    the temporary directory when it is one (a TMPDIR under a 0700 directory is not), else /tmp."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(candidate) and _anyone_can_enter(candidate):
            return candidate
    raise OSError("no temporary directory that uid 65534 can enter")


def _anyone_can_enter(path: str) -> bool:
    """Every directory from / down to `path` lets others through (their execute bit)."""
    real = Path(os.path.realpath(path))
    return all(directory.stat().st_mode & 0o001 for directory in (real, *real.parents))


def readable_paths(spec_paths: list[str]) -> list[str]:
    """What a worker must read besides the system: the interpreter's prefixes, this project's
    packages and the submission's own files (never a whole PYTHONPATH entry: a checkout on it
    holds the output directories)."""
    out: list[str] = []
    for path in [sys.base_prefix, sys.prefix, *package_dirs(), *spec_paths]:
        real = os.path.realpath(path)
        if os.path.exists(real) and not real.startswith(tuple(s + "/" for s in SYSTEM_DIRS)) and real not in out:
            out.append(real)
    return out


@functools.cache
def package_dirs() -> tuple[str, ...]:
    """The directory of each of this project's packages, wherever it is installed."""
    dirs = []
    for name in PACKAGES:
        found = importlib.util.find_spec(name)
        if found is not None and found.submodule_search_locations:
            dirs.extend(found.submodule_search_locations)
    return tuple(dirs)


def visible_paths(spec: str) -> list[str]:
    """The files a submission sees besides the system and the packages, as its worker spec names
    them (absolute paths, `evaluation.submission.worker_spec`): the file of ``/abs/file.py:Class``,
    the folder of ``/abs/folder:Class`` (code beside its data), the file of ``ckpt:/abs/path`` (or
    another of `PATH_SCHEMES`), or, for ``pkg.module:Class``, that module's own file (its folder
    when it is a package), never the rest of its top-level package. Empty for a built-in."""
    scheme, sep, argument = spec.partition(":")
    if sep and scheme in PATH_SCHEMES:
        return [argument]
    where, sep, _ = spec.rpartition(":")
    if not sep:
        return []
    if names_a_path(where):
        return [where]
    if all(part.isidentifier() for part in where.split(".")):
        found = module_location(where)
        return [found] if found else []
    return []


def module_location(name: str) -> str | None:
    """Where the module `name` (dotted) lives, its directory when it is a package, found without
    running any of its code (only the top-level name goes through the import system, which runs
    nothing to find it; the rest is looked up on disk as the import system would)."""
    top, *rest = name.split(".")
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if not rest:
        if found.submodule_search_locations:
            return next(iter(found.submodule_search_locations), None)
        return found.origin if found.origin and os.path.isabs(found.origin) else None
    directories = list(found.submodule_search_locations or [])
    for i, part in enumerate(rest):
        last = i == len(rest) - 1
        for directory in directories:
            package = os.path.join(directory, part)
            if os.path.isdir(package):
                if last:
                    return package
                directories = [package]
                break
            if last and os.path.isfile(package + ".py"):
                return package + ".py"
        else:
            return None
    return None


class HostUid:
    """A host uid from `UID_RANGE` that no other running worker on this machine holds: an exclusive
    ``flock`` on a file named after it, in a directory only root may write, held until `release`.
    The kernel drops the lock when its holder dies (kill -9 included), so a uid is never lost."""

    def __init__(self) -> None:
        directory = uid_lock_dir()
        for uid in uid_range():
            fd = os.open(os.path.join(directory, str(uid)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise OSError(f"every sandbox uid in {uid_range()} is in use ({UIDS_ENV} sets a larger range)")

    def release(self) -> None:
        """Give the uid back (the worker started with it has stopped)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def uid_range() -> range:
    """`UID_RANGE`, or the range NMMO_SANDBOX_UIDS=FIRST-LAST names (checked: positive, below 2**32 - 1)."""
    text = os.environ.get(UIDS_ENV)
    if not text:
        return UID_RANGE
    first, sep, last = text.partition("-")
    if not (sep and first.strip().isdigit() and last.strip().isdigit()) or not (
            1000 <= int(first) <= int(last) < 2**32 - 1):
        raise ValueError(f"{UIDS_ENV}={text!r}: give FIRST-LAST, two uids from 1000 to 4294967294, FIRST <= LAST")
    return range(int(first), int(last) + 1)


#: Where the uid locks live: one place for every tournament on the machine, whatever its TMPDIR; under
#: /run (root's alone) where the machine has it, since anyone may make a name in /tmp first.
UID_LOCK_DIRS = ("/run/nmmo-sandbox-uids", "/tmp/nmmo-sandbox-uids")


def uid_lock_dir() -> str:
    """The directory of the uid locks: made by root, mode 0700. One that someone else made is an
    error (`SandboxUnavailable`, never a quiet fall back to the process sandbox)."""
    path = next((p for p in UID_LOCK_DIRS if os.access(os.path.dirname(p), os.W_OK)), UID_LOCK_DIRS[-1])
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise SandboxUnavailable(f"{path} (the sandbox's uid locks) is not a directory of this user's with mode "
                                 "0700: someone else made it; remove it")
    return path


def exit_signal(code: int) -> int | None:
    """The signal that killed a sandboxed worker: bubblewrap exits with 128 + its number."""
    return code - 128 if 128 < code < 128 + 65 else None
