"""The viewer in real headless Chromium (Debian's chromium + chromedriver, driven by selenium).

Skipped when the browser or the built viewer is missing, unless NMMO_REQUIRE_BROWSER=1 (set by
`make test`, which installs both first), in which case their absence fails the test.
"""

import base64
import os
import shutil
import struct
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

import nmmo  # noqa: E402
import scripted  # noqa: E402
from client_server.protocol import SPEED_RANGE  # noqa: E402
from client_server.server import WEB_DIST, create_app  # noqa: E402
from nmmo.core.enums import Material  # noqa: E402
from nmmo.envs.landscape import BLANK as LANDSCAPE_BLANK  # noqa: E402
from nmmo.envs.landscape import NAME as LANDSCAPE  # noqa: E402
from nmmo.replays.overlays import VALUE_BLANK  # noqa: E402

from .conftest import running  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CLEAR_COLOUR = (16, 21, 28)  # the scene's background (view.js: setClearColor 0x10151c)
ARTIFACTS = Path(__file__).resolve().parents[2] / "out" / "test-artifacts"


def _require(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("NMMO_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def decode_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium's screenshots are) to H x W x C."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), dtype=np.int32)
    prev = np.zeros(width * channels, dtype=np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + prev) & 0xFF
        else:  # Sub, Average, Paeth need the left neighbour: per byte
            row = np.zeros_like(line)
            for x in range(line.size):
                left = row[x - channels] if x >= channels else 0
                up, corner = prev[x], prev[x - channels] if x >= channels else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                row[x] = (line[x] + predictor) & 0xFF
        out[y], prev = row, row
    return out.reshape(height, width, channels)[:, :, :3].astype(np.uint8)


