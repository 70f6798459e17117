"""Hostile submissions are bounded and cannot reach past their own agents (evaluation.sandbox.host)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import nmmo
from evaluation.sandbox import namespaces
from evaluation.sandbox.host import HOME_PREFIX, Limits, remove_orphaned_homes
from evaluation.submission import SubprocessPolicy

from .conftest import alive, small_config, write_policy


def observations():
    env = nmmo.Env(small_config(), seed=0)
    obs, _ = env.reset()
    return {1: obs[1], 2: obs[2]}


def play(handle, ticks=2):
    obs = observations()
    out = []
    for _ in range(ticks):
        handle.submit(obs)
        out.append(handle.collect())
    return out


def test_a_pickle_written_into_the_channel_runs_nothing(tmp_path):
    """The worker's code can write to its channel: a crafted pickle there (which would create a
    file if the episode unpickled it) is a malformed reply, the worker is replaced, nothing runs."""
    marker = tmp_path / "created_by_unpickling"
    spec = write_policy(tmp_path, "forger", f"""
        import builtins, os, pickle, struct, sys

        class Payload:
            def __reduce__(self):
                return (builtins.open, ({str(marker)!r}, "w"))

        class Agent:
            def __init__(self, config):
                pass

            def act(self, observations):
                out = int(sys.argv[2])  # the worker's reply pipe, as the worker process sees it
                blob = pickle.dumps(("ok", Payload(), 0, None))
                os.write(out, struct.pack("<Q", len(blob)) + blob)
                return {{agent: {{"Move": {{"Direction": 1}}}} for agent in observations}}
    """)
    handle = SubprocessPolicy(spec, small_config(), time_budget=2.0)
    handle.reset(0)
    try:
        replies = play(handle)
    finally:
        handle.close()
    assert replies == [{}, {}]
    assert handle.faults.malformed >= 1 and "unreadable reply" in handle.faults.messages[0]
    assert not marker.exists()


def test_workers_start_with_a_scrubbed_environment(tmp_path, monkeypatch):
    """What the worker sees of the environment, reported in the one channel it has (the message of
    the exception its constructor raises, which the episode records as a fault)."""
    monkeypatch.setenv("NMMO_TEST_SECRET", "hunter2")
    spec = write_policy(tmp_path, "snoop", """
        import os

        class Agent:
            def __init__(self, config):
                initial = open("/proc/self/environ", "rb").read().decode(errors="replace")
                leaked = "NMMO_TEST_SECRET" in os.environ or "hunter2" in initial
                raise RuntimeError(f"leaked={leaked} home={os.environ['HOME']}")

            def act(self, observations):
                return {}
    """)
    handle = SubprocessPolicy(spec, small_config())
    handle.reset(0)
    handle.close()
    report = " ".join(handle.faults.messages)
    assert "leaked=False" in report, report
    home = report.split("home=")[1].split()[0].rstrip("'\"")
    assert home != os.environ.get("HOME")
    if namespaces.unavailable_reason() is None:  # its own /tmp, a tmpfs gone with its namespace
        assert home == "/tmp"
    else:  # a private directory, removed afterwards
        assert not Path(home).exists()


@pytest.mark.parametrize(("body", "limits", "expected"), [
    ("import numpy as np; self.hog = np.empty(20 * 2**30, dtype=np.uint8)", Limits(), "MemoryError"),
    ("self.files = [open(__file__) for _ in range(1000)]", Limits(), "Too many open files"),
    ("import time; time.sleep(30)", Limits(init_timeout=1.0), "not ready within 1 s"),
    ("while True: pass", Limits(cpu_seconds=1), "CPU time"),
])
def test_each_limit_hit_is_a_reported_fault(tmp_path, body, limits, expected):
    spec = write_policy(tmp_path, "greedy", f"""
        class Agent:
            def __init__(self, config):
                {body}

            def act(self, observations):
                return {{}}
    """)
    handle = SubprocessPolicy(spec, small_config(), limits=limits)
    start = time.monotonic()
    handle.reset(0)
    assert play(handle) == [{}, {}]  # its agents idle; nothing raised, nothing hung
    handle.close()
    assert handle.faults.not_started == 1 and handle.faults.disabled == 1
    assert expected in " ".join(handle.faults.messages), handle.faults.messages
    assert time.monotonic() - start < 30


def marked(marker: str) -> list[int]:
    """Host pids of the processes whose command line holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_children_a_submission_forks_die_with_its_worker(tmp_path):
    marker = f"nmmo-forked-{os.getpid()}-{time.monotonic_ns()}"
    spec = write_policy(tmp_path, "forker", f"""
        import os, sys

        class Agent:
            def __init__(self, config):
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", {marker!r}])

            def act(self, observations):
                return {{}}
    """)
    handle = SubprocessPolicy(spec, small_config())
    handle.reset(0)
    deadline = time.monotonic() + 5
    while not marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(marker)
    handle.close()
    deadline = time.monotonic() + 5
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(marker) == []


ORPHAN_HARNESS = """
import sys
from evaluation.tournament import run_tournament
from tests.evaluation.conftest import small_config

if __name__ == "__main__":
    run_tournament(small_config(HORIZON=5000), [sys.argv[1], "random"], episodes=2, workers=2, progress=False)
"""


def descendants(pid: int) -> set[int]:
    out, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split() if Path(
                f"/proc/{parent}/task/{parent}/children").exists() else []:
            out.add(int(child))
            frontier.append(int(child))
    return out


def test_no_process_outlives_a_killed_tournament(tmp_path):
    """kill -9 of the tournament's process: its episode pool, the submissions' workers and their
    forks, and multiprocessing's resource tracker all go with it."""
    spec = write_policy(tmp_path, "slow", """
        import time

        class Agent:
            def __init__(self, config):
                pass

            def act(self, observations):
                time.sleep(0.05)
                return {}
    """)
    harness = tmp_path / "harness.py"
    harness.write_text(textwrap.dedent(ORPHAN_HARNESS))
    root = Path(__file__).resolve().parents[2]
    temp = tmp_path / "tmp"  # the workers' directories go here (TMPDIR), to be checked
    temp.mkdir()
    parent = subprocess.Popen([sys.executable, str(harness), spec], cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root), "TMPDIR": str(temp)})
    deadline = time.monotonic() + 60
    family: set[int] = set()
    while time.monotonic() < deadline:  # wait until both episodes' submission workers run in the pool
        family = descendants(parent.pid) - {int(c) for c in Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
                                            .read_text().split()}
        worker = [b"-m", b"evaluation.sandbox.worker"]
        workers = [p for p in family if Path(f"/proc/{p}/cmdline").exists()  # the worker, not its bwrap
                   and Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[1:3] == worker]
        if len(workers) >= 2:
            break
        time.sleep(0.2)
    family = descendants(parent.pid)
    assert len(family) >= 3, family  # pool workers and submission workers
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while any(alive(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in family if alive(p)] == []
    # their private directories are left behind; the next worker started removes them
    orphaned = sorted(p.name for p in temp.iterdir() if p.name.startswith(HOME_PREFIX))
    assert len(orphaned) >= 2, orphaned
    ours = temp / f"{HOME_PREFIX}{os.getpid()}-live"  # a running tournament's directory stays
    ours.mkdir()
    removed = remove_orphaned_homes(str(temp))
    assert sorted(Path(p).name for p in removed) == orphaned
    assert [p.name for p in temp.iterdir() if p.name.startswith(HOME_PREFIX)] == [ours.name]
