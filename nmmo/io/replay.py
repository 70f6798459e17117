"""Replays: record any env run, save it as one compressed, versioned file, load and validate it.

Recording: ``nmmo.Env(config, record=True)`` (or ``env.record()`` before ``reset``) captures a
frame per tick; ``env.save_replay(path)`` writes it. A frame is the entity table reduced to what a
viewer shows (one column per field below, one entry per entity slot), taken from the tables after
``reset`` and after every step. The map is stored once; tile changes (harvested and regrown
forests) and user overlay changes are stored as events.

File (``.replay``, a NumPy ``.npz`` archive): ``header`` (UTF-8 JSON: format, version, config
TOML, map seed, sizes, tick count, ``overlay_blank``), ``material`` (S x S), one ``(ticks + 1,
slots)`` array per field, integer fields delta-coded along time (lossless; positions compress to
almost nothing), tile changes as ``(tick, flat index, material)`` rows, and user overlays as
``(tick, name index)`` rows plus quantized ``uint8`` maps with their ranges. Written atomically.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nmmo.core.enums import Skill
from nmmo.core.state import State
from nmmo.io import npz

FORMAT = "flatmmo-replay"
VERSION = 2  # v2 adds the hunting and fishing levels (v1 files load with them at 0)
#: Fields a replay of an older version lacks (loaded as zeros).
ADDED_IN = {"hunting": 2, "fishing": 2}

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
}


class ReplayError(ValueError):
    """A replay file is missing, truncated, corrupt, too big or from a newer format; the message
    says which. `reason` is the message without the file's path (for replies to remote viewers)."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.reason = reason
        super().__init__(f"replay {str(path)!r} {reason}")


def capture(state: State) -> dict[str, np.ndarray]:
    """One frame: the viewer's fields for every entity slot, read from the tables (copies)."""
    ent = state.entities
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
    }


def quantize(heatmap: np.ndarray) -> tuple[np.ndarray, float, float]:
    """uint8 values spanning [min, max] (what replays store and viewers draw)."""
    low, high = float(heatmap.min()), float(heatmap.max())
    scale = 255.0 / (high - low) if high > low else 0.0
    return np.rint((heatmap - low) * scale).astype(np.uint8), low, high


@dataclass
class Recorder:
    """Collects frames, tile changes and overlay changes during a run."""

    header: dict = field(default_factory=dict)
    material: np.ndarray | None = None
    frames: list[dict[str, np.ndarray]] = field(default_factory=list)
    tile_events: list[np.ndarray] = field(default_factory=list)
    overlay_events: list[tuple[int, str, np.ndarray, float, float]] = field(default_factory=list)
    _last_material: np.ndarray | None = None
    _overlay_versions: dict[str, int] = field(default_factory=dict)

    def start(self, state: State, header: dict) -> None:
        """Begin a new recording at reset (a recorder holds one episode)."""
        self.header = dict(header)
        self.material = state.tiles.material.copy()
        self._last_material = self.material.copy()
        self.frames = [capture(state)]
        self.tile_events = []
        self.overlay_events = []
        self._overlay_versions = {}

    def capture(self, state: State, overlays=None) -> None:
        """Record the tick that just happened. Overlays set since the last capture belong to the
        previous tick (the one the user was looking at when setting them)."""
        if overlays is not None:
            self.capture_overlays(overlays, len(self.frames) - 1)
        tick = len(self.frames)
        self.frames.append(capture(state))
        changed = np.flatnonzero(state.tiles.material.ravel() != self._last_material.ravel())
        if changed.size:
            values = state.tiles.material.ravel()[changed]
            self._last_material.ravel()[changed] = values
            self.tile_events.append(np.stack([np.full(changed.size, tick), changed, values], axis=1))

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
        names = sorted({event[1] for event in self.overlay_events})
        arrays["overlay_index"] = np.array([[t, names.index(n)] for t, n, *_ in self.overlay_events],
                                           dtype=np.int64).reshape(-1, 2)
        arrays["overlay_range"] = np.array([[low, high] for *_, low, high in self.overlay_events],
                                           dtype=np.float64).reshape(-1, 2)
        size = self.material.shape[0]
        arrays["overlay_data"] = (np.stack([e[2] for e in self.overlay_events]) if self.overlay_events
                                  else np.zeros((0, size, size), dtype=np.uint8))
        header = {**self.header, "format": FORMAT, "version": VERSION, "ticks": ticks,
                  "slots": int(self.frames[0]["id"].size), "size": size, "overlays": names,
                  "fields": list(FIELDS)}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        atomic_write_bytes(path, buffer.getvalue())
        return path


