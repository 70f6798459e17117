"""The arena's parts in one process: the schema and its migrations, the one-transaction commit,
ratings as a function of the log, the seating rule, the endpoints and the command line."""

import http.client
import json
import sqlite3
import threading

import numpy as np
import pytest

from evaluation.arena import db, queries, schema
from evaluation.arena.api import ArenaHTTPServer
from evaluation.arena.matchmaking import Candidate, choose_seats, seat_rng
from evaluation.arena.ratings import Rating, rate_episode, recompute, seat_ranks
from evaluation.arena.server import check_ratings, episode_record, open_arena
from evaluation.arena.settings import requested_format, settle_format
from evaluation.episode import EpisodeTask, run_episode
from evaluation.sandbox.host import Limits
from nmmo.cli import main

from .conftest import small_config


def synthetic_episode(conn, claim_rng, ratings, entries, seats=4):
    """Claim, then commit, an episode with random scores among `entries` (the anchor first)."""
    seated = [entries[0], *claim_rng.choice(entries[1:], size=seats - 1, replace=False).tolist()]
    claim = db.new_claim(conn, seated, lambda c: c, lambda c: c)
    db.dispatched(conn, claim, None)
    scores = claim_rng.integers(0, 4, size=seats).astype(float).tolist()
    ties = claim_rng.random(seats).tolist()
    ranks = seat_ranks(scores, ties)
    record = db.EpisodeRecord(claim, claim, claim, 32, 0, 1, 0.5, [
        db.SeatRecord(e, 4, s, t, r, {"lifetime": s}, {"exception": int(i == 1), "messages": ["boom"] * (i == 1)})
        for i, (e, s, t, r) in enumerate(zip(seated, scores, ties, ranks, strict=True))])
    new = rate_episode(ratings, seated, ranks)
    db.commit_episode(conn, record, {e: r.as_tuple() for e, r in new.items()})
    ratings.update(new)
    return claim


@pytest.fixture
def arena(tmp_path):
    conn = open_arena(tmp_path / "arena.db")
    db.add_entry(conn, "random", "random", "submission")
    yield conn
    conn.close()


def anchor_first(conn):
    pool = db.entries(conn)
    return [e.id for e in pool if e.kind == "anchor"] + [e.id for e in pool if e.kind != "anchor"]


# ------------------------------------------------------------------ schema
def test_a_new_file_gets_the_schema_and_the_pool(arena):
    assert schema.schema_version(arena) == schema.MIGRATIONS[-1][0]
    assert arena.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    kinds = [(e.name, e.kind) for e in db.entries(arena)]
    assert ("Combat", "anchor") in kinds and ("Forage", "bot") in kinds and ("random", "submission") in kinds


def test_migrations_apply_in_order_once_and_a_newer_file_is_refused(tmp_path):
    path = tmp_path / "old.db"
    conn = db.connect(path)
    assert schema.migrate(conn, schema.MIGRATIONS[:1]) == 1
    later = (*schema.MIGRATIONS, (schema.MIGRATIONS[-1][0] + 1, "a column", "ALTER TABLE entries ADD COLUMN note TEXT"))
    assert schema.migrate(conn, later) == later[-1][0]
    assert schema.migrate(conn, later) == later[-1][0]  # applied once: a second run does nothing
    assert "note" in [row[1] for row in conn.execute("PRAGMA table_info(entries)")]
    with pytest.raises(ValueError, match="newer than this install"):
        schema.migrate(conn, schema.MIGRATIONS)


# ------------------------------------------------------------------ commit
def test_an_episode_is_committed_whole_or_not_at_all(arena):
    entries = anchor_first(arena)
    claim = db.new_claim(arena, entries[:3], lambda c: 7, lambda c: 9)
    seats = [db.SeatRecord(e, 4, 1.0, 0.0, 0, {}, {}) for e in (*entries[:2], 10_000)]  # no entry 10000
    with pytest.raises(sqlite3.IntegrityError):
        db.commit_episode(arena, db.EpisodeRecord(claim, 7, 9, 32, 0, 1, 1.0, seats), {entries[0]: (25.0, 8.0, 1)})
    assert arena.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 0
    assert arena.execute("SELECT COUNT(*) FROM seats").fetchone()[0] == 0
    assert db.stored_ratings(arena) == {}
    assert [c["claim"] for c in db.claims(arena)] == [claim]  # still claimed: it will be played again
    good = db.EpisodeRecord(claim, 7, 9, 32, 0, 1, 1.0, [db.SeatRecord(e, 4, 1.0, 0.0, 0, {}, {}) for e in entries[:3]])
    db.commit_episode(arena, good, {})
    with pytest.raises(sqlite3.IntegrityError):  # the same claim again: refused, never counted twice
        db.commit_episode(arena, good, {})
    assert tuple(arena.execute("SELECT COUNT(*), SUM(seats) FROM episodes").fetchone()) == (1, 3)
    assert db.claims(arena) == []


