"""What ``nmmo arena status`` and the JSON endpoints read: plain dicts, JSON-ready, straight from the
database (a read-only connection works while the server writes: WAL).

The leaderboard reads the ratings snapshot, which every commit updates in the same transaction as
its episode, so it always describes exactly the committed log. Nothing here returns the deal's
secret or the config's TOML.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any

from evaluation.arena import db, schema
from evaluation.arena.ratings import Rating, sr_rows
from evaluation.faults import all_faults
from nmmo.engines.process import process_exists

#: A server whose heartbeat is older than this is reported as not running.
STALE_S = 15.0
#: The most rows one request returns.
MAX_LIMIT = 500


def _entry(conn: sqlite3.Connection, name: str) -> sqlite3.Row:
    row = conn.execute("SELECT id, name, spec, kind, active FROM entries WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise KeyError(name)
    return row


def _names(conn: sqlite3.Connection) -> dict[int, str]:
    return {r["id"]: r["name"] for r in conn.execute("SELECT id, name FROM entries")}


def leaderboard(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every entry, rated ones by SR (rank 1 first), then the unrated in the order they joined."""
    stored = {entry: Rating(*values) for entry, values in db.stored_ratings(conn).items()}
    anchor = conn.execute("SELECT id FROM entries WHERE kind = 'anchor'").fetchone()
    rows = sr_rows(stored, anchor["id"] if anchor else -1)
    faults = {r["entry_id"]: r for r in conn.execute(
        "SELECT entry_id, SUM(exception) AS exception, SUM(timeout) AS timeout, SUM(malformed) AS malformed, "
        "SUM(not_started) AS not_started, SUM(answered = 0 AND (exception + timeout + malformed + not_started) > 0) "
        "AS all_faults, MAX(episode_id) AS last_episode FROM seats GROUP BY entry_id")}
    out = []
    for entry in conn.execute("SELECT e.id, e.name, e.spec, e.kind, e.active, e.added_at, p.name AS participant, "
                              "(SELECT MIN(number) FROM versions v WHERE v.entry_id = e.id) AS version FROM entries e "
                              "LEFT JOIN participants p ON p.id = e.participant_id ORDER BY e.id"):
        record = faults.get(entry["id"])
        rating = rows.get(entry["id"])
        out.append({"name": entry["name"], "spec": entry["spec"], "kind": entry["kind"],
                    "active": bool(entry["active"]), "added_at": entry["added_at"],
                    "participant": entry["participant"], "version": entry["version"] and f"v{entry['version']}",
                    **({"sr": None, "ci_low": None, "ci_high": None, "mu": None, "sigma": None, "episodes": 0}
                       if rating is None else rating),
                    "faults": {k: int(record[k]) if record else 0 for k in ("exception", "timeout", "malformed",
                                                                             "not_started")},
                    "all_fault_episodes": int(record["all_faults"]) if record else 0,
                    "last_episode": record["last_episode"] if record else None})
    rated = sorted((r for r in out if r["episodes"]), key=lambda r: -r["sr"])
    for place, row in enumerate(rated, start=1):
        row["rank"] = place
    unrated = [dict(r, rank=None) for r in out if not r["episodes"]]
    return rated + unrated


def entry_episodes(conn: sqlite3.Connection, name: str, limit: int = 50, before: int | None = None) -> dict[str, Any]:
    """An entry's latest episodes (newest first, ids below `before`): its seat and everyone's rank."""
    entry = _entry(conn, name)
    names = _names(conn)
    limit = max(1, min(limit, MAX_LIMIT))
    ids = [r[0] for r in conn.execute(
        "SELECT episode_id FROM seats WHERE entry_id = ? AND episode_id < ? ORDER BY episode_id DESC LIMIT ?",
        (entry["id"], before if before is not None else 2**62, limit))]
    episodes = []
    for episode_id in ids:
        head = conn.execute("SELECT * FROM episodes WHERE id = ?", (episode_id,)).fetchone()
        seats = conn.execute("SELECT * FROM seats WHERE episode_id = ? ORDER BY seat", (episode_id,)).fetchall()
        mine = next(s for s in seats if s["entry_id"] == entry["id"])
        episodes.append({
            "episode": episode_id, "claim": head["claim"], "committed_at": head["committed_at"],
            "seconds": head["seconds"], "ticks": head["ticks"], "seed": head["seed"], "map_seed": head["map_seed"],
            "attempts": head["attempts"], "rank": mine["rank"], "score": mine["score"], "lifetimes": mine["lifetimes"],
            "metrics": json.loads(mine["metrics"]),
            "seats": [{"entry": names[s["entry_id"]], "rank": s["rank"], "score": s["score"]} for s in seats]})
    return {"entry": entry["name"], "kind": entry["kind"], "episodes": episodes,
            "next_before": ids[-1] if len(ids) == limit else None}


