"""Task files read within bounds: a task file may come from anyone, so its size, its task count,
its nesting, its integers and its floats are checked before (and while) it is parsed, and every
refusal is a ValueError naming the file, the task and the field (`nmmo.tasks.spec` reads the
tasks). Loading stays linear in the file's size: tomllib's quadratic dotted keys are refused from
the raw text, the parsers' recursion limit is met with a located error, and the values are walked
without recursion.
"""

from __future__ import annotations

import gc
import json
import math
import re
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

# Caps on a task file, far above any real one (the shipped sets are a few KiB, tens of tasks, 4 deep)
# and low enough that a hostile file is refused fast, with a ValueError, never a hang, a RecursionError
# or a NaN reward.
#: Bytes, checked by ``stat`` before reading (and no more than this is read): tomllib parses ~1.7 MB/s,
#: so this bounds a TOML file's parse to ~10 s (JSON: ~1 s).
MAX_TASK_FILE_BYTES = 16 * 2**20
#: Tasks in one set; a TOML file's ``[[task]]`` headers are counted before it is parsed.
MAX_TASKS = 100_000
#: Tables and arrays within one task (the task's table is 1, its ``and`` list 2, a node in it 3, ...);
#: a dotted TOML key counts one per part. tomllib and json recurse and give up near 1000 levels, and
#: tomllib is quadratic in a dotted key's parts.
MAX_DEPTH = 64
#: Magnitude of any integer (2**53: exact as a float64 and in any JSON reader; predicate arguments
#: are within 2**31 - 1). A 400-digit integer parses, then overflows numpy.
MAX_INT = 2**53
#: Magnitude of reward, weight and sum weights: products of weights over nested sums (the
#: embedding) and rewards summed over every agent and tick stay finite.
MAX_MAGNITUDE = 1e6
MAX_HOLD = 2**31 - 1  # ticks

_NEWLINE = b"\n"
_TASK_HEADER = re.compile(rb"""\[\[[ \t]*(?:task|"task"|'task')[ \t]*\]\]""")  # starts with a literal: fast
_KEY_PART = rb"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_DOT_PART = rb"[ \t]*+\.[ \t]*+" + _KEY_PART
#: Eight dotted parts in a row: a filter that skips from dot to dot at C speed (it starts with one).
_EIGHT_PARTS = re.compile(rb"\.[ \t]*+" + _KEY_PART + rb"(?:" + _DOT_PART + rb"){7}")
#: A whole dotted key of nine parts or more, matched once from its first part.
_DOTTED_KEY = re.compile(rb"(?<![A-Za-z0-9_-])" + _KEY_PART + rb"(?:" + _DOT_PART + rb"){8,}+")
_LINE_KEY = re.compile(rb"[ \t]*+([^=\n\[{#]+?)[ \t]*=")  # a TOML line's key
_JSON_KEY = re.compile(rb'"((?:[^"\\\n]|\\.)*+)"\s*+:')
_OPEN, _CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)
_STRINGS = re.compile(rb"(?:\"(?:[^\"\\\n]|\\.)*+\"|'[^'\n]*+'|#[^\n]*+)")  # one-line strings, comments



def read_bounded(path: Path) -> bytes:
    """The file's bytes, refused by its size before one is read (and no more than the cap read,
    should it grow meanwhile)."""
    size = path.stat().st_size
    if size <= MAX_TASK_FILE_BYTES:
        with path.open("rb") as handle:
            raw = handle.read(MAX_TASK_FILE_BYTES + 1)
        size = len(raw)
    if size > MAX_TASK_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes, over the {MAX_TASK_FILE_BYTES} a task file may have "
                         "(MAX_TASK_FILE_BYTES)")
    return raw


def prescan_toml(raw: bytes, path: Path) -> None:
    """Refuse from the raw text what tomllib would spend long on: more [[task]] tables than
    MAX_TASKS, and a dotted key deeper than MAX_DEPTH (tomllib is quadratic in time and memory in
    its parts: 10k parts take 2 s, 40k 46 s)."""
    headers = sum(1 for _ in _TASK_HEADER.finditer(raw))
    if headers > MAX_TASKS:
        raise ValueError(f"{path}: {headers} [[task]] tables, over the {MAX_TASKS} a task set may have (MAX_TASKS)")
    key = _long_key(raw)
    if key is not None:
        raise ValueError(f"{path}: {_toml_place(raw, key)}: a dotted key of more than {MAX_DEPTH} "
                         f"parts nests tables more than {MAX_DEPTH} deep (MAX_DEPTH)")


def _long_key(raw: bytes) -> int | None:
    """Where a dotted key of more than MAX_DEPTH parts starts, if one does (a dot in a quoted part
    counts as one more part). A file without a key of nine parts, most, is done with at C speed."""
    first = _EIGHT_PARTS.search(raw)
    if first is None:
        return None
    for key in _DOTTED_KEY.finditer(raw, raw.rfind(_NEWLINE, 0, first.start()) + 1):
        if key[0].count(b".") >= MAX_DEPTH:
            return key.start()
    return None


