"""Hostile submissions to check an arena's bounds with: add them, let them play, read their faults.

Each class of `PROBES` misbehaves in one way a real submission might, on purpose or by accident;
none may stop an episode, slow the arena past its per-tick budget, outlive its worker or reach
another entry. ``write_probes(directory)`` writes them to ``directory/probes.py`` and returns their
specs, so that an operator (or the soak benchmark, benchmarks/bench_arena_soak.py) can add them:

    for spec in write_probes("probes"): nmmo arena add SPEC --db arena.db

Every probe is bounded so that a soak on a small machine stays a soak: memory is only asked for
beyond the address-space limit (refused at once, never touched), the fork storm makes 10 sleepers,
the hang lasts past one tick's budget, once per episode.
"""

from __future__ import annotations

import os
from pathlib import Path

PROBES_SOURCE = '''"""Hostile probes of the arena (evaluation.arena.probes)."""
import os
import sys
import time

MARKER = {marker!r}


def idle(observations):
    return {{agent: {{"Move": {{"Direction": 4}}}} for agent in observations}}


class Probe:
    def __init__(self, config):
        self.calls = 0

    def act(self, observations):
        self.calls += 1
        return self.attack(observations)


class Crasher(Probe):  # raises on every other tick
    def attack(self, observations):
        if self.calls % 2 == 0:
            raise RuntimeError("boom on an even tick")
        return idle(observations)


class Hanger(Probe):  # hangs far past the budget on its third tick: its worker is killed and restarted
    def attack(self, observations):
        if self.calls == 3:
            time.sleep(60)
        return idle(observations)


class Burner(Probe):  # spins on the CPU past the budget every 20th tick
    def attack(self, observations):
        if self.calls % 20 == 5:
            end = time.monotonic() + 5
            while time.monotonic() < end:
                pass
        return idle(observations)


class Garbage(Probe):  # replies that are not actions, in turn
    def attack(self, observations):
        agents = list(observations)
        kind = self.calls % 4
        if kind == 0:
            return "not a dict"
        if kind == 1:
            return {{10**9: {{"Move": {{"Direction": 1}}}}, **{{a: {{"Move": {{"Direction": 1.5}}}} for a in agents}}}}
        if kind == 2:
            return None
        return {{a: {{"Move": {{"Direction": 9}}, "Attack": {{"Style": 7, "Target": -3}}}} for a in agents}}


class Forger(Probe):  # writes a frame of its own into the reply pipe: a length it does not hold
    def attack(self, observations):
        if self.calls % 10 == 1:
            from evaluation.sandbox.channel import write_frame

            write_frame(int(sys.argv[2]), b"A" + (2**32 - 1).to_bytes(4, "little") + bytes(64))
        return idle(observations)


class Hog(Probe):  # asks for more memory than its address space allows, every tick (refused at once)
    def attack(self, observations):
        self.block = bytearray(6 * 2**30)
        return idle(observations)


class Storm(Probe):  # forks 10 sleepers on its first tick; they must die with its worker
    def attack(self, observations):
        if self.calls == 1:
            for _ in range(10):
                try:
                    if os.fork() == 0:
                        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", MARKER])
                except OSError:
                    break
        return idle(observations)


class Escaper(Probe):  # fork, setsid, fork: a grandchild in a session of its own, trying to outlive all
    def attack(self, observations):
        if self.calls == 1 and os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", MARKER])
            os._exit(0)
        return idle(observations)


class Exiter(Probe):  # exits with a status that looks like a signal that is not one, on tick 4
    def attack(self, observations):
        if self.calls == 4:
            os._exit(160)
        return idle(observations)


class Sleeper(Probe):  # slow to start (5 s in its constructor, within the init timeout), then idles
    def __init__(self, config):
        super().__init__(config)
        time.sleep(5)

    def attack(self, observations):
        return idle(observations)
'''
#: The probes' class names, in the order of `PROBES_SOURCE`.
PROBES = ("Crasher", "Hanger", "Burner", "Garbage", "Forger", "Hog", "Storm", "Escaper", "Exiter", "Sleeper")


def write_probes(directory: str | Path, marker: str = "nmmo-arena-probe") -> list[str]:
    """Write the probes to ``directory/probes.py``; return their specs (``.../probes.py:Crasher``, ...).
    The processes the fork probes start carry `marker` in their command line, to look for afterwards."""
    path = Path(directory).resolve() / "probes.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PROBES_SOURCE.format(marker=marker))
    return [f"{path}:{name}" for name in PROBES]


def marked(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker` (what the fork probes left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found
