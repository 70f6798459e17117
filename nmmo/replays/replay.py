"""Replays: record any env run, save it as one compressed, versioned file, load and validate it.

Recording (`nmmo.replays.recording`): ``nmmo.Env(config, record=True)`` (or ``env.record()`` before
``reset``) captures a frame per tick; ``env.save_replay(path)`` writes it. A frame is the entity table reduced to what a
viewer shows (one column per field below, one entry per entity slot), taken from the tables after
``reset`` and after every step. The map is stored once; tile changes (harvested and regrown
forests) and user overlay changes are stored as events.

File (``.replay``, a NumPy ``.npz`` archive): ``header`` (UTF-8 JSON: format, version, config
TOML, map seed, sizes, tick count, ``overlay_blank``), ``material`` (S x S), one ``(ticks + 1,
slots)`` array per field, integer fields delta-coded along time (lossless; positions compress to
almost nothing), tile changes as ``(tick, flat index, material)`` rows, the event log (what tasks
read, `nmmo.core.systems.events`) as ``(tick, slot, event, value)`` rows of its non-zero entries
(the header's ``events`` names the codes), and user overlays as ``(tick, name index)`` rows plus
quantized ``uint8`` maps with their ranges. Written atomically.

Tasks (v3): a run with tasks (`nmmo.envs.tasking`) has a header entry ``tasks`` (``name``: the set's
name, ``names``: its specs' names, ``specs``: each spec's table, ``assign``: TASK_ASSIGN), and every
frame the fields ``task`` (the slot's index into ``names``; -1: no task, as NPC rows and runs without
tasks have), ``task_progress`` (per-mille, 0..1000) and ``task_done`` (0/1). Files older than v3
load with ``task`` -1 and the other two 0.

Value estimates (v4): a run whose policy has a critic may store each agent's estimate on the frame
it observed (`nmmo.Env.record_values`, as ``nmmo run --value-overlay`` and recorded tournaments do):
the field ``value``, in thousandths (``NO_VALUE``: none, as NPC rows and runs without estimates
have), and the header's ``values`` is true. Files older than v4 load with ``NO_VALUE`` everywhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from nmmo.io import npz
from nmmo.replays.recording import (  # noqa: F401
    ADDED_IN,
    FIELDS,
    FORMAT,
    MAX_GAME_BYTES,
    MAX_GAME_FRAME_BYTES,
    MISSING,
    NO_VALUE,
    TASK_FIELDS,
    VALUE_SCALE,
    VERSION,
    Recorder,
    ReplayError,
    capture,
    game_document,
    quantize,
)


class Replay:
    """A loaded replay: frames by tick, the map at any tick, overlay events."""

    def __init__(self, header: dict, material: np.ndarray, fields: dict[str, np.ndarray],
                 tile_events: np.ndarray, overlay_index: np.ndarray, overlay_range: np.ndarray,
                 overlay_data: np.ndarray, entity_events: np.ndarray | None = None) -> None:
        self.header = header
        self.material = material
        self.fields = fields  # name -> (ticks + 1, slots), decoded
        self.tile_events = tile_events
        self.entity_events = np.zeros((0, 4), dtype=np.int64) if entity_events is None else entity_events
        self.event_names: list[str] = header.get("events", [])  # the codes' names (a v3 file's)
        self.overlay_names: list[str] = header.get("overlays", [])
        self.overlay_index = overlay_index
        self.overlay_range = overlay_range
        self.overlay_data = overlay_data
        self.games: list[dict] | None = None  # the game's state per frame (`load_replay` sets it)
        self.games_nbytes = 0  # about what `games` takes in memory

    @property
    def ticks(self) -> int:
        return int(self.header["ticks"])

    @property
    def size(self) -> int:
        return int(self.material.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory its arrays take (what a server's replay cache counts against its budget)."""
        arrays = [self.material, self.tile_events, self.entity_events, self.overlay_index, self.overlay_range,
                  self.overlay_data]
        return self.games_nbytes + sum(array.nbytes for array in [*arrays, *self.fields.values()])

    def frame(self, tick: int) -> dict[str, np.ndarray]:
        """The viewer's fields of every slot at `tick` (0 = after reset)."""
        if not 0 <= tick <= self.ticks:
            raise IndexError(f"tick {tick} is outside this replay (0..{self.ticks})")
        return {name: values[tick] for name, values in self.fields.items()}

    def game_state(self, tick: int) -> dict:
        """The minigame's state at `tick` (`nmmo.Env.game_state`), {} in a replay without a game."""
        if not 0 <= tick <= self.ticks:
            raise IndexError(f"tick {tick} is outside this replay (0..{self.ticks})")
        return {} if self.games is None else self.games[tick]

    def tile_changes(self, tick: int) -> np.ndarray:
        """(flat index, material) rows of the tiles that changed during `tick`."""
        rows = self.tile_events[self.tile_events[:, 0] == tick]
        return rows[:, 1:]

    def events(self, tick: int) -> np.ndarray:
        """(slot, event code, value) rows of the event log during `tick` (codes: `event_names`)."""
        return self.entity_events[self.entity_events[:, 0] == tick][:, 1:]

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
        size = sum(member.nbytes for name, member in self.members.items() if name not in ("header", "games"))
        cells = (header["ticks"] + 1) * header["slots"]
        games = games_memory(self.members["games"].nbytes, header) if "games" in self.members else 0
        return size + games + sum(cells * FIELDS[name].itemsize for name in _zero_fields(self, header))


