"""Recording a replay: a frame of the viewer's fields per tick, tile changes, the event log and
user overlays, saved as one file (the format: `nmmo.replays.replay`, which reads it)."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nmmo.core.enums import Event, Skill
from nmmo.core.state import State

FORMAT = "flatmmo-replay"
VERSION = 4  # v2 adds the hunting and fishing levels (v1 files load with them at 0), v3 the event log, tasks,
# games, v4 the agents' value estimates
#: A slot's value estimate (`Recorder.record_values`) is stored in thousandths, clipped to +-VALUE_LIMIT
#: so that its tick-to-tick deltas fit the int32 field; NO_VALUE: none (NPC rows, runs without estimates).
VALUE_SCALE, VALUE_LIMIT, NO_VALUE = 1000, 2**30 - 1, -(2**30)
#: Fields a replay of an older version lacks (loaded as `MISSING`, else zeros).
ADDED_IN = {"hunting": 2, "fishing": 2, "task": 3, "task_progress": 3, "task_done": 3, "value": 4}
#: What a field an older replay lacks holds when loaded, where that is not 0 (``task``: no task).
MISSING = {"task": -1, "value": NO_VALUE}
#: The task fields of a frame: the slot's task (its index in the header's ``tasks`` set, -1 for none:
#: NPC rows, tasks off), its progress in per-mille (0..1000) and whether it is done (0/1).
TASK_FIELDS = ("task", "task_progress", "task_done")

#: Per-entity fields of a frame, with their stored dtype (the viewer protocol's field names).
FIELDS: dict[str, np.dtype] = {
    "alive": np.dtype(np.int8),
    "id": np.dtype(np.int32),
    "row": np.dtype(np.int16),
    "col": np.dtype(np.int16),
    "health": np.dtype(np.int16),
    "max_health": np.dtype(np.int16),
    "food": np.dtype(np.int16),
    "water": np.dtype(np.int16),
    "team": np.dtype(np.int16),
    "kind": np.dtype(np.int8),
    "level": np.dtype(np.int16),
    "armour": np.dtype(np.int16),
    "melee": np.dtype(np.int16),
    "range": np.dtype(np.int16),
    "mage": np.dtype(np.int16),
    "defense": np.dtype(np.int16),
    "hunting": np.dtype(np.int16),
    "fishing": np.dtype(np.int16),
    "damage": np.dtype(np.int16),
    "attack_style": np.dtype(np.int8),
    "attack_target": np.dtype(np.int32),
    "task": np.dtype(np.int16),
    "task_progress": np.dtype(np.int16),
    "task_done": np.dtype(np.int8),
    "value": np.dtype(np.int32),
}


class ReplayError(ValueError):
    """A replay file is missing, truncated, corrupt, too big or from a newer format; the message
    says which. `reason` is the message without the file's path (for replies to remote viewers)."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.reason = reason
        super().__init__(f"replay {str(path)!r} {reason}")


def no_tasks(capacity: int) -> dict[str, np.ndarray]:
    """The task fields of a frame without tasks: no task (-1), no progress, not done."""
    return {"task": np.full(capacity, -1, dtype=np.int16), "task_progress": np.zeros(capacity, dtype=np.int16),
            "task_done": np.zeros(capacity, dtype=np.int8)}


