"""The namespace sandbox against a hostile submitter: each attack is a few lines in the submitted
file, played in one real tournament; each reports what it managed through the one channel it has
(an exception message, which the tournament records as a fault), and the host checks the rest."""

import os
import socket
from pathlib import Path

import pytest

from evaluation.sandbox import namespaces
from evaluation.sandbox.host import Limits
from evaluation.tournament import run_tournament

from .conftest import small_config

pytestmark = pytest.mark.skipif(namespaces.unavailable_reason() is not None and os.environ.get(
    namespaces.REQUIRE_ENV) != "1", reason=f"no namespace sandbox here: {namespaces.unavailable_reason()}")

ATTACKS = '''
import ctypes
import os
import signal
import socket
import sys
import time

MARKER, TOKEN, OUT, PORT = {marker!r}, {token!r}, {out!r}, {port}


class Attacker:
    def __init__(self, config):
        self.calls = 0

    def act(self, observations):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError(f"report {{self.attack()}}")
        return {{}}


class Escape(Attacker):  # fork, setsid, fork: a grandchild in a session of its own, ppid 1
    def attack(self):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", MARKER])
            os._exit(0)
        os.wait()
        return "forked"


class StopRivals(Attacker):  # SIGSTOP every other worker it can see (not its own parent)
    def attack(self):
        stopped = 0
        mine = (os.getpid(), os.getppid(), 1)
        for pid in [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine]:
            try:
                if b"evaluation.sandbox.worker" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                    os.kill(pid, signal.SIGSTOP)
                    stopped += 1
            except OSError:
                pass
        return f"stopped={{stopped}}"


class Snoop(Attacker):  # the parent's environment, every visible command line, the parent's memory
    def attack(self):
        found = []
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            for name in ("environ", "cmdline"):
                try:
                    data = open(f"/proc/{{pid}}/{{name}}", "rb").read()
                except OSError:
                    continue
                if TOKEN.encode() in data:
                    found.append(f"token:{{name}}")
                if b"Honest" in data:
                    found.append(f"spec:{{name}}")
        try:
            with open(f"/proc/{{os.getppid()}}/mem", "rb") as mem:
                mem.read(1)
            found.append("mem")
        except OSError:
            pass
        return f"found={{sorted(set(found))}}"


class Breakout(Attacker):  # remount /, write outside /tmp, raise a hard rlimit, read the output dir
    def attack(self):
        import resource

        done = []
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(b"none", b"/", None, 32, None) == 0:  # MS_REMOUNT, read-write
            done.append("remount")
        stdlib = os.path.dirname(os.__file__)
        for path in (os.path.join(OUT, "owned.txt"), "/owned.txt", os.path.join(stdlib, "owned.txt")):
            try:
                open(path, "w").write("owned")
                done.append("write")
            except OSError:
                pass
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (1 << 20, 1 << 20))
            done.append("rlimit")
        except (OSError, ValueError):
            pass
        try:
            os.listdir(OUT)
            done.append("read-out")
        except OSError:
            pass
        return f"done={{done}}"


class Network(Attacker):  # a listening socket on the host's loopback
    def attack(self):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
            return "connected"
        except OSError as err:
            return f"refused {{type(err).__name__}}"


class MemoryForks(Attacker):  # 3 children of 150 MiB each: 450 MiB against a 256 MiB bound
    def attack(self):
        children = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                block = bytearray(150 * 2**20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(1)
                os._exit(0)
            children.append(pid)
        killed = sum(os.WIFSIGNALED(os.waitpid(pid, 0)[1]) for pid in children)
        return f"killed={{killed}}"


class ForkStorm(Attacker):  # 100 sleeping children against a limit of 32 processes
    def attack(self):
        made = 0
        for _ in range(100):
            try:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                made += 1
            except OSError:
                break
        return f"forks={{made}}"


class Root(Attacker):  # what a uid that maps to root outside could still do without capabilities
    def attack(self):
        done = []
        path = "/proc/sys/fs/lease-break-time"  # write the value it holds: harmless if it works
        try:
            value = open(path).read()
            with open(path, "w") as sysctl:
                sysctl.write(value)
            done.append("sysctl")
        except OSError:
            pass
        try:
            if "_uid.0" in open("/proc/keys").read():  # root's keyring
                done.append("keyring")
        except OSError:
            pass
        return f"done={{done}}"


class BadExit(Attacker):  # an exit status that looks like no signal there is (128 + 32)
    def attack(self):
        os._exit(160)


class LogFill(Attacker):  # 80 MiB into its log, a file on the host's disk
    def attack(self):
        block = "x" * 2**20
        for _ in range(80):
            sys.stdout.write(block)
            sys.stdout.flush()
        return "wrote 80 MiB"


class Honest:  # the rival: plays every tick
    def __init__(self, config):
        pass

    def act(self, observations):
        time.sleep(0.05)
        return {{agent: {{"Move": {{"Direction": 4}}}} for agent in observations}}
'''
NAMES = ("Escape", "StopRivals", "Snoop", "Breakout", "Network", "MemoryForks", "ForkStorm", "Root", "BadExit",
         "LogFill", "Honest")


