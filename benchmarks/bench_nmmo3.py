"""Our fused engine against PufferLib's NMMO3 (C) at the same agent count, in agent-steps per CPU-second.

Usage:
    python benchmarks/bench_nmmo3.py                        # 3 rounds of 500 ticks, 1024 agents each side
    python benchmarks/bench_nmmo3.py --rounds 5 --ticks 1000
    python benchmarks/bench_nmmo3.py --ours-only --json-only   # our engine alone, one JSON line
    NMMO3_DIR=/some/dir python benchmarks/bench_nmmo3.py    # fetch and build NMMO3 there instead
    python benchmarks/compare_commits.py --refs HEAD . --key ours_agent_steps_per_cpu_s \\
        -- $PWD/benchmarks/bench_nmmo3.py --ours-only --json-only   # before/after of our engine

What it measures. Ours: `VectorEnv(engine="fused")` over --envs (8) worlds of bench_env.py's Medium
case (128 immortal agents and 128 NPCs each, all four systems), stepped in this process with random
valid moves drawn from the move masks outside the timed region (benchmarks/bench_scale.py's
`time_steps`, imported, not copied). Theirs: NMMO3 from the `pufferlib==3.0.0` sdist, one env with
nmmo3.py's defaults (512x512 map, 1024 players, 2048 enemies, observations built every tick), stepped
by benchmarks/nmmo3_driver.c with uniform random actions over its 26 (a fixed-seed generator, drawn
before the timed region). Both run single-threaded, 10 warm-up ticks then --ticks timed ticks, and
time themselves: wall time and the process's CPU time (time.process_time; clock_gettime
CLOCK_PROCESS_CPUTIME_ID). The two alternate (ours, NMMO3, ours, NMMO3, ...) for --rounds rounds and
the table shows medians (and ranges) of agent-steps per wall-second and per CPU-second, ms per tick
and ours / NMMO3 per CPU-second. Per CPU-second is the figure to quote on this shared machine: wall
time also counts the time other processes had the core. The last line printed is a JSON object with
the figures (ours_agent_steps_per_cpu_s, nmmo3_agent_steps_per_cpu_s, ratio_per_cpu_s, ...), for
compare_commits.py.

How NMMO3 is built. Its sdist is fetched with pip (`pip download --no-deps --no-binary :all:
--no-build-isolation --no-clean pufferlib==3.0.0`, with NO_OCEAN=1): pip unpacks it and then fails
to prepare its metadata (setup.py imports torch and, with NO_OCEAN=1, stops on a NameError; without
it, it would download raylib builds from GitHub), and with --no-clean the unpacked tree stays in the
TMPDIR given to pip, whence it is moved; if pip does save the sdist (a setup.py that gets through),
the tarball is unpacked instead. Nothing of the package is built or installed. Then the driver is
compiled against the sdist's headers alone:

    gcc -O3 -DNDEBUG -fwrapv -std=gnu11 -w -I pufferlib-3.0.0/pufferlib/ocean/nmmo3
        -I pufferlib-3.0.0/raylib-5.5_linux_amd64/include -ffunction-sections -fdata-sections
        -Wl,--gc-sections benchmarks/nmmo3_driver.c -o build/nmmo3_driver -lm

(raylib.h comes inside the sdist, for setup.py's own build; no raylib library is linked: the render
code is never called and --gc-sections drops it.) All of it lives in `$NMMO3_DIR` if set (or
--nmmo3-dir), else `~/.cache/flatmmo/pufferlib-3.0.0` (under `$XDG_CACHE_HOME` when set), and is
reused: the driver is recompiled only when its source or the compile command changes. A first fetch
takes about 10 s on a fast link (a 61 MB sdist); it needs pip, gcc and the package index.

The comparison's caveats (printed with the table): they are different games. NMMO3 has 2048 enemies
on one 512x512 map and builds a 1707-byte uint8 observation per player (a 11x15 tile window of 10
features, the player's own 47 and 10 reward features), without entity lists or action masks; ours
builds ~9.5 KB per agent (a 15x15 tile window, 100 entity rows of 19 int32 features, move / style /
target masks). Ours is 8 worlds of 128 agents stepped as one fused batch, theirs one world of 1024.
Random actions in both (theirs over its whole action space: markets, items, attacks and moves;
ours random valid moves only); immortal agents in ours, respawning players in theirs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_scale and bench_env, when run from anywhere

VERSION = "3.0.0"
SDIST = f"pufferlib-{VERSION}"
DRIVER_SOURCE = HERE / "nmmo3_driver.c"
NMMO3_INCLUDE = "pufferlib/ocean/nmmo3"  # nmmo3.h, simplex.h, tile_atlas.h, inside the sdist
RAYLIB_INCLUDE = "raylib-5.5_linux_amd64/include"  # raylib.h (and raymath.h, rlgl.h), inside the sdist
NMMO3_OBS_BYTES = 11 * 15 * 10 + 47 + 10
NMMO3_MAP = 512
WARMUP = 10
TAIL_LINES = 25
CAVEATS = (
    "Different games: NMMO3 has {enemies} enemies on one {map}x{map} map and builds a {theirs:,}-byte uint8 "
    "observation per player (11x15 tiles x 10 features + 57 player/reward features), with no entity lists "
    "and no action masks; ours builds {ours:,.0f} bytes per agent (15x15 tiles, 100 entity rows, move / "
    "style / target masks) with {npcs} NPCs per world.",
    "Ours is {envs} worlds of {per_world} agents stepped as one fused batch; NMMO3 is one world of {players}.",
    "Random actions in both: NMMO3's drawn uniformly from {actions}, ours random valid moves; "
    "our agents are immortal, NMMO3's players die and respawn.",
    "Single thread each, timed by the process itself after {warmup} warm-up ticks; per CPU-second is "
    "the figure to compare on a shared machine (wall time counts other processes' turns on the core).",
)


class NMMO3BuildError(RuntimeError):
    """Fetching the sdist or compiling the driver failed; the message says which and why."""


def default_location() -> Path:
    """`$NMMO3_DIR`, else the user's cache directory."""
    if os.environ.get("NMMO3_DIR"):
        return Path(os.environ["NMMO3_DIR"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "flatmmo" / SDIST


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _has_sources(root: Path) -> bool:
    return (root / NMMO3_INCLUDE / "nmmo3.h").is_file() and (root / RAYLIB_INCLUDE / "raylib.h").is_file()


def _sdist_version(root: Path) -> str | None:
    try:
        for line in (root / "PKG-INFO").read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def fetch(location: Path, log: Callable[[str], None] = print) -> Path:
    """The unpacked pufferlib 3.0.0 sdist under `location`, fetched with pip unless it is there."""
    root = location / SDIST
    if _has_sources(root):
        return root
    location.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    log(f"[1/2] fetching the pufferlib {VERSION} sdist with pip into {root} (not building it) ...")
    with tempfile.TemporaryDirectory(prefix="nmmo3_fetch_", dir=location) as work:
        work = Path(work)
        (work / "tmp").mkdir()
        command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
                   "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "--no-clean",
                   f"pufferlib=={VERSION}", "-d", str(work / "download")]
        # NO_OCEAN=1: setup.py skips its raylib / box2d downloads (and then stops early, which is fine)
        env = {**os.environ, "TMPDIR": str(work / "tmp"), "NO_OCEAN": "1", "NO_TRAIN": "1"}
        try:
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise NMMO3BuildError(f"fetching the pufferlib {VERSION} sdist failed: {' '.join(command)}: "
                                  f"{error}") from error
        tarballs = sorted((work / "download").glob(f"{SDIST}.tar.gz"))
        kept = sorted(path.parents[3] for path in
                      (work / "tmp").glob(f"pip-*/pufferlib_*/{NMMO3_INCLUDE}/nmmo3.h"))  # ROOT/pufferlib/ocean/nmmo3
        if tarballs:  # pip prepared it and saved the sdist itself
            with tarfile.open(tarballs[0]) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(work / "unpacked", filter="data")
                else:
                    tar.extractall(work / "unpacked")  # noqa: S202 (a PyPI sdist, Python < 3.11.4)
            found = work / "unpacked" / SDIST
        elif kept:  # pip unpacked it, then failed on its metadata: the usual case
            found = kept[0]
        else:
            raise NMMO3BuildError(
                f"fetching the pufferlib {VERSION} sdist failed: pip neither saved it nor left it unpacked "
                f"(exit status {done.returncode}): {' '.join(command)}\n"
                f"last lines of its output:\n{_tail(done.stdout + done.stderr)}")
        if not _has_sources(found):
            raise NMMO3BuildError(f"the pufferlib {VERSION} sdist lacks {NMMO3_INCLUDE}/nmmo3.h or "
                                  f"{RAYLIB_INCLUDE}/raylib.h (looked in {found})")
        if _sdist_version(found) != VERSION:
            raise NMMO3BuildError(f"pip fetched pufferlib {_sdist_version(found)}, not {VERSION} ({found})")
        if root.exists():
            shutil.rmtree(root)
        shutil.move(str(found), str(root))
    log(f"[1/2] done in {time.monotonic() - start:.0f} s: {root}")
    return root


def compile_command(root: Path, binary: Path, compiler: str = "gcc") -> list[str]:
    """gcc against the sdist's headers alone: render code unused, no raylib library linked."""
    return [compiler, "-O3", "-DNDEBUG", "-fwrapv", "-std=gnu11", "-w", "-I", str(root / NMMO3_INCLUDE),
            "-I", str(root / RAYLIB_INCLUDE), "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections",
            str(DRIVER_SOURCE), "-o", str(binary), "-lm"]


def build_driver(root: Path, location: Path, log: Callable[[str], None] = print) -> Path:
    """The compiled driver, recompiled only when its source or the compile command changed."""
    binary = location / "build" / "nmmo3_driver"
    compiler = os.environ.get("CC") or "gcc"
    command = compile_command(root, binary, compiler)
    stamp_file = binary.with_suffix(".stamp")
    stamp = hashlib.sha256(DRIVER_SOURCE.read_bytes() + "\0".join(command).encode()).hexdigest()
    if binary.is_file() and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return binary
    if shutil.which(compiler) is None:
        raise NMMO3BuildError(f"compiling the NMMO3 driver needs a C compiler: no {compiler} on PATH "
                              "(set CC to another)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    log(f"[2/2] compiling the NMMO3 driver: {' '.join(command)}")
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NMMO3BuildError(f"compiling the NMMO3 driver failed: {error}") from error
    if done.returncode != 0:
        raise NMMO3BuildError(f"compiling the NMMO3 driver failed with exit status {done.returncode}: "
                              f"{' '.join(command)}\nlast lines of its output:\n{_tail(done.stdout + done.stderr)}")
    stamp_file.write_text(stamp + "\n")
    log(f"[2/2] done in {time.monotonic() - start:.1f} s: {binary}")
    return binary


def ensure(location: Path | None = None, log: Callable[[str], None] = print) -> Path:
    """Fetch the sdist and compile the driver unless they are there; returns the driver's path."""
    location = Path(location) if location is not None else default_location()
    return build_driver(fetch(location, log), location, log)


def run_nmmo3(binary: Path, ticks: int, seed: int, actions: int, players: int, enemies: int,
              timeout: float = 1800) -> dict[str, float]:
    """One NMMO3 run: the driver's `key value` lines as a dict."""
    command = [str(binary), str(ticks), str(WARMUP), str(seed), str(actions), str(players), str(enemies)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    figures = {}
    for line in done.stdout.splitlines():
        key, _, value = line.strip().partition(" ")
        try:
            figures[key] = float(value)
        except ValueError:
            continue
    if done.returncode != 0 or "cpu_s" not in figures:
        raise RuntimeError(f"the NMMO3 driver failed (exit status {done.returncode}): {' '.join(command)}\n"
                           f"{_tail(done.stdout + done.stderr)}")
    return figures


def run_ours(config, envs: int, ticks: int) -> dict[str, float]:
    """One run of our fused engine, driven by bench_scale.time_steps (in this process)."""
    from bench_scale import time_steps

    wall, cpu = time_steps(config, envs, 0, "process", ticks, None, "fused")
    rows = envs * config.PLAYER_N
    return {"agent_steps_per_s": rows / wall, "agent_steps_per_cpu_s": rows / cpu, "ms_per_tick": 1e3 * wall}


def ours_obs_bytes(config) -> float:
    """Bytes of observation (tiles, entities, masks) our engine builds per agent per step."""
    from nmmo.engines.vector import VectorEnv

    with VectorEnv(config, num_envs=1, seed=0, workers=0, backend="process", engine="fused") as vec:
        obs = vec.reset()
        return sum(array.nbytes for array in obs.values()) / vec.rows


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _cell(values: Sequence[float], digits: int = 0) -> str:
    if len(values) == 1:
        return f"{values[0]:,.{digits}f}"
    return f"{_median(values):,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def print_table(args: argparse.Namespace, config, ours: dict[str, list[float]], theirs: dict[str, list[float]],
                obs_bytes: float, players: int, enemies: int) -> None:
    from rich.console import Console
    from rich.table import Table

    agents = args.envs * config.PLAYER_N
    versus = f" vs PufferLib {VERSION}'s NMMO3 (C)" if theirs else " (--ours-only)"
    table = Table(title=f"Agent-steps per second: our fused engine{versus}, {args.ticks} ticks, "
                        f"median (range) of {args.rounds} {'alternated ' if theirs else ''}rounds")
    for name in ("engine", "agents", "worlds", "map", "NPCs", "obs B/agent", "agent-steps/s wall",
                 "agent-steps/CPU-s", "ms/tick", "ours/NMMO3 CPU-s"):
        table.add_column(name, justify="left" if name == "engine" else "right")
    size = config.MAP_CENTER
    ratio = ""
    if theirs:
        ratio = f"{_median(ours['agent_steps_per_cpu_s']) / _median(theirs['agent_steps_per_cpu_s']):.2f}x"
    table.add_row("ours (fused)", f"{agents:,}", f"{args.envs} x {config.PLAYER_N}",
                  f"{args.envs} x {size}x{size}", f"{args.envs} x {config.NPC_N}", f"{obs_bytes:,.0f}",
                  _cell(ours["agent_steps_per_s"]), _cell(ours["agent_steps_per_cpu_s"]),
                  f"{_median(ours['ms_per_tick']):.2f}", ratio)
    if theirs:
        table.add_row("NMMO3 (C)", f"{players:,}", f"1 x {players}",
                      f"{NMMO3_MAP}x{NMMO3_MAP}", f"{enemies:,}", f"{NMMO3_OBS_BYTES:,}",
                      _cell(theirs["agent_steps_per_s"]), _cell(theirs["agent_steps_per_cpu_s"]),
                      f"{_median(theirs['ms_per_tick']):.2f}", "1.00x")
    console = Console(width=160)
    console.print(table)
    if theirs:
        actions = ("all 26 of its actions" if args.nmmo3_actions == 26
                   else f"its first {args.nmmo3_actions} actions")
        for caveat in CAVEATS:
            console.print("- " + caveat.format(enemies=enemies, map=NMMO3_MAP, theirs=NMMO3_OBS_BYTES, ours=obs_bytes,
                                               npcs=config.NPC_N, envs=args.envs, per_world=config.PLAYER_N,
                                               players=players, actions=actions, warmup=WARMUP),
                          highlight=False, soft_wrap=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds (ours, NMMO3); medians reported")
    parser.add_argument("--ticks", type=int, default=500, help="timed ticks per run, after 10 warm-up ticks")
    parser.add_argument("--envs", type=int, default=8, help="our worlds of 128 agents (default 8: 1024 agents)")
    parser.add_argument("--nmmo3-players", type=int, default=None,
                        help="NMMO3's players (default: as many as our agents); its enemies are twice that")
    parser.add_argument("--nmmo3-actions", type=int, default=26, choices=range(1, 27), metavar="N",
                        help="NMMO3's actions drawn uniformly from 0..N-1 (26: all; 5: moves and no-op)")
    parser.add_argument("--nmmo3-dir", type=Path, default=None,
                        help="where to fetch and build NMMO3 (default: $NMMO3_DIR, else ~/.cache/flatmmo/"
                             f"{SDIST})")
    parser.add_argument("--seed", type=int, default=0, help="NMMO3's seed and action stream")
    parser.add_argument("--ours-only", action="store_true", help="skip NMMO3: our engine alone")
    parser.add_argument("--json-only", action="store_true", help="print only the JSON line (progress to stderr)")
    args = parser.parse_args()
    if args.rounds < 1 or args.ticks < 1 or args.envs < 1:
        parser.error("--rounds, --ticks and --envs must be positive")

    def log(line: str) -> None:
        print(line, file=sys.stderr if args.json_only else sys.stdout, flush=True)

    from bench_scale import load_config

    config = load_config("bench-medium")
    agents = args.envs * config.PLAYER_N
    players = args.nmmo3_players or agents
    enemies = 2 * players
    binary = None
    if not args.ours_only:
        try:
            binary = ensure(args.nmmo3_dir, log)
        except NMMO3BuildError as error:
            raise SystemExit(f"NMMO3 could not be built, so there is nothing to compare against "
                             f"(--ours-only measures our engine alone):\n{error}") from error

    keys = ("agent_steps_per_s", "agent_steps_per_cpu_s", "ms_per_tick")
    ours: dict[str, list[float]] = {key: [] for key in keys}
    theirs: dict[str, list[float]] = {key: [] for key in keys} if binary else {}
    started = time.monotonic()
    for round_ in range(1, args.rounds + 1):
        run = run_ours(config, args.envs, args.ticks)
        for key in keys:
            ours[key].append(run[key])
        line = (f"round {round_}/{args.rounds}: ours {run['agent_steps_per_cpu_s']:,.0f} agent-steps/CPU-s "
                f"({run['agent_steps_per_s']:,.0f}/s wall)")
        if binary:
            figures = run_nmmo3(binary, args.ticks, args.seed, args.nmmo3_actions, players, enemies)
            for key in keys:
                theirs[key].append(figures[key])
            line += (f", NMMO3 {figures['agent_steps_per_cpu_s']:,.0f} agent-steps/CPU-s "
                     f"({figures['agent_steps_per_s']:,.0f}/s wall)")
        log(line)
    obs_bytes = ours_obs_bytes(config)

    result = {"agents": agents, "envs": args.envs, "ticks": args.ticks, "rounds": args.rounds,
              "ours_agent_steps_per_s": _median(ours["agent_steps_per_s"]),
              "ours_agent_steps_per_cpu_s": _median(ours["agent_steps_per_cpu_s"]),
              "ours_ms_per_tick": _median(ours["ms_per_tick"]),
              "ours_obs_bytes_per_agent": obs_bytes}
    if theirs:
        result.update({
            "nmmo3_players": players, "nmmo3_enemies": enemies, "nmmo3_actions": args.nmmo3_actions,
            "nmmo3_agent_steps_per_s": _median(theirs["agent_steps_per_s"]),
            "nmmo3_agent_steps_per_cpu_s": _median(theirs["agent_steps_per_cpu_s"]),
            "nmmo3_ms_per_tick": _median(theirs["ms_per_tick"]),
            "nmmo3_obs_bytes_per_agent": NMMO3_OBS_BYTES,
            "ratio_per_cpu_s": _median(ours["agent_steps_per_cpu_s"]) / _median(theirs["agent_steps_per_cpu_s"]),
            "ratio_per_wall_s": _median(ours["agent_steps_per_s"]) / _median(theirs["agent_steps_per_s"]),
        })
    if not args.json_only:
        print_table(args, config, ours, theirs, obs_bytes, players, enemies)
        print(f"measured in {time.monotonic() - started:.0f} s")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