def capture(state: State, tasks: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """One frame: the viewer's fields for every entity slot, read from the tables (copies). `tasks`
    holds the task fields (`TASK_FIELDS`, one entry per slot: `nmmo.Env.task_columns`); None: no tasks."""
    ent = state.entities
    tasks = no_tasks(ent.alive.size) if tasks is None else tasks
    return {
        "alive": ent.alive.astype(np.int8),
        "id": ent.id.astype(np.int32),
        "row": ent.row.astype(np.int16),
        "col": ent.col.astype(np.int16),
        "health": ent.health.astype(np.int16),
        "max_health": ent.max_health.astype(np.int16),
        "food": ent.food.astype(np.int16),
        "water": ent.water.astype(np.int16),
        "team": ent.team.astype(np.int16),
        "kind": ent.npc_type.astype(np.int8),
        "level": ent.combat_level().astype(np.int16),
        "armour": ent.equipment().astype(np.int16),
        "melee": ent.level[:, Skill.MELEE].astype(np.int16),
        "range": ent.level[:, Skill.RANGE].astype(np.int16),
        "mage": ent.level[:, Skill.MAGE].astype(np.int16),
        "defense": ent.level[:, Skill.DEFENSE].astype(np.int16),
        "hunting": ent.level[:, Skill.HUNTING].astype(np.int16),
        "fishing": ent.level[:, Skill.FISHING].astype(np.int16),
        "damage": ent.damage_taken.astype(np.int16),
        "attack_style": ent.attack_style.astype(np.int8),
        "attack_target": ent.attack_target_id.astype(np.int32),
        **{name: np.asarray(tasks[name], dtype=FIELDS[name]).copy() for name in TASK_FIELDS},
        "value": np.full(ent.alive.size, NO_VALUE, dtype=np.int32),  # `Recorder.record_values` fills it in
    }


def fill_values(frame: dict[str, np.ndarray], values: dict[int, float]) -> None:
    """Write agents' value estimates (`values`: agent id -> estimate, a policy's `last_values`) into
    a frame's ``value`` column, in thousandths clipped to +-VALUE_LIMIT; ids not live in the frame and
    non-finite estimates are left as NO_VALUE (a replay's frames and a live run's alike)."""
    if not values:
        return
    ids = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
    estimates = np.fromiter(values.values(), dtype=np.float64, count=len(values))
    live = np.flatnonzero((frame["alive"] > 0) & (frame["id"] > 0))  # players' ids are positive
    slot_of = dict(zip(frame["id"][live].tolist(), live.tolist(), strict=True))
    known = np.array([int(agent) in slot_of for agent in ids.tolist()], dtype=bool) & np.isfinite(estimates)
    slots = np.array([slot_of[int(agent)] for agent in ids[known].tolist()], dtype=np.int64)
    scaled = np.clip(estimates[known] * VALUE_SCALE, -VALUE_LIMIT, VALUE_LIMIT)
    frame["value"][slots] = np.rint(scaled).astype(np.int32)


def quantize(heatmap: np.ndarray) -> tuple[np.ndarray, float, float]:
    """uint8 values spanning [min, max] (what replays store and viewers draw)."""
    low, high = float(heatmap.min()), float(heatmap.max())
    scale = 255.0 / (high - low) if high > low else 0.0
    return np.rint((heatmap - low) * scale).astype(np.uint8), low, high


#: The game states' member: at most this many bytes per frame (a game's is ~200), and this many in all.
MAX_GAME_FRAME_BYTES, MAX_GAME_BYTES = 4096, 64 * 2**20
#: A game state document: at most this many keys, list entries and string characters.
MAX_GAME_KEYS, MAX_GAME_LIST, MAX_GAME_TEXT = 32, 1024, 100


def _scalar(value) -> bool:
    """null, a boolean, an integer, a finite number (JSON's NaN and Infinity are not) or a short string."""
    if isinstance(value, float):
        return bool(np.isfinite(value))
    return value is None or isinstance(value, (bool, int)) or (isinstance(value, str) and len(value) <= MAX_GAME_TEXT)


def game_document(value) -> bool:
    """A game state as the viewer reads it: an object of at most MAX_GAME_KEYS short names, each a
    number, short string or null, or a list (at most MAX_GAME_LIST) of those (plain numbers only)."""
    if not isinstance(value, dict) or len(value) > MAX_GAME_KEYS:
        return False
    for key, entry in value.items():
        if len(key) > MAX_GAME_TEXT:
            return False
        if isinstance(entry, list):
            if len(entry) > MAX_GAME_LIST or not all(_scalar(item) and not isinstance(item, str) for item in entry):
                return False
        elif not _scalar(entry):
            return False
    return True


@dataclass
class Recorder:
    """Collects frames, tile changes and overlay changes during a run."""

    header: dict = field(default_factory=dict)
    material: np.ndarray | None = None
    frames: list[dict[str, np.ndarray]] = field(default_factory=list)
    tile_events: list[np.ndarray] = field(default_factory=list)
    entity_events: list[np.ndarray] = field(default_factory=list)
    overlay_events: list[tuple[int, str, np.ndarray, float, float]] = field(default_factory=list)
    _last_material: np.ndarray | None = None
    _overlay_versions: dict[str, int] = field(default_factory=dict)
    #: A minigame's state per frame (`nmmo.Env.game_state`), None in a run without a game.
    games: list[dict] | None = None

    def start(self, state: State, header: dict, tasks: dict[str, np.ndarray] | None = None,
              game: dict | None = None) -> None:
        """Begin a new recording at reset (a recorder holds one episode); `tasks`: see `capture`;
        `game`: the minigame's state (`nmmo.Env.game_state`; empty or None without a game), which
        also names the game in the header (``game``: its ``name`` and ``title``)."""
        self.header = dict(header)
        self.games = [dict(game)] if game else None
        if game:
            self.header["game"] = {"name": str(game.get("game", "")), "title": str(game.get("title", ""))}
        self.material = state.tiles.material.copy()
        self._last_material = self.material.copy()
        self.frames = [capture(state, tasks)]
        self.tile_events, self.entity_events = [], []
        self.overlay_events = []
        self._overlay_versions = {}

    def capture(self, state: State, overlays=None, tasks: dict[str, np.ndarray] | None = None,
                game: dict | None = None) -> None:
        """Record the tick that just happened (`tasks`: its task fields, see `capture`; `game`: the
        minigame's state, see `start`). Overlays set since the last capture belong to the previous
        tick (the one the user was looking at when setting them)."""
        if overlays is not None:
            self.capture_overlays(overlays, len(self.frames) - 1)
        tick = len(self.frames)
        self.frames.append(capture(state, tasks))
        if self.games is not None:
            self.games.append(dict(game or {}))
        changed = np.flatnonzero(state.tiles.material.ravel() != self._last_material.ravel())
        if changed.size:
            values = state.tiles.material.ravel()[changed]
            self._last_material.ravel()[changed] = values
            self.tile_events.append(np.stack([np.full(changed.size, tick), changed, values], axis=1))
        events = state.entities.events
        slot, code = np.nonzero(events)
        if slot.size:
            self.entity_events.append(np.stack([np.full(slot.size, tick), slot, code, events[slot, code]], axis=1))

    def capture_overlays(self, overlays, tick: int) -> None:
        """Store user overlays whose version changed since they were last stored (and in the
        header, what each shows on tiles without data)."""
        for name in overlays.user_names():
            version = overlays.version(name)
            if self._overlay_versions.get(name) != version:
                self._overlay_versions[name] = version
                self.header.setdefault("overlay_blank", {})[name] = overlays.blank(name)  # what no data shows
                data, low, high = quantize(overlays.get(name))
                self.overlay_events.append((tick, name, data, low, high))

    def record_values(self, values: dict[int, float]) -> None:
        """Store each agent's value estimate (`values`: agent id -> estimate, a policy's
        `last_values`) on the last frame, the one the policy observed; the header then says the
        replay has them (``values``), and the viewer's inspector shows them."""
        if not self.frames or not values:
            return
        fill_values(self.frames[-1], values)
        self.header["values"] = True

    def name_players(self, policies: list[str] | None, team_policy: list[int] | None) -> None:
        """Put who played in the header, for the viewer: `policies` names them, `team_policy` gives
        each team's index into `policies` (see `nmmo.Env.save_replay`). Checked here, so a bad
        label fails before anything is written."""
        if policies is not None:
            if isinstance(policies, str) or not policies or not all(isinstance(p, str) for p in policies):
                raise ValueError(f"policies must be a non-empty list of names, got {policies!r}")
            self.header["policies"] = list(policies)
        if team_policy is not None:
            if policies is None or not all(isinstance(i, int) and 0 <= i < len(policies) for i in team_policy):
                raise ValueError(f"team_policy must list an index into policies for every team, got {team_policy!r}")
            self.header["team_policy"] = list(team_policy)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the replay atomically; returns the path."""
        from nmmo.io.files import atomic_write_bytes

        if self.material is None:
            raise ReplayError(path, "has nothing recorded: call env.reset() with recording on first")
        path = Path(path)
        ticks = len(self.frames) - 1
        arrays: dict[str, np.ndarray] = {"material": self.material}
        for name, dtype in FIELDS.items():
            stacked = np.stack([frame[name] for frame in self.frames]).astype(dtype)
            arrays[f"f_{name}"] = np.diff(stacked, axis=0, prepend=np.zeros_like(stacked[:1]))
        tiles = np.concatenate(self.tile_events) if self.tile_events else np.zeros((0, 3), dtype=np.int64)
        arrays["tile_events"] = tiles.astype(np.int64)
        arrays["entity_events"] = (np.concatenate(self.entity_events) if self.entity_events
                                   else np.zeros((0, 4))).astype(np.int64)
        names = sorted({event[1] for event in self.overlay_events})
        arrays["overlay_index"] = np.array([[t, names.index(n)] for t, n, *_ in self.overlay_events],
                                           dtype=np.int64).reshape(-1, 2)
        arrays["overlay_range"] = np.array([[low, high] for *_, low, high in self.overlay_events],
                                           dtype=np.float64).reshape(-1, 2)
        size = self.material.shape[0]
        arrays["overlay_data"] = (np.stack([e[2] for e in self.overlay_events]) if self.overlay_events
                                  else np.zeros((0, size, size), dtype=np.uint8))
        if self.games is not None:  # one JSON list: a document per frame (read by `nmmo.replays.replay`)
            text = json.dumps(self.games, separators=(",", ":")).encode()
            limit = min(MAX_GAME_BYTES, len(self.games) * MAX_GAME_FRAME_BYTES)
            if len(text) > limit or not all(game_document(game) for game in self.games):  # what a reader accepts
                raise ReplayError(path, f"cannot hold this game's states ({len(text)} bytes for {len(self.games)} "
                                        f"frames, at most {limit}; at most {MAX_GAME_LIST} entries a list): a game "
                                        "with fewer teams records")
            arrays["games"] = np.frombuffer(text, dtype=np.uint8)
        header = {**self.header, "format": FORMAT, "version": VERSION, "ticks": ticks,
                  "slots": int(self.frames[0]["id"].size), "size": size, "overlays": names,
                  "fields": list(FIELDS), "events": [event.name for event in Event]}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        atomic_write_bytes(path, buffer.getvalue())
        return path
