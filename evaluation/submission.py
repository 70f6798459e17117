"""Policies in an episode: one handle per policy, faults counted, actions validated.

Trusted policies, the registered names (`trusted_specs`: ``random``, ``idle``, ``scripted:NAME`` for
each shipped bot, ``baseline:NAME`` for each shipped baseline), run in-process (`InProcessPolicy`).
Everything else (a ``pkg.module:Class``, ``path/file.py:Class``, ``path/folder:Class`` or ``ckpt:PATH``
submission) runs
in a bounded worker process (`SubprocessPolicy`, over `evaluation.sandbox.host`) and must answer each
tick within a time budget. When a policy raises, returns something malformed or does not answer in
time, its agents idle that tick and the fault is counted by kind (`evaluation.faults`); a worker
that timed out, died or broke the channel is killed and restarted (a fresh ``Policy(config)`` with
the same seed) before the next tick. After `max_restarts` restarts in one episode, or when the
policy cannot even be built, its agents idle for the rest of the episode.
"""

from __future__ import annotations

import abc
import functools
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.faults import FAULT_KINDS, Faults  # noqa: F401 - Faults, FAULT_KINDS re-exported
from evaluation.sandbox import namespaces
from evaluation.sandbox.channel import ChannelClosed, ChannelError, ChannelTimeout
from evaluation.sandbox.host import (
    Limits,
    Worker,
    check_spec_in_worker,
    close_worker,
    receive_actions,
    send_observations,
    start_worker,
)
from evaluation.sandbox.texts import error_text, preview
from nmmo.config import Config
from nmmo.core.actions import UNREADABLE_ROW, action_rows, rows_in_space, rows_to_actions
from nmmo.core.layout import ObsBatch, from_dicts
from nmmo.policy import BUILTIN, PATH_SCHEMES, act_rows, load_policy_class, names_a_path

#: A tick without actions (ids, rows).
NO_ACTIONS = (np.zeros(0, dtype=np.int64), np.zeros((0, 3), dtype=np.int64))
#: How episode pools start their processes: a clean interpreter, no inherited locks, threads or state.
START_METHOD = "spawn"
#: How long a worker that closed its channel has to be seen exiting before its fault counts as malformed.
WAIT_FOR_EXIT_S = 2.0


# -------------------------------------------------------------- validation
def validate_rows(ids: np.ndarray, rows: np.ndarray, controlled: frozenset[int] | set[int],
                  n_obs: int) -> tuple[np.ndarray, np.ndarray, int, str | None]:
    """Keep the rows that are actions of agents in `controlled`, one per agent, inside the action
    space (`nmmo.core.actions.rows_in_space`): the one check every policy's reply goes through, whether
    it came from a worker's frame or an in-process policy's dict (`action_rows`).

    Returns (kept ids, kept rows, number of rows dropped, a message naming the first dropped row or
    None). Every count is made here, from the rows themselves."""
    n = len(ids)
    if n == 0:
        return ids, rows, 0, None
    mine = np.fromiter((agent in controlled for agent in ids.tolist()), dtype=bool, count=n)
    first = np.zeros(n, dtype=bool)
    first[np.unique(ids, return_index=True)[1]] = True
    in_space = rows_in_space(rows, n_obs)
    keep = mine & first & in_space
    dropped = n - int(keep.sum())
    if not dropped:
        return ids, rows, 0, None
    i = int(np.flatnonzero(~keep)[0])
    agent = int(ids[i])
    if not mine[i]:
        problem = f"action for agent {agent}, which this policy does not control"
    elif not first[i]:
        problem = f"more than one action for agent {agent}"
    elif tuple(rows[i].tolist()) == UNREADABLE_ROW:
        problem = f"agent {agent}: an action that could not be read"
    else:
        problem = (f"agent {agent}: action (Direction, Style, Target) = {tuple(rows[i].tolist())} is outside the "
                   f"action space (0..4, -1..2, -1..{n_obs})")
    return ids[keep], rows[keep], dropped, problem


def validate_actions(actions: Any, controlled: set[int] | frozenset[int],
                     n_obs: int = 2**62) -> tuple[dict[int, dict], int, str | None]:
    """Keep the well-formed actions of agents in `controlled` from a dict reply (`validate_rows`
    over `action_rows`). Returns (clean actions, number of single-agent actions dropped, a message
    naming the first problem or None). A reply that is not a mapping drops everything (counted as
    one). Without `n_obs` the target index is not checked against the observation's size."""
    ids, rows, note = action_rows(actions)
    ids, rows, dropped, problem = validate_rows(ids, rows, frozenset(controlled), n_obs)
    return rows_to_actions(ids, rows), dropped, (f"{problem} ({note})" if note else problem) if dropped else None


