"""The process a submission runs in: ``python -m evaluation.worker FD_IN FD_OUT PARENT_PID LIMITS``.

Started by `evaluation.sandbox` with a scrubbed environment, in a session (process group) of its
own, stdin closed and its output in a log file. Before any submission code is imported it:

1. asks the kernel to kill it when its parent dies (Linux ``PR_SET_PDEATHSIG``), and exits at once
   if the parent is already gone;
2. lowers its resource limits (``RLIMIT_AS`` memory, ``RLIMIT_CPU`` seconds, ``RLIMIT_NOFILE`` open
   files, no core dumps), which every process it forks inherits;
3. reads an ``init`` message (the spec, the config as TOML, the seed), builds ``Policy(config)``,
   calls ``reset(seed)``, and answers ``ready`` (or ``error``).

Then it answers each ``act`` frame (this tick's observations, `evaluation.channel`) with ``ok`` and
the actions, validated and reduced to plain ints, or ``error``; a ``close`` message ends it. Every
reply is JSON: the episode never unpickles anything that comes from here.
"""

from __future__ import annotations

import resource
import sys
from typing import Any

from nmmo.process import die_with_parent


def apply_limits(limits: dict[str, Any]) -> None:
    """Lower this process's resource limits (they are inherited by every child it forks)."""
    if limits.get("memory_mb"):
        size = int(limits["memory_mb"]) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    if limits.get("cpu_seconds"):
        seconds = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))  # SIGXCPU, then SIGKILL
    if limits.get("open_files"):
        count = int(limits["open_files"])
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    import json

    fd_in, fd_out, parent = int(argv[0]), int(argv[1]), int(argv[2])
    die_with_parent(parent)
    apply_limits(json.loads(argv[3]))

    from evaluation.channel import (
        MAX_OBSERVATION_BYTES,
        ChannelError,
        decode_message,
        decode_observations,
        encode_actions,
        encode_message,
        read_frame,
        write_frame,
    )
    from evaluation.faults import error_text

    def reply(kind: str, **fields: Any) -> None:
        write_frame(fd_out, encode_message(kind, **fields))

    try:
        init = decode_message(read_frame(fd_in, None, MAX_OBSERVATION_BYTES)[1:])
    except ChannelError:
        return 1
    try:
        policy = build(init)
    except BaseException as err:  # noqa: BLE001 - reported to the episode, which disables the policy
        reply("error", message=str(err) if isinstance(err, ValueError) else error_text(err))
        return 1
    reply("ready")
    if init.get("check_only"):
        return 0
    while True:
        try:
            frame = read_frame(fd_in, None, MAX_OBSERVATION_BYTES)
        except ChannelError:
            return 0
        if frame[:1] != b"O":
            return 0  # close (or anything but observations)
        observations = decode_observations(frame[1:])
        try:
            actions = policy.act(observations)
        except Exception as err:  # noqa: BLE001 - reported, and the worker goes on
            reply("error", message=error_text(err))
            continue
        try:
            from evaluation.submission import validate_actions

            clean, dropped, problem = validate_actions(actions, frozenset(observations))
        except Exception as err:  # noqa: BLE001 - e.g. a mapping whose items() raises
            reply("error", message=f"unreadable reply: {error_text(err)}")
            continue
        reply("ok", actions=encode_actions(clean), dropped=dropped, problem=problem)


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
