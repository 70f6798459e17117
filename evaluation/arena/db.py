"""The arena's storage: one SQLite file through the standard library, its schema versioned.

Why SQLite: the arena is one server on one machine, and SQLite gives it atomic, durable
transactions with no process to run. WAL mode lets ``nmmo arena status``, ``nmmo arena add`` and
the JSON endpoints read (and briefly write) while the server plays; ``synchronous=FULL`` syncs the
log at every commit, so a committed episode survives a kill -9 and a power cut alike.

Tables (version 1):

- ``entries``: the pool. The anchor and the scripted bots are put there when the file is made
  (`ensure_pool`); submissions by ``nmmo arena add``. Specs are stored with their paths absolute.
- ``claims``: episodes handed to a worker and not yet committed (seats, seeds, attempts). A claim
  is all that exists of an episode until it is committed, so a kill -9 can cut off only a claim.
- ``episodes`` and ``seats``: the episode log. `commit_episode` writes an episode, all its seats
  (score, rank, metric means, faults), the rating snapshot of its seated entries, and deletes its
  claim, in one transaction: the log never holds half an episode, and ``episodes.claim`` is
  unique, so none is counted twice. ``episodes.id`` is the commit order the ratings follow.
- ``ratings``: the snapshot (mu, sigma, episodes) after the last commit, checked on every start
  against a recompute from the log (`evaluation.arena.ratings`).
- ``dropped``: claims given up (their worker died too often): a record, never rated.
- ``meta``: the arena's format (config, ticks, seats, metric), its seed and secret, the claim
  counter and the running server's heartbeat.

Version 2 adds ``participants`` (a name and the scrypt hash of its token, never the token) and
``versions`` (each upload: content hash, kind, size, status, the smoke test's refusal reason, the
entry an accepted one became), and links ``entries.participant_id`` to its participant
(`evaluation.arena.participants`).

The schema itself and its migrations: `evaluation.arena.schema`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The fault counters a seat records (`evaluation.faults.Faults` without its messages).
FAULT_COLUMNS = ("exception", "timeout", "malformed", "dropped_actions", "restarts", "disabled", "not_started",
                 "answered")
#: How long a write waits for another writer (``nmmo arena add`` while the server commits).
BUSY_TIMEOUT_S = 30.0


def connect(path: str | Path, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit: `transaction`). `readonly`
    opens the file as it is, never creating it (what status and the endpoints use)."""
    path = Path(path)
    if readonly:
        if not path.exists():
            raise ValueError(f"--db {path}: no arena database there (nmmo arena add or serve makes one)")
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                               isolation_level=None, check_same_thread=False)
    else:
        if path.exists() and path.is_dir():
            raise ValueError(f"--db {path} is a folder, not a database file")
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction: all of it is committed, or (on any exception) none of it.
    ``BEGIN IMMEDIATE`` takes the write lock first, so two writers never deadlock mid-way."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# ------------------------------------------------------------------ meta
