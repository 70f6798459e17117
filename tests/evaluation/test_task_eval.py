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
    forage, chance = (completion(outcomes["foraging", p], "foraging") for p in ("scripted:Forage", "random"))
    assert forage > 0 and forage >= 2 * chance, (forage, chance)
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
                           tasks=np.array([[3, 0.5, 0, 0.5], [1, 1.0, 1, 2.0]]))
    assert np.array_equal(_decode(_encode(result), ("random",)).tasks, result.tasks)


def test_a_tournament_on_tasks_ranks_foragers_above_random(tmp_path):
    from evaluation.results import load_results, save_results
    from evaluation.tournament import run_tournament

    result = run_tournament("tournament", ["scripted:Forage", "random"], episodes=2, ticks=60, workers=0,
                            progress=False, metric="task_reward", tasks="foraging", secret=1)
    rank = {row["policy"]: row["rank"] for row in result["leaderboard"]}
    assert rank["scripted:Forage"] < rank["random"]
    for episode in result["episodes"]:  # ranked by the mean task reward of each policy's lifetimes
        scores = episode["scores"]
        assert scores["scripted:Forage"] > scores["random"]
        assert scores["random"] == episode["metrics"]["random"]["task_reward"]["mean"]
    assert set(result["tasks"]) == set(result["policies"])  # a task report per policy
    save_results(result, tmp_path)
    assert load_results(tmp_path)["settings"]["metric"] == "task_reward"
    with pytest.raises(ValueError, match="task_reward.*needs tasks"):
        run_tournament("tournament", ["random"], episodes=1, ticks=5, workers=0, progress=False, metric="task_reward")


