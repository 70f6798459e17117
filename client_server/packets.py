"""Viewer packets (docs/viewer_protocol.md): a header once, then delta-encoded tick packets.

Frames are `nmmo.replays.replay.capture` dicts (one array per field, one entry per entity slot), so live
runs and replays encode the same way. A tick packet lists, column by column, only the entities
whose fields changed since the previous frame, the ids that disappeared, the tiles that changed,
and this tick's attacks. Runs with tasks also send the task fields (`sent_fields`) and, in the
header, the task set's names (``tasks``); runs without send neither, as before. Runs of a minigame
(`nmmo.games`) name it in the header (``game``: its ``name`` and ``title``) and send its state with
every tick packet (``game``: `game_field`). Replays that recorded the agents' value estimates
(`nmmo.Env.record_values`) also send ``value`` per entity, and the header says how to read it
(``values``: the ``scale`` it is stored at and the ``none`` that marks no estimate).
"""

from __future__ import annotations

import base64
import json

import numpy as np

from client_server.protocol import SPEED_RANGE
from nmmo.core.enums import MATERIAL_COLORS, Material
from nmmo.replays.replay import FIELDS, NO_VALUE, TASK_FIELDS, VALUE_SCALE, quantize

PROTOCOL_VERSION = 1
#: Fields sent per entity (the frame's `alive` and `damage` stay server-side) in a run without tasks.
SENT_FIELDS = [name for name in FIELDS if name not in ("alive", "damage", "value", *TASK_FIELDS)]
#: ... and in a run with tasks: the slot's task, its progress (per-mille) and whether it is done.
TASK_SENT_FIELDS = [*SENT_FIELDS, *TASK_FIELDS]


def sent_fields(tasks: bool, values: bool = False) -> list[str]:
    """The fields tick packets carry: with the task fields when the run has tasks, and ``value``
    (each agent's value estimate, in thousandths) when it recorded estimates."""
    return [*(TASK_SENT_FIELDS if tasks else SENT_FIELDS), *(["value"] if values else [])]


def b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def header_packet(mode: str, material: np.ndarray, *, center: int, border: int, ticks: int | None, tick: int,
                  overlays: list[str], config: dict, blank: dict[str, str] | None = None,
                  tasks: dict | None = None, game: dict | None = None, values: bool = False) -> dict:
    """The first packet of a connection: the map once, sizes, overlay names (and `blank`: what each
    shows on tiles without data, for the legend), config summary, and with tasks, `tasks`: the set's
    ``name`` and its specs' ``names`` (a frame's ``task`` indexes them; `task_summary`); with a
    minigame, `game` (`game_summary`); with `values` (value estimates recorded), how to read them."""
    extra = ({} if tasks is None else {"tasks": tasks}) | ({} if game is None else {"game": game})
    if values:
        extra["values"] = {"scale": VALUE_SCALE, "none": NO_VALUE}
    return {
        "type": "header", "version": PROTOCOL_VERSION, "mode": mode, "size": int(material.shape[0]),
        "center": center, "border": border, "material": b64(material.astype(np.uint8)),
        "materials": {str(int(m)): m.name.lower() for m in Material},
        "colors": {str(int(m)): list(rgb) for m, rgb in MATERIAL_COLORS.items()},
        "ticks": ticks, "tick": tick, "overlays": overlays, "overlay_blank": dict(blank or {}), "config": config,
        "fields": sent_fields(tasks is not None, values), "speed_range": list(SPEED_RANGE), **extra,
    }


def task_summary(tasks: object) -> dict | None:
    """What the header packet says of a run's tasks, from a replay header's ``tasks`` entry (or
    `nmmo.Env.task_header`'s): the set's name and its specs' names, each at most 100 characters
    (the entry is untrusted); None without tasks."""
    if not isinstance(tasks, dict) or not isinstance(tasks.get("names"), list):
        return None
    return {"name": str(tasks.get("name") or "")[:100], "names": [str(name)[:100] for name in tasks["names"]]}