def get_meta(conn: sqlite3.Connection, key: str, default: Any = None) -> Any:
    """A meta value (stored as JSON)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None else json.loads(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
    """Store a meta value as JSON (inside the caller's transaction, or on its own)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (key, json.dumps(value)))


# --------------------------------------------------------------- entries
@dataclass(frozen=True)
class Entry:
    id: int
    name: str
    spec: str
    kind: str
    active: bool


def entries(conn: sqlite3.Connection, active_only: bool = False) -> list[Entry]:
    """The pool in the order entries were added."""
    rows = conn.execute("SELECT id, name, spec, kind, active FROM entries" + (" WHERE active" if active_only else "")
                        + " ORDER BY id").fetchall()
    return [Entry(r["id"], r["name"], r["spec"], r["kind"], bool(r["active"])) for r in rows]


def add_entry(conn: sqlite3.Connection, name: str, spec: str, kind: str) -> Entry:
    """Put an entry in the pool (a ValueError names a clash with one already there)."""
    with transaction(conn):
        for column, value in (("name", name), ("spec", spec)):
            row = conn.execute(f"SELECT name FROM entries WHERE {column} = ?", (value,)).fetchone()
            if row is not None:
                raise ValueError(f"the arena already has an entry with {column} {value!r} (entry {row['name']!r})")
        cursor = conn.execute("INSERT INTO entries (name, spec, kind, added_at) VALUES (?, ?, ?, ?)",
                              (name, spec, kind, time.time()))
    return Entry(int(cursor.lastrowid), name, spec, kind, True)


def set_active(conn: sqlite3.Connection, name: str, active: bool) -> None:
    """Retire (or bring back) a submission; its episodes stay in the log."""
    with transaction(conn):
        row = conn.execute("SELECT kind FROM entries WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ValueError(f"the arena has no entry named {name!r}")
        if row["kind"] != "submission":
            raise ValueError(f"{name!r} is the arena's {row['kind']}: it is always in the pool")
        conn.execute("UPDATE entries SET active = ? WHERE name = ?", (int(active), name))


def ensure_pool(conn: sqlite3.Connection, anchor: str, bots: Sequence[tuple[str, str]]) -> None:
    """The anchor and the bots (name, spec) in the pool, added once, in one transaction."""
    with transaction(conn):
        known = {row[0] for row in conn.execute("SELECT spec FROM entries")}
        for (name, spec), kind in [*((bot, "bot") for bot in bots), ((anchor_name(anchor), anchor), "anchor")]:
            if spec not in known:
                conn.execute("INSERT INTO entries (name, spec, kind, added_at) VALUES (?, ?, ?, ?)",
                             (name, spec, kind, time.time()))


def anchor_name(spec: str) -> str:
    """The anchor's entry name: its display name (``scripted:Combat`` -> ``Combat``)."""
    return spec.split(":", 1)[1] if spec.startswith("scripted:") else spec


# ---------------------------------------------------------------- claims
def new_claim(conn: sqlite3.Connection, entry_ids: Sequence[int], seed_of: Any, map_seed_of: Any) -> int:
    """Claim the next episode number for these seats (`seed_of(claim)`, `map_seed_of(claim)` give
    its seeds), in one transaction with the counter, so no number is ever given out twice."""
    with transaction(conn):
        claim = int(get_meta(conn, "next_claim", 0))
        set_meta(conn, "next_claim", claim + 1)
        conn.execute("INSERT INTO claims (claim, entries, seed, map_seed, claimed_at) VALUES (?, ?, ?, ?, ?)",
                     (claim, json.dumps(list(entry_ids)), int(seed_of(claim)), int(map_seed_of(claim)), time.time()))
    return claim


def dispatched(conn: sqlite3.Connection, claim: int, worker_pid: int | None) -> int:
    """Count one more attempt at a claim (handed to the worker `worker_pid`); returns the attempts."""
    with transaction(conn):
        conn.execute("UPDATE claims SET attempts = attempts + 1, worker_pid = ?, claimed_at = ? WHERE claim = ?",
                     (worker_pid, time.time(), claim))
        return int(conn.execute("SELECT attempts FROM claims WHERE claim = ?", (claim,)).fetchone()[0])


def claims(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """The claims not committed, oldest first."""
    return conn.execute("SELECT * FROM claims ORDER BY claim").fetchall()


def drop_claim(conn: sqlite3.Connection, claim: int, reason: str) -> None:
    """Give a claim up: recorded in ``dropped``, never rated."""
    with transaction(conn):
        row = conn.execute("SELECT entries, attempts FROM claims WHERE claim = ?", (claim,)).fetchone()
        if row is None:
            return
        conn.execute("INSERT OR REPLACE INTO dropped (claim, entries, attempts, reason, dropped_at) "
                     "VALUES (?, ?, ?, ?, ?)", (claim, row["entries"], row["attempts"], reason, time.time()))
        conn.execute("DELETE FROM claims WHERE claim = ?", (claim,))


# -------------------------------------------------------------- episodes
@dataclass
class SeatRecord:
    """One seat of a finished episode, as the log keeps it."""

    entry_id: int
    lifetimes: int  # lives its agents lived (respawns count again)
    score: float | None
    tie_break: float | None
    rank: int | None
    metrics: dict[str, float | None]
    faults: dict[str, Any]


@dataclass
class EpisodeRecord:
    """A finished episode, ready to commit."""

    claim: int
    seed: int
    map_seed: int
    ticks: int
    engine_errors: int
    attempts: int
    seconds: float
    seats: list[SeatRecord] = field(default_factory=list)

    @property
    def lifetimes(self) -> int:
        return sum(seat.lifetimes for seat in self.seats)


def commit_episode(conn: sqlite3.Connection, record: EpisodeRecord,
                   ratings: dict[int, tuple[float, float, int]]) -> int:
    """Write a finished episode, all its seats and the new ratings of its entries ({entry: (mu,
    sigma, episodes)}), and delete its claim: one transaction. Returns the episode's id (its place
    in the commit order). A claim committed before is refused (sqlite3.IntegrityError)."""
    with transaction(conn):
        cursor = conn.execute(
            "INSERT INTO episodes (claim, seats, seed, map_seed, ticks, lifetimes, engine_errors, attempts, seconds, "
            "committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.claim, len(record.seats), record.seed, record.map_seed, record.ticks, record.lifetimes,
             record.engine_errors, record.attempts, record.seconds, time.time()))
        episode_id = int(cursor.lastrowid)
        conn.executemany(
            f"INSERT INTO seats (episode_id, seat, entry_id, lifetimes, score, tie_break, rank, metrics, "
            f"{', '.join(FAULT_COLUMNS)}, messages) VALUES ({', '.join('?' * (9 + len(FAULT_COLUMNS)))})",
            [(episode_id, i, s.entry_id, s.lifetimes, s.score, s.tie_break, s.rank, json.dumps(s.metrics),
              *(int(s.faults.get(k, 0)) for k in FAULT_COLUMNS), json.dumps(list(s.faults.get("messages", []))))
             for i, s in enumerate(record.seats)])
        conn.executemany("INSERT OR REPLACE INTO ratings (entry_id, mu, sigma, episodes) VALUES (?, ?, ?, ?)",
                         [(entry, mu, sigma, n) for entry, (mu, sigma, n) in ratings.items()])
        conn.execute("DELETE FROM claims WHERE claim = ?", (record.claim,))
    return episode_id


def replace_ratings(conn: sqlite3.Connection, ratings: dict[int, tuple[float, float, int]]) -> None:
    """Replace the whole snapshot (after a recompute disagreed with it)."""
    with transaction(conn):
        conn.execute("DELETE FROM ratings")
        conn.executemany("INSERT INTO ratings (entry_id, mu, sigma, episodes) VALUES (?, ?, ?, ?)",
                         [(entry, mu, sigma, n) for entry, (mu, sigma, n) in ratings.items()])


def stored_ratings(conn: sqlite3.Connection) -> dict[int, tuple[float, float, int]]:
    """The snapshot as stored: {entry: (mu, sigma, episodes)}."""
    return {r["entry_id"]: (r["mu"], r["sigma"], r["episodes"])
            for r in conn.execute("SELECT entry_id, mu, sigma, episodes FROM ratings")}
