"""Running policies that may misbehave: fault counting, action validation and worker processes.

Trusted policies (``random``, ``idle``, ``scripted:*``) run in-process. Everything else (a
``pkg.module:Class`` or ``path/file.py:Class`` submission) runs in its own worker process started
with the ``spawn`` method, and must answer each tick within a time budget. When a policy raises,
returns something malformed or does not answer in time, its agents idle that tick and the fault is
counted by kind; a worker that timed out or died is killed and restarted (a fresh ``Policy(config)``
with the same seed) before the next tick. After `max_restarts` restarts in one episode, or when the
policy cannot even be built, its agents idle for the rest of the episode. A worker process isolates
faults; it is not a security sandbox.
"""

from __future__ import annotations

import abc
import multiprocessing
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from nmmo.actions import ActionError, as_index, clean_action
from nmmo.config import Config
from nmmo.policy import BUILTIN, load_policy_class

FAULT_KINDS = ("exception", "timeout", "malformed")
START_METHOD = "spawn"  # a clean interpreter: no inherited locks, threads or engine state
MAX_MESSAGES = 5


# ----------------------------------------------------------------- faults
@dataclass
class Faults:
    """What went wrong with one policy: ticks with a fault, by kind, and what it cost."""

    exception: int = 0
    timeout: int = 0
    malformed: int = 0
    dropped_actions: int = 0  # single-agent actions dropped as malformed (a tick may drop several)
    restarts: int = 0  # workers killed and started again
    disabled: int = 0  # episodes in which the policy stopped acting for good
    not_started: int = 0  # episodes in which it never acted at all (could not be built): not ranked
    messages: list[str] = field(default_factory=list)  # the first few distinct fault messages

    def record(self, kind: str, message: str) -> None:
        """Count one fault of `kind` and keep its message if it is new."""
        setattr(self, kind, getattr(self, kind) + 1)
        text = f"{kind}: {message}"
        if len(self.messages) < MAX_MESSAGES and text not in self.messages:
            self.messages.append(text)

    @property
    def total(self) -> int:
        """Ticks with a fault of any kind."""
        return self.exception + self.timeout + self.malformed

    def merge(self, other: Faults) -> Faults:
        """Sum of two fault records (messages: the first few distinct of both)."""
        merged = Faults(**{k: getattr(self, k) + getattr(other, k) for k in
                           ("exception", "timeout", "malformed", "dropped_actions", "restarts", "disabled",
                            "not_started")})
        merged.messages = list(dict.fromkeys(self.messages + other.messages))[:MAX_MESSAGES]
        return merged

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Faults:
        return cls(**{k: (list(v) if k == "messages" else int(v)) for k, v in data.items()})

    def summary(self) -> str:
        """A short human-readable line: 'none' or e.g. 'timeout 2, malformed 1 (3 actions)'."""
        parts = [f"{kind} {getattr(self, kind)}" for kind in FAULT_KINDS if getattr(self, kind)]
        if self.dropped_actions:
            parts.append(f"{self.dropped_actions} actions dropped")
        if self.not_started:
            parts.append(f"never started in {self.not_started} episode(s)")
        if self.disabled > self.not_started:
            parts.append(f"disabled in {self.disabled - self.not_started} episode(s)")
        return ", ".join(parts) or "none"


# -------------------------------------------------------------- validation
def validate_actions(actions: Any, controlled: set[int] | frozenset[int]) -> tuple[dict[int, dict], int, str | None]:
    """Keep the well-formed actions of agents in `controlled`.

    Returns (clean actions, number of single-agent actions dropped, a message naming the first
    problem or None). A reply that is not a mapping drops everything (counted as one)."""
    if not isinstance(actions, Mapping):
        return {}, 1, f"act returned {type(actions).__name__}, not a dict {{agent_id: action}}"
    clean: dict[int, dict] = {}
    problem = None
    dropped = 0
    for agent, action in actions.items():
        agent_id = as_index(agent)
        try:
            if agent_id not in controlled:
                raise ActionError(f"action for agent {_preview(agent)}, which this policy does not control")
            clean[agent_id] = clean_action(agent_id, action)
        except ActionError as err:
            dropped += 1
            problem = problem or _preview(str(err), 200)
    return clean, dropped, problem


