import json
import multiprocessing

import numpy as np
import pytest

from evaluation.episode import EpisodeTask, eval_map_seeds, run_episode, with_horizon
from evaluation.metrics import METRICS
from evaluation.rating import ANCHOR
from evaluation.results import load_results, results_config, save_results, validate_results
from evaluation.tournament import evaluate, run_tournament, tournament_policies
from nmmo.config import from_toml as nmmo_from_toml
from nmmo.config import load as nmmo_config
from nmmo.replays.replay import load_replay

from .conftest import CRASHING, GARBAGE, HANGING, small_config, write_policy

QUICK = {"episodes": 2, "ticks": 6, "workers": 0, "progress": False}


def without_timing(episodes):
    """Episode entries minus their wall-clock seconds (the only part that differs between runs)."""
    return [{k: v for k, v in e.items() if k != "seconds"} for e in episodes]


def test_config_travels_as_toml_and_horizon_copies():
    config = small_config()
    copy = with_horizon(config, 7)
    assert copy.HORIZON == 7 and config.HORIZON == 128
    assert nmmo_from_toml(copy.to_toml(), copy.name) == copy
    assert eval_map_seeds(config, 3) == [config.MAP_EVAL_SEED_OFFSET + i for i in range(3)]


def test_slots_are_dealt_in_equal_shares_and_respawns_keep_their_policy():
    config = with_horizon(small_config(PLAYER_N=16, IMMORTAL=True), 3)  # nobody dies: one lifetime per slot
    task = EpisodeTask(0, config.to_toml(), config.name, ("idle", "random", "scripted:Meander"), 5, 1_000_000)
    result = run_episode(task)
    assert np.bincount(result.owners, minlength=3).tolist() == [6, 5, 5]  # 16 slots: the first policy one more
    assert (result.lifetimes[:, METRICS.index("lifetime")] == 3).all()
    # with deaths and respawns every lifetime is still credited to its slot's policy
    config = with_horizon(small_config(PLAYER_N=16), 40)
    result = run_episode(EpisodeTask(0, config.to_toml(), config.name, ("idle", "random"), 5, 1_000_000))
    assert len(result.owners) > 16 and set(result.owners.tolist()) == {0, 1}


POLICIES5 = ("scripted:Combat", "scripted:Forage", "scripted:Meander", "random", "idle")


