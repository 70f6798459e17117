"""Python's cyclic garbage collector paused for the length of one dict-API call.

A dict step at 1024 agents allocates about 5,000 containers that all outlive it: each agent's
observation dict and its masks' dicts, its infos. Every 700 allocations start a collection, which
finds nothing to free (all of them are the step's results) but scans them, and the objects that
outlive two collections soon start a full one over every object in the process: 15-25 ms with
numpy and gymnasium imported, about 100 ms once torch is (docs/benchmarks.md). Paused, the step's
allocations are looked at once, after it: the same objects, a few collections instead of ten a
step, and full collections several times rarer.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block and restore it after (also on an exception);
    a collector the caller had disabled stays disabled. Reference counting frees as usual."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
