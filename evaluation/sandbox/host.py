"""Submissions in bounded worker processes: the episode side of `evaluation.sandbox.worker`.

Each untrusted policy gets a fresh ``python -m evaluation.sandbox.worker`` process per episode:

- **Environment.** Only `ENV_ALLOWED` variables pass (PATH, locale, PYTHONPATH, thread counts);
  HOME and TMPDIR point at a private temporary directory, removed afterwards (or, when the
  tournament was killed with kill -9 and could not, by the next worker started on the machine:
  `remove_orphaned_homes`). Secrets in the
  tournament's environment (tokens, keys, RAY_ADDRESS) never reach submission code.
- **Limits** (`Limits`, flags of `nmmo tournament` and `nmmo eval`): address space (default 4 GiB,
  room for torch), CPU seconds, open files (default 256), the time to build the policy
  (`init_timeout`, default 60 s) and to answer each tick (`time_budget`). Hitting one is a
  reported fault (the worker dies, raises MemoryError, or misses its deadline), never a hung or
  crashed tournament.
- **Processes.** The worker leads its own process group: closing it kills the group, so children
  a submission forks die with it; and it dies when the episode process dies (parent-death signal).
- **Channel.** Two OS pipes carrying frames of data (`evaluation.sandbox.channel`): observations as raw
  arrays, replies as fixed binary frames of int64 arrays, each read with a deadline and a size
  limit. A reply that cannot be read is a malformed fault and the worker is replaced.
- **Namespaces and cgroups.** Where the machine has them, the worker starts inside bubblewrap's
  namespaces (`evaluation.sandbox.namespaces`: an unprivileged uid, its own processes, no network, only
  the packages and its own file on a read-only disk) and in a cgroup of its own
  (`evaluation.sandbox.cgroups`: memory and processes of all it forks together, an equal CPU weight);
  elsewhere it falls back to the bounds above and says so once.

What remains to trust, per platform: docs/evaluation.md, "The trust model". Nothing a worker does
reaches the game except its own agents' validated actions, and nothing it sends is executed by
the episode.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from evaluation.sandbox import cgroups, namespaces
from evaluation.sandbox.channel import (
    MAX_REPLY_BYTES,
    ChannelError,
    ChannelTimeout,
    Reply,
    decode_reply,
    encode_message,
    encode_observations,
    nonblocking,
    read_frame,
    write_frame,
)
from evaluation.sandbox.texts import preview
from nmmo.config import Config
from nmmo.core.layout import ObsBatch
from nmmo.engines.process import process_exists

#: Environment variables a worker inherits (everything else is dropped).
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "OMP_NUM_THREADS",
               "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VIRTUAL_ENV")
#: How long a worker gets to exit on its own after ``close`` before its process group is killed.
CLOSE_GRACE_S = 1.0


@dataclass(frozen=True)
class Limits:
    """Bounds on a submission's worker process (0 or None: no limit)."""

    memory_mb: int = 4096
    """Address space (RLIMIT_AS), MiB: 4 GiB lets a torch policy run."""
    cpu_seconds: int = 3600
    """CPU time of the worker and its children (RLIMIT_CPU), seconds per episode."""
    open_files: int = 256
    """Open file descriptors (RLIMIT_NOFILE)."""
    file_size_mb: int = 64
    """Largest file the worker may write (RLIMIT_FSIZE), MiB: its log, the files of its /tmp."""
    init_timeout: float = 60.0
    """Seconds to import and build the policy (not part of any tick's budget)."""
    group_memory_mb: int = 4096
    """Memory of the worker and every process it forks together (a cgroup), MiB."""
    processes: int = 256
    """Processes and threads of the worker and its forks together (the cgroup's pids limit)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self) -> Limits:
        """ValueError naming a limit that makes no sense (they come from the command line)."""
        for name in ("memory_mb", "cpu_seconds", "open_files", "group_memory_mb", "processes", "file_size_mb"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int (0: no limit), got {value!r}")
        if self.processes and self.processes < 8:
            raise ValueError(f"processes={self.processes} leaves Python too few threads to start; give 8 or more")
        if self.open_files and self.open_files < 16:
            raise ValueError(f"open_files={self.open_files} leaves Python too few files to start; give 16 or more")
        if not self.init_timeout > 0:
            raise ValueError(f"init_timeout must be positive, got {self.init_timeout!r}")
        return self


def scrubbed_environment(home: str) -> dict[str, str]:
    """The worker's environment: `ENV_ALLOWED` from ours, HOME and TMPDIR in its private directory."""
    env = {key: os.environ[key] for key in ENV_ALLOWED if key in os.environ}
    env.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1")
    return env


#: A worker's private directory is named HOME_PREFIX + the pid of the process that started it + "-".
HOME_PREFIX = "nmmo-worker-"