def test_ratings_are_a_function_of_the_log_and_a_recompute_wins(arena):
    entries, ratings, rng = anchor_first(arena), {}, np.random.default_rng(0)
    for _ in range(25):
        synthetic_episode(arena, rng, ratings, entries)
    computed, inconsistent = recompute(arena)
    assert inconsistent == []
    assert {e: r.as_tuple() for e, r in computed.items()} == db.stored_ratings(arena)  # bit for bit
    assert check_ratings(arena)[1] == []
    arena.execute("UPDATE ratings SET mu = mu + 1 WHERE entry_id = ?", (entries[1],))  # a damaged snapshot
    _, lines = check_ratings(arena)
    assert len(lines) == 1 and f"entry {entries[1]}" in lines[0]
    assert check_ratings(arena)[1] == []  # the recompute replaced it
    board = queries.leaderboard(arena)
    anchor = next(row for row in board if row["kind"] == "anchor")
    assert anchor["sr"] == pytest.approx(1500) and sum(row["episodes"] for row in board) == 25 * 4


def test_an_entry_that_did_not_play_keeps_its_rating():
    start = {1: Rating(30.0, 2.0, 5), 2: Rating(20.0, 3.0, 5), 3: Rating(25.0, 1.0, 5)}
    new = rate_episode(start, [1, 2, 3], [0, 1, None])
    assert new[3] == Rating(25.0, 1.0, 6)  # counted as seated, not moved
    assert new[1].mu > 30.0 and new[2].mu < 20.0


def test_a_real_episode_becomes_a_record_with_every_seat(arena, tmp_path):
    config = small_config(PLAYER_N=12)
    specs = ("scripted:Forage", "idle", "scripted:Combat")
    task = EpisodeTask(0, config.set("HORIZON", 16).to_toml(), config.name, specs, 5, 0, 1.0, Limits(), 5, None, 1)
    result = run_episode(task)
    claim = {"claim": 0, "seed": 5, "map_seed": 0, "attempts": 1}

    class Form:
        metric, tie_break = "lifetime", "achievement"

    record = episode_record(result, claim, (3, 1, 2), Form())
    assert [s.entry_id for s in record.seats] == [3, 1, 2]
    assert sum(s.lifetimes for s in record.seats) == record.lifetimes == len(result.owners) >= 12
    assert all(s.rank is not None and "lifetime" in s.metrics for s in record.seats)
    with pytest.raises(ValueError, match="seats for claim"):
        episode_record(result, claim, (3, 1), Form())


# ---------------------------------------------------------------- seating
def test_seating_is_deterministic_and_prefers_the_uncertain():
    candidates = [Candidate(1, 25.0, 1.0), *(Candidate(i, 25.0, 1.0) for i in range(2, 8)), Candidate(8, 25.0, 8.0)]
    first = choose_seats(candidates, 1, 3, seat_rng(0, 42))
    assert first == choose_seats(list(reversed(candidates)), 1, 3, seat_rng(0, 42))  # same state, same seats
    assert first[0] == 1 and len(set(first)) == 4
    seated = [choose_seats(candidates, 1, 3, seat_rng(0, claim)) for claim in range(200)]
    assert sum(8 in s for s in seated) > 190  # the new entry (sigma 8) plays nearly every episode
    busy = [c if c.entry != 8 else Candidate(8, 25.0, 8.0, busy=100) for c in candidates]
    assert sum(8 in choose_seats(busy, 1, 3, seat_rng(0, claim)) for claim in range(200)) < 150
    assert choose_seats(candidates[:3], 1, 8, seat_rng(0, 0))[1:] in ([2, 3], [3, 2])  # a small pool: all of it
    with pytest.raises(ValueError, match="only the anchor"):
        choose_seats(candidates[:1], 1, 3, seat_rng(0, 0))


def test_seating_prefers_close_matches():
    candidates = [Candidate(1, 25.0, 2.0), Candidate(2, 25.0, 2.0), Candidate(3, 60.0, 2.0)]
    picks = [choose_seats(candidates, 1, 1, seat_rng(1, claim))[1] for claim in range(100)]
    assert picks.count(2) > 95  # an entry far above the anchor is a poor match while sigma is small


# ------------------------------------------------------------------ format
def test_the_format_is_fixed_once_the_log_holds_an_episode(arena, tmp_path):
    form = settle_format(arena, requested_format("small_maps", 32, 3, None), 4)
    assert (form.config_name, form.ticks, form.seats, db.get_meta(arena, "seed")) == ("small_maps", 32, 3, 4)
    assert settle_format(arena, requested_format(None, 48, None, None), None).ticks == 48  # no episode yet
    rng = np.random.default_rng(1)
    synthetic_episode(arena, rng, {}, anchor_first(arena))
    assert settle_format(arena, {}, None).ticks == 48
    with pytest.raises(ValueError, match="ticks 64 differs"):
        settle_format(arena, requested_format(None, 64, None, None), None)
    with pytest.raises(ValueError, match="--seats must be in 1..8"):
        requested_format(None, None, 9, None)
    (tmp_path / "eight.toml").write_text(small_config(PLAYER_N=8).to_toml())
    with pytest.raises(ValueError, match="need 9 teams"):
        settle_format(open_arena(tmp_path / "other.db"), requested_format(str(tmp_path / "eight.toml"), None, 8, None),
                      None)
    assert "secret" not in json.dumps(queries.summary(arena))


