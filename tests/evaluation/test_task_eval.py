"""`nmmo eval --tasks`: task outcomes of every lifetime, reported per task and tag, with a sanity
check that they measure behaviour (foragers complete foraging tasks, fighters combat tasks)."""

import numpy as np
import pytest

from evaluation.journal import _decode, _encode
from evaluation.tournament import evaluate


@pytest.fixture(scope="module")
def outcomes():
    run = {}
    for tasks, policies in (("foraging", ("random", "scripted:Forage")), ("combat", ("scripted:Forage",
                                                                                      "scripted:Combat"))):
        for policy in policies:
            run[tasks, policy] = evaluate("train_small", policy, ticks=80, episodes=2, workers=0, progress=False,
                                          tasks=tasks)
    return run


def completion(result: dict, tag: str) -> float:
    return result["tasks"]["tags"][tag]["completion"]["mean"]


def test_foragers_forage_and_fighters_fight(outcomes):
    assert completion(outcomes["foraging", "scripted:Forage"], "foraging") > completion(
        outcomes["foraging", "random"], "foraging")
    assert completion(outcomes["combat", "scripted:Combat"], "combat") > completion(
        outcomes["combat", "scripted:Forage"], "combat")


def test_the_report_covers_every_task_and_lifetime(outcomes):
    result = outcomes["foraging", "random"]
    report = result["tasks"]
    lifetimes = result["metrics"]["random"]["lifetime"]["count"]
    assert sum(t["lifetimes"] for t in report["tasks"].values()) == lifetimes
    for stat in report["tasks"].values():
        for name in ("completion", "progress"):
            cell = stat[name]
            assert cell["mean"] is None or 0.0 <= cell["low"] <= cell["mean"] <= cell["high"] <= 1.0


def test_task_outcomes_survive_the_journal():
    from evaluation.episode import EpisodeResult
    from evaluation.faults import Faults

    result = EpisodeResult(0, 1, 2, 10, np.zeros((2, 6)), np.zeros(2, np.int64), [Faults()], policies=("random",),
                           tasks=np.array([[3, 0.5, 0], [1, 1.0, 1]]))
    assert np.array_equal(_decode(_encode(result), ("random",)).tasks, result.tasks)
