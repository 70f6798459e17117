"""evaluation.sandbox.cgroups: limits on a submission's whole group of processes.

v2 and v1 are checked against fake cgroup file systems in tmp_path (a fake mountinfo and
/proc/self/cgroup, and a fake kernel that fills a directory with interface files on mkdir), since
this machine has no v2 controllers. The real kernel (v1 here) is checked where `detect` finds one:
memory summed over forked children, a fork storm, and killing what escaped the process group.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.sandbox import cgroups
from evaluation.sandbox.cgroups import CgroupLimits
from nmmo.engines.process import process_exists

MiB = 1 << 20

# --- a fake kernel ------------------------------------------------------------------------------

V2_FILES = {
    "cgroup.procs": "", "cgroup.type": "domain\n", "cgroup.controllers": "cpu memory pids\n",
    "cgroup.subtree_control": "\n", "cgroup.kill": "", "memory.max": "max\n", "memory.swap.max": "max\n",
    "memory.peak": "0\n", "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
    "pids.max": "max\n", "pids.events": "max 0\n", "cpu.weight": "100\n",
}
V1_FILES = {
    "memory": {"memory.limit_in_bytes": "9223372036854771712\n", "memory.memsw.limit_in_bytes": "9223372036854771712\n",
               "memory.swappiness": "60\n", "memory.max_usage_in_bytes": "0\n", "memory.failcnt": "0\n",
               "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"},
    "pids": {"pids.max": "max\n", "pids.events": "max 0\n", "pids.current": "0\n"},
    "cpu,cpuacct": {"cpu.shares": "1024\n", "cpuacct.usage": "0\n"},
    "freezer": {"freezer.state": "THAWED\n"},
}


class FakeKernel:
    """mkdir under `root` makes a cgroup: the interface files `files(path)` names appear in it;
    rmdir fails with EBUSY while its cgroup.procs lists a process, as the kernel's does."""

    def __init__(self, root: Path, files, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root, self.files = root, files
        self.real_mkdir, self.real_rmdir = os.mkdir, os.rmdir
        monkeypatch.setattr(os, "mkdir", self.mkdir)
        monkeypatch.setattr(os, "rmdir", self.rmdir)

    def inside(self, path) -> bool:
        return Path(path).resolve().is_relative_to(self.root.resolve())

    def mkdir(self, path, mode=0o777, *, dir_fd=None):
        self.real_mkdir(path, mode)
        if self.inside(path):
            for name, text in {"cgroup.procs": "", **self.files(Path(path))}.items():
                (Path(path) / name).write_text(text)

    def rmdir(self, path, *, dir_fd=None):
        path = Path(path)
        if self.inside(path) and path.is_dir():
            if (path / "cgroup.procs").exists() and (path / "cgroup.procs").read_text().strip():
                raise OSError(errno.EBUSY, "Device or resource busy", str(path))
            if any(child.is_dir() for child in path.iterdir()):
                raise OSError(errno.EBUSY, "Device or resource busy", str(path))
            for child in path.iterdir():
                child.unlink()
        self.real_rmdir(path)


def mountinfo(path: Path, mounts: list[tuple[Path, str, str]]) -> str:
    """A fake /proc/self/mountinfo: a root file system, then (mount point, fstype, options)."""
    lines = ["22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw"]
    for i, (point, fstype, options) in enumerate(mounts):
        escaped = str(point).replace(" ", "\\040")
        lines.append(f"{40 + i} 31 0:{30 + i} / {escaped} rw,nosuid - {fstype} {fstype} rw,{options}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def write(path: Path, text: str) -> None:
    path.write_text(text)


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


# --- v2 on a fake cgroupfs --------------------------------------------------------------------


@pytest.fixture
def v2_tree(tmp_path, monkeypatch):
    """A desktop's layout: cgroup2 at the root (here with a space in its path), we in a scope
    that holds processes, so groups go beside it, under the slice."""
    root = tmp_path / "cg root"
    kernel = FakeKernel(root, lambda path: V2_FILES, monkeypatch)
    kernel.real_mkdir(root)
    for name, text in V2_FILES.items():
        if name not in ("cgroup.type", "cgroup.kill"):  # the root has neither
            write(root / name, text)
    write(root / "cgroup.subtree_control", "cpu memory pids\n")
    os.mkdir(root / "user.slice")
    write(root / "user.slice" / "cgroup.subtree_control", "cpu memory pids\n")
    os.mkdir(root / "user.slice" / "session-1.scope")
    write(root / "user.slice" / "session-1.scope" / "cgroup.procs", f"{os.getpid()}\n")
    info = mountinfo(tmp_path / "mountinfo", [(root, "cgroup2", "nsdelegate")])
    write(tmp_path / "proc_cgroup", "0::/user.slice/session-1.scope\n")
    return root, info, str(tmp_path / "proc_cgroup")


def test_v2_detect_create_breach_remove(v2_tree):
    root, info, own = v2_tree
    backend = cgroups.detect(str(root), info, own)
    assert backend is not None and backend.version == 2
    assert backend.bases == dict.fromkeys(("memory", "pids", "cpu"), str(root / "user.slice"))
    group = backend.create("my policy", CgroupLimits(memory_bytes=256 * MiB, pids=32))
    directory = root / "user.slice" / "flatmmo" / group.name
    assert group.name.startswith(f"w{os.getpid()}-") and group.name.endswith("-my_policy")
    assert group.dirs == dict.fromkeys(("memory", "pids", "cpu"), str(directory))
    assert (root / "user.slice" / "flatmmo" / "cgroup.subtree_control").read_text().split() == [
        "+memory", "+pids", "+cpu"]
    assert {name: (directory / name).read_text() for name in (
        "memory.max", "memory.swap.max", "pids.max", "cpu.weight")} == {
        "memory.max": str(256 * MiB), "memory.swap.max": "0", "pids.max": "32", "cpu.weight": "100"}

    group.join_self()  # in the fake, "0" is written where the kernel would read "the writer"
    assert (directory / "cgroup.procs").read_text() == "0"
    assert group.breach() is None
    write(directory / "memory.events", "low 0\nhigh 0\nmax 57\noom 2\noom_kill 2\n")
    write(directory / "pids.events", "max 12\n")
    write(directory / "memory.peak", str(256 * MiB))
    assert group.counters() == {"memory_peak": 256 * MiB, "oom_kills": 2, "ooms": 2, "forks_refused": 12}
    assert group.breach() == ("memory limit of 256 MiB reached (2 OOM kills); "
                              "process limit of 32 reached (12 forks refused)")

    group.remove(timeout=0.05)  # still "holds" a process: rmdir refused, remove gives up quietly
    assert directory.is_dir()
    write(directory / "cgroup.procs", "")
    group.remove()
    assert not directory.exists()
    assert backend.cleanup() == [str(root / "user.slice" / "flatmmo")]


def test_v2_memory_events_without_kills_and_no_swap_accounting(v2_tree):
    root, info, own = v2_tree
    group = cgroups.detect(str(root), info, own).create("", CgroupLimits(memory_bytes=64 * MiB, pids=None))
    directory = Path(group.dirs["memory"])
    assert (directory / "pids.max").read_text() == "max\n"  # None: left unlimited
    write(directory / "memory.events", "max 400\noom 0\noom_kill 0\n")  # reclaim at the limit: no fault
    assert group.breach() is None
    write(directory / "memory.events", "max 400\noom 1\noom_kill 0\n")
    assert group.breach() == "memory limit of 64 MiB reached (0 OOM kills)"
    group.remove()


def test_v2_root_enables_controllers_and_refuses_without_memory(tmp_path, monkeypatch):
    root = tmp_path / "cgroup"
    kernel = FakeKernel(root, lambda path: V2_FILES, monkeypatch)
    kernel.real_mkdir(root)
    for name, text in V2_FILES.items():
        if name not in ("cgroup.type", "cgroup.kill"):
            write(root / name, text)
    write(root / "cgroup.procs", f"{os.getpid()}\n")  # the root may hold processes and still enable
    info = mountinfo(tmp_path / "mountinfo", [(root, "cgroup2", "")])
    write(tmp_path / "proc_cgroup", "0::/\n")
    backend = cgroups.detect(str(root), info, str(tmp_path / "proc_cgroup"))
    assert backend is not None and backend.bases["memory"] == str(root)
    backend.create("x", CgroupLimits(memory_bytes=None, pids=8)).remove()
    assert (root / "cgroup.subtree_control").read_text().split() == ["+memory", "+pids", "+cpu"]

    write(root / "cgroup.controllers", "cpu io hugetlb\n")  # no memory controller: nothing to use
    write(root / "cgroup.subtree_control", "cpu\n")
    assert cgroups.detect(str(root), info, str(tmp_path / "proc_cgroup")) is None
    assert cgroups.detect(str(root), str(tmp_path / "missing"), str(tmp_path / "proc_cgroup")) is None  # not Linux


# --- v1 on a fake cgroupfs --------------------------------------------------------------------


@pytest.fixture
def v1_tree(tmp_path, monkeypatch):
    """This machine's layout: a hierarchy per controller (cpu with cpuacct), our memory cgroup
    nested (process_api/abc), and a cgroup2 mount with no controllers beside them."""
    root = tmp_path / "cgroup"

    def files(path: Path) -> dict[str, str]:
        return V1_FILES.get(path.relative_to(root).parts[0], V2_FILES)

    kernel = FakeKernel(root, files, monkeypatch)
    kernel.real_mkdir(root)
    mounts = []
    for hierarchy, options in (("memory", "memory"), ("pids", "pids"), ("cpu,cpuacct", "cpu,cpuacct"),
                               ("freezer", "freezer")):
        kernel.real_mkdir(root / hierarchy)
        mounts.append((root / hierarchy, "cgroup", options))
    os.mkdir(root / "memory" / "process_api")
    os.mkdir(root / "memory" / "process_api" / "abc")
    kernel.real_mkdir(root / "unified")
    write(root / "unified" / "cgroup.controllers", "hugetlb\n")
    write(root / "unified" / "cgroup.subtree_control", "\n")
    write(root / "unified" / "cgroup.procs", "")
    mounts.append((root / "unified", "cgroup2", ""))
    info = mountinfo(tmp_path / "mountinfo", mounts)
    write(tmp_path / "proc_cgroup", "5:freezer:/\n4:memory:/process_api/abc\n3:pids:/\n2:cpu,cpuacct:/\n0::/\n")
    return root, info, str(tmp_path / "proc_cgroup")


def test_v1_detect_create_breach_remove(v1_tree):
    root, info, own = v1_tree
    backend = cgroups.detect(str(root), info, own)
    assert backend is not None and backend.version == 1
    assert backend.bases == {"memory": str(root / "memory" / "process_api" / "abc"), "pids": str(root / "pids"),
                             "cpu": str(root / "cpu,cpuacct"), "freezer": str(root / "freezer")}
    group = backend.create("p", CgroupLimits(memory_bytes=256 * MiB, pids=64, cpu_weight=50))
    dirs = {c: Path(d) for c, d in group.dirs.items()}
    assert dirs["pids"] == root / "pids" / "flatmmo" / group.name
    assert (dirs["memory"] / "memory.limit_in_bytes").read_text() == str(256 * MiB)
    assert (dirs["memory"] / "memory.memsw.limit_in_bytes").read_text() == str(256 * MiB)  # no swap
    assert (dirs["pids"] / "pids.max").read_text() == "64"
    assert (dirs["cpu"] / "cpu.shares").read_text() == "512"

    group.join_self()
    assert all((d / "cgroup.procs").read_text() == "0" for d in dirs.values())
    for d in dirs.values():
        write(d / "cgroup.procs", "")
    write(dirs["memory"] / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    write(dirs["pids"] / "pids.events", "max 12\n")
    assert group.breach() == ("memory limit of 256 MiB reached (2 OOM kills); "
                              "process limit of 64 reached (12 forks refused)")
    group.remove()
    assert not any(d.exists() for d in dirs.values())
    assert (dirs["freezer"].parent / "cgroup.procs").exists()  # the shared parent stays


def test_v1_without_swap_accounting_turns_swappiness_off(v1_tree, monkeypatch):
    root, info, own = v1_tree
    monkeypatch.delitem(V1_FILES["memory"], "memory.memsw.limit_in_bytes")  # booted with swapaccount=0
    group = cgroups.detect(str(root), info, own).create("p", CgroupLimits(memory_bytes=64 * MiB, pids=8))
    assert (Path(group.dirs["memory"]) / "memory.swappiness").read_text() == "0"
    group.remove()


def test_v1_create_removes_empty_stale_groups(v1_tree):
    root, info, own = v1_tree
    backend = cgroups.detect(str(root), info, own)
    backend.create("first", CgroupLimits(memory_bytes=None, pids=None)).remove()
    gone = dead_pid()
    for parent in backend.parents():
        for name in (f"w{gone}-1", f"w{gone}-2-busy", f"w{os.getpid()}-999", "someone-else"):
            os.mkdir(os.path.join(parent, name))
        write(Path(parent) / f"w{gone}-2-busy" / "cgroup.procs", "12345\n")  # still holds a process
    backend.create("next", CgroupLimits(memory_bytes=None, pids=None)).remove()
    for parent in backend.parents():
        assert sorted(os.listdir(parent)) == sorted(
            ["cgroup.procs", f"w{gone}-2-busy", f"w{os.getpid()}-999", "someone-else", *V1_FILES.get(
                Path(parent).relative_to(root).parts[0], {})]), parent


def test_limits_are_checked():
    with pytest.raises(ValueError, match="pids"):
        CgroupLimits(memory_bytes=None, pids=0).check()
    with pytest.raises(ValueError, match="memory_bytes"):
        CgroupLimits(memory_bytes=4096, pids=None).check()
    with pytest.raises(ValueError, match="cpu_weight"):
        CgroupLimits(memory_bytes=None, pids=None, cpu_weight=0).check()


# --- the real kernel --------------------------------------------------------------------------


@pytest.fixture
def backend():
    """This machine's cgroups; a skip (a failure under NMMO_REQUIRE_SANDBOX=1) where there are none."""
    found = cgroups.detect()
    if found is None:
        reason = ("no writable cgroup memory and pids controllers (cgroups need root on Linux with "
                  "the v1 memory and pids hierarchies, or v2 with those controllers)")
        if os.environ.get("NMMO_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"{reason}; NMMO_REQUIRE_SANDBOX=1 requires them")
        pytest.skip(reason)
    yield found
    found.cleanup()


#: Forks 3 children that each write `argv[1]` MiB and hold it until all are ready or dead.
HOG = r"""
import json, os, select, sys, time
size = int(sys.argv[1]) << 20
ready_r, ready_w = os.pipe()
hold_r, hold_w = os.pipe()
children = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(hold_w)
        data = b"x" * size  # every page written, so charged
        os.write(ready_w, bytes([i]))
        os.read(hold_r, 1)
        os._exit(0)
    children.append(pid)
os.close(ready_w)
ready, status = set(), {}
deadline = time.monotonic() + 30
while len(ready | set(status)) < 3 and time.monotonic() < deadline:
    if select.select([ready_r], [], [], 0.02)[0]:
        ready.update(os.read(ready_r, 3))
    for i, pid in enumerate(children):
        if i not in status:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status[i] = code
held_together = len(ready - set(status))
os.close(hold_w)
for i, pid in enumerate(children):
    if i not in status:
        status[i] = os.waitpid(pid, 0)[1]
killed = sum(os.WIFSIGNALED(code) and os.WTERMSIG(code) == 9 for code in status.values())
print(json.dumps({"held_together": held_together, "killed": killed, "exited": sum(c == 0 for c in status.values())}))
"""

#: Tries argv[1] forks; the children wait for the parent to let go, so all live at once.
STORM = r"""
import json, os, sys
hold_r, hold_w = os.pipe()
made, refused = [], []
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError as err:
        refused.append(err.errno)
        continue
    if pid == 0:
        os.close(hold_w)
        os.read(hold_r, 1)
        os._exit(0)
    made.append(pid)
os.close(hold_w)
for pid in made:
    os.waitpid(pid, 0)
print(json.dumps({"made": len(made), "refused": refused}))
"""


def run(script: str, *args, preexec=None) -> dict:
    done = subprocess.run([sys.executable, "-I", "-c", script, *map(str, args)], preexec_fn=preexec,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def address_space(limit: int):
    """Today's per-process bound (RLIMIT_AS), as the sandbox sets it without cgroups."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_memory_limit_binds_the_whole_group(backend):
    # today's bound is per process: under the same 256 MiB each, three children hold 450 MiB together
    assert run(HOG, 150, preexec=address_space(256 * MiB)) == {"held_together": 3, "killed": 0, "exited": 3}

    group = backend.create("hog", CgroupLimits(memory_bytes=256 * MiB, pids=64))
    quiet = backend.create("quiet", CgroupLimits(memory_bytes=256 * MiB, pids=64))
    try:
        result = run(HOG, 150, preexec=group.join_self)
        run("print('{}')", preexec=quiet.join_self)
        counts = group.counters()
        assert result["killed"] >= 1, result  # OOM-killed: the group, not each process, is bounded
        assert counts["memory_peak"] <= 256 * MiB and counts["oom_kills"] >= 1, counts
        assert group.breach().startswith("memory limit of 256 MiB reached (")
        assert quiet.breach() is None  # a breach is that submission's alone
    finally:
        group.remove()
        quiet.remove()


def test_process_limit_stops_a_fork_storm(backend):
    assert run(STORM, 100) == {"made": 100, "refused": []}  # today: nothing bounds the forks of a root run

    group = backend.create("storm", CgroupLimits(memory_bytes=None, pids=32))
    try:
        result = run(STORM, 100, preexec=group.join_self)
        assert result["made"] == 31  # the parent is the 32nd
        assert set(result["refused"]) == {errno.EAGAIN} and len(result["refused"]) == 69
        assert group.breach() == "process limit of 32 reached (69 forks refused)"
    finally:
        group.remove()
    assert group.breach() == "process limit of 32 reached (69 forks refused)"  # still known once removed


#: Joins nothing itself: prints its cgroups, forks 5 sleepers and one that leaves the process group.
ESCAPE = r"""
import os, sys, time
print(open("/proc/self/cgroup").read().replace("\n", ";"), flush=True)
pids = []
for i in range(6):
    pid = os.fork()
    if pid == 0:
        if i == 5:
            os.setsid()  # out of the worker's process group: killpg misses it
        time.sleep(60)
        os._exit(0)
    pids.append(pid)
while os.getpgid(pids[5]) == os.getpgrp():  # the last child has left the process group
    time.sleep(0.001)
print(" ".join(map(str, pids)), flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    return process_exists(pid)


@pytest.mark.parametrize("freezer", [True, False], ids=["freezer", "kill-loop"])
def test_remove_kills_what_left_the_process_group(backend, freezer):
    if not freezer:  # v1 without a freezer hierarchy: killing goes round until the group is empty
        backend = cgroups.CgroupBackend(backend.version, {c: d for c, d in backend.bases.items() if c != "freezer"})
    group = backend.create("escape", CgroupLimits(memory_bytes=256 * MiB, pids=64))
    worker = subprocess.Popen([sys.executable, "-I", "-c", ESCAPE], preexec_fn=group.join_self,
                              start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        joined = worker.stdout.readline()
        for controller in ("memory", "pids") if backend.version == 1 else ("",):  # in before its code ran
            assert any(f":{controller}:" in line and line.endswith(f"/flatmmo/{group.name}")
                       for line in joined.strip(";\n").split(";")), joined
        children = [int(pid) for pid in worker.stdout.readline().split()]
        assert len(children) == 6 and group.pids() == {worker.pid, *children}

        os.killpg(worker.pid, signal.SIGKILL)  # what the sandbox does without cgroups
        worker.wait()
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in children[:5]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert alive(children[5]) and not any(alive(pid) for pid in children[:5])

        started = time.monotonic()
        group.remove()
        took = time.monotonic() - started
        assert not alive(children[5]), "the process that left the process group survived the group"
        assert not any(os.path.exists(d) for d in group.directories())
        assert took < 1.0, took
    finally:
        group.remove()
        if worker.poll() is None:
            worker.kill()
            worker.wait()
