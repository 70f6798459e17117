"""Where trust ends: only registered names run in-process, a submission sees its own files only, runs as
a host uid of its own, and finds nothing of the host in its sandbox's init. Each attack reports what it
managed through its fault messages, as in test_namespace_sandbox."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaluation.sandbox import namespaces
from evaluation.sandbox.host import Limits
from evaluation.submission import (
    InProcessPolicy,
    SubprocessPolicy,
    check_private,
    check_spec,
    is_trusted,
    make_handle,
    trusted_specs,
)
from evaluation.tournament import run_tournament

from .conftest import small_config

ROOT = Path(__file__).resolve().parents[2]
needs_sandbox = pytest.mark.skipif(namespaces.unavailable_reason() is not None and os.environ.get(
    namespaces.REQUIRE_ENV) != "1", reason=f"no namespace sandbox here: {namespaces.unavailable_reason()}")
MARKER_CODE = "open({marker!r}, 'w').write('ran')\n\nclass Agent:\n    def __init__(self, config):\n        pass\n\n" \
              "    def act(self, observations):\n        return {{}}\n"


# ------------------------------------------------------------------ trusted means named
def test_only_registered_names_are_trusted():
    names = trusted_specs()
    assert {"random", "idle", "scripted:Forage", "scripted:Combat", "scripted:Survivor", "baseline:small"} <= names
    for spec in ("scripted:evil.py:Agent", "scripted:Scripted", "scripted:np", "baseline:../x", "scripted:",
                 "baseline:small.pt", "pkg.module:Agent", "ckpt:out/train/policy.pt"):
        assert not is_trusted(spec), spec
    assert isinstance(make_handle("scripted:Forage", small_config()), InProcessPolicy)
    assert isinstance(make_handle("scripted:evil.py:Agent", small_config()), SubprocessPolicy)


@needs_sandbox
def test_a_scripted_prefixed_file_never_runs_in_process(tmp_path, monkeypatch):
    """``scripted:evil.py:Agent`` with a file of that name in the working directory: loaded in a
    sandboxed worker (whose write lands in its private /tmp), never imported by the tournament process."""
    marker = tmp_path / "ran-in-process"
    (tmp_path / "scripted:evil.py").write_text(MARKER_CODE.format(marker=str(marker)))
    monkeypatch.chdir(tmp_path)
    check_spec("scripted:evil.py:Agent", timeout=30)
    assert not marker.exists()


def test_a_shadow_scripted_folder_is_never_imported_by_python_m_nmmo(tmp_path):
    """`python -m nmmo` in a directory holding a ``scripted/`` folder plays the shipped bots."""
    marker = tmp_path / "shadow-ran"
    (tmp_path / "scripted").mkdir()
    (tmp_path / "scripted" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                                        "BOTS = ('Forage',)\nclass Forage:\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "nmmo", "eval", "--policy", "scripted:Meander", "--config", "Small",
                           "--episodes", "1", "--ticks", "2", "--workers", "1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()
    shadowed = subprocess.run([sys.executable, "-m", "nmmo", "eval", "--policy", "scripted:Meander", "--config",
                               "Small", "--episodes", "1", "--ticks", "2", "--workers", "1", "--out", "again"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(tmp_path)})
    output = (shadowed.stdout + shadowed.stderr).strip()  # on PYTHONPATH it is found first: refused, not run
    assert shadowed.returncode == 2 and "shadows" in output and len(output.splitlines()) == 1, output
    assert not marker.exists()


# ------------------------------------------------------------------ its own files only
def test_submissions_whose_files_overlap_are_refused(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "__init__.py").write_text("")
    (tmp_path / "alice" / "bob.py").write_text("")
    (tmp_path / "mine.py").write_text("")
    folder, inner = f"{tmp_path / 'alice'}:Agent", f"{tmp_path / 'alice' / 'bob.py'}:Agent"
    with pytest.raises(ValueError, match=r"would see .*alice, which holds .*bob\.py"):
        check_private([folder, inner, "scripted:Forage"])
    check_private([f"{tmp_path / 'mine.py'}:A", f"{tmp_path / 'mine.py'}:B", inner])  # one file's two classes
    (tmp_path / "link").symlink_to(tmp_path / "alice")
    with pytest.raises(ValueError, match="would see"):  # a rival's folder by another name
        check_private([f"{tmp_path / 'link'}:Agent", folder])


HOG = """
    import ctypes

    class Agent:  # holds every inotify instance its host uid may have
        def __init__(self, config):
            libc = ctypes.CDLL(None, use_errno=True)
            self.held = []
            while len(self.held) < 1024 and (fd := libc.inotify_init()) >= 0:
                self.held.append(fd)

        def act(self, observations):
            raise RuntimeError(f"report held={len(self.held)}")
