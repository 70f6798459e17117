"""Participants: a name, a token (stored hashed), and the versions of the agent they upload.

Tokens. ``register`` draws 256 random bits and returns ``NAME.SECRET`` once; the database keeps
only a per-participant salt and ``scrypt(token, salt)``, compared with `hmac.compare_digest`, so a
copy of the file (a backup) gives nobody a usable token. The name in front lets the server hash
one candidate, not every participant's.

Versions. Every upload is a row of ``versions`` (pending, then accepted or refused with the smoke
test's reason), counted against the hourly rate limit whatever its fate, so a restart does not
reset the limit. An accepted version becomes an entry of its own, ``NAME:vN``, and the
participant's previous entry retires from seating (status ``replaced``); its episodes and rating
stay in the log. Why a new entry and not the old rating carried over: a version is other code, and
the old rating is no evidence about it; a fresh entry (sigma 8.3) is seated nearly every episode
by the matchmaking until it settles, and the ratings stay a plain function of the log.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from evaluation.arena import db

#: A participant's name: it appears in URLs, entry names (NAME:v2) and tokens (NAME.SECRET).
PARTICIPANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
#: scrypt's cost: about 15 ms and 16 MiB a check on a laptop core.
SCRYPT = {"n": 2**14, "r": 8, "p": 1}
#: A refusal reason is cut to this many characters (it may quote a traceback).
MAX_REASON = 4000


class Unauthorized(ValueError):
    """A missing or wrong token (HTTP 401)."""


class RateLimited(ValueError):
    """Too many uploads in the last hour (HTTP 429)."""


@dataclass(frozen=True)
class Participant:
    id: int
    name: str


#: scrypt checks at once: each takes 16 MiB, so a flood of made-up tokens waits instead of piling up.
_HASHING = threading.BoundedSemaphore(2)


def _hash(token: str, salt: bytes) -> bytes:
    with _HASHING:
        return hashlib.scrypt(token.encode()[:1024], salt=salt, **SCRYPT)


def check_name(name: str) -> str:
    if not PARTICIPANT_PATTERN.fullmatch(name or ""):
        raise ValueError(f"participant name {name!r}: 1-32 letters, digits, _ and -, starting with a letter or digit")
    return name


def register(conn: sqlite3.Connection, name: str) -> str:
    """Add a participant; return its token (shown once: only its hash is stored)."""
    check_name(name)
    token = f"{name}.{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    with db.transaction(conn):
        if conn.execute("SELECT 1 FROM participants WHERE name = ?", (name,)).fetchone():
            raise ValueError(f"a participant named {name!r} is registered already")
        conn.execute("INSERT INTO participants (name, salt, token_hash, created_at) VALUES (?, ?, ?, ?)",
                     (name, salt, _hash(token, salt), time.time()))
    return token


def authenticate(conn: sqlite3.Connection, token: str | None) -> Participant:
    """The participant a token belongs to (Unauthorized otherwise, without saying which part was wrong)."""
    name = (token or "").partition(".")[0]
    row = conn.execute("SELECT id, name, salt, token_hash FROM participants WHERE name = ?", (name,)).fetchone()
    salt, stored = (row["salt"], row["token_hash"]) if row else (b"\0" * 16, b"")
    digest = _hash(token or "", salt)  # hashed even for an unknown name: the same time either way
    if row is None or not token or not hmac.compare_digest(digest, stored):
        raise Unauthorized("a missing or wrong token")
    return Participant(row["id"], row["name"])


def owner_of(conn: sqlite3.Connection, entry_name: str) -> int | None:
    """The participant id an entry belongs to (None: the operator's or a bot)."""
    row = conn.execute("SELECT participant_id FROM entries WHERE name = ?", (entry_name,)).fetchone()
    return None if row is None else row["participant_id"]


# -------------------------------------------------------------- versions
def check_rate(conn: sqlite3.Connection, who: Participant, per_hour: int) -> None:
    """RateLimited when `who` uploaded `per_hour` versions in the last hour (`new_version` checks it
    again inside its transaction, so parallel uploads cannot slip past it)."""
    since = time.time() - 3600
    times = [r[0] for r in conn.execute("SELECT created_at FROM versions WHERE participant_id = ? AND created_at > ? "
                                        "ORDER BY created_at", (who.id, since))]
    if len(times) >= per_hour:
        wait = max(1, int(times[0] + 3600 - time.time()) // 60 + 1)
        raise RateLimited(f"{len(times)} uploads in the last hour, the limit is {per_hour}: the next is accepted in "
                          f"about {wait} min")


def new_version(conn: sqlite3.Connection, who: Participant, sha: str, kind: str, class_name: str | None,
                size: int, per_hour: int | None = None) -> int:
    """Record an upload as pending (RateLimited over `per_hour`, checked under the write lock); return
    its version number."""
    with db.transaction(conn):
        if per_hour is not None:
            check_rate(conn, who, per_hour)
        number = conn.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE participant_id = ?",
                              (who.id,)).fetchone()[0]
        conn.execute("INSERT INTO versions (participant_id, number, sha256, kind, class_name, size, created_at, "
                     "status) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')", (who.id, number, sha, kind, class_name, size,
                                                                        time.time()))
    return int(number)


def refuse(conn: sqlite3.Connection, who: Participant, number: int, reason: str) -> None:
    with db.transaction(conn):
        conn.execute("UPDATE versions SET status = 'refused', reason = ? WHERE participant_id = ? AND number = ?",
                     (reason[:MAX_REASON], who.id, number))


def accept(conn: sqlite3.Connection, who: Participant, number: int, spec: str) -> str:
    """Make version `number` the participant's entry (``NAME:vN``), retiring the previous one; one
    transaction. Returns the entry's name. Bytes identical to an earlier version of the participant's
    bring that entry back (same code, same rating); identical to another's are refused."""
    name = f"{who.name}:v{number}"
    with db.transaction(conn):
        _retire(conn, who, "replaced")
        same = conn.execute("SELECT id, name, participant_id FROM entries WHERE spec = ?", (spec,)).fetchone()
        if same is not None and same["participant_id"] != who.id:
            raise ValueError("identical code is already an entry of the arena: send code of your own")
        if same is not None:  # the same bytes as an earlier version of its own: that entry, and its rating, again
            entry, name = same["id"], same["name"]
            conn.execute("UPDATE entries SET active = 1 WHERE id = ?", (entry,))
        else:
            entry = conn.execute("INSERT INTO entries (name, spec, kind, added_at, participant_id) VALUES "
                                 "(?, ?, 'submission', ?, ?)", (name, spec, time.time(), who.id)).lastrowid
        conn.execute("UPDATE versions SET status = 'accepted', entry_id = ? WHERE participant_id = ? AND number = ?",
                     (entry, who.id, number))
    return name


def _retire(conn: sqlite3.Connection, who: Participant, status: str) -> int:
    current = conn.execute("SELECT number, entry_id FROM versions WHERE participant_id = ? AND status = 'accepted'",
                           (who.id,)).fetchall()
    for row in current:
        conn.execute("UPDATE entries SET active = 0 WHERE id = ?", (row["entry_id"],))
        conn.execute("UPDATE versions SET status = ? WHERE participant_id = ? AND number = ?",
                     (status, who.id, row["number"]))
    return len(current)


def withdraw(conn: sqlite3.Connection, who: Participant) -> int:
    """Retire the participant's accepted version from seating (its log and rating stay); return how many."""
    with db.transaction(conn):
        return _retire(conn, who, "withdrawn")


def refuse_stale_pending(conn: sqlite3.Connection) -> int:
    """Versions left pending by a server that stopped mid smoke test: refused, with a reason to resubmit."""
    with db.transaction(conn):
        return conn.execute("UPDATE versions SET status = 'refused', reason = 'the server stopped during its smoke "
                            "test: submit it again' WHERE status = 'pending'").rowcount


def versions(conn: sqlite3.Connection, participant: str, owner: bool) -> dict[str, Any]:
    """A participant's versions, newest first; refusal reasons only for its `owner` (they may quote code)."""
    row = conn.execute("SELECT id, name, created_at FROM participants WHERE name = ?", (participant,)).fetchone()
    if row is None:
        raise KeyError(participant)
    out = []
    for v in conn.execute("SELECT v.*, e.name AS entry FROM versions v LEFT JOIN entries e ON e.id = v.entry_id "
                          "WHERE v.participant_id = ? ORDER BY v.number DESC", (row["id"],)):
        reason = v["reason"] if owner else ("refused by the smoke test (its owner sees why)" if v["reason"] else None)
        out.append({"version": v["number"], "status": v["status"], "kind": v["kind"], "size": v["size"],
                    "created_at": v["created_at"], "entry": v["entry"], "reason": reason,
                    **({"sha256": v["sha256"], "class_name": v["class_name"]} if owner else {})})
    return {"participant": row["name"], "registered_at": row["created_at"], "owner": owner, "versions": out}
