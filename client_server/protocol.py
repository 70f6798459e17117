"""The viewer protocol's commands: what a client may send, validated (docs/viewer_protocol.md).

Clients send small JSON commands (play, pause, step, speed, seek, overlay, follow); `parse_command`
turns a frame into a checked dict or raises `CommandError`, which the server sends back as an
error frame. The packets the server sends are built by `client_server.packets`.
"""

from __future__ import annotations

import json

#: Playback speeds a client may ask for, in ticks per second (sent in the header as `speed_range`:
#: the viewer builds its speed menu from it, and `nmmo serve --speed` is checked against it).
SPEED_RANGE = (0.5, 60.0)


class CommandError(ValueError):
    """A client command that cannot be carried out; sent back as an error frame."""


def parse_command(text: str) -> dict:
    """Decode one client frame into a validated command dict."""
    try:
        command = json.loads(text)
    except (TypeError, ValueError):
        raise CommandError(f"frames must be JSON objects, got {text[:80]!r}") from None
    if not isinstance(command, dict) or not isinstance(command.get("cmd"), str):
        raise CommandError('frames must be JSON objects with a "cmd" string')
    name = command["cmd"]
    if name in ("play", "pause", "step"):
        return {"cmd": name}
    if name == "speed":
        value = command.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                SPEED_RANGE[0] <= value <= SPEED_RANGE[1]):
            raise CommandError(f"speed needs a number of ticks per second in {SPEED_RANGE}, got {value!r}")
        return {"cmd": name, "value": float(value)}
    if name == "seek":
        tick = command.get("tick")
        if isinstance(tick, bool) or not isinstance(tick, int) or tick < 0:
            raise CommandError(f"seek needs a non-negative integer tick, got {tick!r}")
        return {"cmd": name, "tick": tick}
    if name == "overlay":
        overlay = command.get("name")
        if overlay is not None and not isinstance(overlay, str):
            raise CommandError(f"overlay needs a name or null, got {overlay!r}")
        return {"cmd": name, "name": overlay}
    if name == "follow":
        target = command.get("id")
        if target is not None and (isinstance(target, bool) or not isinstance(target, int)):
            raise CommandError(f"follow needs an entity id or null, got {target!r}")
        return {"cmd": name, "id": target}
    raise CommandError(f"unknown command {name!r}; commands: play, pause, step, speed, seek, overlay, follow")


def error_frame(message: str) -> str:
    return json.dumps({"type": "error", "message": message}, separators=(",", ":"))


# --------------------------------------------------------------- replays
