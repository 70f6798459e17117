"""The channel between an episode and a submission's worker process: data, never pickles.

Messages travel as frames over two OS pipes: an 8-byte little-endian length, then the payload.
Both ends read with a deadline and a size limit, never blocking forever on a peer that stalls
halfway through a frame, and never holding more than the limit in memory.

- Episode to worker: JSON messages (``init``, ``close``) and ``act`` frames, which carry this
  tick's observations as raw arrays: a JSON header (agent ids, tick, each field's dtype, shape and
  byte offset) followed by the arrays' bytes. `decode_observations` rebuilds the per-agent dicts
  the policy API promises (views into one buffer).
- Worker to episode: JSON only (``ready``, ``ok`` with the actions, ``error``). `decode_reply`
  parses it with `json.loads` and checks its shape; anything else is a malformed reply. JSON can
  only build dicts, lists, strings and numbers, so nothing a worker writes to the pipe, however
  crafted, can run code in the episode process.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

import numpy as np

HEADER = struct.Struct("<Q")
#: Largest reply an episode accepts from a worker (actions for every agent fit in far less).
MAX_REPLY_BYTES = 8 * 2**20
#: Largest observation frame a worker accepts.
MAX_OBSERVATION_BYTES = 1 << 30
#: The observation arrays sent per agent, and where each lives in the observation dict.
OBS_PATHS = {"Tile": ("Tile",), "Entity": ("Entity",), "Move": ("ActionTargets", "Move", "Direction"),
             "Style": ("ActionTargets", "Attack", "Style"), "Target": ("ActionTargets", "Attack", "Target")}


class ChannelError(Exception):
    """A frame that could not be read: the peer closed, stalled past the deadline, or sent too much."""


class ChannelTimeout(ChannelError):
    """The deadline passed before a whole frame arrived (or could be sent)."""


# ------------------------------------------------------------------ frames
def write_frame(fd: int, payload: bytes, deadline: float | None = None) -> None:
    """Send one frame; the fd is non-blocking, so a peer that stops reading costs at most the
    time to `deadline` (None: wait as long as it takes)."""
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        _wait(fd, select.POLLOUT, deadline)
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError) as err:
            raise ChannelError(f"the peer closed the channel ({err.strerror or err})") from None
        data = data[written:]


def read_frame(fd: int, deadline: float | None, max_bytes: int) -> bytes:
    """Receive one frame of at most `max_bytes` before `deadline` (None: wait as long as it takes)."""
    size = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))[0]
    if size > max_bytes:
        raise ChannelError(f"a frame of {size} bytes, over the limit of {max_bytes}")
    return _read_exactly(fd, size, deadline)


def _read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    parts, left = [], count
    while left:
        _wait(fd, select.POLLIN, deadline)
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise ChannelError("the peer closed the channel")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _wait(fd: int, event: int, deadline: float | None) -> None:
    poller = select.poll()
    poller.register(fd, event | select.POLLHUP | select.POLLERR)
    while True:
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if poller.poll(None if timeout is None else int(timeout * 1000) + 1):
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise ChannelTimeout("the deadline passed")


def nonblocking(fd: int) -> int:
    os.set_blocking(fd, False)
    return fd


# --------------------------------------------------------------- messages
def encode_message(kind: str, **fields: Any) -> bytes:
    """A JSON message (``{"kind": kind, ...fields}``)."""
    return json.dumps({"kind": kind, **fields}, allow_nan=False).encode()


def decode_message(payload: bytes) -> dict[str, Any]:
    """A JSON message as a dict with a string ``kind``; ChannelError for anything else."""
    try:
        message = json.loads(payload)
    except (UnicodeDecodeError, ValueError) as err:
        raise ChannelError(f"not a JSON message ({type(err).__name__})") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
        raise ChannelError("not a message: expected a JSON object with a 'kind' string")
    return message


def decode_reply(payload: bytes) -> dict[str, Any]:
    """A worker's reply to ``act``: {"kind": "ok", "actions": {id: action}, "dropped": int,
    "problem": str | None} or {"kind": "error", "message": str}; ChannelError for anything else
    (the actions themselves are validated by the caller, against the agents it controls)."""
    reply = decode_message(payload)
    kind = reply["kind"]
    if kind == "error" and isinstance(reply.get("message"), str):
        return reply
    if kind == "ok" and isinstance(reply.get("actions"), dict) and type(reply.get("dropped", 0)) is int and (
            reply.get("problem") is None or isinstance(reply.get("problem"), str)):
        reply["actions"] = {_agent_key(k): v for k, v in reply["actions"].items()}
        return reply
    raise ChannelError(f"an unexpected reply of kind {kind[:40]!r}")


def _agent_key(key: str) -> int | str:
    """JSON object keys are strings: agent ids come back as ints (anything else stays a string,
    which validation then drops as an agent the policy does not control)."""
    return int(key) if key.lstrip("-").isdigit() and len(key) < 20 else key


def encode_actions(actions: dict[int, dict]) -> dict[str, dict]:
    return {str(agent): action for agent, action in actions.items()}


# ------------------------------------------------------------ observations
def encode_observations(observations: dict[int, dict]) -> bytes:
    """A tick's observations of a policy's agents as one frame payload: a JSON header, then
    every field's arrays stacked over the agents, back to back."""
    agents = list(observations)
    first = observations[agents[0]]
    header: dict[str, Any] = {"agents": agents, "tick": int(first["CurrentTick"]), "fields": {}}
    blobs, offset = [], 0
    for name, path in OBS_PATHS.items():
        stacked = np.ascontiguousarray(np.stack([_at(observations[a], path) for a in agents]))
        header["fields"][name] = {"dtype": stacked.dtype.str, "shape": list(stacked.shape), "offset": offset}
        blobs.append(stacked.tobytes())
        offset += stacked.nbytes
    head = json.dumps(header).encode()
    return HEADER.pack(len(head)) + head + b"".join(blobs)


def decode_observations(payload: bytes) -> dict[int, dict]:
    """The per-agent observation dicts of `encode_observations`' payload (views into one buffer)."""
    size = HEADER.unpack_from(payload)[0]
    header = json.loads(payload[HEADER.size : HEADER.size + size])
    body = memoryview(payload)[HEADER.size + size :]
    arrays = {}
    for name, spec in header["fields"].items():
        dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
        count = int(np.prod(shape))
        arrays[name] = np.frombuffer(body, dtype=dtype, count=count, offset=spec["offset"]).reshape(shape)
    tick = header["tick"]
    return {agent: {"Tile": arrays["Tile"][i], "Entity": arrays["Entity"][i],
                    "ActionTargets": {"Move": {"Direction": arrays["Move"][i]},
                                      "Attack": {"Style": arrays["Style"][i], "Target": arrays["Target"][i]}},
                    "AgentId": agent, "CurrentTick": tick}
            for i, agent in enumerate(header["agents"])}


def _at(value: dict, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value[key]
    return value