def _preview(value: Any, limit: int = 80) -> str:
    """Repr cut short: fault messages must stay small whatever a submission returns."""
    try:
        text = repr(value)
    except Exception as err:  # noqa: BLE001 - a hostile __repr__ must not break reporting
        text = f"<unprintable {type(value).__name__}: {type(err).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_text(err: BaseException) -> str:
    """Exception type, message and the innermost frame: enough to fix a submission, and short."""
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(err).__name__}: {_preview(str(err), 200)}{where}"


# ------------------------------------------------------------------ specs
def is_trusted(spec: str) -> bool:
    """Built-in and scripted policies run in-process; everything else is a submission."""
    return spec in BUILTIN or spec.startswith("scripted:")


def worker_spec(spec: str) -> str:
    """The spec as a worker process should load it: a file path made absolute (workers may run
    elsewhere in the tree of processes, and the spec recorded in results stays as the user wrote it)."""
    where, sep, name = spec.rpartition(":")
    if sep and where.endswith(".py"):
        return f"{Path(where).resolve()}:{name}"
    return spec


def check_spec(spec: str, timeout: float = 60.0) -> None:
    """Resolve a spec before any episode starts, so a typo is a clear error rather than a policy
    that idles through a tournament. Submissions are imported in a throwaway worker process."""
    if is_trusted(spec):
        load_policy_class(spec)
        return
    ctx = multiprocessing.get_context(START_METHOD)
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_check_main, args=(child, worker_spec(spec)), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise ValueError(f"policy {spec!r}: importing it took more than {timeout:g} s")
        try:
            status, message = parent.recv()
        except (EOFError, OSError):
            raise ValueError(f"policy {spec!r}: the process importing it died") from None
        if status != "ok":
            raise ValueError(f"policy {spec!r}: {message}")
    finally:
        _stop(process, parent)


def _check_main(conn: Connection, spec: str) -> None:
    """Worker body of `check_spec`: load the class, report success or the error."""
    try:
        load_policy_class(spec)
        conn.send(("ok", None))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        conn.send(("error", str(err) if isinstance(err, ValueError) else _error_text(err)))


def _stop(process: Any, conn: Connection | None, grace: float = 0.0) -> None:
    """Kill a worker (after `grace` seconds to exit on its own) and close our end of its pipe."""
    if conn is not None:
        conn.close()
    if process is None:
        return
    if grace:
        process.join(grace)
    if process.is_alive():
        process.kill()
    process.join(5)
    if not process.is_alive():
        process.close()


