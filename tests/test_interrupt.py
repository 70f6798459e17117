"""Long commands in a log and under Ctrl-C: a tournament whose output is a file writes a progress
line per finished episode while it runs; SIGINT stops it within seconds with no traceback, keeps
its journal and prints the command that resumes it, and that command completes the run."""

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from evaluation.episode import stop_pool
from nmmo.console import LineProgress, clock

ROOT = Path(__file__).resolve().parents[1]


def test_plain_progress_lines_count_time_and_eta(tmp_path):
    out = (tmp_path / "log").open("w+")
    bar = LineProgress(total=4, desc="tournament", unit="episode", stream=out)
    for _ in range(4):
        bar.update()
    out.seek(0)
    lines = out.read().splitlines()
    assert [line.split(",")[0] for line in lines] == [f"tournament: {i}/4 episodes" for i in range(0, 5)]
    assert "ETA" not in lines[0] and "ETA" in lines[1] and "ETA" not in lines[-1] and "elapsed" in lines[-1]
    assert clock(3723) == "1:02:03" and clock(61) == "1:01"


def test_stop_pool_ends_the_workers_and_the_executor_thread_before_it_returns():
    # the executor's thread must have closed its wake-up pipe: Python 3.11 writes to it unlocked at
    # exit, and a close racing that write printed a "Bad file descriptor" traceback after Ctrl-C
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(time.sleep, 60) for _ in range(4)]
    while not any(future.running() for future in futures):
        time.sleep(0.01)
    processes, manager = list(pool._processes.values()), pool._executor_manager_thread
    wakeup = pool._executor_manager_thread_wakeup
    stop_pool(pool)
    assert not any(process.is_alive() for process in processes)
    assert not manager.is_alive() and wakeup._closed
    assert all(future.cancelled() or future.done() for future in futures)


def _wait_for(path: Path, pattern: str, process: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if re.search(pattern, text, re.M):
            return text
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"no line matching {pattern!r} within {timeout} s; output so far:\n{text}")


@pytest.mark.slow
def test_ctrl_c_stops_a_tournament_keeps_its_episodes_and_the_printed_command_resumes_it(tmp_path):
    out_dir = tmp_path / "run"
    stdout, stderr = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    command = [sys.executable, "-m", "nmmo", "tournament", "--config", "trainers_small", "--policies",
               "scripted:Forage", "scripted:Combat", "random", "--episodes", "6", "--ticks", "64", "--workers", "2",
               "--seed", "3", "--out", str(out_dir)]
    env = {**os.environ, "COLUMNS": "200"}
    with stdout.open("w") as out, stderr.open("w") as err:
        # Ctrl-C's default action in the child, as in a terminal, however the tests were started: a
        # shell's background job (make test &) ignores SIGINT, and an ignored signal stays ignored across exec
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT, env=env, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            # progress reaches the file while the run goes on, one line per finished episode
            text = _wait_for(stdout, r"^tournament: 1/6 episodes, \d+:\d\d elapsed, ETA", process, 120)
            assert "Leaderboard" not in text
            sent = time.monotonic()
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
            code = process.wait(timeout=30)
            stopped_in = time.monotonic() - sent
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    text, errors = stdout.read_text(), stderr.read_text()
    assert code == 130, (code, text, errors)
    assert stopped_in < 10, stopped_in
    assert "Traceback" not in errors + text, errors
    match = re.search(r"^interrupted: stopped; (\d+) finished episode\(s\) kept in (\S+); continue with: (.+)$",
                      text, re.M)
    assert match, text
    kept = int(match.group(1))
    journal = Path(match.group(2))
    assert 1 <= kept < 6
    lines = journal.read_text().splitlines()
    assert len(lines) == kept + 1 and all(json.loads(line) for line in lines)  # header + whole episode lines
    resume = match.group(3)
    assert resume.endswith(" --resume")
    done = subprocess.run(resume, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out_dir / "results.json").read_text())
    assert len(results["episodes"]) == 6
