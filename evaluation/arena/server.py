"""The arena's service loop: keep every worker busy, commit each finished episode, lose nothing.

One server per database (an exclusive lock on ``DB.lock``, released by the kernel whatever way the
server ends). On start it migrates the schema, checks the ratings snapshot against a recompute from
the log (`evaluation.arena.ratings`; the recompute wins, with a log line), and queues the claims a
previous run left (episodes that were being played when it stopped) to be played again first. Then,
until stopped (Ctrl-C, SIGTERM, --max-episodes): every idle worker gets the next claim (a replay,
else a new one seated by `evaluation.arena.matchmaking`), each result is committed in one
transaction (`evaluation.arena.db.commit_episode`) and the ratings in memory follow it.

Why nothing is lost or counted twice: an episode exists only as a claim until the transaction that
writes it whole deletes the claim; a kill -9 of the server, or of a worker, at any moment leaves
either the committed episode or its claim, never both and never a part. A claim whose worker dies
is played again on a new worker (`MAX_ATTEMPTS` in all, then dropped and recorded in ``dropped``);
the workers die with the server (`evaluation.arena.workers`).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.arena import db, participants, replays, schema, settings
from evaluation.arena.api import ArenaHTTPServer, Participation
from evaluation.arena.matchmaking import Candidate, choose_seats, seat_rng
from evaluation.arena.queries import pid_namespace
from evaluation.arena.ratings import Rating, default_rating, differences, finite, rate_episode, recompute, seat_ranks
from evaluation.arena.settings import ArenaFormat
from evaluation.arena.uploads import UploadLimits, arena_dir
from evaluation.arena.workers import Event, ProcessWorkers, RayWorkers
from evaluation.episode import EpisodeResult, EpisodeTask
from evaluation.rating import ANCHOR
from evaluation.sandbox.host import Limits

#: Tries at one claim (its worker died, or the episode raised) before it is dropped.
MAX_ATTEMPTS = 3
#: Restarts of a submission's sandboxed worker per episode (the tournament's default).
MAX_RESTARTS = 5
#: How often the heartbeat (meta ``server``) is written.
HEARTBEAT_S = 2.0
#: How long the loop waits for a worker's event before looking again.
POLL_S = 0.5


def log(message: str) -> None:
    """One plain progress line (a service's log: no progress bars, no colours)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} arena: {message}", flush=True)


def open_arena(path: str | Path) -> Any:
    """A write connection to the arena at `path`, migrated, with the anchor and bots in its pool."""
    conn = db.connect(path)
    schema.migrate(conn)
    db.ensure_pool(conn, ANCHOR, [(spec.split(":", 1)[1], spec) for spec in settings.BOTS])
    return conn


def check_ratings(conn: Any, write: bool = True) -> tuple[dict[int, Rating], list[str]]:
    """Recompute the ratings from the log and compare them with the snapshot: the recompute and the
    differences (one line each; none: they agree). With `write`, a differing snapshot is replaced."""
    computed, inconsistent = recompute(conn)
    lines = differences(db.stored_ratings(conn), computed)
    lines += [f"episode {e}: its stored ranks are not the ranks its stored scores give" for e in inconsistent]
    if lines and write:
        db.replace_ratings(conn, {entry: rating.as_tuple() for entry, rating in computed.items()})
    return computed, lines


@dataclass
class ServeOptions:
    """How to serve (not what: that is the format)."""

    workers: int = 2
    host: str = "127.0.0.1"
    port: int = 8090
    ray_address: str | None = None
    max_episodes: int | None = None
    viewer_port: int | None = None  # serve the replays in the viewer on this port (0: any free one)
    keep_replays: int = 200  # the newest replays kept (0: record none)
    replay_mb: float = 2048.0  # and at most this many MiB of them
    limits: UploadLimits = UploadLimits()
    unsandboxed_uploads: bool = False  # take uploads without the namespace sandbox (the operator's risk)


class ArenaServer:
    """The service (see the module docstring); `run` blocks until it stops."""

    def __init__(self, path: str | Path, requested: dict[str, Any], options: ServeOptions,
                 seed: int | None = None) -> None:
        self.path, self.requested, self.options, self.seed_flag = Path(path), requested, options, seed
        self.live: dict[str, Any] = {}
        self.in_flight: dict[int, tuple[int, ...]] = {}  # claim -> its entries
        self.replay: list[Any] = []

    # ------------------------------------------------------------ start
    def run(self) -> int:
        lock = self._lock()
        try:
            self.conn = open_arena(self.path)
            self.form = settings.settle_format(self.conn, self.requested, self.seed_flag)
            self.seed, self.secret = int(db.get_meta(self.conn, "seed")), settings.secret(self.conn)
            self._resume()
            self.root = arena_dir(self.path)
            viewer_port = self._start_viewer()
            self.http = ArenaHTTPServer(self.options.host, self.options.port, self.path, lambda: self.live,
                                        Participation(self.root, self.options.limits, viewer_port,
                                                      self.options.unsandboxed_uploads))
            threading.Thread(target=self.http.serve_forever, name="arena-http", daemon=True).start()
            self.url = f"http://{self.options.host}:{self.http.server_address[1]}"
            self.workers = (RayWorkers(self.options.workers, self.options.ray_address) if self.options.ray_address
                            else ProcessWorkers(self.options.workers))
            log(f"serving {self.path} on {self.url}/api/status: {self.options.workers} worker(s), "
                f"{self.form.config_name} for {self.form.ticks} ticks, the anchor and {self.form.seats} seats an "
                f"episode, {len(self.replay)} claim(s) to replay")
            try:
                self._loop()
            finally:
                self._stop()
        finally:
            lock.close()
        return 0

    def _lock(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(f"{self.path}.lock", "a")  # noqa: SIM115 - held for the server's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ValueError(f"another arena server is serving {self.path} (it holds {self.path}.lock): one "
                             "server per database") from None
        return handle

    def _start_viewer(self) -> int | None:
        if self.options.viewer_port is None:
            return None
        self.viewer, port = replays.start_viewer(self.root, self.options.host, self.options.viewer_port)
        log(f"the viewer serves the replays on http://{self.options.host}:{port}/")
        return port

    def _resume(self) -> None:
        stale = participants.refuse_stale_pending(self.conn)
        if stale:
            log(f"{stale} upload(s) left pending by a stopped server were refused (their owners may submit again)")
        computed, lines = check_ratings(self.conn)
        for line in lines[:10]:
            log(f"ratings: {line}")
        if lines:
            log(f"ratings: the stored snapshot disagreed with the log in {len(lines)} place(s); the recompute wins")
        self.ratings = computed
        count = self.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        log(f"ratings recomputed from {count} committed episode(s)" + ("" if lines else ": the snapshot agrees"))
        active = {e.id for e in db.entries(self.conn, active_only=True)}
        for claim in db.claims(self.conn):
            if not set(json.loads(claim["entries"])) <= active:
                db.drop_claim(self.conn, claim["claim"], "an entry it seated was retired")
            elif claim["attempts"] >= MAX_ATTEMPTS:
                db.drop_claim(self.conn, claim["claim"], f"cut off {claim['attempts']} times")
            else:
                self.replay.append(claim)

    # ------------------------------------------------------------- loop
    def _loop(self) -> None:
        beat = 0.0
        while not self._done():
            changed = False
            for slot in self.workers.idle():
                task = self._next_task(slot)
                if task is None:
                    break
                changed = True
                lost = self.workers.submit(slot, task)
                if lost is not None:
                    self._handle(lost)
            for event in self.workers.poll(POLL_S):
                changed = True
                self._handle(event)
            if changed or time.monotonic() - beat > HEARTBEAT_S:
                self._refresh_live()
            if time.monotonic() - beat > HEARTBEAT_S:
                self._heartbeat()
                beat = time.monotonic()

    def _committed(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]

    def _done(self) -> bool:
        return self.options.max_episodes is not None and self._committed() >= self.options.max_episodes

    def _next_task(self, slot: int) -> EpisodeTask | None:
        if self.replay:
            claim = self.replay.pop(0)
        elif self.options.max_episodes is not None and \
                self._committed() + len(self.in_flight) >= self.options.max_episodes:
            return None
        else:
            claim = self._new_claim()
        entries = {e.id: e for e in db.entries(self.conn)}
        seated = tuple(json.loads(claim["entries"]))
        db.dispatched(self.conn, claim["claim"], self.workers.pid(slot))
        self.in_flight[claim["claim"]] = seated
        return EpisodeTask(claim["claim"], self.form.episode_config(len(seated)), self.form.config_name,
                           tuple(entries[e].spec for e in seated), claim["seed"], claim["map_seed"],
                           self.form.time_budget, Limits(), MAX_RESTARTS, self._replay(claim["claim"]), self.secret,
                           "own", tuple(entries[e].name for e in seated))  # names, never an upload's stored path

    def _replay(self, claim: int) -> str | None:
        if not self.options.keep_replays:
            return None
        path = replays.replay_path(self.root, claim)
        path.parent.mkdir(parents=True, exist_ok=True)
        return str(path)

    def _new_claim(self) -> Any:
        busy: dict[int, int] = {}
        for seated in self.in_flight.values():
            for entry in seated:
                busy[entry] = busy.get(entry, 0) + 1
        pool = db.entries(self.conn, active_only=True)
        anchor = next(e.id for e in pool if e.kind == "anchor")
        candidates = [Candidate(e.id, *self._rating(e.id)[:2], busy.get(e.id, 0)) for e in pool]
        claim_number = int(db.get_meta(self.conn, "next_claim", 0))
        seated = choose_seats(candidates, anchor, self.form.seats, seat_rng(self.seed, claim_number))
        number = db.new_claim(self.conn, seated, lambda c: settings.episode_seed(self.seed, c),
                              lambda c: settings.map_seed(self.form, c))
        return self.conn.execute("SELECT * FROM claims WHERE claim = ?", (number,)).fetchone()

    def _rating(self, entry: int) -> tuple[float, float, int]:
        return self.ratings.get(entry, default_rating()).as_tuple()

    # ----------------------------------------------------------- events
    def _handle(self, event: Event) -> None:
        seated = self.in_flight.pop(event.claim, None)
        if seated is None:
            return
        if event.kind == "result":
            try:
                self._commit(event.claim, seated, event.result)
                return
            except sqlite3.IntegrityError as err:  # committed before: its claim went with it, nothing to do
                log(f"claim {event.claim} was committed already ({err}); this result is ignored")
                return
            except ValueError as err:  # a result that does not fit its claim: play it again
                event = Event("error", event.slot, event.claim, reason=str(err))
        row = self.conn.execute("SELECT * FROM claims WHERE claim = ?", (event.claim,)).fetchone()
        what = "lost its worker" if event.kind == "lost" else "raised"
        if row["attempts"] >= MAX_ATTEMPTS:
            db.drop_claim(self.conn, event.claim, f"{what} {row['attempts']} times; last: {event.reason}")
            log(f"claim {event.claim} dropped after {row['attempts']} attempts: {event.reason}")
        else:
            self.replay.insert(0, row)
            log(f"claim {event.claim} {what} ({event.reason}): it is played again")

    def _commit(self, claim: int, seated: tuple[int, ...], result: EpisodeResult) -> None:
        row = self.conn.execute("SELECT * FROM claims WHERE claim = ?", (claim,)).fetchone()
        record = episode_record(result, row, seated, self.form)
        ranks = [seat.rank for seat in record.seats]
        new = rate_episode(self.ratings, list(seated), ranks)
        episode = db.commit_episode(self.conn, record, {e: r.as_tuple() for e, r in new.items()})
        self.ratings.update(new)
        if self.options.keep_replays:
            replays.prune(self.root, self.options.keep_replays, self.options.replay_mb)
        names = {e.id: e.name for e in db.entries(self.conn)}
        order = sorted(range(len(seated)), key=lambda i: (ranks[i] is None, ranks[i] or 0))
        log(f"episode {episode} (claim {claim}, {result.seconds:.1f} s) committed: "
            + ", ".join(f"{names[seated[i]]} {'-' if ranks[i] is None else ranks[i] + 1}" for i in order))

    # ------------------------------------------------------------ state
    def _refresh_live(self) -> None:
        """What /api/status shows of the running server (read by the HTTP thread: one reference swap)."""
        names = {e.id: e.name for e in db.entries(self.conn)}
        busy = [{"slot": slot, "pid": pid, "claim": claim, "seconds": round(seconds, 1),
                 "entries": [names[e] for e in self.in_flight.get(claim, ())]}
                for slot, (claim, pid, seconds) in sorted(self.workers.busy().items())]
        self.live = {"pid": os.getpid(), "url": self.url, "rss_mb": rss_mb(), "workers": self.options.workers,
                     "ray": self.options.ray_address, "busy": busy,
                     "worker_pids": [self.workers.pid(i) for i in range(self.options.workers)],
                     "updated": time.time()}

    def _heartbeat(self) -> None:
        """The server's state in the database, for nmmo arena status (whether a server runs, where)."""
        state = {"pid": os.getpid(), "url": self.url, "heartbeat": time.time(), "rss_mb": rss_mb(),
                 "host_pid_ns": pid_namespace(), "workers": self.options.workers, "ray": self.options.ray_address}
        with db.transaction(self.conn):
            db.set_meta(self.conn, "server", state)

    def _stop(self) -> None:
        workers = getattr(self, "workers", None)
        if workers is not None:
            workers.close()
        viewer = getattr(self, "viewer", None)
        if viewer is not None:
            viewer.should_exit = True
        http = getattr(self, "http", None)
        if http is not None:
            http.shutdown()
            http.server_close()
        try:
            with db.transaction(self.conn):
                db.set_meta(self.conn, "server", {"pid": os.getpid(), "stopped": time.time()})
        finally:
            self.conn.close()
        log(f"stopped: {len(self.in_flight)} episode(s) being played were left as claims, played again by the next "
            "serve")


def episode_record(result: EpisodeResult, claim: Any, seated: tuple[int, ...], form: ArenaFormat) -> db.EpisodeRecord:
    """A finished episode as the log keeps it: per seat, the score and tie-break (the mean metric of
    its agents), the rank they give, the metric means and the faults."""
    if result.index != claim["claim"] or len(result.faults) != len(seated):
        raise ValueError(f"a worker returned episode {result.index} with {len(result.faults)} seats for claim "
                         f"{claim['claim']} with {len(seated)}")
    scores = [finite(s) for s in result.scores(form.metric)]
    ties = [finite(t) for t in result.scores(form.tie_break)]
    ranks = seat_ranks(scores, ties)
    metrics = result.metrics()
    lives = np.bincount(result.owners, minlength=len(seated))[:len(seated)]
    seats = [db.SeatRecord(entry, int(lives[i]), scores[i], ties[i], ranks[i],
                           {name: finite(cell["mean"]) for name, cell in metrics[result.policies[i]].items()},
                           result.faults[i].to_dict()) for i, entry in enumerate(seated)]
    return db.EpisodeRecord(claim["claim"], claim["seed"], claim["map_seed"], result.ticks, result.engine_errors,
                            claim["attempts"], result.seconds, seats)


def rss_mb() -> float | None:
    """Resident memory of this process, MiB (Linux; None elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None

