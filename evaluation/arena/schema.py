"""The arena database's schema, versioned: an ordered list of migrations.

`MIGRATIONS` holds every step from an empty file to the newest schema, each with its version
number; `migrate` applies the ones a file lacks, each in a transaction of its own that also records
its version in ``schema_version``, so a file is always at exactly one version, and a crash mid-way
leaves it at the last complete one. A file made by a newer version of this code is refused rather
than read with the wrong meaning. What the tables hold: `evaluation.arena.db`.

To change the schema, append a step (``ALTER TABLE``, a new table, an index, a data fix) and never
edit a released one: every existing arena replays the same steps to reach the same schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from evaluation.arena.db import transaction

#: (version, what it does, SQL). Append new steps; never edit a released one.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "entries, claims, the episode log, ratings, dropped claims, meta", """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE entries (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            spec TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('anchor', 'bot', 'submission')),
            added_at REAL NOT NULL,
            active INTEGER NOT NULL DEFAULT 1
        );
        CREATE TABLE claims (
            claim INTEGER PRIMARY KEY,
            entries TEXT NOT NULL,
            seed INTEGER NOT NULL,
            map_seed INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            worker_pid INTEGER,
            claimed_at REAL NOT NULL
        );
        CREATE TABLE episodes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            claim INTEGER NOT NULL UNIQUE,
            seats INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            map_seed INTEGER NOT NULL,
            ticks INTEGER NOT NULL,
            lifetimes INTEGER NOT NULL,
            engine_errors INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            seconds REAL NOT NULL,
            committed_at REAL NOT NULL
        );
        CREATE TABLE seats (
            episode_id INTEGER NOT NULL REFERENCES episodes(id),
            seat INTEGER NOT NULL,
            entry_id INTEGER NOT NULL REFERENCES entries(id),
            lifetimes INTEGER NOT NULL,
            score REAL,
            tie_break REAL,
            rank INTEGER,
            metrics TEXT NOT NULL,
            exception INTEGER NOT NULL,
            timeout INTEGER NOT NULL,
            malformed INTEGER NOT NULL,
            dropped_actions INTEGER NOT NULL,
            restarts INTEGER NOT NULL,
            disabled INTEGER NOT NULL,
            not_started INTEGER NOT NULL,
            answered INTEGER NOT NULL,
            messages TEXT NOT NULL,
            PRIMARY KEY (episode_id, seat)
        );
        CREATE INDEX seats_by_entry ON seats (entry_id, episode_id);
        CREATE TABLE ratings (
            entry_id INTEGER PRIMARY KEY REFERENCES entries(id),
            mu REAL NOT NULL,
            sigma REAL NOT NULL,
            episodes INTEGER NOT NULL
        );
        CREATE TABLE dropped (
            claim INTEGER PRIMARY KEY,
            entries TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            reason TEXT NOT NULL,
            dropped_at REAL NOT NULL
        );
    """),
    (2, "participants with hashed tokens, their uploaded versions, entries linked to them", """
        CREATE TABLE participants (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            salt BLOB NOT NULL,
            token_hash BLOB NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE TABLE versions (
            id INTEGER PRIMARY KEY,
            participant_id INTEGER NOT NULL REFERENCES participants(id),
            number INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('file', 'folder', 'checkpoint')),
            class_name TEXT,
            size INTEGER NOT NULL,
            created_at REAL NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'refused', 'replaced', 'withdrawn')),
            reason TEXT,
            entry_id INTEGER REFERENCES entries(id),
            UNIQUE (participant_id, number)
        );
        CREATE INDEX versions_by_time ON versions (participant_id, created_at);
        ALTER TABLE entries ADD COLUMN participant_id INTEGER REFERENCES participants(id)
    """),
)

def schema_version(conn: sqlite3.Connection) -> int:
    """The file's schema version (0: a new, empty file)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return 0 if row is None else int(row[0])


def migrate(conn: sqlite3.Connection, migrations: Sequence[tuple[int, str, str]] = MIGRATIONS) -> int:
    """Bring the file to the newest schema, one migration per transaction; return its version. A
    file from a newer version of this code is refused (its tables may mean something else)."""
    newest = migrations[-1][0]
    current = schema_version(conn)
    if current > newest:
        raise ValueError(f"the arena database has schema version {current}, newer than this install's {newest}: "
                         "upgrade flatmmo to serve it")
    for version, _, sql in migrations:
        if version <= current:
            continue
        with transaction(conn):
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            for statement in (s for s in sql.split(";") if s.strip()):
                conn.execute(statement)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        current = version
    return current
