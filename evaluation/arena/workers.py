"""The processes that play the arena's episodes: local worker processes, or Ray actors.

Why processes and not threads: an episode is CPU-bound Python, and a worker that dies (a kill -9,
the kernel's OOM killer) must take nothing down with it but its own episode. Each local worker is
a spawned process that plays one `EpisodeTask` at a time with `evaluation.episode.run_episode`, the
tournament's own episode (so submissions run in the sandbox, trusted bots in-process), and sends
the `EpisodeResult` back over its pipe. It dies with the server (`die_with_parent`: the kernel's
parent-death signal, set from the thread that started it, the server's main thread), and the
submissions' workers it starts die with it (their own parent-death signal and process group): a
kill -9 anywhere leaves no process behind.

Both pools answer the same calls: `idle()`, `submit(slot, task)`, `poll(timeout)` (the events:
a result, an episode that raised, a worker lost mid-episode) and `close()`.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from evaluation.episode import EpisodeResult, EpisodeTask, episode_worker, run_episode
from evaluation.sandbox.texts import error_text
from evaluation.submission import START_METHOD

#: A worker process is replaced after this many episodes, so that whatever a policy leaks (a trusted
#: bot's caches, torch's allocator) cannot grow for days.
RECYCLE_AFTER = 50
#: How long a worker has to exit after being asked before it is killed.
STOP_GRACE_S = 2.0


@dataclass
class Event:
    """What happened to the episode of a slot: ``result`` (with `result`), ``error`` (the episode
    raised: `reason`) or ``lost`` (the worker died mid-episode: `reason`)."""

    kind: str
    slot: int
    claim: int
    result: EpisodeResult | None = None
    reason: str = ""


def worker_main(conn: Connection, parent: int) -> None:
    """A local worker: play each task it is sent until told to stop (None) or the server is gone."""
    episode_worker(parent)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            message: tuple[Any, ...] = ("result", task.index, run_episode(task))
        except Exception as err:  # noqa: BLE001 - an engine error: the server decides what to do with the claim
            message = ("error", task.index, error_text(err))
        try:
            conn.send(message)
        except (BrokenPipeError, OSError):
            return


@dataclass
class _Slot:
    process: Any
    conn: Connection
    claim: int | None = None
    started: float = 0.0
    played: int = 0


class ProcessWorkers:
    """`count` local worker processes, each with one episode at a time."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"--workers must be >= 1, got {count}")
        self.context = multiprocessing.get_context(START_METHOD)
        self.slots: list[_Slot] = [self._start() for _ in range(count)]

    def _start(self) -> _Slot:
        ours, theirs = self.context.Pipe(duplex=True)
        process = self.context.Process(target=worker_main, args=(theirs, os.getpid()), daemon=True,
                                       name="nmmo-arena-worker")
        process.start()
        theirs.close()
        return _Slot(process, ours)

    def idle(self) -> list[int]:
        return [i for i, slot in enumerate(self.slots) if slot.claim is None]

    def pid(self, slot: int) -> int | None:
        return self.slots[slot].process.pid

    def busy(self) -> dict[int, tuple[int, int | None, float]]:
        """{slot: (claim, worker pid, seconds since it started)} of the episodes being played."""
        now = time.monotonic()
        return {i: (s.claim, s.process.pid, now - s.started) for i, s in enumerate(self.slots) if s.claim is not None}

    def submit(self, slot: int, task: EpisodeTask) -> Event | None:
        """Hand a task to an idle slot (an Event when its worker is already gone)."""
        state = self.slots[slot]
        state.claim, state.started = task.index, time.monotonic()
        try:
            state.conn.send(task)
        except (BrokenPipeError, OSError):
            return self._lost(slot, "its worker was gone when the episode was handed over")
        return None

    def poll(self, timeout: float) -> list[Event]:
        """The events of the next `timeout` seconds at most (returns at the first)."""
        waiting = {s.conn: i for i, s in enumerate(self.slots)} | {s.process.sentinel: i for i, s in
                                                                   enumerate(self.slots)}
        events = []
        for ready in wait(list(waiting), timeout):
            slot = waiting[ready]
            if any(e.slot == slot for e in events):
                continue
            event = self._read(slot)
            if event is not None:
                events.append(event)
        return events

    def _read(self, slot: int) -> Event | None:
        state = self.slots[slot]
        try:
            if state.conn.poll():
                kind, claim, payload = state.conn.recv()
                state.claim = None
                state.played += 1
                if state.played >= RECYCLE_AFTER:
                    self._replace(slot)
                return Event(kind, slot, claim, payload if kind == "result" else None,
                             payload if kind == "error" else "")
        except (EOFError, OSError):
            pass
        if state.process.is_alive():
            return None
        code = state.process.exitcode
        return self._lost(slot, f"its worker (pid {state.process.pid}) died"
                                + (f" of signal {-code}" if code is not None and code < 0 else f" (exit {code})"))

    def _lost(self, slot: int, reason: str) -> Event | None:
        claim = self.slots[slot].claim
        self._replace(slot)
        return None if claim is None else Event("lost", slot, claim, reason=reason)

    def _replace(self, slot: int) -> None:
        self._stop(self.slots[slot])
        self.slots[slot] = self._start()

    def _stop(self, state: _Slot) -> None:
        try:
            state.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        state.process.join(STOP_GRACE_S if state.claim is None else 0)
        if state.process.is_alive():
            state.process.kill()
            state.process.join(STOP_GRACE_S)
        state.conn.close()

    def close(self) -> None:
        """End every worker: idle ones are asked, busy ones killed (their claims stay to be replayed)."""
        for state in self.slots:
            self._stop(state)
        self.slots = []