"""
READER = """
    import ctypes
    import os

    class Agent:  # reads a sibling's source, its own package, the sandbox's init, and asks for inotify
        def __init__(self, config):
            self.calls = 0

        def act(self, observations):
            self.calls += 1
            if self.calls > 1:
                return {}
            found = []
            try:
                open(BOB).read()
                found.append("read-bob")
            except OSError:
                pass
            found.append("listing=" + ",".join(sorted(os.listdir(os.path.dirname(__file__)))))
            init = open("/proc/1/cmdline", "rb").read() + open("/proc/1/environ", "rb").read()
            if b"--ro-bind" in init or b"nmmo-worker-" in init or b"HOME=" in init:
                found.append("host-in-init")
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if "bwrap-args" in os.readlink(f"/proc/self/fd/{fd}"):
                        found.append("args-fd")
                except OSError:
                    pass
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init()
            found.append("inotify=ok" if fd >= 0 else f"inotify=errno{ctypes.get_errno()}")
            raise RuntimeError(f"report {' '.join(found)} end")
"""
FOLDER = """
    from pathlib import Path

    class Agent:  # code beside its data: a folder submission reads its own weights file
        def __init__(self, config):
            self.weights = (Path(__file__).parent / "weights.txt").read_text()

        def act(self, observations):
            raise RuntimeError(f"report weights={self.weights}")
"""


@needs_sandbox
def test_siblings_are_invisible_uids_are_private_and_the_init_shows_no_host_path(tmp_path, monkeypatch):
    package = tmp_path / "subs_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bob.py").write_text(textwrap.dedent(HOG))
    (package / "alice.py").write_text(f"BOB = {str(package / 'bob.py')!r}\n" + textwrap.dedent(READER))
    folder = tmp_path / "carol"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(FOLDER))
    (folder / "weights.txt").write_text("w42")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    specs = ["subs_pkg.bob:Agent", "subs_pkg.alice:Agent", f"{folder}:Agent"]
    results = run_tournament(small_config(PLAYER_N=8), specs, episodes=1, ticks=2, workers=1, progress=False,
                             time_budget=5.0, limits=Limits(init_timeout=30))
    reports = {spec: " ".join(results["faults"][spec]["messages"]) for spec in specs}
    alice = reports["subs_pkg.alice:Agent"].split("report ")[1].split(" end")[0].split()
    assert "read-bob" not in alice and "listing=alice.py" in alice, alice  # bob's file and __init__ unseen
    assert "host-in-init" not in alice and "args-fd" not in alice, alice
    if os.geteuid() == 0:  # one uid per running submission: the hog's inotify instances are its own
        assert "inotify=ok" in alice and "report held=" in reports["subs_pkg.bob:Agent"], reports
    assert "report weights=w42" in reports[f"{folder}:Agent"], reports


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="as a normal user every worker runs as that user (docs)")
def test_running_workers_hold_distinct_host_uids_from_the_range_and_give_them_back():
    from evaluation.sandbox.host import Worker

    first, second = Worker(Limits()), Worker(Limits())
    try:
        uids = {first.host_uid.uid, second.host_uid.uid}
        assert len(uids) == 2 and uids <= set(namespaces.uid_range())
        for worker in (first, second):
            status = Path(f"/proc/{worker.process.pid}/status").read_text()
            assert str(worker.host_uid.uid) in next(line for line in status.splitlines() if line.startswith("Uid"))
    finally:
        first.stop()
        second.stop()
    again = namespaces.HostUid()
    try:
        assert again.uid == min(uids)  # given back when its worker stopped
    finally:
        again.release()


def test_uid_range_from_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv(namespaces.UIDS_ENV, "5000-5009")
    assert namespaces.uid_range() == range(5000, 5010)
    for bad in ("0-10", "9-5", "abc", "5000", "5000-99999999999"):
        monkeypatch.setenv(namespaces.UIDS_ENV, bad)
        with pytest.raises(ValueError, match=namespaces.UIDS_ENV):
            namespaces.uid_range()


# ------------------------------------------------------------------ a missing sandbox, one line
def test_require_sandbox_without_bubblewrap_is_one_line_and_a_failure(tmp_path):
    (tmp_path / "agent.py").write_text("class Agent:\n    def __init__(self, config):\n        pass\n")
    done = subprocess.run([sys.executable, "-m", "nmmo", "eval", "--policy", f"{tmp_path / 'agent.py'}:Agent",
                           "--config", "Small", "--episodes", "1", "--ticks", "1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PATH": str(tmp_path), namespaces.REQUIRE_ENV: "1"})
    output = (done.stdout + done.stderr).strip()
    assert done.returncode != 0 and "Traceback" not in output, output
    assert len(output.splitlines()) == 1 and "bubblewrap" in output and namespaces.REQUIRE_ENV in output, output


def test_a_uid_lock_directory_someone_else_made_is_an_error_never_a_fallback(tmp_path, monkeypatch):
    """Anyone may make a name in /tmp first: the sandbox then stops with an error naming it, and does
    not fall back to the process sandbox."""
    planted = tmp_path / "nmmo-sandbox-uids"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    monkeypatch.setattr(namespaces, "UID_LOCK_DIRS", (str(planted),))
    with pytest.raises(namespaces.SandboxUnavailable, match="someone else made it"):
        namespaces.HostUid()
