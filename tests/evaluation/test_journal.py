"""Growing standings and the resumable journal of a tournament."""

import json

import pytest

from evaluation.episode import run_episodes
from evaluation.journal import JOURNAL_FILE, Journal, recorded_secret
from evaluation.sandbox.host import Limits
from evaluation.tournament import Standings, _tasks, run_tournament, tournament_policies

from .conftest import small_config
from .test_ray import comparable

ARGS = dict(policies=["scripted:Forage", "random"], ticks=16, seed=3, workers=0, progress=False)


def test_standings_do_not_depend_on_finishing_order():
    conf = small_config().set("HORIZON", 16)
    policies = tournament_policies(["scripted:Forage", "random"])
    results = run_episodes(_tasks(conf, policies, [1, 2, 3, 4], [0, 1, 2, 3], 1.0, Limits(), 5), workers=0,
                           progress=False)
    in_order, shuffled = Standings(policies), Standings(policies)
    for result in results:
        in_order.add(result)
    for result in (results[2], results[0], results[3]):
        shuffled.add(result)
    assert shuffled.rated == 1 and len(shuffled.results) == 3  # episode 1 missing: only episode 0 is rated yet
    shuffled.add(results[1])
    assert shuffled.rated == 4
    assert shuffled.ratings.table() == in_order.ratings.table() and shuffled.payoff() == in_order.payoff()
    payoff = in_order.payoff()
    for a in policies:  # a out-ranked b, b out-ranked a, or they drew: shares of the episodes
        for b in policies:
            if a != b:
                assert 0.0 <= payoff[a][b] + payoff[b][a] <= 1.0
    with pytest.raises(ValueError, match="episode 2 was added twice"):
        in_order.add(results[2])


def test_resumed_and_extended_run_equals_one_run(tmp_path):
    """A resumed run takes the journal's secret, and the seed with that secret re-runs it exactly."""
    conf = small_config()
    journal = tmp_path / "b" / JOURNAL_FILE
    run_tournament(conf, episodes=2, journal=journal, **ARGS)  # a fresh secret, recorded in the journal
    secret = recorded_secret(journal)
    assert isinstance(secret, int) and secret.bit_length() > 64
    whole = run_tournament(conf, episodes=4, journal=tmp_path / "a" / JOURNAL_FILE, secret=secret, **ARGS)
    lines = journal.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["format"] == "flatmmo-journal"
    journal.write_text("\n".join(lines) + "\n" + lines[2][: len(lines[2]) // 2])  # a crash tore a third line
    played = []
    resumed = run_tournament(conf, episodes=4, journal=journal, resume=True,
                             on_update=lambda s: played.append(max(s.results)), **ARGS)
    assert played == [2, 3]  # only the missing episodes ran
    assert comparable(resumed) == comparable(whole)
    assert len(journal.read_text().splitlines()) == 5  # the torn line is gone, the new episodes appended


def test_resume_refuses_another_run_and_damage(tmp_path):
    conf = small_config()
    journal = tmp_path / JOURNAL_FILE
    run_tournament(conf, episodes=2, journal=journal, **ARGS)
    with pytest.raises(ValueError, match=r"its seed is 3, this run's is 4"):
        run_tournament(conf, episodes=2, journal=journal, resume=True, **{**ARGS, "seed": 4})
    with pytest.raises(ValueError, match=r"its config has HORIZON = 16, this run's has HORIZON = 24"):
        run_tournament(conf, episodes=2, journal=journal, resume=True, **{**ARGS, "ticks": 24})
    with pytest.raises(ValueError, match=r"its secret is another, this run's \(--secret\)"):
        run_tournament(conf, episodes=2, journal=journal, resume=True, secret=12345, **ARGS)
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{not json", lines[2]]) + "\n")
    with pytest.raises(ValueError, match="line 2 is damaged"):
        Journal(journal, json.loads(lines[0]), resume=True)
    journal.write_text("hello\n")
    with pytest.raises(ValueError, match="is not a tournament journal"):
        run_tournament(conf, episodes=2, journal=journal, resume=True, **ARGS)
