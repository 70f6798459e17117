"""Garbage collection that runs outside the timed env call, for bench_env.py and reference_driver.py.

An env that pauses the collector during its step (ours does: `nmmo.envs.gc_pause`) leaves the
collections its allocations cause to the caller's code, outside the timed call. Both drivers
charge each env for them: `seconds` is the collection time spent while `stepping` was False.
Standard library only: reference_driver.py imports it under nmmo 2.1.1's interpreter.
"""

import gc
import time


class GcOutside:
    """Sums the seconds of the collections that start while `stepping` is False (`seconds`) and of
    all of them (`total`)."""

    def __init__(self):
        self.stepping, self.seconds, self.total, self._start, self._inside = False, 0.0, 0.0, None, False
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, info):
        if phase == "start":
            self._start, self._inside = time.perf_counter(), self.stepping
        elif self._start is not None:
            elapsed = time.perf_counter() - self._start
            self.total += elapsed
            if not self._inside:
                self.seconds += elapsed
            self._start = None

    def stop(self):
        gc.callbacks.remove(self._on_gc)
