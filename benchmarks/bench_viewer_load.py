"""Viewer server under load: N websocket viewers of one replay, bounded (N <= 200, 127.0.0.1 only).

Usage:
    python benchmarks/bench_viewer_load.py                 # 1, 50 and 200 viewers of a Medium replay
    python benchmarks/bench_viewer_load.py --viewers 100 --ticks 300

The server runs in its own process (`nmmo serve --replay`). For each viewer count we open the
viewers, have every one play the replay, and meanwhile time `GET /api/health` repeatedly; we report
the server's resident memory (VmRSS from /proc) before and with the viewers, the memory each viewer
costs, how often the replay was decoded (once, shared), and the health latency (median, 95th
percentile, worst) with and without the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websockets
from rich.console import Console
from rich.table import Table

import nmmo
import scripted

ROOT = Path(__file__).resolve().parents[1]


def record_replay(directory: Path, ticks: int, config: str = "small_maps", name: str = "load.replay") -> Path:
    conf = nmmo.config.load(config).set("HORIZON", ticks + 1)
    env = nmmo.Env(conf, seed=0, record=True)
    bot = scripted.Meander(conf, 0)
    obs, _ = env.reset()
    for _ in range(ticks):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
    return env.save_replay(directory / name)


async def health_while_decoding(port: int, name: str) -> tuple[float, list[float]]:
    """Open the first viewer of a replay nobody opened yet (the server decodes it then) and time
    /api/health until its header arrives: (seconds to the header, health latencies meanwhile)."""
    start = time.perf_counter()
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/replay/{name}", max_size=2**28) as ws:
        first = asyncio.create_task(ws.recv())
        latencies = []
        while not first.done():
            latencies.append(await asyncio.to_thread(health_ms, port))
        await first
    return time.perf_counter() - start, latencies


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def health_ms(port: int) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=60) as response:
        response.read()
    return 1e3 * (time.perf_counter() - start)


async def viewers_playing(port: int, count: int, seconds: float, probe) -> list[float]:
    """Open `count` viewers, start them playing at 30 ticks/s, probe health while they play."""
    sockets = []
    for _ in range(count):
        ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws/replay/load.replay", max_size=2**26)
        sockets.append(ws)
    for ws in sockets:
        await ws.send(json.dumps({"cmd": "speed", "value": 30}))
        await ws.send(json.dumps({"cmd": "play"}))

    async def drain(ws):
        try:
            while True:
                await ws.recv()
        except (websockets.exceptions.ConnectionClosed, asyncio.CancelledError):
            return

    readers = [asyncio.create_task(drain(ws)) for ws in sockets]
    latencies = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        latencies.append(await asyncio.to_thread(health_ms, port))
        await asyncio.sleep(0.05)
    rss = probe()
    for task in readers:
        task.cancel()
    for ws in sockets:
        await ws.close()
    return latencies, rss


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered):.1f} / {p95:.1f} / {ordered[-1]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--viewers", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--ticks", type=int, default=300, help="length of the replay")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each load runs")
    parser.add_argument("--large-ticks", type=int, default=200,
                        help="length of a large_maps replay whose first opening is timed (0: skip)")
    args = parser.parse_args()
    if max(args.viewers) > 200:
        raise SystemExit("this benchmark stays bounded: at most 200 viewers")
    directory = Path(tempfile.mkdtemp(prefix="nmmo-load-"))
    replay = record_replay(directory, args.ticks)
    if args.large_ticks:
        large = record_replay(directory, args.large_ticks, "large_maps", "large.replay")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "nmmo", "serve", "--replay-dir", str(directory), "--port",
                               str(port), "--max-viewers", str(max(args.viewers) + 1)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                health_ms(port)
                break
            except OSError:
                time.sleep(0.1)
        idle = [health_ms(port) for _ in range(50)]
        base_rss = rss_mb(server.pid)
        table = Table(title=f"viewer server: {replay.name} ({args.ticks} ticks, small_maps, "
                            f"{replay.stat().st_size / 2**20:.1f} MiB on disk), viewers playing at 30 ticks/s")
        for column in ("viewers", "server RSS MB", "MB per viewer", "health ms (median / p95 / worst)"):
            table.add_column(column, justify="right")
        table.add_row("0", f"{base_rss:.0f}", "-", summary(idle))
        for count in args.viewers:
            latencies, rss = asyncio.run(viewers_playing(port, count, args.seconds, lambda: rss_mb(server.pid)))
            table.add_row(str(count), f"{rss:.0f}", f"{(rss - base_rss) / count:.2f}", summary(latencies))
        console = Console(width=120)
        console.print(table)
        if args.large_ticks:
            seconds, latencies = asyncio.run(health_while_decoding(port, large.name))
            console.print(f"first opening of a large_maps replay ({args.large_ticks} ticks, 1024 agents + 1024 NPCs, "
                          f"{large.stat().st_size / 2**20:.1f} MiB on disk): header after {seconds:.2f} s; "
                          f"/api/health meanwhile (median / p95 / worst): {summary(latencies)} ms over "
                          f"{len(latencies)} requests (decoding runs off the event loop)", highlight=False)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
