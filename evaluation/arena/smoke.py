"""An upload's way into the pool: stored, smoke-tested in the sandbox, then accepted or refused.

The smoke test is what a tournament checks before it starts (`evaluation.submission.check_spec`:
the class loads in a throwaway sandboxed worker) and then a short episode of the arena's own
format, `SMOKE_TICKS` ticks against ``idle`` with the arena's per-tick budget and no restart
allowed: a version that cannot be built, raises, answers late or answers garbage there would only
idle through its episodes, so it is refused, and its owner reads why (the reason may quote its
code, so only its owner sees it). What passes still runs sandboxed in every episode; the smoke
test keeps the pool clean, it is not the security boundary.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evaluation.arena import participants, settings, uploads
from evaluation.arena.participants import Participant
from evaluation.arena.settings import ArenaFormat
from evaluation.episode import EpisodeTask, run_episode
from evaluation.sandbox.host import Limits
from evaluation.submission import check_spec

#: Ticks of the smoke test's episode.
SMOKE_TICKS = 8
#: A class name in an upload: a Python identifier.
CLASS_HELP = "the policy's class name (a Python identifier), e.g. Agent"


@dataclass(frozen=True)
class Verdict:
    """What became of an upload: the version's number and status, its entry or the refusal reason."""

    version: int
    status: str
    entry: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "status": self.status, "entry": self.entry, "reason": self.reason}


def smoke_test(spec: str, form: ArenaFormat) -> str | None:
    """Why `spec` is refused, or None when it loads and acts within the budget (see the module docstring)."""
    limits = Limits()
    try:
        check_spec(spec, limits.init_timeout, limits)
    except ValueError as err:
        return f"it does not load: {err}"
    config = replace(form, ticks=min(SMOKE_TICKS, form.ticks)).episode_config(2)
    task = EpisodeTask(0, config, form.config_name, (spec, "idle"), 1, settings.map_seed(form, 0),
                       form.time_budget, limits, 0)
    faults = run_episode(task).faults[0]
    problems = {k: getattr(faults, k) for k in ("not_started", "exception", "timeout", "malformed", "disabled")
                if getattr(faults, k)}
    if not problems and faults.answered:
        return None
    counts = ", ".join(f"{k} {v}" for k, v in problems.items()) or "it never answered"
    return f"{counts} in a {SMOKE_TICKS}-tick test episode; " + " | ".join(faults.messages or ["no message"])


def submit(conn: sqlite3.Connection, root: Path, who: Participant, data: bytes, filename: str,
           class_name: str | None, limits: uploads.UploadLimits, form: ArenaFormat) -> Verdict:
    """Store an upload, smoke-test it, accept or refuse it (ValueError: not stored, nothing counted
    but the rate limit; participants.RateLimited: over it)."""
    participants.check_rate(conn, who, limits.per_hour)
    kind = uploads.kind_of(filename)
    if kind != "checkpoint" and not (class_name or "").isidentifier():
        raise ValueError(f"class {class_name!r}: {CLASS_HELP}")
    number = participants.new_version(conn, who, "", kind, class_name, len(data), limits.per_hour)
    try:
        stored = uploads.store(root, data, filename, limits)
    except ValueError as err:
        participants.refuse(conn, who, number, f"not stored: {err}")
        return Verdict(number, "refused", reason=f"not stored: {err}")
    except Exception as err:  # noqa: BLE001 - a disk error: the version must not stay pending
        participants.refuse(conn, who, number, f"not stored: {type(err).__name__}")
        raise
    conn.execute("UPDATE versions SET sha256 = ? WHERE participant_id = ? AND number = ?",
                 (stored.sha256, who.id, number))
    spec = stored.spec(class_name)
    reason = smoke_test(spec, form)
    if reason is None:
        try:
            return Verdict(number, "accepted", entry=participants.accept(conn, who, number, spec))
        except ValueError as err:
            reason = str(err)
    participants.refuse(conn, who, number, reason)
    _forget(conn, stored)
    return Verdict(number, "refused", reason=reason)


def _forget(conn: sqlite3.Connection, stored: uploads.Stored) -> None:
    """Remove a refused upload's files unless some version that was accepted holds the same bytes
    (a refused upload must not fill the disk)."""
    kept = conn.execute("SELECT 1 FROM versions WHERE sha256 = ? AND status NOT IN ('refused', 'pending')",
                        (stored.sha256,)).fetchone()
    if kept is None:
        shutil.rmtree(uploads.store_folder(stored), ignore_errors=True)


def current_format(conn: sqlite3.Connection, requested: dict[str, Any] | None = None) -> ArenaFormat:
    """The arena's format as stored, or (before any serve) the default one, for offline smoke tests."""
    from evaluation.arena import db

    stored = db.get_meta(conn, "format")
    if stored is not None:
        return ArenaFormat(**stored)
    return settings.settle_format(conn, requested or {}, None)
