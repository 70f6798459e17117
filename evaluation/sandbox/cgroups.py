"""Limits per submission through cgroups: memory and processes of a worker and all it forks, together.

Resource limits (``setrlimit``) bind each process on its own: three forked children may each hold
what one may, and a fork storm is bounded by nothing a root-run tournament can set. A cgroup bounds
the whole group instead. `detect` finds the layout this machine has; its backend `create`s one group
per worker under a parent named ``flatmmo``, and the sandbox starts the worker with
``preexec_fn=group.join_self``, so the worker and everything it forks is inside before any
submission code runs.

- **cgroup v1** (a hierarchy per controller, e.g. ``/sys/fs/cgroup/memory``): ``memory`` (limit and,
  where the kernel accounts swap, ``memory.memsw`` at the same value: no swap), ``pids``, and, when
  mounted, ``cpu`` (``cpu.shares``) and ``freezer`` (used by `Cgroup.kill` to stop forks first).
- **cgroup v2** (one hierarchy): ``memory.max``, ``memory.swap.max = 0``, ``pids.max``,
  ``cpu.weight``; `Cgroup.kill` writes ``cgroup.kill``.

Groups go under the cgroup this process is in (v1), or under it or its parent, whichever may enable
controllers (v2: a cgroup holding processes cannot), so limits set above the tournament (a
container, a systemd slice) still hold its workers. A breach (an OOM kill, a refused fork) is read
with `Cgroup.breach`: the fault of the submission whose group it is, and of no other.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import signal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from nmmo.engines.process import process_exists

#: The directory every group goes under (created on demand, shared by tournaments on the machine).
PARENT = "flatmmo"
#: Controllers without which cgroups are not used at all.
REQUIRED = ("memory", "pids")
#: v1 controllers used where mounted and writable: CPU weights, and freezing a group to kill it.
OPTIONAL_V1 = ("cpu", "freezer")
#: A group's directory name: w<creator pid>-<counter>, then an optional label.
GROUP_NAME = re.compile(r"w(\d+)-(\d+)(?:-[A-Za-z0-9_.]*)?")
#: How long `Cgroup.kill` and `Cgroup.remove` keep at it before giving up, seconds.
KILL_TIMEOUT_S = 2.0
REMOVE_TIMEOUT_S = 1.0

_counter = itertools.count(1)


@dataclass(frozen=True)
class CgroupLimits:
    """Bounds on one submission's group: the worker and every process it forks, together."""

    memory_bytes: int | None
    """Memory of the whole group (memory.limit_in_bytes / memory.max), swap off where the kernel allows."""
    pids: int | None
    """Processes and threads of the whole group (pids.max)."""
    cpu_weight: int = 100
    """CPU weight, equal for every submission: cpu.shares = 1024 * weight / 100 (v1), cpu.weight (v2)."""

    def check(self) -> CgroupLimits:
        """ValueError naming a bound the kernel would refuse or that could not let Python start."""
        for name, low in (("memory_bytes", 1 << 20), ("pids", 1)):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < low):
                raise ValueError(f"{name} must be None or an int >= {low}, got {value!r}")
        if not isinstance(self.cpu_weight, int) or not 1 <= self.cpu_weight <= 10000:
            raise ValueError(f"cpu_weight must be an int in 1..10000, got {self.cpu_weight!r}")
        return self


# --- reading the machine's layout -------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of /proc/self/mountinfo that matters here."""

    point: str
    root: str
    fstype: str
    options: frozenset[str]