def entry_faults(conn: sqlite3.Connection, name: str, limit: int = 50, before: int | None = None) -> dict[str, Any]:
    """An entry's episodes with a fault (newest first): counts by kind and the first messages."""
    entry = _entry(conn, name)
    limit = max(1, min(limit, MAX_LIMIT))
    rows = conn.execute(
        f"SELECT * FROM seats WHERE entry_id = ? AND episode_id < ? AND (exception + timeout + malformed + "
        f"not_started + restarts) > 0 ORDER BY episode_id DESC LIMIT {limit}",
        (entry["id"], before if before is not None else 2**62)).fetchall()
    faults = []
    for seat in rows:
        record = {k: seat[k] for k in db.FAULT_COLUMNS} | {"messages": json.loads(seat["messages"])}
        faults.append({"episode": seat["episode_id"], **record, "all_faults": all_faults(record)})
    totals = conn.execute(f"SELECT {', '.join(f'COALESCE(SUM({k}), 0) AS {k}' for k in db.FAULT_COLUMNS)}, "
                          "COUNT(*) AS episodes FROM seats WHERE entry_id = ?", (entry["id"],)).fetchone()
    return {"entry": entry["name"], "totals": dict(totals), "faults": faults,
            "next_before": rows[-1]["episode_id"] if len(rows) == limit else None}


def summary(conn: sqlite3.Connection) -> dict[str, Any]:
    """The arena at a glance: the log, what is being played, what was replayed or dropped, the server."""
    names = _names(conn)
    count, last, replays = conn.execute(
        "SELECT COUNT(*), MAX(committed_at), COALESCE(SUM(attempts - 1), 0) FROM episodes").fetchone()
    in_flight = [{"claim": c["claim"], "entries": [names.get(e, str(e)) for e in json.loads(c["entries"])],
                  "attempts": c["attempts"], "worker_pid": c["worker_pid"], "claimed_at": c["claimed_at"]}
                 for c in db.claims(conn)]
    dropped = conn.execute("SELECT COUNT(*) FROM dropped").fetchone()[0]
    form = db.get_meta(conn, "format")
    return {"schema_version": schema.schema_version(conn), "episodes": count,
            "last_commit": last, "replayed": int(replays), "dropped": dropped, "claims": in_flight,
            "entries": conn.execute("SELECT COUNT(*) FROM entries WHERE active").fetchone()[0],
            "format": None if form is None else {k: v for k, v in form.items() if k != "config"},
            "server": server_state(conn)}


def server_state(conn: sqlite3.Connection) -> dict[str, Any]:
    """The last server's heartbeat, and whether it still runs (its pid alive, its beat recent)."""
    beat = db.get_meta(conn, "server") or {}
    running = bool(beat.get("pid")) and not beat.get("stopped") and process_exists(int(beat["pid"])) \
        and time.time() - float(beat.get("heartbeat", 0)) < STALE_S and (beat.get("host_pid_ns") == pid_namespace())
    return {**beat, "running": running}


def pid_namespace() -> str | None:
    """The pid namespace of this process: a pid means the same process only inside one."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def participant_entries(conn: sqlite3.Connection, participant: str) -> dict[int, str]:
    """{entry id: entry name} of a participant's accepted versions (KeyError: no such participant)."""
    row = conn.execute("SELECT id FROM participants WHERE name = ?", (participant,)).fetchone()
    if row is None:
        raise KeyError(participant)
    return {r["id"]: r["name"] for r in conn.execute("SELECT id, name FROM entries WHERE participant_id = ?",
                                                     (row["id"],))}


def participant_episodes(conn: sqlite3.Connection, entries: dict[int, str], limit: int = 20) -> list[dict[str, Any]]:
    """The latest episodes of these entries, newest first: entry, rank, seats, claim (its replay's name)."""
    marks = ", ".join("?" * len(entries))
    rows = conn.execute(f"SELECT s.episode_id, s.entry_id, s.rank, e.claim, e.seats, e.committed_at FROM seats s "
                        f"JOIN episodes e ON e.id = s.episode_id WHERE s.entry_id IN ({marks}) "
                        f"ORDER BY s.episode_id DESC LIMIT ?", (*entries, max(1, min(limit, MAX_LIMIT)))).fetchall()
    return [{"episode": r["episode_id"], "entry": entries[r["entry_id"]], "rank": r["rank"], "claim": r["claim"],
             "seats": r["seats"], "committed_at": r["committed_at"]} for r in rows]


def participant_faults(conn: sqlite3.Connection, entries: dict[int, str], limit: int = 20) -> list[dict[str, Any]]:
    """The latest seats of these entries with a fault, newest first, with their messages."""
    marks = ", ".join("?" * len(entries))
    rows = conn.execute(f"SELECT * FROM seats WHERE entry_id IN ({marks}) AND (exception + timeout + malformed + "
                        f"not_started + restarts) > 0 ORDER BY episode_id DESC LIMIT ?",
                        (*entries, max(1, min(limit, MAX_LIMIT)))).fetchall()
    return [{"episode": r["episode_id"], "entry": entries[r["entry_id"]],
             **{k: r[k] for k in db.FAULT_COLUMNS}, "messages": json.loads(r["messages"])} for r in rows]
