"""Arena part 2: participants with tokens upload versions over HTTP; what each may see; the limits."""

import http.client
import io
import json
import tarfile
import threading
import time
from contextlib import closing

import pytest

from evaluation.arena import db, participants, uploads, writes
from evaluation.arena.api import ArenaHTTPServer, Participation
from evaluation.arena.probes import marked, write_probes
from evaluation.arena.server import open_arena
from evaluation.arena.settings import requested_format, settle_format
from evaluation.arena.uploads import UploadLimits
from evaluation.submission import is_trusted
from nmmo.cli import main

from .conftest import small_config

SECRET = "SOURCE-MARKER-7f3a"  # in alice's code: no endpoint may ever return it to anyone
AGENT = f'''"""{SECRET}"""


class Agent:
    def __init__(self, config):
        pass

    def act(self, observations):
        return {{agent: {{"Move": {{"Direction": 4}}}} for agent in observations}}
'''
BROKEN = f'''class Agent:
    def __init__(self, config):
        pass

    def act(self, observations):
        raise RuntimeError("{SECRET} in a traceback")
'''


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """A served arena (no workers: the HTTP side only) with a tiny format and four participants."""
    directory = tmp_path_factory.mktemp("arena2")
    path = directory / "arena.db"
    conn = open_arena(path)
    (directory / "small.toml").write_text(small_config(PLAYER_N=12).to_toml())
    settle_format(conn, requested_format(str(directory / "small.toml"), 32, 2, None), None)
    tokens = {name: participants.register(conn, name) for name in ("alice", "bob", "dave", "mallory")}
    conn.close()
    server = ArenaHTTPServer("127.0.0.1", 0, path, lambda: {}, Participation(  # uploads need the sandbox (CI
        directory / "files", UploadLimits(bytes=64 * 1024, files=10, per_hour=4), None, not writes._sandboxed()))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"port": server.server_address[1], "tokens": tokens, "db": path, "dir": directory}
    server.shutdown()
    server.server_close()