def test_nothing_observable_tells_which_policy_controls_an_agent(tmp_path):
    """Over episodes of the canonical format, an agent's ID, its TEAM column and its spawn tile
    (ring position) say nothing about its policy: a guess from any of them, learnt on four
    episodes, is right on the next four about as often as chance (1 in 5); the old deal (slot mod
    the number of policies) would make it right every time. The deal changes every episode."""
    from nmmo.core.systems.spawn import spawn_ring

    config = with_horizon(nmmo_config("tournament"), 1)
    ring = {tuple(rc): i for i, rc in enumerate(spawn_ring(config).tolist())}
    rows = []  # (policy, id, team, ring position) of every agent at its first tick
    deals = set()
    for episode in range(8):
        path = tmp_path / f"e{episode}.replay"
        run_episode(EpisodeTask(episode, config.to_toml(), config.name, POLICIES5, 100 + episode,
                                config.MAP_EVAL_SEED_OFFSET + episode, replay_path=str(path)))
        replay = load_replay(path)
        team_policy = np.array(replay.header["team_policy"])
        deals.add(tuple(team_policy.tolist()))
        frame = replay.frame(0)
        players = np.flatnonzero(frame["alive"].astype(bool) & (frame["kind"] == 0))
        assert np.bincount(team_policy[frame["team"][players]], minlength=5).tolist() == [20] * 5  # equal shares
        for slot in players.tolist():
            cell = (int(frame["row"][slot]), int(frame["col"][slot]))
            rows.append((team_policy[frame["team"][slot]], frame["id"][slot], frame["team"][slot], ring[cell]))
    assert len(deals) == 8  # a fresh deal per episode
    data = np.array(rows, dtype=np.int64)
    learn, test = data[: len(data) // 2], data[len(data) // 2 :]
    for column, name in ((1, "ID"), (2, "TEAM"), (3, "spawn position")):
        for modulus in (5, 10, 20, 100):  # a residue of the feature -> its most common policy so far
            guess = {r: np.bincount(learn[learn[:, column] % modulus == r, 0], minlength=5).argmax()
                     for r in range(modulus)}
            right = np.mean([guess[f % modulus] == p for p, f in zip(test[:, 0], test[:, column], strict=True)])
            assert right < 0.2 + 0.1, (name, modulus, right)


def test_canonical_ranking_passes_the_sanity_check():
    """A small version of the canonical tournament (its config, its five reference policies, its
    default ranking) orders them as skill would: Forage above Meander, and Meander above the two
    policies that do nothing useful, in the leaderboard and in every episode. A ranking metric
    that rewarded luck (e.g. achievement first: random's chance kills are worth points) fails."""
    # a fixed deal secret: with a fresh one per run (the default) the deal changes every run, and in
    # some deals random outlives Forage in one 256-tick episode; the test must not be a lottery
    results = run_tournament("tournament", list(POLICIES5), episodes=2, ticks=256, workers=2, progress=False,
                             secret=1)
    sr = {row["policy"]: row["sr"] for row in results["leaderboard"]}
    assert sr["scripted:Forage"] > sr["scripted:Meander"] > max(sr["random"], sr["idle"])
    assert sr["scripted:Combat"] > sr["scripted:Meander"]
    for entry in results["episodes"]:
        ranks = entry["ranks"]
        assert ranks["scripted:Forage"] < ranks["scripted:Meander"] < min(ranks["random"], ranks["idle"]), entry


def test_anchor_is_added_and_specs_checked():
    assert tournament_policies(["random", "idle"]) == ["random", "idle", ANCHOR]
    assert tournament_policies([ANCHOR, "random"]) == [ANCHOR, "random"]
    with pytest.raises(ValueError, match="more than once"):
        tournament_policies(["random", "random"])
    with pytest.raises(ValueError, match="policy spec 'nonsense'"):
        run_tournament(small_config(), ["nonsense"], **QUICK)
    with pytest.raises(ValueError, match="unknown metric"):
        run_tournament(small_config(), ["random"], metric="gold", **QUICK)


@pytest.mark.parametrize(("body", "kind"), [(CRASHING, "exception"), (HANGING, "timeout"), (GARBAGE, "malformed")])
def test_faulty_submissions_complete_the_tournament(tmp_path, body, kind):
    spec = write_policy(tmp_path, f"sub_{kind}", body)
    results = run_tournament(small_config(), [spec, "scripted:Forage"], time_budget=0.2, **QUICK)
    faults = results["faults"]
    assert faults[spec][kind] >= 2  # at least once per episode
    assert all(faults[p][k] == 0 for p in ("scripted:Forage", ANCHOR) for k in ("exception", "timeout", "malformed"))
    assert all(e["faults"][spec][kind] >= 1 for e in results["episodes"])
    assert [row["policy"] for row in results["leaderboard"]].count(spec) == 1
    assert all(e["ticks"] == 6 for e in results["episodes"])
    if kind == "timeout":
        assert faults[spec]["restarts"] == 2 and faults[spec]["timeout"] == 2  # one hang per episode, then fine
    if kind == "malformed":
        assert faults[spec]["dropped_actions"] > faults[spec]["malformed"]
    assert multiprocessing.active_children() == []
    paths = save_results(results, tmp_path / "out")
    assert load_results(paths["json"])["faults"][spec][kind] == faults[spec][kind]


def test_a_result_set_is_replaced_as_a_whole(tmp_path, monkeypatch):
    """results.json is written last and lists its CSVs' digests: a save killed half-way keeps the old
    results.json, and loading notices the CSVs that do not belong to it."""
    from evaluation import results as results_module

    first = run_tournament(small_config(), ["random"], seed=1, **QUICK)
    second = run_tournament(small_config(), ["random"], seed=2, **QUICK)
    save_results(first, tmp_path)
    real_write = results_module.atomic_write_bytes
    written = []

    def dies_after_one_file(path, data):
        if written:
            raise KeyboardInterrupt("killed mid-save")
        written.append(path)
        return real_write(path, data)

    monkeypatch.setattr(results_module, "atomic_write_bytes", dies_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        save_results(second, tmp_path)
    monkeypatch.setattr(results_module, "atomic_write_bytes", real_write)
    assert json.loads((tmp_path / "results.json").read_text())["seeds"] == first["seeds"]  # the old record stands
    with pytest.raises(ValueError, match=r"does not belong to .*results\.json"):
        load_results(tmp_path)
    save_results(second, tmp_path)
    assert load_results(tmp_path)["seeds"] == second["seeds"]


def test_results_round_trip_and_reproduce(tmp_path):
    results = run_tournament(small_config(), ["random", "scripted:Forage"], seed=4, secret=21,
                             **{**QUICK, "episodes": 3})
    paths = save_results(results, tmp_path)
    assert load_results(tmp_path) == results == load_results(paths["json"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.csv", "leaderboard.csv", "payoff.csv",
                                                          "results.json"]
    assert len(paths["episodes"].read_text().splitlines()) == 1 + 3 * 3
    payoff_rows = paths["payoff"].read_text().splitlines()
    assert payoff_rows[0] == "policy," + ",".join(results["policies"]) and len(payoff_rows) == 4
    board = results["leaderboard"]
    assert [row["rank"] for row in board] == [1, 2, 3] and board[0]["sr"] >= board[1]["sr"] >= board[2]["sr"]
    assert next(row for row in board if row["policy"] == ANCHOR)["sr"] == 1500.0
    assert [entry["episode"] for entry in results["sr_history"]] == [0, 1, 2]
    assert results["map_seeds"] == [1_000_000, 1_000_001, 1_000_002]
    assert set(results["versions"]) == {"flatmmo", "numpy", "python", "trueskill"}
    assert results_config(results).HORIZON == 6
    # the file and the secret say how to run it again, and running it again gives the same tournament
    again = run_tournament(results_config(results), results["policies"], seed=results["settings"]["seed"],
                           secret=21, **{**QUICK, "episodes": 3})
    assert without_timing(again["episodes"]) == without_timing(results["episodes"])
    assert again["leaderboard"] == results["leaderboard"]


def test_episode_order_not_completion_order_decides(tmp_path):
    kwargs = {"seed": 1, "episodes": 3, "ticks": 8, "progress": False, "secret": 3}
    serial = run_tournament(small_config(), ["random", "scripted:Meander"], workers=0, **kwargs)
    parallel = run_tournament(small_config(), ["random", "scripted:Meander"], workers=2, **kwargs)
    assert without_timing(serial["episodes"]) == without_timing(parallel["episodes"])
    assert serial["sr_history"] == parallel["sr_history"]


@pytest.mark.parametrize("damage", [
    lambda r: r.pop("leaderboard"),
    lambda r: r.update(format="something"),
    lambda r: r["seeds"].pop(),
    lambda r: r["episodes"][0]["scores"].pop("random"),
    lambda r: r["metrics"]["random"]["lifetime"].update(mean="long"),
    lambda r: r["config"].update(toml="preset = 'Nope'"),
])
def test_loader_rejects_damaged_files(tmp_path, damage):
    results = run_tournament(small_config(), ["random"], **QUICK)
    damage(results)
    with pytest.raises(ValueError):
        validate_results(results)
    (tmp_path / "results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match="results.json"):
        load_results(tmp_path)


def test_evaluate_gives_the_metric_table(tmp_path):
    results = evaluate(small_config(), "random", ticks=10, episodes=2, workers=0, progress=False)
    assert results["mode"] == "eval" and results["policies"] == ["random"]
    table = results["metrics"]["random"]
    assert table["lifetime"]["count"] >= 2 * 16 and 0 < table["lifetime"]["mean"] <= 10
    assert sum(e["metrics"]["random"]["lifetime"]["count"] for e in results["episodes"]) == table["lifetime"]["count"]
    paths = save_results(results, tmp_path)
    assert load_results(paths["json"]) == results
    assert len(paths["metrics"].read_text().splitlines()) == 1 + len(METRICS)


def test_team_rows_on_a_hand_built_case():
    from evaluation.metrics import team_rows

    def life(lifetime, achievement, kills):
        row = dict.fromkeys(METRICS, 0.0)
        row.update(lifetime=lifetime, achievement=achievement, player_kills=kills)
        return [row[m] for m in METRICS]

    matrix = np.array([life(10, 2, 1), life(30, 4, 0), life(5, 0, 2)])
    ids, rows = team_rows(matrix, np.array([7, 7, 3]))
    assert ids.tolist() == [3, 7]
    assert rows.tolist() == [[5, 0, 2, 1], [30, 3, 1, 2]]  # lifetime max, achievement mean, kills sum, members


def test_teams_play_for_one_policy_and_get_team_metrics(tmp_path):
    conf = small_config(PLAYER_TEAM_SIZE=4, COMBAT_FRIENDLY_FIRE=False)
    results = run_tournament(conf, ["random", "scripted:Forage"], seed=2, **{**QUICK, "episodes": 2})
    policies = results["policies"]
    team = results["team_metrics"]
    assert sorted(team) == sorted(policies)
    population = results["settings"]["population"]
    assert population == 12  # 4 teams of 4, cut to 3 for equal shares of 3 policies
    assert sum(team[p]["members"]["count"] for p in policies) == 2 * population // 4  # teams over 2 episodes
    task = EpisodeTask(0, conf.set("HORIZON", 8).to_toml(), "teams", tuple(policies), 5, 0)
    result = run_episode(task)
    for t in np.unique(result.teams):
        assert len(set(result.owners[result.teams == t].tolist())) == 1  # teammates share a policy
    paths = save_results(results, tmp_path)
    assert paths["teams"].read_text().startswith("policy,metric,mean,std,count")