# ------------------------------------------------------------------ specs
#: The directory holding this project's packages (nmmo, scripted, baselines, evaluation), wherever installed.
PROJECT_DIR = Path(__file__).resolve().parent.parent


@functools.cache
def trusted_specs() -> frozenset[str]:
    """The exact specs that run in-process: the built-ins, each shipped bot (``scripted:NAME``) and
    each shipped baseline (``baseline:NAME``, a weights file in baselines/weights/). Everything
    else, whatever its prefix, is a submission. Found once per process (a failure is not kept)."""
    bots = shipped_module("scripted").BOTS
    weights = sorted(path.stem for path in (PROJECT_DIR / "baselines" / "weights").glob("*.pt"))
    return frozenset([*BUILTIN, *(f"scripted:{name}" for name in bots), *(f"baseline:{name}" for name in weights)])


def shipped_module(name: str) -> Any:
    """The top-level module `name` of this install, found before any of its code runs: a folder of
    that name earlier on sys.path (the working directory, PYTHONPATH) is refused, never imported."""
    found = importlib.util.find_spec(name)
    origin = Path(found.origin).resolve() if found is not None and found.origin else None
    if origin is None or PROJECT_DIR not in origin.parents:
        raise ValueError(f"{name!r} resolves to {origin}, not to this install's package in {PROJECT_DIR}: "
                          "a folder of that name in the working directory or on PYTHONPATH shadows it")
    return importlib.import_module(name)


def load_trusted(spec: str) -> type:
    """The class of a spec to run in-process; a registered name's is checked to be defined by this
    install's own code. (`make_handle` runs only registered names in-process; a caller that builds
    an `InProcessPolicy` itself runs what it names.)"""
    trusted = is_trusted(spec)
    if trusted and spec.startswith("baseline:"):
        shipped_module("baselines")  # this install's, checked before its code runs
    cls = load_policy_class(spec)
    if not trusted:
        return cls
    where = Path(getattr(sys.modules.get(cls.__module__), "__file__", "") or "").resolve()
    if PROJECT_DIR not in where.parents:
        raise ValueError(f"{spec!r} loaded code from {where}, outside this install ({PROJECT_DIR})")
    return cls


def is_trusted(spec: str) -> bool:
    """True for the registered names only (`trusted_specs`: random, idle, the shipped bots and
    baselines, each by its exact spec); a file, a module, a folder or a checkpoint is a submission."""
    return isinstance(spec, str) and spec in trusted_specs()


def worker_spec(spec: str) -> str:
    """The spec as a worker process should load it: a file path made absolute, of a policy file
    (``path/to/file.py:Class``), a folder (``path/to/folder:Class``) or a checkpoint (``ckpt:PATH``),
    since workers run in a directory of their own (the spec recorded in results stays as the user
    wrote it)."""
    scheme, sep, argument = spec.partition(":")
    if sep and scheme in PATH_SCHEMES:
        return f"{scheme}:{Path(argument).resolve()}"
    where, sep, name = spec.rpartition(":")
    if sep and names_a_path(where):
        return f"{Path(where).resolve()}:{name}"
    return spec


def check_private(specs: list[str]) -> None:
    """Refuse submissions that would see each other's files: one whose file, folder or checkpoint
    holds another's (a folder with a rival's file in it), or names it by another path (a link).
    Specs naming the same file by the same path (two classes of one file) share it and pass. Each
    submission sees only its own files (`namespaces.visible_paths`); this keeps "its own" from
    overlapping a rival's."""
    seen = {spec: {os.path.realpath(path): os.path.abspath(path) for path in namespaces.visible_paths(spec)}
            for spec in dict.fromkeys(specs) if not is_trusted(spec)}
    for spec, paths in seen.items():
        for other, other_paths in seen.items():
            clash = [(path, theirs) for path, written in paths.items() for theirs, their_written in other_paths.items()
                     if theirs.startswith(path.rstrip("/") + "/") or (theirs == path and written != their_written)]
            if other != spec and clash:
                path, theirs = clash[0]
                raise ValueError(f"policy {spec!r} would see {path}, which holds {theirs} of policy {other!r}: a "
                                 "submission sees only its own files, so give each its own folder")


def check_spec(spec: str, timeout: float = 60.0, limits: Limits | None = None) -> None:
    """Resolve a spec before any episode starts, so a typo is a clear error rather than a policy
    that idles through a tournament. Submissions are imported in a throwaway worker process,
    within the run's `limits`."""
    if is_trusted(spec):
        load_trusted(spec)
        return
    check_spec_in_worker(worker_spec(spec), timeout, limits)


