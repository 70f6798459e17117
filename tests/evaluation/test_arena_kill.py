"""kill -9 and the arena: a real server in a subprocess, killed mid-episode and restarted, one of its
workers killed mid-episode; afterwards the episode log holds no duplicate and no half episode, every
cut-off episode was played again, the ratings equal a batch recompute, and no process is left."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from evaluation.arena import db
from evaluation.arena.server import check_ratings
from evaluation.arena.uploads import arena_dir
from nmmo.cli import main
from nmmo.replays.replay import load_replay

from .conftest import alive, small_config, write_policy

ROOT = Path(__file__).resolve().parents[2]
TICKS = 48

SLOW = """
    import time

    class Slow:
        def __init__(self, config):
            pass

        def act(self, observations):
            time.sleep(0.03)  # an episode lasts long enough to be cut off
            return {}

    class Slow1(Slow):
        pass

    class Slow2(Slow):
        pass

    class Slow3(Slow):
        pass
"""


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def descendants(pid: int) -> set[int]:
    out, frontier = set(), [pid]
    while frontier:
        for child in children(frontier.pop()):
            out.add(child)
            frontier.append(child)
    return out


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def survivors(pids: set[int], timeout: float = 15) -> list[int]:
    """The processes of `pids` still alive after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return sorted(p for p in pids if alive(p))


