"""A journal of finished episodes, so a long tournament survives a crash and resumes where it stopped.

``episodes.jsonl`` in the output directory: the first line names the run (config, policies, seed,
the tournament's secret and everything else that changes what an episode produces), then one line per finished episode
with its raw lifetimes, appended and synced as it finishes. A run with ``resume=True`` reads the
journal back, checks that it belongs to the same run (naming the setting that differs), and plays
only the episodes it lacks; it may also ask for more episodes than the journal's run did, since
episode i's seeds do not depend on the episode count. A line torn by a crash mid-write is the last
one and is dropped; a damaged line anywhere else is an error, never silently skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.episode import EpisodeResult
from evaluation.metrics import METRICS
from evaluation.submission import Faults

JOURNAL_FILE = "episodes.jsonl"
FORMAT = "flatmmo-journal"
VERSION = 2  # v2: the tournament secret in the first line (v1 runs dealt without one)


def _encode(result: EpisodeResult) -> dict[str, Any]:
    return {"index": result.index, "seed": result.seed, "map_seed": result.map_seed, "ticks": result.ticks,
            "lifetimes": result.lifetimes.tolist(), "owners": result.owners.tolist(),
            "faults": [f.to_dict() for f in result.faults], "engine_errors": result.engine_errors,
            "seconds": result.seconds, "teams": None if result.teams is None else result.teams.tolist(),
            "tasks": None if result.tasks is None else result.tasks.tolist(),
            "won": None if result.won is None else result.won.tolist()}


def _check_finite(result: EpisodeResult) -> None:
    """Refuse, by name, a NaN or infinity (JSON has none; `json.dumps` would only say "Out of range
    float values"). Task files are refused with one when loaded, before a tournament plays."""
    for name in ("lifetimes", "tasks", "won"):
        values = getattr(result, name)
        if values is not None and not np.isfinite(values).all():
            raise ValueError(f"episode {result.index}: its {name} hold a NaN or an infinity; results record "
                             "finite numbers only")


def _faults(record: dict[str, Any], ticks: int) -> Faults:
    """A journaled fault record. One written before replies were counted (``answered``) counts
    every tick without a fault as answered, so that only a policy that faulted on every tick reads
    as all faults (`evaluation.faults.all_faults`) when such a journal is resumed."""
    faults = Faults.from_dict(record)
    if "answered" not in record and not faults.not_started:
        faults.answered = max(ticks - faults.total, 0)
    return faults


def _decode(entry: dict[str, Any], policies: tuple[str, ...]) -> EpisodeResult:
    lifetimes = np.asarray(entry["lifetimes"], dtype=np.float64).reshape(-1, len(METRICS))
    owners = np.asarray(entry["owners"], dtype=np.int64)
    if len(owners) != len(lifetimes) or len(entry["faults"]) != len(policies):
        raise ValueError("lifetimes, owners and faults disagree in length")
    teams = None if entry["teams"] is None else np.asarray(entry["teams"], dtype=np.int64)
    tasks = None if entry.get("tasks") is None else np.asarray(entry["tasks"], dtype=np.float64).reshape(-1, 4)
    if tasks is not None and len(tasks) != len(lifetimes):
        raise ValueError("lifetimes and task outcomes disagree in length")
    won = None if entry.get("won") is None else np.asarray(entry["won"], dtype=np.float64).reshape(-1)
    if won is not None and len(won) != len(lifetimes):
        raise ValueError("lifetimes and game outcomes disagree in length")
    return EpisodeResult(int(entry["index"]), int(entry["seed"]), int(entry["map_seed"]), int(entry["ticks"]),
                         lifetimes, owners, [_faults(f, int(entry["ticks"])) for f in entry["faults"]],
                         int(entry["engine_errors"]), float(entry["seconds"]), policies, teams, tasks, won)


class Journal:
    """Append-only record of one run's finished episodes (see the module docstring)."""

    def __init__(self, path: str | Path, run: dict[str, Any], resume: bool = False) -> None:
        self.path = Path(path)
        self.run = {"format": FORMAT, "version": VERSION, **run}
        self.policies = tuple(run["policies"])
        self.results: dict[int, EpisodeResult] = {}
        if resume and self.path.exists():
            self._read()
        else:  # a new run: the previous journal at this path (if any) is replaced
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(self.run) + "\n")
            os.replace(tmp, self.path)

    def _read(self) -> None:
        lines = self.path.read_text().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        try:
            header = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{str(self.path)!r} is not a tournament journal")
        if header.get("version") != VERSION:
            raise ValueError(f"{str(self.path)!r} has journal version {header.get('version')}, expected {VERSION}")
        for key, value in self.run.items():
            if header.get(key) != value:
                theirs, ours = ("is another", "(--secret)") if key == "secret" else first_difference(
                    header.get(key), value)
                raise ValueError(f"cannot resume from {str(self.path)!r}: its {key} {theirs}, this run's {ours} "
                                 "(start over with --force instead of --resume, or use another --out)")
        for number, line in enumerate(lines[1:], start=2):
            try:
                result = _decode(json.loads(line), self.policies)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                if number == len(lines):  # torn by a crash while it was written: play that episode again
                    self._rewrite()
                    break
                raise ValueError(f"{str(self.path)!r} line {number} is damaged: {err}") from None
            self.results[result.index] = result

    def _rewrite(self) -> None:
        """Drop a torn last line so that later appends start on a line of their own."""
        text = "".join(json.dumps(line) + "\n" for line in [self.run, *map(_encode, self.results.values())])
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)

    def append(self, result: EpisodeResult) -> None:
        """Record a finished episode durably (flushed and synced before returning)."""
        _check_finite(result)
        self.results[result.index] = result
        with open(self.path, "a") as handle:
            handle.write(json.dumps(_encode(result), allow_nan=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def recorded_secret(path: str | Path) -> int | None:
    """The tournament secret in a journal's first line (None: no journal there, or one without)."""
    try:
        with open(path) as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    secret = header.get("secret") if isinstance(header, dict) else None
    return secret if isinstance(secret, int) and not isinstance(secret, bool) else None


def first_difference(theirs: Any, ours: Any) -> tuple[str, str]:
    """Phrases naming where two run settings part: for a config (TOML text) the first differing line,
    e.g. ``has HORIZON = 64`` / ``has HORIZON = 32``, so a changed --ticks reads as what it is."""
    if isinstance(theirs, str) and isinstance(ours, str) and "\n" in theirs + ours:
        old_lines, new_lines = theirs.splitlines(), ours.splitlines()
        for old, new in zip(old_lines, new_lines, strict=False):
            if old != new:
                return f"has {_clip(old)}", f"has {_clip(new)}"
        if len(old_lines) != len(new_lines):
            shorter = min(len(old_lines), len(new_lines))
            if len(old_lines) > shorter:
                return f"has {_clip(old_lines[shorter])}", "does not"
            return "does not", f"has {_clip(new_lines[shorter])}"
    return f"is {_short(theirs)}", f"is {_short(ours)}"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: Any, limit: int = 60) -> str:
    return _clip(repr(value), limit)