class RayWorkers:
    """`count` Ray actors (`evaluation.episode.EpisodeWorker`) on the cluster at `address`. An
    actor lost mid-episode is replaced and its claim replayed, as a local worker's is."""

    def __init__(self, count: int, address: str) -> None:
        from evaluation.episode import EpisodeWorker
        from nmmo.engines import distributed

        if count < 1:
            raise ValueError(f"--workers must be >= 1, got {count}")
        try:
            self.ray = distributed.init(address)
        except (ConnectionError, RuntimeError, TimeoutError) as err:  # no cluster there: one error line
            raise ValueError(f"--ray-address {address}: cannot join that Ray cluster ({err})") from None
        distributed.check_capacity(self.ray, count)
        self.remote_class = self.ray.remote(num_cpus=1, max_restarts=0)(EpisodeWorker)
        self.actors = [self.remote_class.remote() for _ in range(count)]
        self.pids: list[int | None] = list(self.ray.get([actor.pid.remote() for actor in self.actors]))
        self.running: dict[Any, tuple[int, int, float]] = {}  # ref -> (slot, claim, started)

    def idle(self) -> list[int]:
        taken = {slot for slot, _, _ in self.running.values()}
        return [i for i in range(len(self.actors)) if i not in taken]

    def pid(self, slot: int) -> int | None:
        return self.pids[slot]

    def busy(self) -> dict[int, tuple[int, int | None, float]]:
        now = time.monotonic()
        return {slot: (claim, self.pids[slot], now - started) for slot, claim, started in self.running.values()}

    def submit(self, slot: int, task: EpisodeTask) -> Event | None:
        self.running[self.actors[slot].run.remote(task)] = (slot, task.index, time.monotonic())
        return None

    def poll(self, timeout: float) -> list[Event]:
        if not self.running:
            time.sleep(timeout)
            return []
        done, _ = self.ray.wait(list(self.running), num_returns=1, timeout=timeout)
        events = []
        for ref in done:
            slot, claim, _ = self.running.pop(ref)
            try:
                events.append(Event("result", slot, claim, self.ray.get(ref)))
            except self.ray.exceptions.RayActorError as err:
                self.actors[slot] = self.remote_class.remote()
                self.pids[slot] = self.ray.get(self.actors[slot].pid.remote())  # started: a pid for the status
                events.append(Event("lost", slot, claim, reason=f"its Ray actor died ({type(err).__name__})"))
            except self.ray.exceptions.RayTaskError as err:
                events.append(Event("error", slot, claim, reason=str(err).splitlines()[-1][:500]))
        return events

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors, self.running = [], {}
