"""The scripted task follower (`scripted.follower`): it reads its task from the observation's
embedding alone, and reading it pays: it completes more held-out directed tasks than its blind twin
(the same bot given another agent's task, ``--task-input shuffled``). The full-sized measurement is
benchmarks/bench_directed.py's (docs/tasks.md#the-directed-benchmark)."""

from __future__ import annotations

import numpy as np
import pytest

import nmmo
from evaluation.tournament import evaluate
from nmmo.core.enums import Style
from nmmo.tasks import embed, load_task_set
from scripted.directive import DRINK, EAT, NPC, Directive, read
from scripted.follower import Follower


@pytest.fixture(scope="module")
def tournament():
    return nmmo.config.resolve("tournament")


def test_a_directive_is_what_the_embedding_says(tournament):
    tasks = {spec.name: spec for spec in load_task_set("heldout")}

    def asks(name: str) -> Directive:
        return read(embed(tasks[name]), tournament)

    assert asks("hit_range_4").style == Style.RANGE
    assert (asks("defeat_npc_level_3").prey, asks("defeat_npc_level_3").prey_level) == (NPC, 3)
    assert asks("npc_hits_4_no_player_hits").spare_players
    third = tournament.MAP_SIZE // 2 - tournament.MAP_CENTER // 4
    assert (asks("seize_third_quadrant_6").goal, asks("seize_third_quadrant_6").radius) == ((third, third), 0)
    assert (asks("near_24_100").goal, asks("near_24_100").radius) == ((24, 100), 12)
    assert asks("eat_42").gather == EAT and asks("fishing_40").gather == DRINK
    both = asks("mage_hits_and_eat_20")
    assert (both.style, both.gather) == (Style.MAGE, EAT)
    assert read(np.zeros_like(embed(tasks["eat_42"])), tournament) == Directive()  # no task: no asks


def test_the_follower_needs_a_version_2_task_in_its_observation():
    config = nmmo.config.load("train_small").set("HORIZON", 4)
    env = nmmo.Env(config, seed=0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="play it with tasks"):
        Follower(config, seed=0).act_arrays(env.observations())
    old = config.set("TASKS", "heldout").set("TASK_EMBEDDING", 1)
    env = nmmo.Env(old, seed=0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="version-2 task embedding"):
        Follower(old, seed=0).act_arrays(env.observations())


def test_the_follower_beats_its_blind_twin_on_held_out_tasks():
    # one episode of 64 ticks on a held-out map (the benchmark: 8 x 256): the same episode, tasks and
    # bot; the twin reads the next distinct task of the batch, and is scored on its own
    done = {}
    for task_input in ("own", "shuffled"):
        out = evaluate("tournament", "scripted:Follower", ticks=64, episodes=1, seed=3, workers=0, progress=False,
                       tasks="heldout", task_input=task_input)
        done[task_input] = out["tasks"]["tags"]["heldout"]["completion"]["mean"]
    assert done["own"] > done["shuffled"] + 0.05, done
