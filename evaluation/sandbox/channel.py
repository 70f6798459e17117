"""The channel between an episode and a submission's worker process: data, never pickles.

Messages travel as frames over two OS pipes: an 8-byte little-endian length, then the payload.
Both ends read with a deadline and a size limit, never blocking forever on a peer that stalls
halfway through a frame, and never holding more than the limit in memory.

- Episode to worker: JSON messages (``init``, ``close``) and ``act`` frames, which carry this
  tick's observations as raw arrays: a JSON header (agent ids, tick, each field's name, dict path,
  dtype, shape and byte offset) followed by the arrays' bytes. `decode_observations` rebuilds the
  array batch (`nmmo.core.layout.ObsBatch`, views into one buffer) that the policy is handed, whichever
  fields the layout has.
- Worker to episode: fixed binary frames, never JSON (`Reply`): ``R`` (ready), ``E`` and a
  UTF-8 message (an error), or ``A`` and the tick's actions as arrays: a uint32 count n, n int64
  agent ids, an (n, 3) int64 array of (direction, style, target) rows, then an optional UTF-8
  note (the first problem the worker met reading its policy's dict). `decode_reply` checks the
  sizes and builds nothing but two int64 arrays and two short strings; a frame it cannot read,
  whatever the reason, is a ChannelError (a malformed reply). The episode validates every row
  itself and counts what it drops (`evaluation.submission.validate_rows`): no number in the
  results comes from what a worker says about itself.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from nmmo.core.layout import ObsBatch

HEADER = struct.Struct("<Q")
#: Largest reply an episode accepts from a worker (actions for every agent fit in far less).
MAX_REPLY_BYTES = 8 * 2**20
#: Largest observation frame a worker accepts.
MAX_OBSERVATION_BYTES = 1 << 30


class ChannelError(Exception):
    """A frame that could not be read: the peer closed, stalled past the deadline, or sent too much."""


class ChannelClosed(ChannelError):
    """The peer closed its end (end of file, a broken pipe): it has exited or is exiting."""


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
            raise ChannelClosed(f"the peer closed the channel ({err.strerror or err})") from None
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
            raise ChannelClosed("the peer closed the channel")
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
    """A JSON message as a dict with a string ``kind``; ChannelError for anything else (of any
    exception type: nesting too deep for the parser is one)."""
    try:
        message = json.loads(payload)
    except Exception as err:  # noqa: BLE001 - ValueError, UnicodeDecodeError, RecursionError, ...
        raise ChannelError(f"not a JSON message ({type(err).__name__})") from None
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
        raise ChannelError("not a message: expected a JSON object with a 'kind' string")
    return message


# ---------------------------------------------------------------- replies
READY, ERROR, ACTIONS = b"R", b"E", b"A"
COUNT = struct.Struct("<I")
#: Longest error message or note kept from a reply, in characters (the rest is cut).
MAX_REPLY_TEXT = 300


@dataclass(frozen=True)
class Reply:
    """A worker's reply as the episode reads it: ``kind`` is "ready", "error" (with `text`) or
    "actions" (agent `ids` (n,) and (direction, style, target) `rows` (n, 3), int64, and the
    worker's `text` note on what it could not read, or None)."""

    kind: str
    ids: np.ndarray | None = None
    rows: np.ndarray | None = None
    text: str | None = None


def encode_ready() -> bytes:
    return READY


def encode_error(message: str) -> bytes:
    return ERROR + message[:MAX_REPLY_TEXT].encode("utf-8", "replace")


def encode_actions(ids: np.ndarray, rows: np.ndarray, note: str | None = None) -> bytes:
    """An ``A`` frame: the count, the ids, the rows, the note (see the module notes)."""
    ids = np.ascontiguousarray(ids, dtype="<i8")
    rows = np.ascontiguousarray(rows, dtype="<i8")
    if rows.shape != (len(ids), 3):
        raise ValueError(f"rows must have shape ({len(ids)}, 3), got {rows.shape}")
    text = b"" if note is None else note[:MAX_REPLY_TEXT].encode("utf-8", "replace")
    return ACTIONS + COUNT.pack(len(ids)) + ids.tobytes() + rows.tobytes() + text


def decode_reply(payload: bytes) -> Reply:
    """A worker's frame as a `Reply`; ChannelError for anything else, whatever went wrong."""
    try:
        return _decode_reply(payload)
    except ChannelError:
        raise
    except Exception as err:  # noqa: BLE001 - any failure to read a frame is the sender's fault
        raise ChannelError(f"an unreadable reply ({type(err).__name__})") from None


def _decode_reply(payload: bytes) -> Reply:
    kind = payload[:1]
    if kind == READY and len(payload) == 1:
        return Reply("ready")
    if kind == ERROR:
        return Reply("error", text=_text(payload[1:]))
    if kind != ACTIONS or len(payload) < 1 + COUNT.size:
        raise ChannelError(f"a reply that starts with {bytes(payload[:8])!r}, not a ready, error or actions frame")
    (n,) = COUNT.unpack_from(payload, 1)
    start = 1 + COUNT.size
    end = start + 32 * n
    if len(payload) < end:
        raise ChannelError(f"an actions frame announcing {n} actions holds only {len(payload) - start} bytes of them")
    ids = np.frombuffer(payload, dtype="<i8", count=n, offset=start).astype(np.int64)
    rows = np.frombuffer(payload, dtype="<i8", count=3 * n, offset=start + 8 * n).astype(np.int64).reshape(n, 3)
    note = payload[end:]
    return Reply("actions", ids, rows, _text(note) if note else None)


def _text(data: bytes) -> str:
    """A short string of whatever bytes a worker sent as text."""
    return data[: 4 * MAX_REPLY_TEXT].decode("utf-8", "replace")[:MAX_REPLY_TEXT]


# ------------------------------------------------------------ observations
def encode_observations(batch: ObsBatch) -> bytes:
    """A tick's array batch of a policy's agents as one frame payload: a JSON header, then every
    field's stacked arrays, back to back."""
    header: dict[str, Any] = {"agents": batch.ids.tolist(), "tick": int(batch.tick), "fields": {}}
    blobs, offset = [], 0
    for name, values in batch.items():
        values = np.ascontiguousarray(values)
        header["fields"][name] = {"dtype": values.dtype.str, "shape": list(values.shape), "offset": offset,
                                  "key": list(batch.key(name))}
        blobs.append(values.tobytes())
        offset += values.nbytes
    head = json.dumps(header).encode()
    return HEADER.pack(len(head)) + head + b"".join(blobs)


def decode_observations(payload: bytes) -> ObsBatch:
    """The array batch of `encode_observations`' payload (views into one buffer). Only the worker
    reads it, from its own episode: a frame it cannot read ends the worker, nothing else."""
    size = HEADER.unpack_from(payload)[0]
    header = json.loads(payload[HEADER.size : HEADER.size + size])
    body = memoryview(payload)[HEADER.size + size :]
    arrays, keys = {}, {}
    for name, spec in header["fields"].items():
        dtype, shape = np.dtype(spec["dtype"]), tuple(spec["shape"])
        count = int(np.prod(shape))
        arrays[name] = np.frombuffer(body, dtype=dtype, count=count, offset=spec["offset"]).reshape(shape)
        keys[name] = tuple(spec["key"])
    return ObsBatch(np.asarray(header["agents"], dtype=np.int64), arrays, int(header["tick"]), keys)