def serve(db_path: Path, log: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start `nmmo arena serve` in a subprocess; return it and its endpoints' base URL."""
    start = log.stat().st_size if log.exists() else 0
    handle = open(log, "a")  # noqa: SIM115 - the child's stdout for its whole life
    process = subprocess.Popen([sys.executable, "-m", "nmmo", "arena", "serve", "--db", str(db_path), "--port", "0",
                                "--workers", "2", *extra], cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    handle.close()

    def url() -> str | None:
        assert process.poll() is None, log.read_text()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/api/status", log.read_text()[start:])
        return found.group(1) if found else None

    return process, wait_for(url, 60, "the server to serve")


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def committed(db_path: Path) -> int:
    with closing(db.connect(db_path, readonly=True)) as conn:
        return conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]


def playing_worker(url: str) -> int | None:
    """A worker pid in the middle of an episode: one whose submissions' workers run."""
    pids = get(f"{url}/api/status")["live"].get("worker_pids") or []
    return next((pid for pid in pids if pid and len(descendants(pid)) >= 1), None)


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """The scenario, run once: what each step saw."""
    directory = tmp_path_factory.mktemp("arena_kill")
    config = directory / "small.toml"
    config.write_text(small_config(PLAYER_N=16).to_toml())
    db_path, log = directory / "arena.db", directory / "serve.log"
    spec = write_policy(directory, "slow", SLOW)
    for name in ("Slow1", "Slow2", "Slow3"):
        assert main(["arena", "add", spec.replace(":Agent", f":{name}"), "--db", str(db_path)]) == 0
    seen: dict = {}
    flags = ("--config", str(config), "--ticks", str(TICKS), "--seats", "3")
    server, url = serve(db_path, log, *flags)
    try:
        wait_for(lambda: committed(db_path) >= 2, 90, "two committed episodes")
        wait_for(lambda: playing_worker(url), 60, "a worker mid-episode")
        family = descendants(server.pid)
        seen["server_family"] = family
        server.send_signal(signal.SIGKILL)
        server.wait()
        seen["left_after_server_kill"] = survivors(family)
        with closing(db.connect(db_path, readonly=True)) as conn:
            seen["episodes_at_kill"] = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
            seen["cut_off"] = [row["claim"] for row in db.claims(conn)]
        seen["max_episodes"] = seen["episodes_at_kill"] + 4
        server, url = serve(db_path, log, *flags, "--max-episodes", str(seen["max_episodes"]))
        def mid_episode() -> tuple[int, list[int], set[int]] | None:
            """A worker with its claim and its submissions' processes, read together just before the
            kill (read apart, the episode could end between the reads: seen once under load)."""
            worker = playing_worker(url)
            if worker is None:
                return None
            with closing(db.connect(db_path, readonly=True)) as conn:
                claim = [row["claim"] for row in db.claims(conn) if row["worker_pid"] == worker]
            family = descendants(worker)
            return (worker, claim, family) if claim and family else None

        worker, seen["worker_claim"], seen["worker_family"] = wait_for(mid_episode, 60,
                                                                       "a worker mid-episode after the restart")
        os.kill(worker, signal.SIGKILL)
        seen["left_after_worker_kill"] = survivors(seen["worker_family"])
        seen["server_alive_after_worker_kill"] = server.poll() is None
        family, deadline = set(), time.monotonic() + 180
        while server.poll() is None and time.monotonic() < deadline:  # every process it had until it stopped
            family |= descendants(server.pid)
            time.sleep(0.2)
        seen["final_family"] = family
        seen["exit"] = server.wait(timeout=5)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    seen["left_at_end"] = survivors(seen["final_family"])
    seen["log"] = log.read_text()
    seen["db"] = db_path
    return seen


def test_a_kill_9_of_the_server_leaves_no_process_and_cuts_off_only_claims(killed):
    assert len(killed["server_family"]) >= 3  # two workers, and a submission's sandboxed worker at least
    assert killed["left_after_server_kill"] == []
    assert killed["cut_off"], "the server was killed mid-episode: at least one claim was being played"
    with closing(db.connect(killed["db"], readonly=True)) as conn:
        claims = [row[0] for row in conn.execute("SELECT claim FROM episodes ORDER BY id")]
    assert set(killed["cut_off"]) <= set(claims)  # each was played again after the restart ...
    assert f"{len(killed['cut_off'])} claim(s) to replay" in killed["log"]


def test_a_worker_killed_mid_episode_leaves_no_process_and_its_episode_is_played_again(killed):
    assert killed["worker_family"], "the killed worker was playing a submission"
    assert killed["left_after_worker_kill"] == []
    assert killed["server_alive_after_worker_kill"]
    assert len(killed["worker_claim"]) == 1
    with closing(db.connect(killed["db"], readonly=True)) as conn:
        row = conn.execute("SELECT attempts FROM episodes WHERE claim = ?", (killed["worker_claim"][0],)).fetchone()
    assert row is not None and row["attempts"] >= 2
    assert re.search(rf"claim {killed['worker_claim'][0]} lost its worker \(its worker \(pid \d+\) died of signal 9\)",
                     killed["log"])


def test_after_the_kills_the_log_has_no_duplicate_no_half_episode_and_the_ratings_recompute(killed, capsys):
    assert killed["exit"] == 0 and killed["left_at_end"] == []
    with closing(db.connect(killed["db"], readonly=True)) as conn:
        episodes = conn.execute("SELECT * FROM episodes ORDER BY id").fetchall()
        assert len(episodes) == killed["max_episodes"]
        assert len({e["claim"] for e in episodes}) == len(episodes)  # no claim counted twice
        for episode in episodes:
            seats = conn.execute("SELECT * FROM seats WHERE episode_id = ? ORDER BY seat", (episode["id"],)).fetchall()
            assert [s["seat"] for s in seats] == list(range(episode["seats"])) and episode["seats"] == 4
            assert sum(s["lifetimes"] for s in seats) == episode["lifetimes"] and episode["ticks"] == TICKS
        assert db.claims(conn) == [] and conn.execute("SELECT COUNT(*) FROM dropped").fetchone()[0] == 0
        assert check_ratings(conn, write=False)[1] == []
        names = {entry.name for entry in db.entries(conn)}
    # the replays name the seats by entry name, never by spec (an upload's spec is its stored path)
    replays = sorted((arena_dir(killed["db"]) / "replays").glob("claim-*.replay"))
    assert replays
    seated = load_replay(replays[-1]).header["policies"]
    assert set(seated) <= names and not any("/" in name for name in seated), seated
    assert f"ratings recomputed from {killed['episodes_at_kill']} committed episode(s): the snapshot agrees" \
        in killed["log"]  # the restart's check
    assert main(["arena", "recompute", "--db", str(killed["db"])]) == 0
    assert "equal a recompute" in capsys.readouterr().out