POLICIES = ("my_agent.py:Agent", "scripted:Forage")  # named in the replay, with the deal below
TEAM_POLICY = [(team // 3) % 2 for team in range(32)]  # team t plays POLICIES[TEAM_POLICY[t]] (not t % 2)


def record_baseline_episode(path: Path) -> None:
    """A short tournament episode of the shipped neural baseline beside scripted Forage, recorded
    as the demo records it (the demo's config and map): the replay carries the baseline's "value"
    and "value landscape" overlays."""
    pytest.importorskip("torch")
    from evaluation.episode import EpisodeTask, run_episode

    conf = nmmo.config.load("tournament").set("HORIZON", 40).set("PLAYER_N", 40)
    run_episode(EpisodeTask(0, conf.to_toml(), conf.name, ("baseline:small", "scripted:Forage"), 5,
                            nmmo.core.world.map_seed(conf, 0, "eval"), replay_path=str(path)))


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    """The replays the browser opens: browser.replay (its agents have tasks from the foraging set),
    baseline.replay and game.replay (a few ticks of protect the king)."""
    directory = tmp_path_factory.mktemp("browser_replays")
    conf = nmmo.config.Default().set("PLAYER_N", 32).set("HORIZON", 60).set("MAP_CENTER", 48)
    env = nmmo.Env(conf, seed=2, record=True, tasks="foraging")
    bot = scripted.Forage(conf, 0)
    obs, _ = env.reset()
    gradient = np.add.outer(np.arange(conf.MAP_SIZE), np.arange(conf.MAP_SIZE)).astype(float)
    env.overlays.register("gradient", gradient)
    for _ in range(30):
        obs, *_ = env.step(bot.act({a: o for a, o in obs.items() if a in env.agents}))
    env.save_replay(directory / "browser.replay", policies=list(POLICIES), team_policy=TEAM_POLICY)
    record_baseline_episode(directory / "baseline.replay")
    game = nmmo.Env("protect_the_king", seed=1, record=True)
    bot = scripted.Combat(game.config, 0)
    obs, _ = game.reset()
    for _ in range(10):
        obs, *_ = game.step(bot.act({a: o for a, o in obs.items() if a in game.agents}))
    game.save_replay(directory / "game.replay")
    return directory


@pytest.fixture(scope="module")
def server(replay_dir):
    with running(lambda port: create_app(replay_dir=replay_dir, port=port)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser():
    _require(Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(),
             "Debian chromium and chromium-driver are not installed (make test installs them)")
    _require((WEB_DIST / "index.html").is_file(), "the viewer is not built (make web)")
    profile = tempfile.mkdtemp(prefix="nmmo-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
                 "--window-size=1200,800", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver, name: str) -> np.ndarray:
    """The page as pixels (and as out/test-artifacts/NAME). Chromium encodes it for speed: rows
    filtered with Up alone, which `decode_png` undoes in one numpy step per row (its default
    encoding mixes in Paeth, which decodes byte by byte: seconds per screenshot)."""
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True})
    png = base64.b64decode(shot["data"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / name).write_bytes(png)
    return decode_png(png)


def option_values(driver, select_id: str) -> list[str]:
    """The values of a <select>'s options, in one WebDriver call (a call per option costs about a
    second each while the page renders with software WebGL)."""
    return driver.execute_script(f"return [...document.getElementById('{select_id}').options].map(o => o.value)")


def wait_for(driver, script: str, timeout: float = 20.0):
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: d.execute_script(script))


def test_viewer_renders_overlays_seeks_and_inspects(server, browser, replay_dir):
    browser.get(f"{server}/?replay=browser.replay")
    wait_for(browser, "return window.viewer && window.viewer.packets > 0")
    time.sleep(1.0)  # a few frames drawn
    before = screenshot(browser, "viewer.png")
    sample = before[::8, ::8].reshape(-1, 3)
    colours = {tuple(c) for c in sample}
    assert len(colours) >= 4, "the canvas looks blank"
    terrain = [(122, 178, 74), (44, 110, 196), (30, 96, 44)]  # grass, water, forest (before shading)
    near = [np.any(np.abs(sample.astype(int) - rgb).sum(axis=1) < 90) for rgb in terrain]
    assert sum(near) >= 2, "fewer than two terrain colours on screen"
    check_terrain_legend(browser)

    Select(browser.find_element(By.ID, "overlay-select")).select_by_value("gradient")
    wait_for(browser, "return document.getElementById('legend').innerText.length > 0")
    time.sleep(1.0)
    after = screenshot(browser, "viewer_overlay.png")
    changed = np.abs(after.astype(int) - before.astype(int)).sum(axis=2) > 30
    assert changed.mean() > 0.05, "selecting an overlay did not change the picture"

    browser.execute_script(
        "const s = document.getElementById('seek'); s.value = 12;"
        "s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true}));")
    wait_for(browser, "return window.viewer.tick === 12")

    # an agent whose team the deal gives to another policy than team % 2 would
    telling = [t for t, p in enumerate(TEAM_POLICY) if p != t % 2]
    agent = browser.execute_script(f"return window.viewer.entityIds().find(id => id > 0 && "
                                   f"{telling}.includes(window.viewer.entity(id).team))")
    position = browser.execute_script(f"return window.viewer.screenPosition({agent})")
    canvas = browser.find_element(By.ID, "canvas")
    rect = browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width, "
                                  "r.height]", canvas)
    x, y = position["x"] - rect[0] - rect[2] / 2, position["y"] - rect[1] - rect[3] / 2
    ActionChains(browser).move_to_element_with_offset(canvas, int(x), int(y)).click().perform()
    wait_for(browser, f"return document.getElementById('inspector').innerText.includes('id {agent}')")
    screenshot(browser, "viewer_inspector.png")

    # the replay names its policies: the panel lists them and the inspector says whose agent this is
    team = browser.execute_script(f"return window.viewer.entity({agent}).team")
    inspector = browser.find_element(By.ID, "inspector").text
    mine = TEAM_POLICY[team]
    assert POLICIES[mine] in inspector and POLICIES[1 - mine] not in inspector
    check_task(browser, replay_dir / "browser.replay", agent, inspector)
    assert browser.find_element(By.ID, "policies").text.split("\n") == list(POLICIES)
    assert browser.execute_script("return document.getElementById('picker-live').hidden")  # no live run here
    check_speed_menu(browser)


