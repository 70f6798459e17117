"""Child processes that die with their parent (no orphans when a run is killed with kill -9)."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux's PR_SET_PDEATHSIG; a no-op
    elsewhere), and exit at once if the parent is already gone (`parent`: the pid it should be).
    Worker processes call it first thing: vector env workers, tournament episode pools and
    submission workers. A worker also ignores Ctrl-C (SIGINT reaches the whole foreground process
    group): its parent decides, stops it and says what was kept, with no traceback per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parents still stop their workers on close
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def process_exists(pid: int) -> bool:
    """Whether a process with this pid runs (it may belong to another user); a zombie, dead but
    not yet reaped by its new parent, does not: what decides whether files or cgroups a process
    left are orphans."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (not Linux), or it exited meanwhile
        return True
