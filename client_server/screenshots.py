"""The viewer's pictures in docs/games.md, regenerated: ``python -m client_server.screenshots``.

For each minigame below it records an episode of the game's scripted team bots (`scripted.games`:
every team plays the same bot), serves the replays
(`client_server.server`) on a free local port, opens each one in real headless Chromium (Debian's
``chromium`` and ``chromium-driver``, driven by selenium, as tests/viewer/test_browser.py does),
seeks to a tick where the game is under way, zooms in on the playable square and saves the page as a
PNG (reduced to 256 colours with Pillow, when it is installed, to keep the file small).
"""

from __future__ import annotations

import base64
import io
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import nmmo

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
OUT = Path(__file__).resolve().parents[1] / "docs" / "images"
SIZE = (800, 500)


def _held(s: dict) -> bool:
    return s["holder"] >= 0 and s["held"] >= 3


#: (config, picture, seed, the first tick worth showing: a test of `env.game_state()`).
SHOTS: list[tuple[str, str, int, Callable[[dict], bool]]] = [
    ("king_of_the_hill", "games_king_of_the_hill.png", 7, _held),
    ("protect_the_king", "games_protect_the_king.png", 1, lambda s: sum(s["king_alive"]) <= 5),
    ("sandwich", "games_sandwich.png", 1, lambda s: s["fog_radius"] <= 12),
]


def record(name: str, path: Path, seed: int, worth: Callable[[dict], bool]) -> int:
    """Record an episode of `name` to `path`; returns the tick to show (the first that is `worth`
    it, else the middle one)."""
    from nmmo.policy import load_policy_class
    from scripted.games import GAME_BOTS

    env = nmmo.Env(name, seed=seed, record=True)
    bot = load_policy_class(GAME_BOTS[name])(env.config)
    obs, _ = env.reset()
    shown = None
    while not env.done and env.agents:
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
        if shown is None and worth(env.game_state()):
            shown = env.tick
    env.save_replay(path)
    return shown if shown is not None else env.tick // 2


@contextmanager
def serving(replay_dir: Path):
    """The viewer's server for `replay_dir` on a free 127.0.0.1 port, in a thread; yields its URL."""
    import uvicorn

    from client_server.server import create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(replay_dir=replay_dir, port=port), host="127.0.0.1",
                                           port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium(size: tuple[int, int] = SIZE):
    """Headless Chromium (Debian's) through selenium, with a throwaway profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="nmmo-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
                 "--window-size={},{}".format(*size), f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver, script: str, timeout: float = 30.0):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: d.execute_script(script))


def shoot(driver, url: str, replay: str, tick: int, zoom: int = 12) -> bytes:
    """The viewer on `replay` at `tick`, zoomed in `zoom` wheel notches on the map's centre: PNG bytes."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By

    width, height = SIZE
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    driver.get(f"{url}/?replay={replay}")
    wait_for(driver, "return window.viewer && window.viewer.packets > 0")
    driver.execute_script(
        f"const s = document.getElementById('seek'); s.value = {tick};"
        "s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true}));")
    wait_for(driver, f"return window.viewer.tick === {tick} && window.viewer.game?.tick === {tick}")
    canvas = driver.find_element(By.ID, "canvas")
    for _ in range(zoom):
        ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(canvas), 0, -120).perform()
        time.sleep(0.2)
    time.sleep(1.5)  # the camera settles (damping), a few frames drawn
    return base64.b64decode(driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})["data"])


def small_png(png: bytes) -> bytes:
    """`png` reduced to 256 colours (Pillow), or as it is without Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return png
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    from nmmo.cli import Parser  # the nmmo command's parser: flags are never abbreviated

    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNGs go (default: docs/images)")
    parser.add_argument("--games", nargs="*", help="only these games (config names)")
    args = parser.parse_args(argv)
    shots = [shot for shot in SHOTS if not args.games or shot[0] in args.games]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nmmo-shots-") as tmp:
        ticks = {name: record(name, Path(tmp) / f"{name}.replay", seed, worth) for name, _, seed, worth in shots}
        with serving(Path(tmp)) as url, chromium() as driver:
            for name, picture, *_ in shots:
                data = small_png(shoot(driver, url, f"{name}.replay", ticks[name]))
                (args.out / picture).write_bytes(data)
                print(f"{args.out / picture}: {name} at tick {ticks[name]}, {len(data) // 1024} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