def games_memory(json_bytes: int, header: dict) -> int:
    """An upper bound on what the game states take once parsed into Python objects: JSON's
    smallest forms grow about twentyfold (``{}`` is a 64-byte dict), and every frame holds one."""
    return 24 * json_bytes + 256 * (header["ticks"] + 1)


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
    game = header.get("game")
    _require(game is None or (isinstance(game, dict) and all(isinstance(game.get(k), str) and len(game[k]) <= 100
                                                              for k in ("name", "title"))), path,
             "has a header whose 'game' is not a game's name and title")
    tasks = header.get("tasks")
    _require(tasks is None or (isinstance(tasks, dict) and isinstance(tasks.get("names"), list)
                               and all(isinstance(n, str) for n in tasks["names"])), path,
             "has a header whose 'tasks' does not list task names")
    _require(type(header.get("values", False)) is bool, path, "has a header whose 'values' is not true or false")
    return header


def _zero_fields(archive: _Archive, header: dict) -> list[str]:
    """Fields this replay lacks because its version predates them (loaded as `MISSING`, else zeros)."""
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
    logged = members.get("entity_events")  # v3 on; older files have none
    _require(logged is None or (logged.shape[1:] == (4,) and len(logged.shape) == 2 and logged.dtype.kind in "iu"),
             path, "is corrupt: the event log is not (tick, slot, event, value) rows")


def _read_games(archive: _Archive, header: dict) -> list[dict] | None:
    """The game state per frame (the ``games`` member, untrusted: its size, JSON, one document per
    frame, each `_game_document`); None when the file has none."""
    member, path = archive.members.get("games"), archive.path
    if member is None:
        return None
    frames = header["ticks"] + 1
    limit = min(MAX_GAME_BYTES, frames * MAX_GAME_FRAME_BYTES)
    _require(member.dtype == np.uint8 and len(member.shape) == 1, path, "is corrupt: the game states are not bytes")
    _require(member.nbytes <= limit, path, f"is corrupt: its game states take {member.nbytes} bytes, over the "
                                           f"{limit} a replay of {frames} frames may hold")
    try:
        games = json.loads(archive.read("games").tobytes().decode())
    except (ValueError, RecursionError) as err:  # not UTF-8 or not JSON
        raise ReplayError(path, f"is corrupt: its game states are not JSON ({type(err).__name__})") from None
    _require(isinstance(games, list) and len(games) == frames, path,
             f"is corrupt: its game states are not a list of {frames} (one per frame)")
    _require(all(game_document(game) for game in games), path,
             "is corrupt: a game state is not an object of numbers, short strings and lists of numbers")
    return games


def _decode_field(archive: _Archive, header: dict, name: str) -> np.ndarray:
    """A field's values by tick (for a field this replay's version predates: `MISSING`, else zeros)."""
    if f"f_{name}" not in archive.members:
        return np.full((header["ticks"] + 1, header["slots"]), MISSING.get(name, 0), dtype=FIELDS[name])
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
        size = header["size"]  # positions index the map (the overlays count on them): on it, or refused
        _require(all(((fields[k] >= 0) & (fields[k] < size)).all() for k in ("row", "col")), archive.path,
                 f"is corrupt: an entity stands off the {size}x{size} map")
        events = [archive.read(key) for key in ("tile_events", "overlay_index", "overlay_range", "overlay_data")]
        logged = archive.read("entity_events") if "entity_events" in archive.members else None
        games = _read_games(archive, header)
        replay = Replay(header, archive.read("material"), fields, *events, entity_events=logged)
        replay.games = games
        replay.games_nbytes = games_memory(archive.members["games"].nbytes, header) if games is not None else 0
        return replay