def check_task(browser, path: Path, agent: int, inspector: str) -> None:
    """The inspector names the agent's task (from the header's task names) and its progress at this
    tick, as the replay holds them; the overlay menu offers the tasks done overlay."""
    from nmmo.replays.replay import load_replay

    replay = load_replay(path)
    frame = replay.frame(12)
    slot = int(np.flatnonzero(frame["id"] == agent)[0])
    names = replay.header["tasks"]["names"]
    assert browser.execute_script("return window.viewer.header.tasks.names") == names
    task, progress, done = (int(frame[name][slot]) for name in ("task", "task_progress", "task_done"))
    expected = f"{names[task]} — {int(progress / 10 + 0.5)} %" + (" ✓" if done else "")
    assert f"task {expected}" in inspector, (expected, inspector)
    menu = option_values(browser, "overlay-select")
    assert "tasks done" in menu, menu


def check_terrain_legend(browser):
    """The terrain legend names every material of the header beside a swatch of its colour, off the map centre."""
    header = browser.execute_script("return window.viewer.header")
    assert "material" not in header  # the helper's copy leaves the map bytes out
    keys = sorted(header["materials"], key=int)
    names = [header["materials"][k] for k in keys]
    assert sorted(names) == sorted(m.name.lower() for m in Material)
    items = browser.execute_script(
        "return [...document.querySelectorAll('#terrain-legend .terrain-item')].map(e => {"
        "  const s = e.querySelector('.swatch'), r = s && s.getBoundingClientRect();"
        "  return {material: e.dataset.material, text: e.innerText.trim(),"
        "          swatch: s && getComputedStyle(s).backgroundColor, width: r ? r.width : 0}; })")
    assert [item["material"] for item in items] == names
    assert [item["text"] for item in items] == names
    for item, key in zip(items, keys, strict=True):
        assert item["swatch"] == "rgb({}, {}, {})".format(*header["colors"][key]), item
        assert item["width"] > 0, item
    legend = browser.find_element(By.ID, "terrain-legend")
    assert legend.is_displayed()
    left, top, right, bottom, width, height = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return [r.left, r.top, r.right, r.bottom, window.innerWidth, window.innerHeight]", legend)
    assert not (left < width / 2 < right and top < height / 2 < bottom), "the terrain legend covers the map centre"