def game_summary(game: object) -> dict | None:
    """What the header packet says of a run's minigame, from a replay header's ``game`` entry (or the
    first game state's ``game`` and ``title``): its ``name`` and ``title``; None without a game."""
    if not isinstance(game, dict):
        return None
    name, title = game.get("name", game.get("game")), game.get("title")
    return {"name": str(name)[:100], "title": str(title or name)[:100]} if name else None


def game_field(state: dict | None, frame: dict[str, np.ndarray]) -> dict | None:
    """The ``game`` entry of a tick packet: the game's state (`nmmo.Env.game_state`), with each
    king's entity id (``king_ids``, null for a slot out of range or dead) where the game names kings
    by slot, so the viewer can mark them; None without a game."""
    if not state:
        return None
    kings = state.get("kings")
    if isinstance(kings, list):
        ids, alive = frame["id"], frame["alive"]
        state = {**state, "king_ids": [int(ids[k]) if isinstance(k, int) and 0 <= k < ids.size and alive[k] else None
                                       for k in kings]}
    return state


def tick_packet(tick: int, frame: dict[str, np.ndarray], previous: dict[str, np.ndarray] | None,
                tile_changes: np.ndarray | None = None, fields: list[str] = SENT_FIELDS,
                game: dict | None = None) -> dict:
    """Entities changed since `previous` (all live ones when it is None: a full packet), their
    `fields` (`sent_fields`); with a minigame, its state `game` (`game_field`)."""
    alive = frame["alive"].astype(bool)
    if previous is None:
        changed = alive
        removed = np.zeros(0, dtype=np.int64)
    else:
        was = previous["alive"].astype(bool)
        same_entity = was & alive & (previous["id"] == frame["id"])
        differs = np.zeros_like(alive)
        for name in fields:
            differs |= frame[name] != previous[name]
        changed = alive & (~same_entity | differs)
        removed = previous["id"][was & ~same_entity]
    rows = np.flatnonzero(changed)
    entities = {name: frame[name][rows].tolist() for name in fields}
    attackers = np.flatnonzero(alive & (frame["attack_style"] >= 0))
    targets = frame["attack_target"][attackers]
    target_damage = _damage_of(frame, targets)
    attacks = np.stack([frame["id"][attackers], targets, frame["attack_style"][attackers], target_damage],
                       axis=1).tolist() if attackers.size else []
    packet = {
        "type": "tick", "tick": tick, "full": previous is None, "entities": entities,
        "removed": removed.tolist(),
        "tiles": [] if tile_changes is None else np.asarray(tile_changes).tolist(),
        "attacks": attacks,
    }
    game = game_field(game, frame)
    if game is not None:
        packet["game"] = game
    return packet


def empty_tick(tick: int, fields: list[str] = SENT_FIELDS) -> dict:
    """A tick packet that changes nothing (to carry an overlay update on its own)."""
    return {"type": "tick", "tick": tick, "full": False, "entities": {name: [] for name in fields},
            "removed": [], "tiles": [], "attacks": []}


def _damage_of(frame: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """Damage each target took this tick (summed over its attackers), looked up by id."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(frame["id"])
    sorted_ids = frame["id"][order]
    at = np.clip(np.searchsorted(sorted_ids, ids), 0, len(sorted_ids) - 1)
    found = sorted_ids[at] == ids
    return np.where(found, frame["damage"][order][at], 0)


def overlay_field(name: str | None, heatmap: np.ndarray | None = None,
                  quantized: tuple[np.ndarray, float, float] | None = None) -> dict:
    """The `overlay` entry of a tick packet (data None clears the overlay)."""
    if name is None or (heatmap is None and quantized is None):
        return {"name": name, "min": 0.0, "max": 0.0, "data": None}
    data, low, high = quantized if quantized is not None else quantize(heatmap)
    return {"name": name, "min": low, "max": high, "data": b64(data)}


def with_overlay(packet_json: str, overlay: dict) -> str:
    """Add an overlay to an already-encoded tick packet (encode the shared part once per tick)."""
    return packet_json[:-1] + ',"overlay":' + json.dumps(overlay) + "}"


def dumps(packet: dict) -> str:
    return json.dumps(packet, separators=(",", ":"))
