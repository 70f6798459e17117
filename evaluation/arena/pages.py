"""The arena's HTML pages: the leaderboard, a page per participant, the upload form.

Rendered by the server from the same reads as the JSON endpoints, every value through
`html.escape`, so a name or a fault message is text, never markup. A small inline script (allowed
by a per-response nonce in the Content-Security-Policy, nothing else is) fetches the page again
every `REFRESH_S` seconds and swaps its ``<main>``, sending the token the visitor typed (kept in
the tab's sessionStorage, never in a cookie, so no other site's page can send it): the owner's
view (refusal reasons, fault messages) is the same page rendered for its token.
"""

from __future__ import annotations

import time
from html import escape
from typing import Any
from urllib.parse import quote

REFRESH_S = 5

_STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;background:#10151c;color:#dde}
a{color:#8cf}table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .6em;border-bottom:1px solid #334}
th{text-align:left}td.n{text-align:right}.refused{color:#f99}.accepted{color:#9f9}pre{white-space:pre-wrap;
margin:0;font-size:.85em}nav a{margin-right:1em}input{margin:.2em}"""

_SCRIPT = """const key = "arena-token";
const tokenBox = document.getElementById("token");
if (tokenBox) { tokenBox.value = sessionStorage.getItem(key) || "";
  tokenBox.addEventListener("change", () => { sessionStorage.setItem(key, tokenBox.value.trim()); refresh(); }); }
function auth() { const t = sessionStorage.getItem(key); return t ? {Authorization: "Bearer " + t} : {}; }
async function refresh() {
  if (!document.querySelector("main[data-refresh]")) return;
  const reply = await fetch(location.href, {headers: auth()});
  if (!reply.ok) return;
  const page = new DOMParser().parseFromString(await reply.text(), "text/html");
  document.querySelector("main").replaceWith(page.querySelector("main"));
}
const form = document.getElementById("upload");
if (form) form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const file = document.getElementById("file").files[0], out = document.getElementById("result");
  if (!file) { out.textContent = "choose a file"; return; }
  out.textContent = "uploading and smoke-testing...";
  const reply = await fetch("/api/submit", {method: "POST", body: file, headers: {...auth(),
    "Content-Type": "application/octet-stream", "X-Arena-Filename": file.name,
    "X-Arena-Class": document.getElementById("class").value}});
  out.textContent = JSON.stringify(await reply.json(), null, 2);
});
refresh(); setInterval(refresh, REFRESH_MS);"""


def page(title: str, body: str, nonce: str, refresh: bool = True) -> str:
    """A whole page around `body` (already escaped HTML)."""
    script = _SCRIPT.replace("REFRESH_MS", str(REFRESH_S * 1000))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><nav><a href='/'>leaderboard</a><a href='/submit'>upload</a>"
            f"<label>token <input id='token' type='password' size='30' autocomplete='off'></label></nav>"
            f"<main{' data-refresh' if refresh else ''}><h1>{escape(title)}</h1>{body}</main>"
            f"<script nonce='{nonce}'>{script}</script></body></html>")


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>" + "".join("<tr>" + "".join(rows_ for rows_ in row) + "</tr>" for row in rows) \
        + "</table>"


def _cell(value: Any, number: bool = False, css: str = "") -> str:
    text = "-" if value is None else str(value)
    classes = " ".join(c for c in ("n" if number else "", css) if c)
    return f"<td class='{classes}'>{escape(text)}</td>" if classes else f"<td>{escape(text)}</td>"


def _ago(stamp: float | None) -> str:
    return "-" if stamp is None else f"{max(0, time.time() - stamp):.0f} s ago"


def leaderboard_page(board: list[dict[str, Any]], show_all: bool) -> str:
    """The leaderboard's body: one row per active entry (each participant by its name), ranked by SR."""
    rows = []
    for row in board:
        if not (row["active"] or show_all):
            continue
        who = row.get("participant")
        name = (f"<td><a class='participant' href='/participants/{quote(who)}'>{escape(who)}</a></td>" if who
                else _cell(row["name"]))
        faults = row["faults"]
        interval = None if row["sr"] is None else f"{row['ci_low']:.0f} .. {row['ci_high']:.0f}"
        rows.append([_cell(row["rank"], True), name, _cell(None if row["sr"] is None else f"{row['sr']:.0f}", True),
                     _cell(interval, True), _cell(row["episodes"], True),
                     _cell(faults["exception"] + faults["timeout"] + faults["malformed"], True),
                     _cell(row.get("version") or row["kind"]), _cell("" if row["active"] else "retired")])
    toggle = "<a href='/?all=1'>show retired versions</a>" if not show_all else "<a href='/'>active only</a>"
    return (_table(["rank", "name", "SR", "95 % interval", "episodes", "faults", "version", ""], rows)
            + f"<p>SR 1500 = the anchor; the interval is SR ± 2 sigma. {toggle}</p>")


def participant_page(versions: dict[str, Any], episodes: list[dict[str, Any]], faults: list[dict[str, Any]],
                     viewer: str | None) -> str:
    """A participant's body: versions (refusal reasons for its owner), recent episodes with replay links,
    faults (messages for its owner)."""
    owner = versions["owner"]
    version_rows = [[_cell(f"v{v['version']}"), _cell(v["status"], css=v["status"]), _cell(v["kind"]),
                     _cell(v["size"], True), _cell(_ago(v["created_at"])), _cell(v["entry"]),
                     f"<td><pre>{escape(v['reason'] or '')}</pre></td>"] for v in versions["versions"]]
    episode_rows = []
    for e in episodes:
        link = (f"<td><a class='replay' href='{escape(viewer)}/?replay={quote(e['replay'])}'>watch</a></td>"
                if viewer and e.get("replay") else _cell(""))
        episode_rows.append([_cell(e["episode"], True), _cell(e["entry"]), _cell(None if e["rank"] is None
                                                                                   else e["rank"] + 1, True),
                             _cell(e["seats"], True), _cell(_ago(e["committed_at"])), link])
    fault_rows = [[_cell(f["episode"], True), _cell(f["entry"]), _cell(f["exception"], True), _cell(f["timeout"], True),
                   _cell(f["malformed"], True), f"<td><pre>{escape(chr(10).join(f['messages']))}</pre></td>"]
                  for f in faults]
    who = "you (your token)" if owner else "anyone; type its token above to see refusal reasons and fault messages"
    return (f"<p>Shown to {escape(who)}.</p><h2>versions</h2>"
            + _table(["version", "status", "kind", "bytes", "uploaded", "entry", "reason"], version_rows)
            + "<h2>recent episodes</h2>"
            + _table(["episode", "entry", "rank", "seats", "committed", "replay"], episode_rows)
            + "<h2>faults</h2>"
            + _table(["episode", "entry", "exception", "timeout", "malformed", "messages"], fault_rows))


def upload_page() -> str:
    """The upload form: the file goes as the request's body (fetch), the token as a Bearer header."""
    return ("<p>Type your token above, choose your policy (a .py file, a folder as .tar.gz or .zip with its "
            "__init__.py, or a checkpoint) and its class. It is smoke-tested before it enters the pool.</p>"
            "<form id='upload'><input id='file' type='file'> <label>class <input id='class' value='Agent'>"
            "</label> <button type='submit'>upload</button></form><pre id='result'></pre>")
