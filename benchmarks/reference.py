"""The published Neural MMO 2.1.1 (`nmmo==2.1.1` on the package index), built in its own virtual
environment: the yardstick that `benchmarks/bench_env.py --reference`, `benchmarks/ref_map_fractions.py`
and `nmmo experiment table1 --reference-python` measure us against.

Usage:
    python benchmarks/reference.py                          # build (or check) it, print its interpreter
    python benchmarks/reference.py --throughput medium 200  # also drive it: agent-steps/s
    python benchmarks/reference.py --tasks                  # and time its task evaluation (128 tasks)
    NMMO_REF=/some/dir python benchmarks/reference.py       # build it there instead

The environment lives at `$NMMO_REF` if set, else `~/.cache/flatmmo/nmmo-2.1.1` (under
`$XDG_CACHE_HOME` when that is set), and is reused as long as it imports nmmo 2.1.1. A first build
takes a few minutes and compiles a C extension (a C compiler and Python headers are needed):
nmmo 2.1.1 needs numpy below 2, and its noise dependency vec-noise 1.1.4 only builds against
numpy < 2 and without pip's build isolation, so the steps are

    pip install numpy==1.23.3 setuptools wheel "cython>=3"
    pip install --no-build-isolation vec-noise==1.1.4
    pip install --no-build-isolation nmmo==2.1.1

numpy 1.23 has wheels for Python 3.8 to 3.11 only: under a newer Python the base interpreter is
the first python3.11 / python3.10 / python3.9 on PATH, or `--python`.

The reference runs from a temporary working directory with PYTHONPATH cleared, so that its
`import nmmo` finds nmmo 2.1.1 and never this checkout's package. Its maps are cached in the
environment's `maps/` folder; constructing a Large env still takes nmmo 2.1.1 about 3 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

VERSION = "2.1.1"
HERE = Path(__file__).resolve().parent
DRIVER = HERE / "reference_driver.py"
TASKS_DRIVER = HERE / "ref_tasks_driver.py"
#: (what the step installs, pip arguments after `pip install`)
INSTALL_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("numpy 1.23.3 and the build tools", ("numpy==1.23.3", "setuptools", "wheel", "cython>=3")),
    ("vec-noise 1.1.4 (compiles a C extension)", ("--no-build-isolation", "vec-noise==1.1.4")),
    (f"nmmo {VERSION}", ("--no-build-isolation", f"nmmo=={VERSION}")),
)
TAIL_LINES = 25


class ReferenceBuildError(RuntimeError):
    """A build step failed; the message names the step and ends with the tail of its output."""


def default_location() -> Path:
    """`$NMMO_REF`, else the user's cache directory."""
    if os.environ.get("NMMO_REF"):
        return Path(os.environ["NMMO_REF"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "flatmmo" / f"nmmo-{VERSION}"


def interpreter(venv: str | Path | None = None) -> Path:
    """The reference environment's python (whether or not it exists yet)."""
    venv = Path(venv) if venv is not None else default_location()
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def clean_env() -> dict[str, str]:
    """This process's environment without what would let the reference import this checkout."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    return env


def run_reference(python: str | Path, args: Sequence[str], timeout: float | None = None,
                  ) -> subprocess.CompletedProcess[str]:
    """Run `python ARGS` from an empty temporary directory, outside any checkout."""
    with tempfile.TemporaryDirectory(prefix="nmmo_ref_") as cwd:
        return subprocess.run([str(python), *args], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                              timeout=timeout)


def installed_version(python: str | Path) -> str | None:
    """The nmmo version the interpreter imports from outside this checkout, or None."""
    if not Path(python).exists():
        return None
    check = "import importlib.metadata, nmmo; print(importlib.metadata.version('nmmo'))"
    try:
        done = run_reference(python, ["-c", check], timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


def is_ready(venv: str | Path | None = None) -> bool:
    """Whether the environment exists and imports nmmo 2.1.1 (no build)."""
    return installed_version(interpreter(venv)) == VERSION


def base_python(requested: str | None = None) -> str:
    """An interpreter that numpy 1.23.3 has wheels for (3.8 to 3.11) to base the environment on."""
    if requested:
        return requested
    if sys.version_info < (3, 12):
        return sys.executable
    for name in ("python3.11", "python3.10", "python3.9"):
        found = shutil.which(name)
        if found:
            return found
    raise ReferenceBuildError(
        f"nmmo {VERSION} needs numpy < 2, whose 1.23 wheels stop at Python 3.11, and this is Python "
        f"{sys.version_info.major}.{sys.version_info.minor} with no python3.11 / 3.10 / 3.9 on PATH: "
        "pass one with --python (or base_python=)")


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _step(number: int, total: int, what: str, command: Sequence[str], log: Callable[[str], None]) -> None:
    log(f"[{number}/{total}] {what} ...")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nmmo_ref_build_") as cwd:
        try:
            done = subprocess.run(list(command), cwd=cwd, env=clean_env(), capture_output=True, text=True)
        except OSError as error:
            raise ReferenceBuildError(f"step {number}/{total} ({what}) could not start: {error}") from error
    if done.returncode != 0:
        raise ReferenceBuildError(
            f"step {number}/{total} ({what}) failed with exit status {done.returncode}: "
            f"{' '.join(command)}\nlast lines of its output:\n{_tail(done.stdout + done.stderr)}")
    log(f"[{number}/{total}] done in {time.monotonic() - start:.0f} s")


def ensure(venv: str | Path | None = None, python: str | None = None, rebuild: bool = False,
           log: Callable[[str], None] = print) -> Path:
    """Build nmmo 2.1.1 in its own virtual environment unless it is there already; returns its
    interpreter. Raises ReferenceBuildError naming the step that failed."""
    venv = Path(venv) if venv is not None else default_location()
    target = interpreter(venv)
    if not rebuild and installed_version(target) == VERSION:
        return target
    if venv.exists() and any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
        raise ReferenceBuildError(f"{venv} exists and is not a virtual environment: remove it or set NMMO_REF "
                                  "to another directory")
    start = time.monotonic()
    log(f"building nmmo {VERSION} in {venv} (a few minutes: it compiles a C extension)")
    total = len(INSTALL_STEPS) + 2
    if not target.exists():
        base = base_python(python)
        venv.parent.mkdir(parents=True, exist_ok=True)
        _step(1, total, f"creating the virtual environment with {base}", [base, "-m", "venv", str(venv)], log)
    else:
        log(f"[1/{total}] reusing the virtual environment")
    pip = [str(target), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    for number, (what, args) in enumerate(INSTALL_STEPS, 2):
        _step(number, total, f"installing {what}", [*pip, *args], log)
    log(f"[{total}/{total}] checking that it imports nmmo {VERSION} ...")
    found = installed_version(target)
    if found != VERSION:
        raise ReferenceBuildError(f"step {total}/{total} (the check) failed: {target} imports nmmo "
                                  f"{found or 'not at all'}, not {VERSION}")
    log(f"nmmo {VERSION} ready in {time.monotonic() - start:.0f} s: {target}")
    return target


def maps_dir(python: str | Path, case: str) -> Path:
    """Where the reference caches its maps for a case: beside its interpreter, in the environment."""
    return Path(python).parents[1] / "maps" / case


def measure(case: str, steps: int, python: str | Path | None = None, timeout: float | None = 3600,
            ) -> dict[str, float]:
    """Drive nmmo 2.1.1 like `benchmarks/bench_env.py` drives ours (benchmarks/reference_driver.py):
    its agent-steps/s, ms_per_step, reset_s and peak_rss_mb. `python` defaults to the built
    environment's (build it first: `ensure`)."""
    python = Path(python) if python is not None else interpreter()
    done = run_reference(python, [str(DRIVER), case, str(steps), "--maps", str(maps_dir(python, case))],
                         timeout=timeout)
    figures = {}
    for line in done.stdout.splitlines():
        key, _, value = line.strip().rpartition(" ")
        try:
            figures[key] = float(value)
        except ValueError:
            continue
    if done.returncode != 0 or "agent-steps/s" not in figures:
        raise RuntimeError(f"the nmmo {VERSION} driver failed ({case}, {steps} steps, exit status "
                           f"{done.returncode}):\n{_tail(done.stdout + done.stderr)}")
    return figures


def throughput(case: str, steps: int, python: str | Path | None = None, timeout: float | None = 3600) -> float:
    """agent-steps/s of nmmo 2.1.1 (see `measure`)."""
    return measure(case, steps, python, timeout)["agent-steps/s"]


def task_timing(specs: Sequence[dict], ticks: int = 200, warmup: int = 20, seed: int = 1,
                python: str | Path | None = None, timeout: float | None = 3600) -> dict:
    """Time nmmo 2.1.1's task evaluation (benchmarks/ref_tasks_driver.py) on the Medium case
    with one spec per agent (`specs`: the driver's JSON entries, in agent order): its per-tick
    ``tasks_ms`` (`Env._compute_rewards`), ``gamestate_ms`` (inside it), ``step_ms`` and more."""
    python = Path(python) if python is not None else interpreter()
    with tempfile.TemporaryDirectory(prefix="nmmo_ref_tasks_") as folder:
        path = Path(folder) / "specs.json"
        path.write_text(json.dumps({"specs": list(specs)}))
        done = run_reference(python, [str(TASKS_DRIVER), str(path), "--ticks", str(ticks), "--warmup", str(warmup),
                                      "--seed", str(seed), "--maps", str(maps_dir(python, "medium"))],
                             timeout=timeout)
    lines = done.stdout.strip().splitlines()
    try:
        figures = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except json.JSONDecodeError:
        figures = None
    if not isinstance(figures, dict):
        raise RuntimeError(f"the nmmo {VERSION} task driver failed (exit status {done.returncode}):\n"
                           f"{_tail(done.stdout + done.stderr)}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=None, help="where to build it (default: $NMMO_REF or the cache)")
    parser.add_argument("--python", default=None, help="base interpreter for the environment (Python <= 3.11)")
    parser.add_argument("--rebuild", action="store_true", help="run the install steps even if it is ready")
    parser.add_argument("--throughput", nargs=2, metavar=("CASE", "STEPS"),
                        help="then drive it: CASE medium or large, STEPS steps")
    parser.add_argument("--tasks", action="store_true",
                        help="then time its task evaluation beside ours (benchmarks/bench_tasks_reference.py)")
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        python = ensure(args.venv, args.python, args.rebuild, log=log)
    except ReferenceBuildError as error:
        sys.exit(f"could not build nmmo {VERSION}: {error}")
    print(python, flush=True)
    if args.throughput:
        case, steps = args.throughput
        figures = measure(case, int(steps), python)
        print(f"nmmo {VERSION} {case}, {steps} steps: "
              + ", ".join(f"{key} {value:g}" for key, value in figures.items()))
    if args.tasks:
        done = subprocess.run([sys.executable, str(HERE / "bench_tasks_reference.py"), "--reference-python",
                               str(python)])
        if done.returncode != 0:
            sys.exit(done.returncode)


if __name__ == "__main__":
    main()