# --------------------------------------------------------------- endpoints
@pytest.fixture
def served(arena, tmp_path):
    rng, ratings = np.random.default_rng(2), {}
    for _ in range(6):
        synthetic_episode(arena, rng, ratings, anchor_first(arena))
    server = ArenaHTTPServer("127.0.0.1", 0, tmp_path / "arena.db", lambda: {"pid": 1, "busy": []})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def get(port, path, host=None, origin=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host or f"127.0.0.1:{port}"} | ({"Origin": origin} if origin else {})
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


def test_the_endpoints_serve_the_leaderboard_episodes_and_faults(served):
    status, body = get(served, "/api/leaderboard")
    assert status == 200 and body["leaderboard"][0]["rank"] == 1
    rated = [row for row in body["leaderboard"] if row["episodes"]]
    assert sum(row["episodes"] for row in rated) == 24
    status, body = get(served, "/api/status")
    assert status == 200 and body["episodes"] == 6 and body["live"]["pid"] == 1 and "secret" not in json.dumps(body)
    status, body = get(served, "/api/entries/Combat/episodes?limit=4")
    assert status == 200 and len(body["episodes"]) == 4 and body["next_before"] == body["episodes"][-1]["episode"]
    assert all(any(seat["entry"] == "Combat" for seat in e["seats"]) for e in body["episodes"])
    older = get(served, f"/api/entries/Combat/episodes?before={body['next_before']}")[1]["episodes"]
    assert len(older) == 2 and older[0]["episode"] < body["next_before"]
    status, body = get(served, "/api/entries/Combat/faults")
    assert status == 200 and all(f["exception"] == 0 for f in body["faults"])  # the anchor sits at seat 0
    faulty = [row["name"] for row in get(served, "/api/leaderboard")[1]["leaderboard"] if row["faults"]["exception"]]
    body = get(served, f"/api/entries/{faulty[0]}/faults")[1]
    assert body["faults"] and body["faults"][0]["messages"] == ["boom"] and body["totals"]["exception"] >= 1


def test_the_endpoints_refuse_foreign_hosts_origins_writes_and_nonsense(served):
    assert get(served, "/api/status", host="attacker.example")[0] == 403
    assert get(served, "/api/status", origin="http://attacker.example")[0] == 403
    assert get(served, "/api/status", origin=f"http://localhost:{served}")[0] == 200
    assert get(served, "/api/status", method="POST")[0] == 405
    assert get(served, "/api/entries/nobody/episodes") == (404, {"error": "no entry named 'nobody'"})
    assert get(served, "/api/entries/Combat/episodes?limit=x")[0] == 400
    assert get(served, "/api/nothing")[0] == 404


# ------------------------------------------------------------ command line
def test_add_status_remove_and_recompute_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "cli.db"
    assert main(["arena", "add", "scripted:Meandr", "--db", str(path)]) == 2
    assert "Meandr" in capsys.readouterr().out
    agent = tmp_path / "my agent.py"
    agent.write_text("class Agent:\n    def __init__(self, config):\n        pass\n\n    def act(self, obs):\n"
                     "        return {}\n")
    assert main(["arena", "add", f"{agent}:Agent", "--db", str(path)]) == 0
    assert main(["arena", "add", "random", "--db", str(path), "--name", "my-agent:Agent"]) == 2
    assert "already has an entry with name 'my-agent:Agent'" in capsys.readouterr().out
    assert main(["arena", "add", "random", "--db", str(path), "--name", "a/b"]) == 2
    assert main(["arena", "remove", "Combat", "--db", str(path)]) == 2
    assert "always in the pool" in capsys.readouterr().out
    assert main(["arena", "remove", "my-agent:Agent", "--db", str(path)]) == 0
    capsys.readouterr()
    assert main(["arena", "status", "--db", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    entry = next(row for row in out["leaderboard"] if row["name"] == "my-agent:Agent")
    assert entry["spec"] == f"{agent}:Agent" and not entry["active"] and out["status"]["server"]["running"] is False
    assert main(["arena", "recompute", "--db", str(path)]) == 0
    assert main(["arena", "status", "--db", str(tmp_path / "none.db")]) == 2
    (tmp_path / "junk.db").write_text("not a database" * 100)
    assert main(["arena", "status", "--db", str(tmp_path / "junk.db")]) == 2
    assert "junk.db" in capsys.readouterr().out