def _unescape(field: str) -> str:
    """Mountinfo writes a space as backslash-040 (tab, newline and backslash likewise, in octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def read_mounts(path: str = "/proc/self/mountinfo") -> list[Mount]:
    """The cgroup and cgroup2 mounts in `path` (the kernel's own account, not a guess at paths)."""
    mounts = []
    with open(path) as f:
        for line in f:
            left, sep, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if sep and len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                mounts.append(Mount(_unescape(fields[4]), _unescape(fields[3]), tail[0],
                                    frozenset(tail[2].split(","))))
    return mounts


def read_own_cgroups(path: str = "/proc/self/cgroup") -> dict[str, str]:
    """Our own cgroup in each hierarchy: {controller: path}, "" for the v2 hierarchy."""
    own = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    own[controller] = parts[2]
    return own


def _locate(mount: Mount, cgroup_path: str) -> str:
    """The directory of `cgroup_path` in `mount` (the mount point when it is not visible there)."""
    relative = cgroup_path
    if mount.root != "/" and (relative == mount.root or relative.startswith(mount.root + "/")):
        relative = relative[len(mount.root):]
    directory = os.path.normpath(os.path.join(mount.point, relative.lstrip("/")))
    inside = directory == mount.point or directory.startswith(mount.point.rstrip("/") + "/")
    return directory if inside and os.path.isdir(directory) else mount.point


def _under(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return os.path.normpath(path) == root or os.path.normpath(path).startswith(root.rstrip("/") + "/")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, value: str) -> None:
    """Write one value to a cgroup file (never creating it: the kernel makes them all)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _writable(directory: str) -> bool:
    """Whether we may make groups in `directory`: ours, and its ``flatmmo`` if it already exists."""
    parent = os.path.join(directory, PARENT)
    return os.access(directory, os.W_OK) and (not os.path.isdir(parent) or os.access(parent, os.W_OK))


def detect(root: str = "/sys/fs/cgroup", mountinfo: str = "/proc/self/mountinfo",
           own_cgroup: str = "/proc/self/cgroup") -> CgroupBackend | None:
    """The cgroup layout of this machine under `root`, if we may write to it: v2 with the memory
    and pids controllers (enabled for the parent, or enableable), else v1 with writable memory and
    pids hierarchies; None where neither (not root, no controllers, not Linux)."""
    try:
        mounts = [mount for mount in read_mounts(mountinfo) if _under(mount.point, root)]
        own = read_own_cgroups(own_cgroup)
        return _detect_v2(mounts, own) or _detect_v1(mounts, own)
    except (OSError, ValueError):
        return None


def _detect_v1(mounts: list[Mount], own: dict[str, str]) -> CgroupBackend | None:
    bases = {}
    for controller in REQUIRED + OPTIONAL_V1:
        mount = next((m for m in mounts if m.fstype == "cgroup" and controller in m.options), None)
        if mount is not None:
            base = _locate(mount, own.get(controller, "/"))
            if _writable(base):
                bases[controller] = base
    return CgroupBackend(1, bases) if all(c in bases for c in REQUIRED) else None


def _detect_v2(mounts: list[Mount], own: dict[str, str]) -> CgroupBackend | None:
    mount = next((m for m in mounts if m.fstype == "cgroup2"), None)
    if mount is None:
        return None
    mine = _locate(mount, own.get("", "/"))
    for base in [mine] if mine == mount.point else [mine, os.path.dirname(mine)]:
        try:
            controllers = _v2_controllers(base)
        except OSError:
            continue
        if controllers is not None:
            return CgroupBackend(2, dict.fromkeys(controllers, base))
    return None


def _v2_controllers(base: str) -> list[str] | None:
    """The controllers groups under `base` can have (v2), or None where memory and pids cannot be
    had: not offered, or not enableable because `base` holds processes and is not the root (the
    kernel keeps processes out of inner cgroups that distribute memory)."""
    if not _writable(base):
        return None
    offered = _read(os.path.join(base, "cgroup.controllers")).split()
    enabled = _read(os.path.join(base, "cgroup.subtree_control")).split()
    if not all(c in offered for c in REQUIRED):
        return None
    if not all(c in enabled for c in REQUIRED):
        is_root = not os.path.exists(os.path.join(base, "cgroup.type"))
        holds_processes = bool(_read(os.path.join(base, "cgroup.procs")).strip())
        if not os.access(os.path.join(base, "cgroup.subtree_control"), os.W_OK) or (holds_processes and not is_root):
            return None
    return [c for c in (*REQUIRED, "cpu") if c in offered]


# --- groups -----------------------------------------------------------------------------------


def _label(name: str) -> str:
    """The part of a caller's name that may go in a directory name."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:40]


def remove_stale(parents: Iterable[str]) -> list[str]:
    """Remove the empty groups in `parents` whose creating process is gone (a tournament killed
    with kill -9 cannot remove its own). A group still holding processes refuses rmdir and stays.
    Returns the directories removed."""
    removed = []
    for parent in parents:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            match = GROUP_NAME.fullmatch(name)
            if match and int(match[1]) != os.getpid() and not process_exists(int(match[1])):
                path = os.path.join(parent, name)
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                    removed.append(path)
    return removed


class CgroupBackend:
    """The cgroup layout `detect` found: where groups go and how their limits are written."""

    def __init__(self, version: int, bases: dict[str, str]) -> None:
        self.version = version
        """1 or 2."""
        self.bases = dict(bases)
        """{controller: the directory ``flatmmo`` goes in} (v2: one directory for all)."""

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(self.bases)

    def parents(self) -> list[str]:
        """The ``flatmmo`` directories, one per hierarchy."""
        return list(dict.fromkeys(os.path.join(base, PARENT) for base in self.bases.values()))

    def __repr__(self) -> str:
        return f"CgroupBackend(v{self.version}, {', '.join(self.controllers)})"

    def create(self, name: str, limits: CgroupLimits) -> Cgroup:
        """A fresh group with `limits` written, named ``w<our pid>-<counter>-<name>`` (`name` is a
        label for people reading the tree). Removes stale groups first. OSError where the kernel
        refuses (the group is removed again)."""
        limits.check()
        remove_stale(self.parents())
        dirs = self._make_group(_label(name))
        group = Cgroup(self.version, dirs, limits)
        try:
            if self.version == 1:
                _write_limits_v1(dirs, limits)
            else:
                _write_limits_v2(next(iter(dirs.values())), limits)
        except BaseException:
            group.remove()
            raise
        return group

    def cleanup(self) -> list[str]:
        """Remove stale groups and the ``flatmmo`` parents when empty (at the end of a tournament;
        another one's groups keep them). Never raises. Returns the directories removed."""
        removed = remove_stale(self.parents())
        for parent in self.parents():
            with contextlib.suppress(OSError):
                os.rmdir(parent)
                removed.append(parent)
        return removed

    def _make_group(self, label: str) -> dict[str, str]:
        """Make the group's directory in every hierarchy (a fresh counter where the name is taken)."""
        for _ in range(1000):
            name = f"w{os.getpid()}-{next(_counter)}" + (f"-{label}" if label else "")
            made: dict[str, str] = {}
            try:
                for parent in self.parents():
                    self._ensure_parent(parent)
                    os.mkdir(os.path.join(parent, name))
                    made[parent] = os.path.join(parent, name)
            except (FileExistsError, FileNotFoundError):  # taken, or a parent removed meanwhile by cleanup
                _rmdir_all(made.values())
                continue
            except BaseException:
                _rmdir_all(made.values())
                raise
            return {c: os.path.join(base, PARENT, name) for c, base in self.bases.items()}
        raise OSError(errno.EEXIST, "cannot make a group (names taken or parents vanishing)", self.parents()[0])

    def _ensure_parent(self, parent: str) -> None:
        """Make ``flatmmo`` (another tournament may remove it when it ends) and, on v2, enable the
        controllers for it and for its groups."""
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent)
        if self.version == 2:
            _enable_v2(os.path.dirname(parent), self.controllers)
            _enable_v2(parent, self.controllers)