def check_speed_menu(browser):
    """The speed menu is built from the header's speed_range (written once, in client_server.protocol)."""
    low, high = browser.execute_script("return window.viewer.header.speed_range")
    assert (low, high) == SPEED_RANGE
    assert browser.execute_script("return window.viewer.speedRange") == [low, high]
    menu = Select(browser.find_element(By.ID, "speed"))
    values = option_values(browser, "speed")
    speeds = [float(value) for value in values]
    assert speeds == sorted(set(speeds)) and speeds[0] == low and speeds[-1] == high, speeds
    assert all(low <= speed <= high for speed in speeds), speeds
    assert len(speeds) >= 4, speeds
    # the menu drives the server: a new speed comes back in the status packet
    pick = values[len(speeds) // 2]
    menu.select_by_value(pick)
    wait_for(browser, f"return window.viewer.speed === {float(pick)}")
    assert float(browser.execute_script("return document.getElementById('speed').value")) == float(pick)


def test_the_shipped_baseline_paints_its_value_function(server, browser):
    """`?overlay=value` opens the baseline's replay on its agents' value estimates: the overlay menu
    shows it, the legend gives its range and says what unvisited tiles show, and the map is
    painted. Picking the value landscape (what the demo's link opens) paints the whole map: the
    picture differs from the terrain alone over at least half of the map's pixels."""
    browser.get(f"{server}/?replay=baseline.replay")
    wait_for(browser, "return window.viewer && window.viewer.packets > 0")
    time.sleep(1.0)
    plain = screenshot(browser, "viewer_baseline.png")
    chrome = panel_rects(browser)
    browser.get(f"{server}/?replay=baseline.replay&overlay=value")
    wait_for(browser, "return window.viewer && window.viewer.overlay === 'value'")
    wait_for(browser, "return document.getElementById('legend').innerText.includes('value')")
    assert legend(browser) == ("value", "value", VALUE_BLANK)
    time.sleep(1.0)
    painted = screenshot(browser, "viewer_value_overlay.png")
    changed = np.abs(painted.astype(int) - plain.astype(int)).sum(axis=2) > 30
    assert changed.mean() > 0.05, "the value overlay did not change the picture"

    browser.execute_script(  # pick it in the menu (one round trip: each costs ~1 s while SwiftShader draws)
        f"const s = document.getElementById('overlay-select'); s.value = '{LANDSCAPE}';"
        "s.dispatchEvent(new Event('change', {bubbles: true}));")
    wait_for(browser, f"return window.viewer.overlay === '{LANDSCAPE}'")
    wait_for(browser, f"return document.getElementById('legend-name').innerText === '{LANDSCAPE}'")
    assert legend(browser) == (LANDSCAPE, LANDSCAPE, LANDSCAPE_BLANK)
    time.sleep(1.0)
    landscape = screenshot(browser, "viewer_value_landscape.png")
    area = map_area(plain, [*chrome, *panel_rects(browser)])
    assert area.mean() > 0.2, "the map should fill much of the view"
    changed = np.abs(landscape.astype(int) - plain.astype(int)).sum(axis=2) > 30
    assert changed[area].mean() >= 0.5, f"the landscape changed only {changed[area].mean():.0%} of the map's pixels"


def legend(driver) -> tuple[str, str, str]:
    """(the overlay menu's selected entry, the legend's name, its line on tiles without data)."""
    return tuple(driver.execute_script(
        "const text = (id) => document.getElementById(id)?.innerText ?? null;"
        "return [document.getElementById('overlay-select').selectedOptions[0].text, text('legend-name'),"
        "        text('legend-blank')]"))


def panel_rects(driver) -> list[tuple[float, float, float, float]]:
    """(left, top, right, bottom) in CSS pixels of every visible panel (the UI drawn over the map)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('.panel')].filter(e => e.offsetParent !== null).map(e => {"
        "  const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")


def map_area(picture: np.ndarray, rects: list) -> np.ndarray:
    """Pixels of a screenshot that show the map: not the scene's clear colour, and under no panel."""
    area = np.abs(picture.astype(int) - CLEAR_COLOUR).sum(axis=2) > 24
    for left, top, right, bottom in rects:  # screenshots are in CSS pixels (device pixel ratio 1)
        area[max(int(top), 0) : int(np.ceil(bottom)), max(int(left), 0) : int(np.ceil(right))] = False
    return area


def delta_e(a, b) -> float:
    """CIE76 colour difference of two sRGB colours (0..255): about 2.3 is just noticeable; the
    viewer's palette keeps every two meanings 25 or more apart."""
    def lab(rgb):
        c = np.asarray(rgb, dtype=float) / 255
        c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
        xyz /= [0.95047, 1.0, 1.08883]  # D65 white
        f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    return float(np.linalg.norm(lab(a) - lab(b)))


def legend_colours(browser) -> tuple[dict[str, tuple[int, int, int]], dict[str, str]]:
    """Every colour the legends show, by meaning (the terrain's materials from the header, the map
    legend's NPC kinds, attack styles and marks, the policies' colours), and each legend item's text."""
    header, items = browser.execute_script(  # one round trip
        "return [window.viewer.header, [...document.querySelectorAll('#entity-legend .legend-item, "
        "#policies .legend-item')].map(e => ({meaning: e.dataset.meaning, shapeOnly: !!e.dataset.shapeOnly, "
        "text: e.innerText.trim(), color: e.querySelector('svg.icon').dataset.color ?? null}))]")
    colours = {f"terrain {header['materials'][k]}": tuple(rgb) for k, rgb in header["colors"].items()}
    for item in items:
        if not item["shapeOnly"]:
            colours[item["meaning"]] = tuple(int(v) for v in item["color"][4:-1].split(","))
    return colours, {item["meaning"]: item["text"] for item in items}


def test_the_legend_names_one_meaning_per_colour_and_the_inspector_shows_values(server, browser, replay_dir):
    """The legend names the players' and NPCs' shapes, the NPC kinds, attack styles and policies, each
    colour apart from every other (and from the terrain's: lava's red is no NPC's or policy's);
    the inspector of an agent of the baseline shows its value estimate as the replay recorded it."""
    from nmmo.replays.replay import NO_VALUE, VALUE_SCALE, load_replay

    browser.get(f"{server}/?replay=baseline.replay")
    wait_for(browser, "return window.viewer && window.viewer.packets > 0 && window.viewer.tick === 0")
    colours, texts = legend_colours(browser)
    assert texts == {"player": "colour: its policy (below)", "npc passive": "passive", "npc neutral": "neutral",
                     "npc hostile": "hostile", "attack melee": "melee", "attack range": "range", "attack mage": "mage",
                     "policy 0": "baseline:small", "policy 1": "scripted:Forage"}
    rows = browser.execute_script("return [...document.querySelectorAll('#entity-legend .legend-row')].map(r => "
                                  "[r.querySelector('.legend-title').innerText, r.querySelectorAll('svg').length])")
    assert rows == [["players", 1], ["NPCs", 3], ["attacks", 3]]  # a line a shape: capsules, octahedra, beams
    assert len(colours) == 6 + 3 + 3 + 2
    pairs = [(a, b, delta_e(colours[a], colours[b])) for i, a in enumerate(colours) for b in list(colours)[i + 1:]]
    close = [(a, b, round(d, 1)) for a, b, d in pairs if d < 25]
    assert not close, close

    replay = load_replay(replay_dir / "baseline.replay")
    assert replay.header["values"] is True
    frame = replay.frame(0)
    valued = np.flatnonzero(frame["alive"].astype(bool) & (frame["value"] != NO_VALUE))
    assert valued.size and (frame["kind"][valued] == 0).all()
    drawn = browser.execute_script(  # one round trip: each costs ~1 s while SwiftShader draws
        "return window.viewer.entityIds().map(id => [id, window.viewer.screenPosition(id)])")
    where = {int(i): (p["x"], p["y"]) for i, p in drawn if p}

    def room(i):  # how far the agent is drawn from the nearest other entity (a click must not hit another)
        return min(np.hypot(where[i][0] - x, where[i][1] - y) for j, (x, y) in where.items() if j != i)

    agent = max((int(frame["id"][slot]) for slot in valued if int(frame["id"][slot]) in where), key=room)
    canvas = browser.find_element(By.ID, "canvas")
    rect = browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.width, "
                                  "r.height]", canvas)
    x, y = where[agent][0] - rect[0] - rect[2] / 2, where[agent][1] - rect[1] - rect[3] / 2
    ActionChains(browser).move_to_element_with_offset(canvas, int(x), int(y)).click().perform()
    rows = dict(wait_for(browser, f"return document.getElementById('inspector').innerText.includes('id {agent}') "
                                  "&& [...document.querySelectorAll('#inspector-table tr')].map(r => "
                                  "[...r.cells].map(c => c.textContent))"))
    stored = int(frame["value"][int(np.flatnonzero(frame["id"] == agent)[0])])
    assert float(rows["value"]) == pytest.approx(stored / VALUE_SCALE, rel=5e-3, abs=1e-3), rows
    assert rows["policy"] == "baseline:small"


def test_a_minigame_replay_shows_the_games_state(server, browser):
    """A minigame's replay shows the #game-state panel: the game's title and its numbers in words
    (protect the king: which kings live), and marks every live king in the scene."""
    browser.get(f"{server}/?replay=game.replay")
    wait_for(browser, "return window.viewer && window.viewer.game !== null")
    panel = browser.find_element(By.ID, "game-state")
    assert panel.is_displayed()
    assert browser.find_element(By.ID, "game-title").text == "Protect the king"
    game = browser.execute_script("return window.viewer.game")
    live = sum(game["king_alive"])
    assert f"kings alive: {live} of 8" in panel.text and "teams alive:" in panel.text, panel.text
    assert len([k for k in game["king_ids"] if k is not None]) == live
    assert browser.execute_script("return window.viewer.header.game") == {"name": "protect_the_king",
                                                                          "title": "Protect the king"}
