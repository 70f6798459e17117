"""Viewer data path: live packet size and rate, and the size of a Large replay.

Usage:
    python benchmarks/bench_viewer.py                    # live streams (Medium, Large) + a 1024-tick Large replay
    python benchmarks/bench_viewer.py --ticks 200        # shorter replay
    python benchmarks/bench_viewer.py --browser          # also the viewer's frame time on a Large replay
                                                         # in headless Chromium (software WebGL: SwiftShader)

Live: a LiveSession (Meander bots, so the load is the engine and the encoder, not a policy) steps
and encodes delta packets; we report the mean JSON bytes per tick and how many ticks per second
the server can produce (step + encode). Replay: the file size of a recorded Large episode.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import nmmo
import scripted

LIVE_CASES = {"medium": ("Medium", 128), "large": ("Large", 1024)}


def make_config(preset: str, agents: int):
    base = getattr(nmmo.config, preset)

    class Bench(base, nmmo.config.Resource, nmmo.config.Combat, nmmo.config.Progression, nmmo.config.NPC):
        """Viewer benchmark config."""

    return Bench().update({"PLAYER_N": agents, "MAP_N": 1, "IMMORTAL": True})


def live(case: str, ticks: int) -> dict:
    from client_server.sessions import LiveSession

    preset, agents = LIVE_CASES[case]
    session = LiveSession(make_config(preset, agents), "scripted:Meander", seed=0)
    sizes, start = [], time.perf_counter()
    for _ in range(ticks):
        text, _ = session.advance()
        sizes.append(len(text))
    elapsed = time.perf_counter() - start
    header = len(str(session.header()))
    return {"case": case, "bytes_per_tick": sum(sizes) / len(sizes), "ticks_per_s": ticks / elapsed,
            "header_bytes": header}


def browser_frame_time(replay: Path, seconds: float = 10.0) -> dict:
    """Play a replay in headless Chromium and sample the viewer's own frame statistics."""
    import socket
    import threading

    import uvicorn
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from client_server.server import create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(replay_dir=replay.parent, port=port), host="127.0.0.1", port=port,
                                           log_level="error", ws="websockets-sansio"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1280,800",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(f"http://127.0.0.1:{port}/?replay={replay.name}")
        while not driver.execute_script("return window.viewer && window.viewer.packets > 0"):
            time.sleep(0.1)
        driver.execute_script("document.getElementById('play').click()")
        samples, end = [], time.time() + seconds
        while time.time() < end:
            time.sleep(1.0)
            samples.append(driver.execute_script("return window.viewer.stats"))
    finally:
        driver.quit()
        server.should_exit = True
    last = samples[-1]
    return {"fps": sum(s["fps"] for s in samples[2:]) / max(1, len(samples[2:])),
            "update_ms": last["updateMs"], "render_ms": last["renderMs"], "draw_calls": last["drawCalls"],
            "entities": last["entities"]}


def replay_size(ticks: int, keep: Path | None = None) -> dict:
    conf = make_config("Large", 1024).set("HORIZON", ticks + 1)
    env = nmmo.Env(conf, seed=0, record=True)
    bot = scripted.Meander(conf, 0)
    obs, _ = env.reset()
    start = time.perf_counter()
    for _ in range(ticks):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
    run_s = time.perf_counter() - start
    target = keep or Path(tempfile.mkdtemp()) / "large.replay"
    saved = time.perf_counter()
    path = env.save_replay(target)
    return {"ticks": ticks, "bytes": os.path.getsize(path), "run_s": run_s, "save_s": time.perf_counter() - saved,
            "path": path}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live-ticks", type=int, default=100)
    parser.add_argument("--ticks", type=int, default=1024, help="replay length")
    parser.add_argument("--browser", action="store_true", help="also measure the viewer in headless Chromium")
    args = parser.parse_args()
    console = Console(width=140)
    table = Table(title="live stream (server side: step + delta encode)")
    for column in ("case", "agents", "JSON bytes/tick", "ticks/s", "header bytes"):
        table.add_column(column, justify="right")
    for case in LIVE_CASES:
        r = live(case, args.live_ticks)
        table.add_row(case, str(LIVE_CASES[case][1]), f"{r['bytes_per_tick']:,.0f}", f"{r['ticks_per_s']:.1f}",
                      f"{r['header_bytes']:,}")
    console.print(table)
    r = replay_size(args.ticks)
    console.print(f"Large replay, 1024 agents + 1024 NPCs, {r['ticks']} ticks: {r['bytes'] / 2**20:.1f} MiB "
                  f"(saved in {r['save_s']:.1f} s after a {r['run_s']:.0f} s run)")
    if args.browser:
        b = browser_frame_time(r["path"])
        console.print(f"viewer on that replay in headless Chromium: {b['entities']} entities, {b['draw_calls']} draw "
                      f"calls, {b['update_ms']:.2f} ms JS update + {b['render_ms']:.2f} ms render submit per frame, "
                      f"{b['fps']:.1f} fps (software WebGL)")


if __name__ == "__main__":
    main()