def request(port, path, token=None, body=None, headers=None, origin=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    sent = {"Host": f"127.0.0.1:{port}", **({"Authorization": f"Bearer {token}"} if token else {}),
            **({"Origin": origin} if origin else {}), **(headers or {})}
    conn.request("GET" if body is None else "POST", path, body=body, headers=sent)
    reply = conn.getresponse()
    data = reply.read().decode()
    conn.close()
    return reply.status, (json.loads(data) if reply.getheader("Content-Type", "").startswith("application/json")
                          else data)


def upload(port, token, data, filename="agent.py", class_name="Agent", **kw):
    return request(port, "/api/submit", token, data, {"X-Arena-Filename": filename, "X-Arena-Class": class_name,
                                                       "Content-Type": "application/octet-stream"}, **kw)


def tar_of(members):
    """A .tar.gz with (name, bytes | None for a symlink to /etc/passwd) members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_register_submit_replace_withdraw_with_tokens(arena):
    port, tokens = arena["port"], arena["tokens"]
    assert upload(port, "alice.wrong", AGENT.encode())[0] == 401
    assert upload(port, None, AGENT.encode())[0] == 401
    assert upload(port, tokens["bob"][:-2] + "xx", AGENT.encode())[0] == 401
    assert upload(port, tokens["alice"], AGENT.encode(), origin="http://attacker.example")[0] == 403  # CSRF
    status, body = upload(port, tokens["alice"], AGENT.encode())
    assert status == 201 and body["entry"] == "alice:v1", body
    status, body = upload(port, tokens["alice"], BROKEN.encode())
    assert status == 422 and body["status"] == "refused" and SECRET in body["reason"]  # the owner reads why
    status, body = upload(port, tokens["alice"], tar_of([("pkg/__init__.py", AGENT.encode() + b"\n# v3\n")]),
                          filename="pkg.tar.gz")
    assert status == 201 and body["entry"] == "alice:v3", body
    board = request(port, "/api/leaderboard")[1]["leaderboard"]
    mine = {row["name"]: row for row in board if row["participant"] == "alice"}
    assert not mine["alice:v1"]["active"] and mine["alice:v3"]["active"] and mine["alice:v3"]["version"] == "v3"
    assert {row["spec"] for row in mine.values()} == {"upload"}
    owner = request(port, "/api/participants/alice", tokens["alice"])[1]
    assert [v["status"] for v in owner["versions"]] == ["accepted", "refused", "replaced"] and owner["owner"]
    other = request(port, "/api/participants/alice", tokens["bob"])[1]
    assert not other["owner"] and SECRET not in json.dumps(other) and other["versions"][1]["reason"]
    status, body = upload(port, tokens["bob"], AGENT.encode())
    assert status == 422 and "identical code is already an entry" in body["reason"] and "alice" not in body["reason"]
    assert request(port, "/api/withdraw", tokens["bob"], b"")[1] == {"participant": "bob", "withdrawn": 0}
    assert request(port, "/api/withdraw", "alice.nope", b"")[0] == 401
    assert request(port, "/api/withdraw", tokens["alice"], b"")[1]["withdrawn"] == 1
    assert not any(row["active"] for row in request(port, "/api/leaderboard")[1]["leaderboard"]
                   if row["participant"] == "alice")
    with db.connect(arena["db"], readonly=True) as conn:  # only hashes are stored
        stored = b"".join(row[0] for row in conn.execute("SELECT token_hash FROM participants"))
        assert tokens["alice"].encode() not in stored and len(stored) == 4 * 64


def test_no_endpoint_returns_anothers_source(arena):
    port, tokens = arena["port"], arena["tokens"]
    request(port, "/api/submit", tokens["alice"], AGENT.encode() + b"\n# again\n",
            {"X-Arena-Filename": "agent.py", "X-Arena-Class": "Agent"})
    with closing(db.connect(arena["db"])) as conn:  # an episode in which alice's entry faulted, quoting her code
        anchor, mine = (conn.execute("SELECT id FROM entries WHERE kind = 'anchor'").fetchone()[0],
                        conn.execute("SELECT id FROM entries WHERE name = 'alice:v4'").fetchone()[0])
        claim = db.new_claim(conn, [anchor, mine], lambda c: c, lambda c: c)
        db.commit_episode(conn, db.EpisodeRecord(claim, 0, 0, 32, 0, 1, 0.1, [
            db.SeatRecord(anchor, 6, 3.0, 0.0, 0, {}, {}),
            db.SeatRecord(mine, 6, 1.0, 0.0, 1, {}, {"exception": 2, "messages": [f"exception: {SECRET} at a.py:3"]})
        ]), {})
    faults = request(port, "/api/entries/alice:v4/faults", tokens["alice"])[1]["faults"]
    assert SECRET in faults[0]["messages"][0]  # the owner reads her own fault messages
    assert SECRET in request(port, "/participants/alice", tokens["alice"])[1]
    names = [row["name"] for row in request(port, "/api/leaderboard")[1]["leaderboard"]]
    paths = ["/", "/?all=1", "/leaderboard", "/submit", "/api", "/api/status", "/api/leaderboard", "/api/entries",
             "/api/participants", "/api/participants/alice", "/participants/alice", "/api/me",
             *(f"/api/entries/{n}/{what}" for n in names for what in ("episodes", "faults")),
             "/store", "/files/store", "/api/entries/alice:v1/source"]
    for token in (None, tokens["bob"]):
        for path in paths:
            status, body = request(port, path, token)
            text = body if isinstance(body, str) else json.dumps(body)
            assert SECRET not in text and "/store/" not in text, (path, token)
            assert status in (200, 401, 404), (path, status)


def test_limits_traversal_and_links_are_refused_with_clear_reasons(arena):
    port, token = arena["port"], arena["tokens"]["dave"]
    status, body = upload(port, token, b"x" * (65 * 1024))
    assert status == 413 and "over the limit of 65536 bytes" in body["error"]
    assert upload(port, token, b"print(1)", filename="agent.exe")[0] == 400
    status, body = upload(port, token, tar_of([("../evil.py", b"x")]), filename="a.tar.gz")
    assert status == 422 and "leaves the folder" in body["reason"]
    status, body = upload(port, token, tar_of([("__init__.py", b""), ("link", None)]), filename="a.tar.gz")
    assert status == 422 and "is a link" in body["reason"]
    status, body = upload(port, token, tar_of([(f"f{i}.py", b"") for i in range(11)]), filename="a.tar.gz")
    assert status == 422 and "11 members, over the limit of 10" in body["reason"]
    assert not (arena["dir"] / "evil.py").exists() and not (arena["dir"] / "files" / "evil.py").exists()
    status, body = upload(port, token, b"not a tar", filename="a.tar")
    assert status == 422 and "not a readable tar archive" in body["reason"]
    status, body = upload(port, token, AGENT.encode())  # the fifth in an hour: refused ones count
    assert status == 429 and "the limit is 4" in body["error"]


def test_uploaded_probes_are_refused_or_sandboxed(arena, tmp_path):
    port, token = arena["port"], arena["tokens"]["mallory"]
    marker = f"nmmo-arena2-probe-{time.monotonic_ns()}"
    source = (tmp_path / "probes.py") if write_probes(tmp_path, marker) else None
    verdicts = {name: upload(port, token, source.read_bytes(), filename="probes.py", class_name=name)[1]
                for name in ("Crasher", "Forger", "Escaper")}
    assert verdicts["Crasher"]["status"] == verdicts["Forger"]["status"] == "refused", verdicts
    assert "exception" in verdicts["Crasher"]["reason"]
    for verdict in verdicts.values():
        if verdict["status"] == "accepted":
            with db.connect(arena["db"], readonly=True) as conn:
                spec = conn.execute("SELECT spec FROM entries WHERE name = ?", (verdict["entry"],)).fetchone()[0]
            assert not is_trusted(spec)  # it runs in the sandbox, like every episode's submissions
    deadline = time.monotonic() + 10
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marked(marker) == []  # the escaping grandchild died with its smoke test's worker


def test_register_submit_and_withdraw_from_the_command_line(arena, tmp_path, capsys):
    assert main(["arena", "register", "carol", "--db", str(arena["db"])]) == 0
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert token.startswith("carol.")
    assert main(["arena", "register", "carol", "--db", str(arena["db"])]) == 2
    assert main(["arena", "register", "no/slash", "--db", str(arena["db"])]) == 2
    folder = tmp_path / "carol_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text(AGENT)
    url = f"http://127.0.0.1:{arena['port']}"
    capsys.readouterr()
    assert main(["arena", "submit", f"{folder}:Agent", "--url", url, "--token", token]) == 0
    assert "carol v1 accepted: entry carol:v1" in capsys.readouterr().out
    assert main(["arena", "submit", f"{folder}:Agent", "--url", url, "--token", token + "x"]) == 2
    assert "401" in capsys.readouterr().out
    (tmp_path / "bad.py").write_text(BROKEN)
    assert main(["arena", "submit", f"{tmp_path / 'bad.py'}:Agent", "--url", url, "--token", token]) == 1
    assert "refused: exception" in capsys.readouterr().out
    assert main(["arena", "withdraw", "--url", url, "--token", token]) == 0
    assert "withdrawn" in capsys.readouterr().out
    assert main(["arena", "submit", "random", "--url", url, "--token", token]) == 2


def _long_name_bomb() -> bytes:
    """A .tar.gz of a few KB whose one member's name (a GNU long name) is 8 MiB."""
    info = tarfile.TarInfo("x" * (8 * 2**20))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(b""))
    return buffer.getvalue()