class Replay:
    """A loaded replay: frames by tick, the map at any tick, overlay events."""

    def __init__(self, header: dict, material: np.ndarray, fields: dict[str, np.ndarray],
                 tile_events: np.ndarray, overlay_index: np.ndarray, overlay_range: np.ndarray,
                 overlay_data: np.ndarray) -> None:
        self.header = header
        self.material = material
        self.fields = fields  # name -> (ticks + 1, slots), decoded
        self.tile_events = tile_events
        self.overlay_names: list[str] = header.get("overlays", [])
        self.overlay_index = overlay_index
        self.overlay_range = overlay_range
        self.overlay_data = overlay_data

    @property
    def ticks(self) -> int:
        return int(self.header["ticks"])

    @property
    def size(self) -> int:
        return int(self.material.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory its arrays take (what a server's replay cache counts against its budget)."""
        arrays = [self.material, self.tile_events, self.overlay_index, self.overlay_range, self.overlay_data]
        return sum(array.nbytes for array in [*arrays, *self.fields.values()])

    def frame(self, tick: int) -> dict[str, np.ndarray]:
        """The viewer's fields of every slot at `tick` (0 = after reset)."""
        if not 0 <= tick <= self.ticks:
            raise IndexError(f"tick {tick} is outside this replay (0..{self.ticks})")
        return {name: values[tick] for name, values in self.fields.items()}

    def tile_changes(self, tick: int) -> np.ndarray:
        """(flat index, material) rows of the tiles that changed during `tick`."""
        rows = self.tile_events[self.tile_events[:, 0] == tick]
        return rows[:, 1:]

    def material_at(self, tick: int) -> np.ndarray:
        """The map's materials at `tick` (the stored map with every tile change up to it)."""
        out = self.material.copy().ravel()
        upto = self.tile_events[self.tile_events[:, 0] <= tick]
        out[upto[:, 1]] = upto[:, 2]
        return out.reshape(self.material.shape)

    def overlay_at(self, name: str, tick: int) -> tuple[np.ndarray, float, float] | None:
        """The latest stored value of a user overlay at `tick` (quantized map, min, max)."""
        if name not in self.overlay_names:
            return None
        which = np.flatnonzero((self.overlay_index[:, 1] == self.overlay_names.index(name))
                               & (self.overlay_index[:, 0] <= tick))
        if which.size == 0:
            return None
        i = which[-1]
        return self.overlay_data[i], float(self.overlay_range[i, 0]), float(self.overlay_range[i, 1])


def _require(ok: bool, path: Path, reason: str) -> None:
    if not ok:
        raise ReplayError(path, reason)


# ------------------------------------------------------------------ reading
#: Largest header a replay may have (its JSON: the config TOML, policy names); bigger is refused unread.
MAX_HEADER_BYTES = 2**20


class _Archive:
    """An open replay file, untrusted input: its members described from their headers and read
    within their declared sizes (`nmmo.io.npz`); `read` decodes one array."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise ReplayError(path, "does not exist")
        try:
            self.handle = path.open("rb")
        except OSError as err:
            raise ReplayError(path, f"cannot be read ({err.strerror or type(err).__name__})") from None
        try:
            self.members = npz.members(self.handle)
        except npz.DAMAGED as err:
            self.handle.close()
            raise ReplayError(path, f"is truncated or corrupt ({type(err).__name__}: {err})") from None
        except BaseException:
            self.handle.close()
            raise

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *_) -> None:
        self.handle.close()

    def read(self, name: str) -> np.ndarray:
        """The array `name`, decoded into one buffer of exactly its declared size."""
        try:
            return npz.read(self.handle, self.members[name])
        except npz.DAMAGED as err:
            raise ReplayError(self.path, f"is truncated or corrupt ({type(err).__name__}: {err})") from None

    def header(self) -> dict:
        """The header, decoded (at most MAX_HEADER_BYTES) and checked: the fields the loader relies on."""
        member = self.members.get("header")
        _require(member is not None and member.dtype == np.uint8 and len(member.shape) == 1, self.path,
                 "has no readable header")
        _require(member.nbytes <= MAX_HEADER_BYTES, self.path,
                 f"has a {member.nbytes / 2**20:.0f} MiB header (a replay's is under {MAX_HEADER_BYTES // 2**20} MiB)")
        try:
            header = json.loads(self.read("header").tobytes().decode())
        except (ValueError, RecursionError) as err:  # not UTF-8 or not JSON
            raise ReplayError(self.path, f"has no readable header ({type(err).__name__})") from None
        return _check_header(self.path, header)

    def decoded_bytes(self, header: dict) -> int:
        """What the arrays take once decoded: every member but the header, and the fields an older
        version lacks (made as zeros)."""
        size = sum(member.nbytes for name, member in self.members.items() if name != "header")
        cells = (header["ticks"] + 1) * header["slots"]
        return size + sum(cells * FIELDS[name].itemsize for name in _zero_fields(self, header))


def _check_header(path: Path, header) -> dict:
    """The header's fields the loader relies on, with their types."""
    _require(isinstance(header, dict), path, "has a header that is not a JSON object")
    found = str(header.get("format"))[:40]
    _require(header.get("format") == FORMAT, path, f"is not a flatmmo replay (format {found!r})")
    version = header.get("version", 0)
    _require(type(version) is int, path, "has a header without an integer version")
    _require(version <= VERSION, path, f"is replay format v{version}; this flatmmo reads up to v{VERSION}: upgrade "
                                       "flatmmo to open it")
    for key in ("ticks", "slots", "size"):
        _require(type(header.get(key)) is int and header[key] >= 0, path, f"has a header whose {key!r} is not a count")
    overlays = header.get("overlays", [])
    _require(isinstance(overlays, list) and all(isinstance(n, str) for n in overlays), path,
             "has a header whose 'overlays' is not a list of names")
    return header


def _zero_fields(archive: _Archive, header: dict) -> list[str]:
    """Fields this replay lacks because its version predates them (loaded as zeros)."""
    return [name for name in FIELDS
            if f"f_{name}" not in archive.members and header["version"] < ADDED_IN.get(name, 0)]


def read_header(path: str | os.PathLike) -> dict:
    """A replay's header alone (cheap: no frame is decoded); ReplayError if the file is not one."""
    with _Archive(Path(path)) as archive:
        return archive.header()


def decoded_bytes(path: str | os.PathLike) -> int:
    """How many bytes a replay's arrays take once decoded (from its headers; nothing is decoded)."""
    with _Archive(Path(path)) as archive:
        return archive.decoded_bytes(archive.header())


def _check_shapes(archive: _Archive, header: dict) -> None:
    """Every array the loader needs is there with the shape the header implies (before decoding)."""
    path, members, frames = archive.path, archive.members, (header["ticks"] + 1, header["slots"])
    missing = set(_zero_fields(archive, header))
    for name, dtype in FIELDS.items():
        member = members.get(f"f_{name}")
        _require(name in missing or (member is not None and member.shape == frames and member.dtype == dtype), path,
                 f"is corrupt: field {name!r} is missing or has the wrong shape or type")
    size = header["size"]
    material = members.get("material")
    _require(material is not None and material.shape == (size, size) and material.dtype.kind in "iu", path,
             f"is corrupt: the map is not {size}x{size} integers")
    events = [members.get(key) for key in ("tile_events", "overlay_index", "overlay_range", "overlay_data")]
    _require(all(event is not None for event in events), path, "is corrupt: an event table is missing")
    tiles, index, ranges, data = events
    _require(tiles.shape[1:] == (3,) and len(tiles.shape) == 2 and tiles.dtype.kind in "iu", path,
             "is corrupt: the tile events are not (tick, index, material) rows")
    _require(index.dtype.kind in "iu" and index.shape[1:] == (2,) and ranges.shape[1:] == (2,), path,
             "is corrupt: the overlay tables are not (tick, name) and (min, max) rows")
    _require(index.shape[0] == data.shape[0] == ranges.shape[0], path, "is corrupt: the overlay tables disagree")


def _decode_field(archive: _Archive, header: dict, name: str) -> np.ndarray:
    """A field's values by tick (zeros for a field this replay's version predates)."""
    if f"f_{name}" not in archive.members:
        return np.zeros((header["ticks"] + 1, header["slots"]), dtype=FIELDS[name])
    return npz.running_sum(archive.read(f"f_{name}"))


def load_replay(path: str | os.PathLike, max_bytes: int | None = None) -> Replay:
    """Load and validate a replay file; a clear ReplayError for anything wrong with it. With
    `max_bytes`, a file whose arrays would decode to more is refused before any array is decoded
    (a small file can hold a huge, highly compressible array); the size comes from the .npy
    headers, each checked against its member's declared size, and no member inflates past that."""
    with _Archive(Path(path)) as archive:
        header = archive.header()
        size = archive.decoded_bytes(header)
        if max_bytes is not None and size > max_bytes:
            raise ReplayError(archive.path, f"decodes to {size / 2**20:.0f} MiB, over the "
                                            f"{max_bytes / 2**20:.0f} MiB limit")
        _check_shapes(archive, header)
        fields = {name: _decode_field(archive, header, name) for name in FIELDS}
        events = [archive.read(key) for key in ("tile_events", "overlay_index", "overlay_range", "overlay_data")]
        return Replay(header, archive.read("material"), fields, *events)
