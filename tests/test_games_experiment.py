"""`nmmo experiment games` end to end on a tiny budget: specialists and a generalist train on equal
agent-steps, play their games against random teams, and the table, verdict and files come out."""

import json

from baselines.experiments.games import GENERALIST, make_runs, run_games, table
from baselines.experiments.run import Budget


def test_specialists_and_a_generalist_train_play_and_report(tmp_path):
    games = ("race_to_centre", "team_battle")
    runs = make_runs((0,), games)
    assert [run.condition for run in runs] == [*games, GENERALIST]
    assert runs[-1].config.GAME_MIX == ",".join(games) and all(run.config.GAME_ADAPTIVE for run in runs)
    budget = Budget(steps=300, rows=64, eval_episodes=1, eval_ticks=20, progress=False)
    results = run_games((0,), budget, tmp_path, games=games)
    for run in runs:
        entry = results["runs"][run.key]
        assert entry["steps"] >= 300
        played = games if run.condition == GENERALIST else (run.condition,)
        assert set(entry["eval"]) == set(played)
        for game in played:
            assert entry["eval"][game]["episodes"] == 1 and 0 <= entry["eval"][game]["win_rate"] <= 1
    rows = results["summary"]["rows"]
    assert [row["game"] for row in rows] == list(games) and all(row["bot_win_rate"] is not None for row in rows)
    assert len(results["summary"]["verdict"]) == len(games)
    assert json.loads((tmp_path / "games.json").read_text())["experiment"] == "games"
    assert (tmp_path / "games.png").stat().st_size > 0 and table(results).row_count == len(games)
