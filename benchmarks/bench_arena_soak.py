"""Soak of the arena: 31 entries (hostile probes among them), kill -9 twice, nothing lost or counted twice.

Starts ``nmmo arena serve`` (127.0.0.1 only, a free port) on a new database in --out with 31
entries: the anchor and the four paper bots the arena always has; random, idle, baseline:small and
the five minigame bots (trusted, in-process); eight submissions in the sandbox (copies of the
scripted bots, a slow one, a random walker); and the ten hostile probes of `evaluation.arena.probes`
(crash, hang, CPU spin, garbage replies, a forged frame, memory beyond the limit, a fork storm, an
escaping grandchild, a bad exit status, a slow start). It runs for --minutes, kill -9s the server at
1/3 and 2/3 of them (mid-episode: a claim is being played) and restarts it, sampling the server's
RSS every 15 s; then it stops the server with SIGTERM and checks the database: no duplicate claim,
no half episode (every episode has all its seats and lifetimes), every claim cut off by a kill
played again, the ratings equal to a recompute of the log, and no process left behind (each
killed server's whole process tree, and the probes' forks). Prints the figures and one JSON line.

    python benchmarks/bench_arena_soak.py --minutes 30        # the issue's soak (2 cores: --workers 2)
    python benchmarks/bench_arena_soak.py --minutes 2 --ticks 64   # a quick check that it all works
    python benchmarks/bench_arena_soak.py --minutes 30 --upload    # the submissions uploaded by participants

With --upload (arena part 2) the operator adds only the trusted entries; the eight honest
submissions and the ten probes are each a participant of their own, registered with
``nmmo arena register`` and uploaded through ``POST /api/submit`` once the server serves: each is
smoke-tested, and the probes that fail it never enter the pool (the verdicts are printed). The
clock of the soak (and its kills) starts when the uploads are done.

The canonical config (`tournament`, 100 agents) cut to --ticks (default 256, so that a 30-minute
soak commits a few hundred episodes and each kill is likely to land mid-episode).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TRUSTED = ("random", "idle", "baseline:small", "scripted:Racer", "scripted:Hill", "scripted:Battler",
           "scripted:Guard", "scripted:Survivor")
SUBMISSIONS = '''"""Honest submissions of the soak: copies of the scripted bots, a slow one, a random walker."""
import time

import numpy as np

from scripted.bots import Combat, CombatNoExplore, Forage, ForageNoExplore, Meander


class MyForage(Forage):
    pass


class MyCombat(Combat):
    pass


class MyMeander(Meander):
    pass


class MyForageNoExplore(ForageNoExplore):
    pass


class MyCombatNoExplore(CombatNoExplore):
    pass


class SlowCombat(Combat):  # thinks for 50 ms a tick, well within the budget
    def act(self, observations):
        time.sleep(0.05)
        return super().act(observations)


class Walker:  # a random walk, its own generator
    def __init__(self, config):
        self.rng = np.random.default_rng(0)

    def act(self, observations):
        return {agent: {"Move": {"Direction": int(self.rng.integers(4))}} for agent in observations}


class Stayer:  # stays put, a little slowly
    def __init__(self, config):
        pass

    def act(self, observations):
        time.sleep(0.02)
        return {agent: {"Move": {"Direction": 4}} for agent in observations}
'''
HONEST = ("MyForage", "MyCombat", "MyMeander", "MyForageNoExplore", "MyCombatNoExplore", "SlowCombat", "Walker",
          "Stayer")


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def descendants(pid: int) -> set[int]:
    out, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        try:
            found = [int(p) for p in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
        except OSError:
            found = []
        out.update(found)
        frontier.extend(found)
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def survivors(pids: set[int], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return sorted(p for p in pids if alive(p))


class Server:
    """One `nmmo arena serve` subprocess, its log appended to `log`."""

    def __init__(self, flags: list[str], log: Path) -> None:
        start = log.stat().st_size if log.exists() else 0
        began = time.monotonic()
        with open(log, "a") as handle:
            self.process = subprocess.Popen([sys.executable, "-m", "nmmo", "arena", "serve", *flags], cwd=ROOT,
                                            stdout=handle, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited ({self.process.returncode}):\n{log.read_text()[start:]}")
            found = re.search(r"on (http://127\.0\.0\.1:\d+)/api/status", log.read_text()[start:])
            if found:
                self.url, self.start_s = found.group(1), time.monotonic() - began
                self.started = time.monotonic()
                return
            time.sleep(0.2)
        self.process.kill()
        raise SystemExit(f"the server did not serve within 120 s:\n{log.read_text()[start:]}")


def in_flight(db_path: Path) -> list[int]:
    from evaluation.arena import db

    with closing(db.connect(db_path, readonly=True)) as conn:
        return [row["claim"] for row in db.claims(conn) if row["attempts"] >= 1]


def check_database(db_path: Path, cut_off: list[int]) -> dict:
    """What the log holds after the soak, and whether it is whole (see the module docstring)."""
    from evaluation.arena import db, queries
    from evaluation.arena.server import check_ratings

    with closing(db.connect(db_path, readonly=True)) as conn:
        episodes = conn.execute("SELECT * FROM episodes ORDER BY id").fetchall()
        claims = [e["claim"] for e in episodes]
        half = [e["id"] for e in episodes if tuple(conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(lifetimes), 0) FROM seats WHERE episode_id = ?", (e["id"],)).fetchone())
            != (e["seats"], e["lifetimes"])]
        left = [c["claim"] for c in db.claims(conn)]
        dropped = {row[0] for row in conn.execute("SELECT claim FROM dropped")}
        _, differences = check_ratings(conn, write=False)
        board = queries.leaderboard(conn)
        return {"episodes": len(episodes), "duplicate_claims": len(claims) - len(set(claims)), "half_episodes": half,
                "cut_off_committed": sum(c in set(claims) for c in cut_off), "cut_off_still_claimed":
                sum(c in set(left) for c in cut_off), "cut_off_dropped": sum(c in dropped for c in cut_off),
                "claims_left": left,
                "replayed": sum(e["attempts"] - 1 for e in episodes),
                "dropped": conn.execute("SELECT COUNT(*) FROM dropped").fetchone()[0],
                "ratings_differences": differences, "entries": len(board),
                "leaderboard": [(row["name"], None if row["sr"] is None else round(row["sr"]), row["episodes"],
                                 sum(row["faults"].values())) for row in board]}


def add_entries(db_path: Path, directory: Path, marker: str, trusted_only: bool = False) -> int:
    from evaluation.arena.probes import write_probes
    from nmmo.cli import main

    (directory / "honest.py").write_text(SUBMISSIONS)
    specs = [*TRUSTED] if trusted_only else [*TRUSTED, *(f"{directory / 'honest.py'}:{name}" for name in HONEST),
                                             *write_probes(directory, marker)]
    for spec in specs:
        if main(["arena", "add", spec, "--db", str(db_path)]) != 0:
            raise SystemExit(f"could not add {spec}")
    return len(specs)


def upload_entries(db_path: Path, url: str, directory: Path, marker: str) -> dict[str, str]:
    """Register one participant per honest submission and probe and upload each through the HTTP API
    (its own file: the class's source with a line naming its participant); return {participant: verdict}."""
    from contextlib import redirect_stdout
    from io import StringIO

    from evaluation.arena.participant_cli import http_post
    from evaluation.arena.probes import PROBES, write_probes
    from nmmo.cli import main

    probes = Path(write_probes(directory / "probe_source", marker)[0].rsplit(":", 1)[0]).read_text()
    uploads = [(name, SUBMISSIONS, name) for name in HONEST] + [(f"probe-{name}", probes, name) for name in PROBES]
    verdicts = {}
    for participant, source, class_name in uploads:
        out = StringIO()
        with redirect_stdout(out):
            if main(["arena", "register", participant, "--db", str(db_path)]) != 0:
                raise SystemExit(f"could not register {participant}: {out.getvalue()}")
        token = out.getvalue().strip().splitlines()[-1]
        body = f"{source}\n# uploaded by {participant}\n".encode()
        headers = {"X-Arena-Filename": "agent.py", "X-Arena-Class": class_name}
        verdict = http_post(url, "/api/submit", token, body, headers)
        verdicts[participant] = verdict["status"] + ("" if verdict["status"] == "accepted" else
                                                     f": {verdict['reason'][:160]}")
        print(f"soak: {participant} v{verdict['version']} {verdicts[participant]}", flush=True)
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ticks", type=int, default=256)
    parser.add_argument("--config", default="tournament")
    parser.add_argument("--seats", type=int, default=4)
    parser.add_argument("--kills", type=int, default=2, help="kill -9s of the server, evenly spread")
    parser.add_argument("--rss-at", type=float, default=5.0, help="minute of the early RSS sample (at most a "
                        "sixth of --minutes)")
    parser.add_argument("--keep-replays", type=int, default=200, help="the server's --keep-replays (0: record no "
                        "replays, as part 1's soak did)")
    parser.add_argument("--upload", action="store_true", help="participants upload the honest submissions and "
                        "the probes through the HTTP API (arena part 2) instead of nmmo arena add")
    parser.add_argument("--out", type=Path, default=None, help="folder for the database and the server's log "
                        "(default: a new temporary one, kept)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="arena-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    db_path, log = out / "arena.db", out / "serve.log"
    if db_path.exists():
        raise SystemExit(f"{db_path} exists: give a new --out")
    os.environ.setdefault("NMMO_CACHE_DIR", str(out / "cache"))
    marker = f"nmmo-soak-probe-{os.getpid()}"
    entries = add_entries(db_path, out, marker, trusted_only=args.upload)
    flags = ["--db", str(db_path), "--port", "0", "--workers", str(args.workers), "--config", args.config,
             "--ticks", str(args.ticks), "--seats", str(args.seats), "--keep-replays", str(args.keep_replays)]
    total_s = args.minutes * 60
    early_s = min(args.rss_at * 60, total_s / 6)
    kill_at = [total_s * (i + 1) / (args.kills + 1) for i in range(args.kills)]
    print(f"soak: {entries} entries added ({entries + 5} with the anchor and bots), {args.minutes:g} min, kill -9 at "
          f"{', '.join(f'{t / 60:.1f}' for t in kill_at)} min; {out}", flush=True)
    server = Server(flags, log)
    uploaded = upload_entries(db_path, server.url, out, marker) if args.upload else None
    began = time.monotonic()
    samples, kills, cut_off = [], [], []
    segment_rss: list[list[tuple[float, float]]] = [[]]
    try:
        next_sample = 0.0
        while (now := time.monotonic() - began) < total_s:
            if now >= next_sample:
                rss = rss_mb(server.process.pid)
                if rss is not None:
                    samples.append((round(now, 1), round(rss, 1)))
                    segment_rss[-1].append((time.monotonic() - server.started, rss))
                next_sample = now + 15
            if kill_at and now >= kill_at[0]:
                kill_at.pop(0)
                deadline = time.monotonic() + 120  # mid-episode: a claim is being played
                while not in_flight(db_path) and time.monotonic() < deadline:
                    time.sleep(0.2)
                family = descendants(server.process.pid) | {server.process.pid}
                claimed = in_flight(db_path)
                server.process.send_signal(signal.SIGKILL)
                server.process.wait()
                left = survivors(family)
                cut_off += claimed
                print(f"soak: kill -9 of the server at {now / 60:.1f} min with claims {claimed} in flight; "
                      f"{len(family)} processes, {len(left)} left", flush=True)
                server = Server(flags, log)
                kills.append({"at_min": round(now / 60, 2), "in_flight": claimed, "processes": len(family),
                              "left": left, "restart_s": round(server.start_s, 1)})
                segment_rss.append([])
            time.sleep(1)
    finally:
        family = descendants(server.process.pid) | {server.process.pid}
        server.process.send_signal(signal.SIGTERM)
        try:
            code = server.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.process.kill()
            code = server.process.wait()
    elapsed_h = (time.monotonic() - began) / 3600
    from evaluation.arena.probes import marked

    left_at_end, forks_left = survivors(family), marked(marker)
    cut_off = sorted(set(cut_off))  # a claim cut off by both kills counts once
    result = check_database(db_path, cut_off)
    early = next((rss for t, rss in samples if t >= early_s), None)
    last_segment = segment_rss[-1]
    seg_early = next((rss for t, rss in last_segment if t >= early_s), None)
    figures = {
        "minutes": args.minutes, "workers": args.workers, "config": args.config, "ticks": args.ticks,
        "entries": result["entries"], "episodes": result["episodes"],
        "episodes_per_hour": round(result["episodes"] / elapsed_h, 1),
        "kills": kills, "final_exit": code, "left_at_end": left_at_end, "probe_forks_left": forks_left,
        "duplicate_claims": result["duplicate_claims"], "half_episodes": len(result["half_episodes"]),
        "cut_off": len(cut_off), "cut_off_committed": result["cut_off_committed"],
        "cut_off_still_claimed": result["cut_off_still_claimed"], "cut_off_dropped": result["cut_off_dropped"],
        "replayed": result["replayed"],
        "dropped": result["dropped"], "ratings_match_recompute": not result["ratings_differences"],
        "rss_early_at_min": round(early_s / 60, 2), "server_rss_early_mb": early,
        "server_rss_end_mb": samples[-1][1] if samples else None,
        "rss_ratio": round(samples[-1][1] / early, 3) if early and samples else None,
        "last_server_rss_ratio": round(last_segment[-1][1] / seg_early, 3) if seg_early and last_segment else None,
        "out": str(out),
        **({"uploads": uploaded, "uploads_accepted": sum(v == "accepted" for v in uploaded.values())}
           if uploaded is not None else {}),
    }
    ok = (not result["duplicate_claims"] and not result["half_episodes"] and not result["ratings_differences"]
          and all(not k["left"] for k in kills) and not left_at_end and not forks_left
          and result["cut_off_committed"] + result["cut_off_still_claimed"] + result["cut_off_dropped"]
          == len(cut_off))
    figures["ok"] = ok
    print("soak leaderboard (name, SR, episodes, faults):")
    for row in result["leaderboard"]:
        print(f"  {row[0]:<28} {row[1] if row[1] is not None else '-':>6} {row[2]:>5} {row[3]:>6}")
    print(f"soak: {result['episodes']} episodes in {elapsed_h * 60:.1f} min ({figures['episodes_per_hour']}/h), "
          f"{len(kills)} kill -9s, {len(cut_off)} claims cut off ({result['cut_off_committed']} committed since, "
          f"{result['cut_off_still_claimed']} still claimed), {result['replayed']} replays, {result['dropped']} "
          f"dropped; duplicates {result['duplicate_claims']}, half episodes {len(result['half_episodes'])}; ratings "
          f"{'equal' if figures['ratings_match_recompute'] else 'DIFFER from'} the recompute; server RSS "
          f"{early} MiB at {early_s / 60:.1f} min -> {figures['server_rss_end_mb']} MiB at the end "
          f"(x{figures['rss_ratio']}; the last server alone x{figures['last_server_rss_ratio']}); processes left: "
          f"{sum(len(k['left']) for k in kills) + len(left_at_end)}, probe forks left: {len(forks_left)}")
    print(json.dumps(figures))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
