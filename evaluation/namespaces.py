"""The namespace sandbox a submission's worker starts in: bubblewrap (``bwrap``), as Flatpak uses it.

`wrap(command, spec)` returns the command that runs `command` inside:

- **a user namespace** as uid and gid 65534 (nobody) with no capabilities (``--cap-drop ALL``)
  and no further user namespaces (``--disable-userns``): it cannot mount, raise a hard rlimit,
  trace or signal anything outside;
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
starts it as uid 65534 (`Unprivileged`): no process of a submission is root on the host, where some
kernel checks (writing /proc/sys, root's keyrings) go by uid rather than capability.

Where bubblewrap is missing or cannot make a user namespace (macOS, an unprivileged container), the
tournament falls back to the process sandbox alone and says so once (`fallback_warning`);
``NMMO_REQUIRE_SANDBOX=1`` makes that an error instead (CI sets it).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from nmmo.policy import PATH_SCHEMES

#: The uid and gid a submission runs as inside its user namespace.
NOBODY = 65534
#: This project's packages a worker may import (each bound on its own, never the whole checkout).
PACKAGES = ("nmmo", "evaluation", "scripted", "baselines")
#: Top-level system directories bound (or linked, where they are links, as on merged-/usr systems).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
REQUIRE_ENV = "NMMO_REQUIRE_SANDBOX"


class SandboxUnavailable(RuntimeError):
    """No namespace sandbox on this machine while NMMO_REQUIRE_SANDBOX=1 asks for one."""


@functools.cache
def unavailable_reason() -> str | None:
    """Why the namespace sandbox cannot run here (None: it can). Checked once per process by
    starting ``true`` in the same sandbox a worker gets, started the same way (as nobody, when
    this process is root)."""
    tool = shutil.which("bwrap")
    if tool is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        unprivileged = Unprivileged(readable_paths(None)) if os.geteuid() == 0 else None
        try:
            done = subprocess.run(wrap(["/usr/bin/true"], None, tool, sources=unprivileged and unprivileged.sources),
                                  capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                                  preexec_fn=unprivileged and unprivileged.enter)
        finally:
            if unprivileged is not None:
                unprivileged.remove()
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


def wrap(command: list[str], spec_path: str | None, tool: str | None = None, tmp_bytes: int | None = None,
         sources: dict[str, str] | None = None) -> list[str]:
    """`command` run inside the sandbox (see the module notes); `spec_path` is the submission's file
    or checkpoint, bound read-only at the same path; `tmp_bytes` caps its private /tmp. `sources`
    says where bubblewrap finds a path it binds, when not at the path itself (`Unprivileged`)."""
    args = [tool or shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
            "--gid", str(NOBODY), "--disable-userns", "--die-with-parent", "--new-session",
            "--hostname", "submission", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    if tmp_bytes:
        args += ["--size", str(tmp_bytes)]
    args += ["--tmpfs", "/tmp", "--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in readable_paths(spec_path):
        args += ["--ro-bind", (sources or {}).get(path, path), path]
    return [*args, "--remount-ro", "/", "--", *command]


class Unprivileged:
    """Start bubblewrap as uid 65534 on the host when the tournament runs as root, so that the
    submission's uid maps to nobody outside, never to root (bubblewrap maps the uid it is started
    with: as root, kernel checks made by uid rather than capability, such as writing /proc/sys
    or root's keyrings, would pass).

    The paths a worker reads (the interpreter, the packages) may lie under a directory nobody
    cannot enter (/root is 0700). So the child, between fork and exec, makes a mount namespace of
    its own (private: nothing propagates to the host), binds each such path onto an empty
    placeholder in a directory nobody can enter, `stage`, then drops to nobody; bubblewrap binds
    the placeholders. The host's placeholders stay empty."""

    def __init__(self, paths: list[str], prefix: str = "nmmo-stage-") -> None:
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
        the binds, then uid and gid 65534 with no supplementary groups. Raises on any failure, so
        the worker never starts as root."""
        libc = self._libc
        if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "cannot make a private mount namespace")
        for path, placeholder in self.sources.items():
            if libc.mount(path.encode(), placeholder.encode(), None, MS_BIND | MS_REC, None) != 0:
                raise OSError(ctypes.get_errno(), f"cannot bind {path}")
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


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


def readable_paths(spec_path: str | None) -> list[str]:
    """What a worker must read besides the system: the interpreter's prefixes, this project's
    packages and the submission's file, checkpoint or package (never a whole PYTHONPATH entry:
    a checkout on it holds the output directories)."""
    paths = [sys.base_prefix, sys.prefix, *package_dirs()]
    if spec_path is not None:
        paths.append(spec_path)
    out: list[str] = []
    for path in paths:
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


def spec_path(spec: str) -> str | None:
    """The file or package a worker spec names (``/abs/file.py:Class``, ``ckpt:/abs/path`` (or another
    of `PATH_SCHEMES`) or
    ``pkg.module:Class``, whose top-level package is bound), if any."""
    scheme, sep, argument = spec.partition(":")
    if sep and scheme in PATH_SCHEMES:
        return argument
    where, sep, _ = spec.rpartition(":")
    if sep and where.endswith(".py"):
        return where
    if sep and where.replace(".", "").replace("_", "").isalnum():
        return module_path(where.split(".")[0])
    return None


def module_path(name: str) -> str | None:
    """Where a top-level module or package lives (its directory, or its file), if importable."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if found.submodule_search_locations:
        return next(iter(found.submodule_search_locations), None)
    return found.origin if found.origin and os.path.isabs(found.origin) else None


def exit_signal(code: int) -> int | None:
    """The signal that killed a sandboxed worker: bubblewrap exits with 128 + its number."""
    return code - 128 if 128 < code < 128 + 65 else None