def test_every_policy_is_dealt_the_same_tasks():
    import nmmo
    from evaluation.episode import deal
    from evaluation.task_deal import deal_tasks
    from nmmo import config as cfg

    for team_size, assign in ((1, "agent"), (4, "agent"), (4, "team")):
        config = cfg.Small().update({"PLAYER_N": 48, "PLAYER_TEAM_SIZE": team_size, "TASK_ASSIGN": assign})
        env = nmmo.Env(config, tasks="combat")
        team_policy = deal(7, 48 // team_size, 3)
        given = deal_tasks(env.tasks, team_policy, 3, seed=7, salt=[5])
        owner = team_policy if assign == "team" else team_policy[np.arange(48) // team_size]
        hands = [sorted(given[owner == p].tolist()) for p in range(3)]
        assert hands[0] == hands[1] == hands[2] and len(set(given.tolist())) > 1
        assert np.array_equal(given, deal_tasks(env.tasks, team_policy, 3, seed=7, salt=[5]))
        assert not np.array_equal(given, deal_tasks(env.tasks, team_policy, 3, seed=8, salt=[5]))
        env.reset(seed=7, options={"tasks": given})
        assert np.array_equal(env.tasks.task, given if assign == "agent" else given[np.arange(48) // team_size])


READS_TASK = """
    import numpy as np

    class Agent:
        def __init__(self, config):
            pass

        def act(self, observations):
            for ob in observations.values():
                task = np.asarray(ob["Task"])
                assert task.shape == (EMBEDDING_SIZE,) and task.any(), task.shape
            return {}
"""


def test_a_sandboxed_submission_sees_the_task_embedding(tmp_path):
    from evaluation.tournament import run_tournament
    from nmmo.tasks import EMBEDDING_SIZE
    from tests.evaluation.conftest import small_config, write_policy

    (tmp_path / "mine.toml").write_text('[[task]]\nname = "eat"\npredicate = "CountEvent"\n'
                                        'args = { event = "EAT_FOOD", N = 2 }\n')
    spec = write_policy(tmp_path, "reader", READS_TASK.replace("EMBEDDING_SIZE", str(EMBEDDING_SIZE)))
    result = run_tournament(small_config(), [spec, "random"], episodes=1, ticks=5, workers=0, progress=False,
                            tasks=str(tmp_path / "mine.toml"), secret=1)
    faults = result["faults"][spec]
    assert not any(faults[k] for k in ("exception", "timeout", "malformed")), faults["messages"]
    assert result["tasks"][spec]["tasks"]["eat"]["lifetimes"] > 0


def test_the_shuffled_task_input_gives_each_agent_another_task_and_changes_nothing_else():
    """`--task-input shuffled` (an ablation: does a policy use its task?): every agent reads another
    task of the batch, each task's holders the same one, every distinct task still read by someone;
    every other field and the ids are the batch's own, the batch itself is untouched."""
    import nmmo
    from evaluation.episode import shuffled_tasks

    env = nmmo.Env(nmmo.config.load("train_small").set("HORIZON", 4), seed=0, tasks="heldout")
    env.reset(seed=0)
    batch = env.observations()
    task = batch["task"].copy()
    assert len(np.unique(task, axis=0)) > 1  # several tasks, so there is another to read
    shuffled = shuffled_tasks(batch)
    read = shuffled["task"]
    assert np.array_equal(batch["task"], task) and not (read == task).all(axis=1).any()
    for row in np.unique(task, axis=0):  # the holders of one task all read one other task
        assert len(np.unique(read[(task == row).all(axis=1)], axis=0)) == 1
    assert np.array_equal(np.unique(read, axis=0), np.unique(task, axis=0))
    assert np.array_equal(shuffled.ids, batch.ids)
    assert all(shuffled[name] is batch[name] for name in batch if name != "task")
    blind = nmmo.Env(nmmo.config.load("train_small"), seed=0)
    blind.reset(seed=0)
    plain = blind.observations()
    assert "task" not in plain and shuffled_tasks(plain) is plain  # tasks off: nothing to shuffle


def test_a_policy_that_ignores_its_task_scores_the_same_with_the_shuffled_input():
    """Completion is scored on each agent's own task either way: scripted:Forage, which never reads
    its task, plays the same episode and completes the same tasks; the setting is recorded; the
    ablation without tasks, or an unknown value, is refused naming it."""
    kwargs = dict(ticks=40, episodes=1, workers=0, progress=False, tasks="foraging")
    own = evaluate("train_small", "scripted:Forage", **kwargs)
    shuffled = evaluate("train_small", "scripted:Forage", task_input="shuffled", **kwargs)
    assert shuffled["settings"]["task_input"] == "shuffled" and own["settings"]["task_input"] == "own"
    assert shuffled["tasks"]["tasks"] == own["tasks"]["tasks"]
    with pytest.raises(ValueError, match="needs tasks"):
        evaluate("train_small", "scripted:Forage", ticks=4, episodes=1, workers=0, progress=False,
                 task_input="shuffled")
    with pytest.raises(ValueError, match="'mine'"):
        evaluate("train_small", "scripted:Forage", task_input="mine", **kwargs)


def test_eval_with_two_task_inputs_compares_them_episode_by_episode(tmp_path, capsys):
    """`nmmo eval --task-input own shuffled` plays the same episodes once per input and pairs them:
    the paired mean is the mean of the per-episode differences; the follower, which reads its
    task, completes more of its own tasks reading them than reading another's."""
    import json

    from evaluation.task_results import paired
    from nmmo.cli import main

    out = tmp_path / "eval"
    assert main(["eval", "--config", "tournament", "--policy", "scripted:Follower", "--tasks", "heldout",
                 "--task-input", "own", "shuffled", "--episodes", "2", "--ticks", "60", "--workers", "0",
                 "--out", str(out), "--quiet"]) == 0
    compared = json.loads((out / "results.json").read_text())["task_inputs"]
    own, shuffled = compared["completion"]["own"], compared["completion"]["shuffled"]
    assert len(own) == len(shuffled) == 2
    cell = compared["paired"]["own - shuffled"]
    assert cell["mean"] == pytest.approx(np.mean(np.subtract(own, shuffled))) and cell["n"] == 2
    assert cell["mean"] > 0
    assert paired([0.5, None], [0.25, 0.1]) == {"mean": 0.25, "low": None, "high": None, "n": 1}
    with pytest.raises(ValueError, match="same episodes"):
        paired([0.5], [0.25, 0.1])