# ---------------------------------------------------------------- handles
class PolicyHandle(abc.ABC):
    """One policy in an episode: `reset(seed)`, then each tick `submit(observations)` followed by
    `collect()`, which returns validated actions (possibly empty) and never raises. Splitting the
    tick in two lets worker processes think while the rest of the tick's policies run."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.faults = Faults()
        self._controlled: frozenset[int] = frozenset()

    @abc.abstractmethod
    def reset(self, seed: int) -> None:
        """Start an episode."""

    @abc.abstractmethod
    def submit(self, observations: dict[int, dict]) -> None:
        """Hand over this tick's observations of the policy's agents."""

    @abc.abstractmethod
    def collect(self) -> dict[int, dict]:
        """Return the validated actions of this tick (possibly empty); never raises."""

    def close(self) -> None:  # noqa: B027 - optional hook: in-process policies hold nothing to release
        """Release what the policy holds (worker processes)."""

    def _accept(self, actions: Any, extra_dropped: int = 0, extra_problem: str | None = None) -> dict[int, dict]:
        """Validate a reply against the agents this tick's observations covered; count a malformed
        fault for any drop."""
        clean, dropped, problem = validate_actions(actions, self._controlled)
        dropped += extra_dropped
        if dropped:
            self.faults.dropped_actions += dropped
            self.faults.record("malformed", extra_problem or problem or "malformed actions")
        return clean


class InProcessPolicy(PolicyHandle):
    """A trusted policy called directly; exceptions and malformed replies still only idle its agents."""

    def __init__(self, spec: str, config: Config) -> None:
        super().__init__(spec)
        self._config = config
        self._policy = None
        self._actions: dict[int, dict] = {}

    def reset(self, seed: int) -> None:
        try:
            self._policy = load_policy_class(self.spec)(self._config)
            if callable(getattr(self._policy, "reset", None)):
                self._policy.reset(seed)
        except Exception as err:  # noqa: BLE001 - a broken policy idles; the tournament goes on
            self._policy = None
            self.faults.record("exception", f"could not start: {_error_text(err)}")
            self.faults.disabled += 1
            self.faults.not_started += 1

    def submit(self, observations: dict[int, dict]) -> None:
        self._controlled = frozenset(observations)
        self._actions = {}
        if self._policy is None or not observations:
            return
        try:
            reply = self._policy.act(observations)
            self._actions = self._accept(reply)
        except Exception as err:  # noqa: BLE001 - raised by act, or by a reply that cannot be read
            self.faults.record("exception", _error_text(err))

    def collect(self) -> dict[int, dict]:
        actions, self._actions = self._actions, {}
        return actions


class SubprocessPolicy(PolicyHandle):
    """An untrusted policy in a worker process with a per-tick time budget.

    Args:
        spec: the policy spec as given (shown in reports).
        config: the episode config (sent to the worker as TOML).
        time_budget: seconds the worker has to answer one tick, from when its observations are sent.
        startup_timeout: seconds to import and build the policy (not part of any tick's budget).
        max_restarts: worker restarts allowed per episode before the policy is disabled.

    """

    def __init__(self, spec: str, config: Config, time_budget: float = 1.0, startup_timeout: float = 60.0,
                 max_restarts: int = 5) -> None:
        super().__init__(spec)
        if not time_budget > 0:
            raise ValueError(f"time budget must be positive, got {time_budget}")
        self.time_budget = time_budget
        self.startup_timeout = startup_timeout
        self.max_restarts = max_restarts
        self._config_text = config.to_toml()
        self._config_name = config.name
        self._seed = 0
        self._process = None
        self._conn: Connection | None = None
        self._deadline: float | None = None
        self._disabled = False
        self._ctx = multiprocessing.get_context(START_METHOD)

    # --- lifecycle
    def reset(self, seed: int) -> None:
        self._seed = seed
        self._disabled = False
        self._kill()
        if not self._start():
            self.faults.not_started += 1

    def _start(self) -> bool:
        """Start a worker and wait until its policy is built; on failure disable the policy."""
        parent, child = self._ctx.Pipe()
        args = (child, worker_spec(self.spec), self._config_text, self._config_name, self._seed)
        self._process = self._ctx.Process(target=_worker_main, args=args, daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        reply = self._receive(self.startup_timeout)
        if reply is not None and reply[0] == "ready":
            return True
        if reply is None:
            kind, message = "timeout", f"not ready within {self.startup_timeout:g} s of starting"
        elif reply[0] == "dead":
            kind, message = "exception", f"worker died while starting ({reply[1]})"
        else:
            kind, message = "exception", f"could not start: {reply[1]}"
        self.faults.record(kind, message)
        self._disable()
        return False

    def _disable(self) -> None:
        self._kill()
        self._disabled = True
        self.faults.disabled += 1

    def _kill(self) -> None:
        _stop(self._process, self._conn)
        self._process, self._conn, self._deadline = None, None, None

    def _restart(self) -> bool:
        """Replace a worker that hung or died, within the episode's restart allowance."""
        self._kill()
        if self.faults.restarts >= self.max_restarts:
            self.faults.messages.append(f"disabled after {self.max_restarts} restarts")
            self._disable()
            return False
        self.faults.restarts += 1
        return self._start()

    def close(self) -> None:
        idle = self._conn is not None and self._deadline is None  # not busy with a tick: ask it to exit
        if idle:
            try:
                self._conn.send(("close", None))
            except (OSError, ValueError):
                idle = False
        _stop(self._process, self._conn, grace=1.0 if idle else 0.0)
        self._process, self._conn, self._deadline = None, None, None

    # --- one tick
    def _receive(self, timeout: float) -> tuple | None:
        """The worker's next message; ("dead", why) if it exited; None if nothing came in time."""
        try:
            if not self._conn.poll(max(timeout, 0.0)):
                return None
            return self._conn.recv()
        except (EOFError, OSError):
            self._process.join(1)
            return ("dead", f"exit code {self._process.exitcode}")
        except Exception as err:  # noqa: BLE001 - an unreadable reply
            return ("unreadable", _error_text(err))

    def submit(self, observations: dict[int, dict]) -> None:
        self._controlled = frozenset(observations)
        self._deadline = None
        if self._disabled or not observations:
            return
        if self._process is None and not self._restart():
            return
        try:
            self._conn.send(("act", observations))
        except (OSError, ValueError) as err:
            self.faults.record("exception", f"worker unreachable: {_error_text(err)}")
            self._kill()
            return
        self._deadline = time.monotonic() + self.time_budget

    def collect(self) -> dict[int, dict]:
        if self._deadline is None:
            return {}
        reply = self._receive(self._deadline - time.monotonic())
        self._deadline = None
        if reply is None:
            self.faults.record("timeout", f"no answer within the {self.time_budget:g} s budget; worker killed")
            self._kill()  # restarted at the next submit
            return {}
        status = reply[0] if isinstance(reply, tuple) and reply else None
        if status == "ok" and len(reply) == 4:
            _, actions, dropped, problem = reply
            return self._accept(actions, dropped if isinstance(dropped, int) else 0,
                                problem if isinstance(problem, str) else None)
        if status == "error":
            self.faults.record("exception", str(reply[1]))
        elif status == "malformed":
            self.faults.record("malformed", str(reply[1]))
        else:  # dead, unreadable or a protocol violation: start afresh next tick
            self.faults.record("exception" if status == "dead" else "malformed",
                               f"worker {'died' if status == 'dead' else 'sent an unreadable reply'}: "
                               f"{_preview(reply[1] if status else reply)}")
            self._kill()
        return {}


def _worker_main(conn: Connection, spec: str, config_text: str, config_name: str, seed: int) -> None:
    """Worker body: build the policy, then answer ("act", observations) messages until told to close.

    Replies are validated here too, so what crosses the pipe is plain ints and dicts."""
    try:
        from nmmo.config import from_toml

        config = from_toml(config_text, config_name)
        policy = load_policy_class(spec)(config)
        if callable(getattr(policy, "reset", None)):
            policy.reset(seed)
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        conn.send(("error", str(err) if isinstance(err, ValueError) else _error_text(err)))
        return
    conn.send(("ready", None))
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            return
        if kind != "act":
            return
        try:
            actions = policy.act(payload)
        except Exception as err:  # noqa: BLE001
            conn.send(("error", _error_text(err)))
            continue
        try:
            clean, dropped, problem = validate_actions(actions, frozenset(payload))
        except Exception as err:  # noqa: BLE001 - e.g. a mapping whose items() raises
            conn.send(("malformed", f"unreadable reply: {_error_text(err)}"))
            continue
        conn.send(("ok", clean, dropped, problem))


def make_handle(spec: str, config: Config, time_budget: float = 1.0, startup_timeout: float = 60.0,
                max_restarts: int = 5) -> PolicyHandle:
    """In-process for trusted specs, a worker process for submissions."""
    if is_trusted(spec):
        return InProcessPolicy(spec, config)
    return SubprocessPolicy(spec, config, time_budget, startup_timeout, max_restarts)