def test_bombs_and_broken_archives_are_refusals_not_crashes(tmp_path):
    import lzma
    import zipfile

    limits = UploadLimits(bytes=64 * 1024, files=10)
    bomb = _long_name_bomb()
    assert len(bomb) < 64 * 1024
    with pytest.raises(ValueError, match="more than the upload limit"):  # stopped after ~the limit, not 8 MiB
        uploads.store(tmp_path, bomb, "a.tar.gz", limits)
    many = tar_of([(f"f{i}", b"") for i in range(5000)])
    with pytest.raises(ValueError, match="11 members, over the limit of 10"):  # counted while streaming
        uploads.store(tmp_path, many, "a.tar.gz", limits)
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w") as archive:
        archive.addfile(tarfile.TarInfo("__init__.py"), io.BytesIO(b""))
    with pytest.raises(ValueError, match="not a readable tar archive"):  # the name says .tar: no xz inside
        uploads.store(tmp_path, lzma.compress(plain.getvalue()), "a.tar", limits)
    with pytest.raises(ValueError, match="not a readable tar archive"):  # cut short
        uploads.store(tmp_path, tar_of([("__init__.py", b"x" * 5000)])[:-40], "a.tar.gz", limits)
    written = io.BytesIO()
    with zipfile.ZipFile(written, "w") as archive:  # writestr records no file type: an ordinary file
        archive.writestr("pkg/__init__.py", AGENT)
    stored = uploads.store(tmp_path, written.getvalue(), "a.zip", limits)
    assert (stored.path / "__init__.py").read_text() == AGENT
    assert not list((tmp_path / "store").glob("*/.*.tmp")), "a refused upload left its temporary folder"


def test_a_stranger_is_answered_before_the_body_and_paging_is_bounded(arena):
    import socket

    port = arena["port"]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:  # announces 60 KB, sends none
        sock.sendall(f"POST /api/submit HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 60000\r\n"
                     "X-Arena-Filename: agent.py\r\nAuthorization: Bearer nobody.x\r\n\r\n".encode())
        assert sock.recv(64).startswith(b"HTTP/1.1 401")
    status, body = request(port, "/api/entries/Combat/episodes?before=" + "9" * 30)
    assert status == 400 and "2**63" in body["error"]


def test_without_the_namespace_sandbox_uploads_are_refused(arena, monkeypatch):
    from evaluation.arena.api import ArenaHTTPServer as Server

    server = Server("127.0.0.1", 0, arena["db"], lambda: {}, Participation(arena["dir"] / "files"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(writes, "_sandboxed", lambda: False)
        status, body = upload(server.server_address[1], arena["tokens"]["mallory"], AGENT.encode())
        assert status == 503 and "--allow-unsandboxed-uploads" in body["error"]
    finally:
        server.shutdown()
        server.server_close()


def test_the_rate_limit_is_checked_under_the_write_lock(arena):
    with closing(db.connect(arena["db"])) as conn:
        participants.register(conn, "eve")
        who = participants.Participant(*conn.execute("SELECT id, name FROM participants WHERE name = 'eve'").fetchone())
        participants.new_version(conn, who, "", "file", "Agent", 1, per_hour=1)
        with pytest.raises(participants.RateLimited):
            participants.new_version(conn, who, "", "file", "Agent", 1, per_hour=1)