def _reports(results: dict, spec: str) -> str:
    return " ".join(results["faults"][spec]["messages"])


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sandbox")
    out = directory / "out"
    out.mkdir()
    (out / "results.json").write_text("{}")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    marker, token = f"nmmo-escape-{os.getpid()}", f"token-{os.urandom(8).hex()}"
    (directory / "attacks.py").write_text(ATTACKS.format(marker=marker, token=token, out=str(out),
                                                         port=listener.getsockname()[1]))
    specs = {name: f"{directory / 'attacks.py'}:{name}" for name in NAMES}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NMMO_SANDBOX_TEST_TOKEN", token)  # a secret in the environment the episode process starts with
        results = run_tournament(small_config(PLAYER_N=18), list(specs.values()), episodes=1, ticks=3, workers=1,
                                 progress=False, time_budget=5.0,
                                 limits=Limits(group_memory_mb=256, processes=32, init_timeout=30))
    listener.close()
    return results, specs, marker, directory, out


def test_nothing_the_submission_started_outlives_the_tournament(attacked):
    results, specs, marker, _, _ = attacked
    assert "report forked" in _reports(results, specs["Escape"])
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
        except OSError:
            pass
    assert alive == []


def test_a_submission_cannot_stop_a_rival(attacked):
    results, specs, *_ = attacked
    assert "report stopped=0" in _reports(results, specs["StopRivals"])
    honest = results["faults"][specs["Honest"]]
    assert honest["timeout"] == honest["exception"] == honest["malformed"] == 0


def test_a_submission_cannot_read_the_tournament_s_environment_specs_or_memory(attacked):
    results, specs, *_ = attacked
    assert "report found=[]" in _reports(results, specs["Snoop"])


def test_a_submission_cannot_remount_write_raise_its_limits_or_read_the_output(attacked):
    results, specs, _, directory, out = attacked
    assert "report done=[]" in _reports(results, specs["Breakout"])
    assert not (out / "owned.txt").exists() and not Path(os.path.dirname(os.__file__), "owned.txt").exists()


def test_a_submission_has_no_network(attacked):
    results, specs, *_ = attacked
    assert "report refused ConnectionRefusedError" in _reports(results, specs["Network"])


def test_memory_spread_over_forks_is_caught_at_the_group_bound(attacked):
    results, specs, *_ = attacked
    reports = _reports(results, specs["MemoryForks"])
    assert "report killed=0" not in reports and ("report killed=" in reports or "memory limit" in reports), reports


def test_a_fork_storm_is_caught_at_the_process_limit(attacked):
    results, specs, *_ = attacked
    reports = _reports(results, specs["ForkStorm"])
    forks = int(reports.split("report forks=")[1].split()[0].rstrip("'\""))
    assert forks < 32, reports


def test_no_sysctl_no_root_keyring(attacked):
    results, specs, *_ = attacked
    assert "report done=[]" in _reports(results, specs["Root"]), _reports(results, specs["Root"])


def test_the_submission_is_an_unprivileged_uid_on_the_host(tmp_path):
    """Seen from the host, every process of a sandboxed worker runs as a uid of the sandbox's range
    with no capabilities, even when the tournament runs as root (bubblewrap maps the uid it starts
    with)."""
    import threading
    import time

    from evaluation.submission import SubprocessPolicy

    (tmp_path / "slow.py").write_text("import time\n\nclass Agent:\n    def __init__(self, config):\n"
                                      "        time.sleep(3)\n\n    def act(self, observations):\n        return {}\n")
    seen: list[tuple[str, str]] = []

    def ours(pid: str) -> bool:  # a descendant of this process (other test files run workers too)
        for _ in range(6):
            pid = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if line.startswith("PPid"))
            if int(pid) == os.getpid():
                return True
        return False

    def look() -> None:
        time.sleep(1.5)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if b"evaluation.sandbox.worker" in Path(f"/proc/{pid}/cmdline").read_bytes() and ours(pid):
                    status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                                  if line.startswith(("Uid", "CapEff")))
                    seen.append((status["Uid"], status["CapEff"]))
            except OSError:
                pass

    watcher = threading.Thread(target=look)
    watcher.start()
    handle = SubprocessPolicy(f"{tmp_path / 'slow.py'}:Agent", small_config())
    handle.reset(0)
    handle.close()
    watcher.join()
    uids = {uid.split()[0] for uid, _ in seen}
    assert seen and all(len(set(uid.split())) == 1 and int(caps, 16) == 0 for uid, caps in seen), seen
    if os.geteuid() == 0:
        assert len(uids) == 1 and int(uids.pop()) in namespaces.uid_range(), seen
    else:  # a normal user's uid is unprivileged already
        assert uids == {str(os.getuid())}, seen


def test_any_exit_status_is_a_fault_never_an_error_of_the_tournament(attacked):
    results, specs, *_ = attacked
    assert "exit status 160" in _reports(results, specs["BadExit"])


def test_a_log_that_grows_without_end_is_stopped_at_the_file_size_limit(attacked):
    results, specs, *_ = attacked
    reports = _reports(results, specs["LogFill"])
    assert ("File too large" in reports or "SIGXFSZ" in reports) and "wrote 80 MiB" not in reports, reports