def parse_file(raw: bytes, path: Path) -> Any:
    """The parsed file; every parser error (bad syntax or UTF-8, an int past 4300 digits, nesting
    past the parser's recursion limit) a ValueError naming the file."""
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        text = raw.decode("utf-8")
        return json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except RecursionError:
        raise _too_deep(raw, path, kind == "TOML") from None
    except ValueError as err:  # JSONDecodeError, TOMLDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{path}: not valid {kind}: {err}") from None


def _too_deep(raw: bytes, path: Path, toml: bool) -> ValueError:
    """The error for a file nested past the parser's recursion limit: the task, field and line where
    brackets first nest past MAX_DEPTH, found in the text with its strings and comments skipped
    (TOML's multi-line strings are not: only a message reads it)."""
    text = _STRINGS.sub(b'""', raw) if toml else _blank_json_strings(raw)
    code = np.frombuffer(text, np.uint8)
    depth = np.cumsum(np.isin(code, _OPEN).astype(np.int8) - np.isin(code, _CLOSE), dtype=np.int32)
    over = np.flatnonzero(depth > MAX_DEPTH)
    offset = int(over[0]) if len(over) else len(code)
    if toml:
        where = _toml_place(text, offset)
    else:  # tasks are the items of the top-level list, or of the 'task' list in the top-level object
        commas = (code[:offset] == ord(",")) & (depth[:offset] == (2 if text.lstrip()[:1] == b"{" else 1))
        keys = list(_JSON_KEY.finditer(raw, max(0, offset - 4096), offset))
        where = _where(int(commas.sum()), keys[-1][1] if keys else None, text.count(_NEWLINE, 0, offset) + 1)
    return ValueError(f"{path}: {where}: tables and arrays nested more than {MAX_DEPTH} deep (MAX_DEPTH)")


def _blank_json_strings(raw: bytes) -> bytes:
    """`raw` with every JSON string's bytes blanked (a quote is a string's end unless an odd run
    of backslashes precedes it), offsets kept; vectorized, as a hostile file may hold millions."""
    code = np.frombuffer(raw, np.uint8)
    index = np.arange(len(code), dtype=np.int32)
    last_plain = np.maximum.accumulate(np.where(code == ord("\\"), -1, index))  # last non-backslash so far
    run = np.zeros(len(code), np.int32)
    run[1:] = index[:-1] - last_plain[:-1]  # backslashes right before each byte
    quote = (code == ord('"')) & (run % 2 == 0)
    blank = code.copy()
    blank[(np.cumsum(quote) % 2 == 1) & ~quote] = ord(" ")
    return blank.tobytes()


def _toml_place(text: bytes, offset: int) -> str:
    """The task (by the [[task]] headers above), the key and the line at byte `offset` of TOML text."""
    start = text.rfind(_NEWLINE, 0, offset) + 1
    key = _LINE_KEY.match(text, start)
    tasks = sum(1 for _ in _TASK_HEADER.finditer(text, 0, offset))
    return _where(tasks - 1, key[1] if key else None, text.count(_NEWLINE, 0, offset) + 1)


def _where(task: int, key: bytes | None, line: int) -> str:
    """"task 3, field 'tags', line 9" (task < 0: none; the key, when there is one, shortened)."""
    parts = [f"task {task}"] if task >= 0 else []
    if key:
        parts.append(f"field {show(key.decode(errors='replace'))}")
    return ", ".join([*parts, f"line {line}"])


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cycle collector paused: parsed data and specs hold no cycles, and its passes over a heap
    growing by thousands of them took half the load time, in steps that made it grow faster than
    the number of tasks."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_values(entry: dict, fail) -> None:
    """Every value of a task table within the caps before any is read: tables and arrays at most
    MAX_DEPTH deep (walked without recursion), integers within +-MAX_INT, floats finite."""
    stack: list[tuple[Any, int, tuple | None]] = [(entry, 1, None)]  # a table or array, its depth and path
    while stack:
        container, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise fail(field_name(path), f"tables and arrays nested more than {MAX_DEPTH} deep (MAX_DEPTH)")
        for key, value in container.items() if isinstance(container, dict) else enumerate(container):
            if isinstance(value, (dict, list)):
                stack.append((value, depth + 1, (path, key)))
            elif isinstance(value, float) and not math.isfinite(value):
                raise fail(field_name((path, key)), f"{value!r}: numbers in task files are finite")
            elif isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
                raise fail(field_name((path, key)), f"{show(value)}: integers in task files are within +-2**53 "
                                                "(MAX_INT)")


def field_name(path: tuple | None) -> str:
    """A walked path as a field name: ``and[1].args.N``."""
    keys = []
    while path is not None:
        path, key = path
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else str(key)
    return text


def show(value: Any) -> str:
    """A value for an error message, short: a hostile list may hold millions of items or nest a
    thousand deep, and int -> str is capped at 4300 digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, (list, dict)):
        items = value.values() if isinstance(value, dict) else value
        if len(value) > 16 or any(isinstance(item, (list, dict)) for item in items):  # nested: by its size
            return f"a {type(value).__name__} of {len(value)} items"
    text = repr(value[:80] if isinstance(value, str) else value)
    return text if len(text) <= 80 else text[:77] + "..."
