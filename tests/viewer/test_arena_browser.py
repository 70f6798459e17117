"""The arena's pages in headless Chromium: an agent uploaded through the /submit form is ranked on
the leaderboard after a few episodes, and one of its replays opens in the viewer from its page.

Skipped like the viewer's browser tests when Chromium or the built viewer is missing, unless
NMMO_REQUIRE_BROWSER=1 (then their absence fails it).
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("selenium")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from evaluation.arena import participants  # noqa: E402
from evaluation.arena.server import open_arena  # noqa: E402
from tests.evaluation.conftest import small_config  # noqa: E402

from .test_browser import browser, wait_for  # noqa: E402, F401 - the fixture, shared

ROOT = Path(__file__).resolve().parents[2]
AGENT = b'''class Agent:  # forages like the paper's bot
    def __init__(self, config):
        from scripted.bots import Forage
        self.bot = Forage(config, 0)

    def act(self, observations):
        return self.bot.act(observations)
'''


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


@pytest.fixture(scope="module")
def served_arena(tmp_path_factory, browser):  # noqa: F811 - the shared fixture
    """`nmmo arena serve` in a subprocess (a 32-tick format, the viewer beside it), bob registered."""
    directory = tmp_path_factory.mktemp("arena_browser")
    path, log = directory / "arena.db", directory / "serve.log"
    (directory / "small.toml").write_text(small_config(PLAYER_N=12).to_toml())
    with closing(open_arena(path)) as conn:
        token = participants.register(conn, "bob")
    with open(log, "w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "nmmo", "arena", "serve", "--db", str(path), "--port", "0", "--viewer-port", "0",
             "--config", str(directory / "small.toml"), "--ticks", "32", "--seats", "2", "--workers", "1"],
            cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline, found = time.monotonic() + 90, None
        while found is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
            found = re.search(r"on (http://127\.0\.0\.1:\d+)/api/status", log.read_text())
        assert found, log.read_text()
        yield found.group(1), token, log
    finally:
        process.terminate()
        process.wait(timeout=30)


def upload_through_the_form(browser, url: str, token: str, path: Path) -> dict:  # noqa: F811
    """What a participant does on /submit: types the token (kept in the tab's sessionStorage), picks
    the file, presses upload; the page posts it with fetch and prints the verdict."""
    browser.get(f"{url}/submit")
    box = browser.find_element(By.ID, "token")  # filled from sessionStorage by the page's script
    box.clear()
    box.send_keys(token + Keys.TAB)  # the change event stores it
    browser.find_element(By.ID, "file").send_keys(str(path))
    browser.execute_script("document.querySelector('#upload button[type=submit]').click()")
    text = wait_for(browser, "const t = document.getElementById('result').textContent; "
                    "return t.startsWith('{') && t", timeout=120)
    return json.loads(text)


def test_an_uploaded_agent_is_ranked_and_its_replay_opens_in_the_viewer(served_arena, browser, tmp_path):  # noqa: F811
    """Uploaded through the /submit form in the browser (its script, the token header and the
    server's Origin check all real); a wrong token there gets the refusal, not an upload."""
    url, token, log = served_arena
    (tmp_path / "agent.py").write_bytes(AGENT)
    assert upload_through_the_form(browser, url, token[:-2] + "xx", tmp_path / "agent.py").get("error")
    verdict = upload_through_the_form(browser, url, token, tmp_path / "agent.py")
    assert verdict["status"] == "accepted" and verdict["entry"] == "bob:v1", verdict
    assert browser.execute_script("return sessionStorage.getItem('arena-token')") == token
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        mine = _get(f"{url}/api/participants/bob")
        if sum(e["replay"] is not None for e in mine["episodes"]) >= 3:
            break
        time.sleep(1)
    else:
        pytest.fail(f"bob played no 3 recorded episodes in 120 s:\n{log.read_text()[-3000:]}")

    browser.get(f"{url}/")
    row = wait_for(browser, "const a = [...document.querySelectorAll('a.participant')].find(a => a.textContent === "
                   "'bob'); return a && a.closest('tr').cells[0].textContent !== '-' && a.closest('tr').innerText")
    assert "bob" in row and "v1" in row
    # the pages redraw themselves every few seconds: each step reads and clicks in one call, never
    # through an element found in an earlier call (it may be gone: a stale reference)
    browser.execute_script("document.querySelector(\"a.participant[href='/participants/bob']\").click()")
    wait_for(browser, "return document.querySelectorAll('a.replay').length > 0")
    assert "accepted" in browser.execute_script("return document.querySelector('main').innerText")
    href = browser.execute_script("const a = document.querySelector('a.replay'); a.click(); return a.href")
    wait_for(browser, "return window.viewer && window.viewer.packets > 0", timeout=30)
    assert browser.current_url == href and "?replay=claim-" in href
