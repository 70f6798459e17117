"""Population play: league sampling, TrueSkill matches, opponents in the vector env, `train --league`."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")

import nmmo  # noqa: E402
from baselines.league import LEARNER, League, Member, Opponents  # noqa: E402
from baselines.ppo import read_log, train  # noqa: E402
from nmmo.core.actions import NO_OP_ROW  # noqa: E402
from nmmo.engines.vector import VectorEnv  # noqa: E402
from scripted.bots import Forage  # noqa: E402

from .test_train import tiny_args  # noqa: E402


def league_with(tmp_path, sampling, ratings):
    league = League(tmp_path, sampling=sampling, seed=1)
    for spec, mu, added in ratings:
        league.members.append(Member(spec, added=added, mu=mu))
    return league


def test_sampling_rules(tmp_path):
    uniform = league_with(tmp_path, "uniform", [("a", 25, 0), ("b", 25, 0), ("c", 25, 0)])
    counts = {m.spec: 0 for m in uniform.members}
    for m in uniform.sample(3000):
        counts[m.spec] += 1
    assert all(900 < c < 1100 for c in counts.values())

    bots_only = league_with(tmp_path, "latest", [("scripted:Forage", 25, 0), ("scripted:Combat", 25, 0)])
    assert {m.spec for m in bots_only.sample(50)} == {"scripted:Forage", "scripted:Combat"}  # no snapshot yet
    latest = league_with(tmp_path, "latest", [("scripted:Forage", 25, 0), ("ckpt:a.pt", 25, 10),
                                              ("ckpt:b.pt", 25, 20)])
    assert {m.spec for m in latest.sample(50)} == {"ckpt:b.pt"}

    matched = league_with(tmp_path, "rating", [("even", 25, 0), ("far", 60, 0)])
    quality = matched.match_quality()
    assert quality[0] > 10 * quality[1]
    picks = [m.spec for m in matched.sample(1000)]
    assert picks.count("even") > 900


def test_matches_update_trueskill_and_records(tmp_path):
    league = league_with(tmp_path, "uniform", [("scripted:Combat", 25, 0)])
    anchor = league.members[0]
    league.record(anchor, learner_deaths=0.1, opponent_deaths=0.5)  # the learner died less: it won
    assert league.learner.mu > 25 > anchor.mu and (league.learner.wins, anchor.losses) == (1, 1)
    before = (league.learner.mu, anchor.mu)
    league.record(anchor, 0.2, 0.2)
    assert league.learner.draws == anchor.draws == 1 and league.learner.mu < before[0]  # a draw pulls together
    sr = league.sr()
    assert sr["scripted:Combat"] == 1500.0 and sr[LEARNER] > 1500
    league.end_iteration(1)
    again = League.load(tmp_path)
    assert again.table() == league.table() and again.history == league.history


def test_opponents_act_for_odd_slots_with_the_bots_own_choices():
    conf = nmmo.config.load("train_small")
    with VectorEnv(conf, num_envs=2, seed=4) as vec:
        obs = vec.reset()
        ids, alive = vec.buffers["agent_id"].copy(), vec.buffers["alive"].copy()
        members = [Member("scripted:Forage"), Member("idle")]
        opponents = Opponents(conf, 2, seed=0)
        opponents.play(members)
        actions = opponents.opponent_actions(obs, ids, alive)
    slots = conf.PLAYER_N
    learner = Opponents.learner_rows(2, slots)
    assert (actions[learner] == NO_OP_ROW).all()  # the learner's rows are left to the learner
    assert (actions[slots:][~learner[slots:]] == NO_OP_ROW).all()  # idle does nothing
    bot = Forage(conf)
    bot.reset(int(np.random.SeedSequence([0, 0, 0]).generate_state(1)[0]))
    rows = [r for r in range(slots) if r % 2 == 1 and alive[r]]
    expected = bot.act({int(ids[r]): {"Tile": obs["tile"][r], "Entity": obs["entity"][r], "AgentId": int(ids[r]),
                                      "ActionTargets": {"Move": {"Direction": obs["move_mask"][r]},
                                                        "Attack": {"Style": obs["style_mask"][r],
                                                                   "Target": obs["target_mask"][r]}}}
                        for r in rows})
    moved = [r for r in rows if int(ids[r]) in expected]
    assert moved and all(actions[r, 0] == expected[int(ids[r])]["Move"]["Direction"] for r in moved)


def test_train_league_snapshots_rates_saves_and_resumes(tmp_path):
    summary = train(tiny_args(tmp_path, league=True, league_snapshot_every=1, league_sampling="latest"))
    saved = json.loads((tmp_path / "league.json").read_text())
    specs = [m["spec"] for m in saved["members"]]
    assert specs[:2] == ["scripted:Forage", "scripted:Combat"] and len(specs) == 4
    assert all((tmp_path / "league" / f"learner_00000{i}.pt").is_file() for i in (1, 2))
    matches = sum(saved["learner"][k] for k in ("wins", "losses", "draws"))
    assert matches == 2 * 2  # one match per env per iteration
    assert [h["iteration"] for h in saved["history"]] == [1, 2]
    assert (tmp_path / "league.png").read_bytes()[:4] == b"\x89PNG"
    assert summary["league"][0]["sr"] >= summary["league"][-1]["sr"]
    assert all("league_sr" in row for row in read_log(tmp_path))
    train(tiny_args(tmp_path, iterations=3, resume=True, league=True, league_snapshot_every=1))
    resumed = json.loads((tmp_path / "league.json").read_text())
    assert len(resumed["members"]) == 5 and [h["iteration"] for h in resumed["history"]] == [1, 2, 3]


def test_vector_env_reports_the_row_of_each_finished_lifetime():
    conf = nmmo.config.load("train_small").set("HORIZON", 5)
    with VectorEnv(conf, num_envs=2, seed=1) as vec:
        vec.reset()
        for _ in range(5):
            out = vec.step(np.full((vec.rows, 3), -1))
        finished = np.flatnonzero(out.truncated | out.terminated)
        assert sorted(out.episode_rows.tolist()) == finished.tolist() and len(out.episodes) == len(finished)
