"""The process a submission runs in: ``python -m evaluation.sandbox.worker FD_IN FD_OUT PARENT_PID LIMITS``.

Started by `evaluation.sandbox.host` with a scrubbed environment, in a session (process group) of its
own, stdin closed and its output in a log file. Before any submission code is imported it:

1. asks the kernel to kill it when its parent dies (Linux ``PR_SET_PDEATHSIG``), and exits at once
   if the parent is already gone;
2. lowers its resource limits (``RLIMIT_AS`` memory, ``RLIMIT_CPU`` seconds, ``RLIMIT_NOFILE`` open
   files, no core dumps), which every process it forks inherits;
3. reads an ``init`` message (the spec, the config as TOML, the seed), builds ``Policy(config)``,
   calls ``reset(seed)``, and answers ``ready`` (or ``error``).

Then it answers each ``act`` frame (this tick's observations, `evaluation.sandbox.channel`) with the
policy's actions as arrays (agent ids and (direction, style, target) rows: a dict the policy
returns is read here, by `nmmo.core.actions.action_rows`), or an error; a ``close`` message ends it.
Replies are fixed binary frames of arrays and short texts: the episode never parses JSON or
unpickles anything that comes from here, and validates and counts every row itself.
"""

from __future__ import annotations

import resource
import sys
from typing import Any

from nmmo.engines.process import die_with_parent


def apply_limits(limits: dict[str, Any]) -> None:
    """Lower this process's resource limits (they are inherited by every child it forks)."""
    if limits.get("memory_mb"):
        size = int(limits["memory_mb"]) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if limits.get("cpu_seconds"):
        seconds = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))  # SIGXCPU, then SIGKILL
    if limits.get("file_size_mb"):
        size = int(limits["file_size_mb"]) * 2**20
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))  # its log on the host's disk too
    if limits.get("open_files"):
        count = int(limits["open_files"])
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    import json

    fd_in, fd_out, parent = int(argv[0]), int(argv[1]), int(argv[2])
    die_with_parent(parent or None)  # 0: in a PID namespace, whose init is the parent that matters
    apply_limits(json.loads(argv[3]))

    from evaluation.sandbox.channel import (
        MAX_OBSERVATION_BYTES,
        ChannelError,
        decode_message,
        decode_observations,
        encode_actions,
        encode_error,
        encode_ready,
        read_frame,
        write_frame,
    )
    from evaluation.sandbox.texts import error_text
    from nmmo.policy import act_rows

    try:
        init = decode_message(read_frame(fd_in, None, MAX_OBSERVATION_BYTES)[1:])
    except ChannelError:
        return 1
    try:
        policy = build(init)
    except BaseException as err:  # noqa: BLE001 - reported to the episode, which disables the policy
        write_frame(fd_out, encode_error(str(err) if isinstance(err, ValueError) else error_text(err)))
        return 1
    write_frame(fd_out, encode_ready())
    if init.get("check_only"):
        return 0
    while True:
        try:
            frame = read_frame(fd_in, None, MAX_OBSERVATION_BYTES)
        except ChannelError:
            return 0
        if frame[:1] != b"O":
            return 0  # close (or anything but observations)
        batch = decode_observations(frame[1:])
        try:
            ids, rows, problem = act_rows(policy, batch)
        except Exception as err:  # noqa: BLE001 - raised by act, or by a reply that cannot be read
            write_frame(fd_out, encode_error(error_text(err)))
            continue
        write_frame(fd_out, encode_actions(ids, rows, problem))


def build(init: dict[str, Any]) -> Any:
    """The policy an ``init`` message names, built and reset (or only its class, to check a spec)."""
    from nmmo.config import from_toml
    from nmmo.policy import load_policy_class

    policy_class = load_policy_class(init["spec"])
    if init.get("check_only"):
        return policy_class
    policy = policy_class(from_toml(init["config"], init["config_name"]))
    if callable(getattr(policy, "reset", None)):
        policy.reset(init["seed"])
    return policy


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