def _enable_v2(directory: str, controllers: Iterable[str]) -> None:
    """Enable `controllers` for the children of `directory` (memory and pids must take; cpu may not,
    where real-time processes sit outside the root)."""
    control = os.path.join(directory, "cgroup.subtree_control")
    enabled = _read(control).split()
    missing = [c for c in controllers if c not in enabled]
    if missing:
        try:
            _write(control, " ".join(f"+{c}" for c in missing))  # one write: the kernel takes all or none
        except OSError:
            _write(control, " ".join(f"+{c}" for c in missing if c in REQUIRED))


def _write_limits_v1(dirs: dict[str, str], limits: CgroupLimits) -> None:
    memory = dirs["memory"]
    if limits.memory_bytes is not None:
        _write(os.path.join(memory, "memory.limit_in_bytes"), str(limits.memory_bytes))
        memsw = os.path.join(memory, "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):  # memory + swap = memory: no swap
            _write(memsw, str(limits.memory_bytes))
        else:  # the kernel does not account swap (swapaccount=0): keep the group from swapping
            _write(os.path.join(memory, "memory.swappiness"), "0")
    if limits.pids is not None:
        _write(os.path.join(dirs["pids"], "pids.max"), str(limits.pids))
    if "cpu" in dirs:
        _write(os.path.join(dirs["cpu"], "cpu.shares"), str(max(2, 1024 * limits.cpu_weight // 100)))


def _write_limits_v2(directory: str, limits: CgroupLimits) -> None:
    if limits.memory_bytes is not None:
        _write(os.path.join(directory, "memory.max"), str(limits.memory_bytes))
        swap = os.path.join(directory, "memory.swap.max")
        if os.path.exists(swap):  # absent where the kernel does not account swap
            _write(swap, "0")
    if limits.pids is not None:
        _write(os.path.join(directory, "pids.max"), str(limits.pids))
    weight = os.path.join(directory, "cpu.weight")
    if os.path.exists(weight):
        _write(weight, str(limits.cpu_weight))


def _rmdir_all(directories: Iterable[str]) -> None:
    for directory in directories:
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _fields(text: str) -> dict[str, int]:
    """A flat keyed file ("oom_kill 2" lines: memory.events, pids.events, memory.oom_control)."""
    pairs = (line.split() for line in text.splitlines())
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


class Cgroup:
    """One submission's group, in every hierarchy that holds a controller of it."""

    def __init__(self, version: int, dirs: dict[str, str], limits: CgroupLimits) -> None:
        self.version = version
        self.dirs = dict(dirs)
        """{controller: directory} (v2: one directory for all)."""
        self.limits = limits
        self.name = os.path.basename(next(iter(dirs.values())))
        self._procs = tuple(os.fsencode(os.path.join(d, "cgroup.procs")) for d in self.directories())
        self._final: dict[str, int] | None = None  # the counters when removed

    def __repr__(self) -> str:
        return f"Cgroup(v{self.version}, {self.name})"

    def directories(self) -> list[str]:
        return list(dict.fromkeys(self.dirs.values()))

    def join_self(self) -> None:
        """Move the calling process into the group. For ``preexec_fn``: it runs in the child
        between fork and exec, where only system calls are safe, so it writes the precomputed
        paths and "0" (the kernel reads it as the writing process). Raises OSError where the
        kernel refuses, so the worker never starts outside its group."""
        for path in self._procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def counters(self) -> dict[str, int]:
        """What the kernel counted for the group, where it counts it: memory_peak (bytes),
        oom_kills, forks_refused, processes_peak. After `remove`, those it read just before."""
        if self._final is not None:
            return dict(self._final)
        found: dict[str, int] = {}
        memory, pids = self.dirs.get("memory"), self.dirs.get("pids")
        if memory is not None:
            if self.version == 1:
                self._count(found, "memory_peak", memory, "memory.max_usage_in_bytes", None)
                self._count(found, "oom_kills", memory, "memory.oom_control", "oom_kill")
            else:
                self._count(found, "memory_peak", memory, "memory.peak", None)
                self._count(found, "oom_kills", memory, "memory.events", "oom_kill")
                self._count(found, "ooms", memory, "memory.events", "oom")
        if pids is not None:
            self._count(found, "forks_refused", pids, "pids.events", "max")
            self._count(found, "processes_peak", pids, "pids.peak", None)
        return found

    @staticmethod
    def _count(found: dict[str, int], key: str, directory: str, file: str, field: str | None) -> None:
        try:
            text = _read(os.path.join(directory, file))
            value = _fields(text).get(field) if field else int(text.split()[0])
        except (OSError, ValueError, IndexError):
            return
        if value is not None:
            found[key] = value

    def breach(self) -> str | None:
        """Which limit the group hit, if any, e.g. "memory limit of 256 MiB reached (2 OOM kills)".
        Memory counts as hit when the kernel had to OOM-kill (reclaiming cache at the limit is
        normal); processes when a fork was refused."""
        counts = self.counters()
        found = []
        kills = counts.get("oom_kills", 0)
        if kills or counts.get("ooms", 0):
            bound = "its" if self.limits.memory_bytes is None else f"of {_size(self.limits.memory_bytes)}"
            found.append(f"memory limit {bound} reached ({kills} OOM kill{'s' * (kills != 1)})")
        refused = counts.get("forks_refused", 0)
        if refused:
            bound = "its" if self.limits.pids is None else f"of {self.limits.pids}"
            found.append(f"process limit {bound} reached "
                         f"({refused} fork{'s' * (refused != 1)} refused)")
        return "; ".join(found) or None

    def pids(self) -> set[int]:
        """The processes in the group and in any group under it (a root-run submission can make some)."""
        found = set()
        for top in self.directories():
            for directory, _, _ in os.walk(top):
                with contextlib.suppress(OSError, ValueError):
                    found.update(int(pid) for pid in _read(os.path.join(directory, "cgroup.procs")).split())
        found.discard(os.getpid())
        return {pid for pid in found if pid > 0}

    def kill(self, timeout: float = KILL_TIMEOUT_S) -> None:
        """SIGKILL every process in the group: v2's ``cgroup.kill`` where the kernel has it (5.14),
        else freeze the group (v1 freezer) so nothing forks while each process is killed; then
        kill stragglers until the group is empty or `timeout` passes."""
        directory = next(iter(self.dirs.values()))
        deadline = time.monotonic() + timeout
        if self.version == 2 and os.path.exists(os.path.join(directory, "cgroup.kill")):
            with contextlib.suppress(OSError):
                _write(os.path.join(directory, "cgroup.kill"), "1")
        frozen = self._freeze(deadline)
        try:
            for pid in self.pids():
                self._kill_pid(pid)
        finally:
            if frozen:
                self._set_freezer("THAWED")
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                return
            for pid in left:
                self._kill_pid(pid)
            time.sleep(0.01)

    def _set_freezer(self, state: str) -> bool:
        try:
            _write(os.path.join(self.dirs["freezer"], "freezer.state"), state)
        except (KeyError, OSError):
            return False
        return True

    def _freeze(self, deadline: float) -> bool:
        """Freeze the group (v1 with a freezer): frozen processes cannot fork or exit, and die of
        the SIGKILL they got when thawed. Waits for FROZEN at most half a second."""
        if not self._set_freezer("FROZEN"):
            return False
        until = min(deadline, time.monotonic() + 0.5)
        with contextlib.suppress(OSError):
            while _read(os.path.join(self.dirs["freezer"], "freezer.state")).strip() != "FROZEN":
                if time.monotonic() > until:
                    break
                time.sleep(0.005)
        return True

    def _kill_pid(self, pid: int) -> None:
        """SIGKILL `pid` if it is still in this group: through a pidfd, so a pid reused by another
        process after it was read is never signalled."""
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return
        except (AttributeError, OSError):  # no pidfds (before Linux 5.3): the plain signal
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            return
        try:
            if self._holds(pid):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _holds(self, pid: int) -> bool:
        """Whether `pid` is in this group or one under it (paths read in our own cgroup namespace)."""
        try:
            lines = _read(f"/proc/{pid}/cgroup").splitlines()
        except OSError:
            return False
        marker = f"/{PARENT}/{self.name}/"
        return any(marker in line.split(":", 2)[-1] + "/" for line in lines)

    def remove(self, timeout: float = REMOVE_TIMEOUT_S) -> None:
        """Kill what is left, keep the counters (`breach` still answers), then rmdir the group in
        every hierarchy, groups made under it first (retrying while exiting processes still hold
        it). Never raises: a group that stays is removed as stale once this process is gone."""
        with contextlib.suppress(Exception):  # cleanup goes on whatever killing met
            self.kill()
        if self._final is None:
            self._final = self.counters()  # so `breach` still answers once the files are gone
        deadline = time.monotonic() + timeout
        for top in self.directories():
            for directory in _bottom_up(top):
                while True:
                    try:
                        os.rmdir(directory)
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.01)


def _bottom_up(top: str) -> Iterator[str]:
    """`top` and every directory under it, deepest first."""
    try:
        walked = list(os.walk(top, topdown=False))
    except OSError:
        return iter(())
    return (directory for directory, _, _ in walked)