def remove_orphaned_homes(directory: str | None = None) -> list[str]:
    """Remove the worker directories in `directory` (default: the temporary directory) whose
    starting process is gone: a tournament killed with kill -9 takes its workers with it (they die
    with their parent) but cannot remove their directories. Returns the paths removed."""
    directory = directory or tempfile.gettempdir()
    removed = []
    for name in os.listdir(directory):
        owner = name[len(HOME_PREFIX):].split("-", 1)[0] if name.startswith(HOME_PREFIX) else ""
        if owner.isdigit() and not process_exists(int(owner)):
            path = os.path.join(directory, name)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class Worker:
    """One worker process and its two pipes (see the module notes): in the namespace sandbox
    (`evaluation.sandbox.namespaces`) where this machine has one, in a cgroup of its own
    (`evaluation.sandbox.cgroups`) where it has those."""

    def __init__(self, limits: Limits, spec: str | None = None) -> None:
        remove_orphaned_homes()
        self.home = tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-")
        self.sandboxed = namespaces.available()
        self.cgroup = make_cgroup(limits)
        self.breach_told = False
        self.unprivileged: namespaces.Unprivileged | None = None
        self.host_uid: namespaces.HostUid | None = None
        to_worker_r, self.to_worker = os.pipe()
        self.from_worker, from_worker_w = os.pipe()
        self.log = open(os.path.join(self.home, "worker.log"), "wb")  # noqa: SIM115 - closed in stop()
        # in its PID namespace the worker's parent is the sandbox's init: "0" skips its parent check
        command = [sys.executable, "-m", "evaluation.sandbox.worker", str(to_worker_r), str(from_worker_w),
                   "0" if self.sandboxed else str(os.getpid()), json.dumps(limits.to_dict())]
        steps = [] if self.cgroup is None else [self.cgroup.join_self]
        env, fds, args_fd = scrubbed_environment(self.home), [to_worker_r, from_worker_w], None
        try:
            if self.sandboxed:
                paths = namespaces.visible_paths(spec or "")
                if os.geteuid() == 0:  # bubblewrap starts as a uid of its own, so nothing maps back to root
                    self.host_uid = namespaces.HostUid()
                    self.unprivileged = namespaces.Unprivileged(namespaces.readable_paths(paths), HOME_PREFIX,
                                                                self.host_uid.uid)
                    steps.append(self.unprivileged.enter)
                unprivileged = self.unprivileged
                command, args_fd = namespaces.launch(namespaces.wrap(
                    command, paths, tmp_bytes=(limits.group_memory_mb or 0) * 2**20, env=env,
                    sources=None if unprivileged is None else unprivileged.sources))
                env = {}  # the worker's environment travels in bubblewrap's arguments (--setenv)
                fds.append(args_fd)
            self.process = subprocess.Popen(command, pass_fds=fds, env=env, cwd=self.home, stdin=subprocess.DEVNULL,
                                            stdout=self.log, stderr=self.log, start_new_session=True,
                                            preexec_fn=_in_order(steps) if steps else None)
        except BaseException:
            self._release_cgroup()
            self._release_uid()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        nonblocking(self.to_worker)
        nonblocking(self.from_worker)

    def send(self, payload: bytes, deadline: float | None) -> None:
        write_frame(self.to_worker, payload, deadline)

    def receive(self, deadline: float | None) -> bytes:
        return read_frame(self.from_worker, deadline, MAX_REPLY_BYTES)

    def death(self) -> str | None:
        """Why the worker is gone (exit code, signal, which limit), or None while it runs."""
        code = self.process.poll()
        if code is None:
            return None
        breach = None if self.cgroup is None else self.cgroup.breach()
        if breach is not None:
            self.breach_told = True
            return f"killed: {breach}"
        if self.sandboxed and namespaces.exit_signal(code) is not None:  # or the submission's own exit code
            return f"exit status {code}: killed by {_signal_name(code - 128)}, or exited with that code"
        if code == -signal.SIGXCPU:
            return "killed for using up its CPU time (RLIMIT_CPU)"
        if code < 0:
            return f"killed by {_signal_name(-code)}"
        tail = self.log_tail()
        return f"exit code {code}" + (f": {tail}" if tail else "")

    def log_tail(self, limit: int = 200) -> str:
        """The last line the worker wrote to its log (a traceback's last line), shortened."""
        try:
            self.log.flush()
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - 4096))
                lines = [line for line in f.read().decode(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return preview(lines[-1], limit) if lines else ""

    def stop(self, grace: float = 0.0) -> str | None:
        """Kill the worker's whole process group (after `grace` seconds to exit on its own), and
        its cgroup; returns a limit its group hit that `death` has not told yet (a fork killed for
        memory while the worker went on), or None."""
        if grace and self.process.poll() is None:
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the group: the forks of a submission too
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        breach = None if self.cgroup is None or self.breach_told else self.cgroup.breach()
        self._release_cgroup()
        for fd in (self.to_worker, self.from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.home, ignore_errors=True)
        self._release_uid()
        return breach

    def _release_uid(self) -> None:
        """Remove the placeholders and give the worker's host uid back (its processes are gone)."""
        if self.unprivileged is not None:
            self.unprivileged.remove()
            self.unprivileged = None
        if self.host_uid is not None:
            self.host_uid.release()
            self.host_uid = None

    def _release_cgroup(self) -> None:
        """Kill whatever is left in the worker's cgroup (a fork that escaped its process group, in
        the process sandbox) and remove the group."""
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None


def _signal_name(number: int) -> str:
    """SIGXCPU (its CPU time limit) or SIGXFSZ (its file size limit) named as such; any number."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    why = {"SIGXCPU": " (its CPU time limit)", "SIGXFSZ": " (its file size limit)"}.get(name, "")
    return f"{name}{why}"


def _in_order(steps: list) -> Callable[[], None]:
    """One `preexec_fn` running `steps` in order (join the cgroup as root, then drop to nobody)."""
    def run() -> None:
        for step in steps:
            step()
    return run


def end_of_episode() -> None:
    """Remove what workers' cgroups left (empty groups, the parent directory when no one else's
    groups are in it): called when an episode's workers are all closed."""
    backend = cgroups.detect()
    if backend is not None:
        backend.cleanup()


def make_cgroup(limits: Limits) -> cgroups.Cgroup | None:
    """A cgroup holding the worker and all it forks, with the limits' memory and process bounds
    and an equal CPU weight (None where this machine offers no writable cgroups)."""
    backend = cgroups.detect()
    if backend is None:
        return None
    return backend.create("worker", cgroups.CgroupLimits(
        memory_bytes=(limits.group_memory_mb or 0) * 2**20 or None, pids=limits.processes or None))


def start_worker(spec: str, config: Config | None, seed: int, limits: Limits,
                 check_only: bool = False) -> tuple[Worker | None, str | None, str | None]:
    """Start a worker and wait until it has built the policy (or, with `check_only`, loaded its
    class). Returns (worker, None, None) when ready, else (None, fault kind, message)."""
    worker = Worker(limits, spec)
    deadline = time.monotonic() + limits.init_timeout
    init = {"spec": spec, "seed": int(seed), "check_only": check_only,
            "config": None if config is None else config.to_toml(),
            "config_name": None if config is None else config.name}
    try:
        worker.send(b"M" + encode_message("init", **init), deadline)
        reply = decode_reply(worker.receive(deadline))
    except ChannelTimeout:
        worker.stop()
        return None, "timeout", f"not ready within {limits.init_timeout:g} s of starting"
    except ChannelError as err:
        time.sleep(0.05)  # let a dying worker finish dying, so its exit says why
        death = worker.death()
        worker.stop()
        if death is None:  # alive, but it wrote something that is not a reply
            return None, "malformed", f"worker sent an unreadable reply while starting ({err})"
        return None, "exception", f"worker died while starting ({death})"
    if reply.kind == "ready":
        if check_only:
            worker.stop(grace=CLOSE_GRACE_S)
            return None, None, None
        return worker, None, None
    worker.stop()
    if reply.kind == "error":
        return None, "exception", f"could not start: {reply.text}"
    return None, "malformed", "worker sent actions before it was ready"


def check_spec_in_worker(spec: str, timeout: float = 60.0, limits: Limits | None = None) -> None:
    """Load a submission's class in a throwaway worker (within the tournament's `limits`): a typo
    is a clear ValueError before any episode starts, rather than a policy that idles through a
    tournament."""
    limits = replace(limits or Limits(), init_timeout=timeout)
    _, kind, message = start_worker(spec, None, 0, limits, check_only=True)
    if kind is None:
        return
    if message.startswith("could not start: "):
        message = message[len("could not start: "):]
    elif kind == "timeout":
        message = f"importing it took more than {timeout:g} s"
    raise ValueError(f"policy {spec!r}: {message}")


def send_observations(worker: Worker, batch: ObsBatch, deadline: float) -> None:
    """Send a tick's observations to the worker (ChannelError if it does not take them in time)."""
    worker.send(b"O" + encode_observations(batch), deadline)


def receive_actions(worker: Worker, deadline: float) -> Reply:
    """The worker's reply to this tick (`evaluation.sandbox.channel.decode_reply`); ChannelError otherwise."""
    return decode_reply(worker.receive(deadline))


def close_worker(worker: Worker) -> str | None:
    """Ask the worker to exit, then kill its process group (`Worker.stop`: returns a limit its
    group hit that was not told yet)."""
    try:
        worker.send(b"M" + encode_message("close"), time.monotonic() + 0.2)
        grace = CLOSE_GRACE_S
    except ChannelError:
        grace = 0.0
    return worker.stop(grace)