# ---------------------------------------------------------------- handles
class PolicyHandle(abc.ABC):
    """One policy in an episode: `reset(seed)`, then each tick `submit(batch)` (the array batch of
    its agents, `nmmo.core.layout.ObsBatch`; per-agent dicts are accepted too) followed by
    `collect_rows()`, which returns validated actions as agent ids and (direction, style, target)
    rows (possibly empty) and never raises (`collect()`: the same as action dicts). Splitting the
    tick in two lets worker processes think while the rest of the tick's policies run."""

    def __init__(self, spec: str, config: Config) -> None:
        self.spec = spec
        self.faults = Faults()
        self._config = config
        self._controlled: frozenset[int] = frozenset()

    @abc.abstractmethod
    def reset(self, seed: int) -> None:
        """Start an episode."""

    def submit(self, batch: ObsBatch | dict[int, dict]) -> None:
        """Hand over this tick's observations of the policy's agents."""
        if not isinstance(batch, ObsBatch):
            batch = from_dicts(batch)
        self._controlled = frozenset(batch.ids.tolist())
        self._submit(batch)

    @abc.abstractmethod
    def _submit(self, batch: ObsBatch) -> None:
        """Start this tick's decision (the agents it may act for are set)."""

    @abc.abstractmethod
    def collect_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The validated actions of this tick as agent ids (n,) and rows (n, 3); never raises."""

    def collect(self) -> dict[int, dict]:
        """The validated actions of this tick as action dicts (possibly empty); never raises."""
        return rows_to_actions(*self.collect_rows())

    def close(self) -> None:  # noqa: B027 - optional hook: in-process policies hold nothing to release
        """Release what the policy holds (worker processes)."""

    def _accept(self, ids: np.ndarray, rows: np.ndarray, note: str | None) -> tuple[np.ndarray, np.ndarray]:
        """Validate a reply's rows against the agents this tick's observations covered
        (`validate_rows`); count a malformed fault for any drop, the reply's own `note` (what the
        policy's dict held that could not be read) quoted after the episode's reason."""
        ids, rows, dropped, problem = validate_rows(ids, rows, self._controlled, self._config.PLAYER_N_OBS)
        if dropped:
            self.faults.dropped_actions += dropped
            self.faults.record("malformed", f"{problem} ({preview(note, 200)[1:-1]})" if note else problem)
        if len(ids) or not dropped:  # some of the reply is used (an empty reply is a valid "do nothing")
            self.faults.answered += 1
        return ids, rows


class InProcessPolicy(PolicyHandle):
    """A trusted policy called directly; exceptions and malformed replies still only idle its agents.
    `make_handle` builds one for the registered names only (`is_trusted`)."""

    def __init__(self, spec: str, config: Config) -> None:
        super().__init__(spec, config)
        self._policy = None
        self._actions = NO_ACTIONS

    def reset(self, seed: int) -> None:
        try:
            self._policy = load_trusted(self.spec)(self._config)
            if callable(getattr(self._policy, "reset", None)):
                self._policy.reset(seed)
        except Exception as err:  # noqa: BLE001 - a broken policy idles; the tournament goes on
            self._policy = None
            self.faults.record("exception", f"could not start: {error_text(err)}")
            self.faults.disabled += 1
            self.faults.not_started += 1

    def _submit(self, batch: ObsBatch) -> None:
        self._actions = NO_ACTIONS
        if self._policy is None or not batch.n:
            return
        try:
            self._actions = self._accept(*act_rows(self._policy, batch))
        except Exception as err:  # noqa: BLE001 - raised by act, or by a reply that cannot be read
            self.faults.record("exception", error_text(err))

    def collect_rows(self) -> tuple[np.ndarray, np.ndarray]:
        actions, self._actions = self._actions, NO_ACTIONS
        return actions

    @property
    def last_values(self) -> dict[int, float] | None:
        """The policy's value estimates of its last call ({agent: value}), when it has any (trained
        checkpoints do): what a value overlay paints."""
        values = getattr(self._policy, "last_values", None)
        return values if isinstance(values, dict) else None


class SubprocessPolicy(PolicyHandle):
    """An untrusted policy in a bounded worker process with a per-tick time budget.

    Args:
        spec: the policy spec as given (shown in reports).
        config: the episode config (sent to the worker as TOML).
        time_budget: seconds the worker has to answer one tick, from when its observations are sent.
        limits: memory, CPU time, open files and the time to build the policy (`sandbox.Limits`).
        max_restarts: worker restarts allowed per episode before the policy is disabled.

    """

    def __init__(self, spec: str, config: Config, time_budget: float = 1.0, limits: Limits | None = None,
                 max_restarts: int = 5) -> None:
        super().__init__(spec, config)
        if not time_budget > 0:
            raise ValueError(f"time budget must be positive, got {time_budget}")
        self.time_budget = time_budget
        self.limits = (limits or Limits()).check()
        self.max_restarts = max_restarts
        self._seed = 0
        self._worker: Worker | None = None
        self._deadline: float | None = None
        self._disabled = False

    # --- lifecycle
    def reset(self, seed: int) -> None:
        self._seed = seed
        self._disabled = False
        self._kill()
        if not self._start():
            self.faults.not_started += 1

    def _start(self) -> bool:
        """Start a worker and wait until its policy is built; on failure disable the policy."""
        self._worker, kind, message = start_worker(worker_spec(self.spec), self._config, self._seed, self.limits)
        if self._worker is not None:
            return True
        self.faults.record(kind, message)
        self._disable()
        return False

    def _disable(self) -> None:
        self._kill()
        self._disabled = True
        self.faults.disabled += 1

    def _kill(self) -> None:
        if self._worker is not None:
            self._tell_breach(self._worker.stop())
        self._worker, self._deadline = None, None

    def _tell_breach(self, breach: str | None) -> None:
        """A limit the worker's group hit without killing the worker: that submission's fault."""
        if breach is not None:
            self.faults.record("exception", f"a process of the submission was killed: {breach}")

    def _restart(self) -> bool:
        """Replace a worker that hung, died or broke the channel, within the episode's allowance."""
        self._kill()
        if self.faults.restarts >= self.max_restarts:
            self.faults.messages.append(f"disabled after {self.max_restarts} restarts")
            self._disable()
            return False
        self.faults.restarts += 1
        return self._start()

    def close(self) -> None:
        if self._worker is not None:
            self._tell_breach(close_worker(self._worker))
        self._worker, self._deadline = None, None

    # --- one tick
    def _submit(self, batch: ObsBatch) -> None:
        self._deadline = None
        if self._disabled or not batch.n:
            return
        if self._worker is None and not self._restart():
            return
        deadline = time.monotonic() + self.time_budget
        try:
            send_observations(self._worker, batch, deadline)
        except ChannelTimeout:
            self.faults.record("timeout", f"did not take its observations within the {self.time_budget:g} s "
                                          "budget; worker killed")
            self._kill()
            return
        except ChannelError:
            self.faults.record("exception", f"worker unreachable ({self._worker.death() or 'channel closed'})")
            self._kill()
            return
        self._deadline = deadline

    def collect_rows(self) -> tuple[np.ndarray, np.ndarray]:
        if self._deadline is None or self._worker is None:
            return NO_ACTIONS
        deadline, self._deadline = self._deadline, None
        try:
            reply = receive_actions(self._worker, deadline)
        except ChannelTimeout:
            self.faults.record("timeout", f"no answer within the {self.time_budget:g} s budget; worker killed")
            self._kill()  # restarted at the next submit
            return NO_ACTIONS
        except ChannelError as err:
            # a worker that closed the channel is dying: let its exit say why (on a loaded machine its
            # exit may be seen a good while after its end of the channel closes)
            give_up = time.monotonic() + (WAIT_FOR_EXIT_S if isinstance(err, ChannelClosed) else 0.01)
            while (death := self._worker.death()) is None and time.monotonic() < give_up:
                time.sleep(0.01)
            if death is not None:
                self.faults.record("exception", f"worker died: {death}")
            else:  # alive but wrote something that is not a reply: a protocol violation
                self.faults.record("malformed", f"worker sent an unreadable reply ({err}); worker replaced")
            self._kill()
            return NO_ACTIONS
        if reply.kind == "actions":
            return self._accept(reply.ids, reply.rows, reply.text)
        if reply.kind == "error":
            self.faults.record("exception", reply.text)
        else:
            self.faults.record("malformed", "worker sent 'ready' where actions were due")
        return NO_ACTIONS


def make_handle(spec: str, config: Config, time_budget: float = 1.0, limits: Limits | None = None,
                max_restarts: int = 5) -> PolicyHandle:
    """In-process for trusted specs, a bounded worker process for submissions."""
    if is_trusted(spec):
        return InProcessPolicy(spec, config)
    return SubprocessPolicy(spec, config, time_budget, limits, max_restarts)
