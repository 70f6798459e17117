"""Completed tasks are not evaluated again (nmmo 2.x's behaviour): batches without state of their
own, feature columns and combinations that only completed task-type tasks read are skipped until
one of those tasks restarts. Skipping must never change a result (nor must a lone world's
shortcut that looks for new agents only when the state issued new ids)."""

from __future__ import annotations

import numpy as np

import nmmo
from nmmo import config as cfg
from nmmo.tasks import TaskSet, TaskState, load_task_set

#: The sets whose specs this test assigns, one per agent (a fixed list: 64 agents hold the first 64
#: specs, so a set shipped later would otherwise push these out of the assignment).
SETS = ("combat", "exploration", "foraging", "heldout_v1", "npc_hunting", "team")


def random_actions(obs, rng: np.random.Generator) -> np.ndarray:
    rows = obs.move_mask.shape[0]
    actions = np.empty((rows, 3), dtype=np.int64)
    actions[:, 0] = np.argmax(rng.random((rows, 5)) * obs.move_mask, axis=1)
    actions[:, 1] = rng.integers(0, 3, rows)
    actions[:, 2] = np.argmax(rng.random(obs.target_mask.shape) * obs.target_mask, axis=1)
    return actions


def test_skipping_completed_tasks_changes_no_result():
    world = type("World", (cfg.Small, cfg.Resource, cfg.Combat, cfg.Progression, cfg.NPC), {})
    config = world().update({"PLAYER_N": 64, "NPC_N": 8, "PLAYER_TEAM_SIZE": 2, "HORIZON": 200})
    tasks = TaskSet(tuple(spec for name in SETS for spec in load_task_set(name)), "families")
    env = nmmo.Env(config, seed=4)
    for assign in ("agent", "team"):
        env.reset(seed=4)
        units = config.PLAYER_N // (2 if assign == "team" else 1)
        assignment = np.arange(units) % len(tasks)
        skipping = TaskState(tasks, config, assign=assign)
        full = TaskState(tasks, config, assign=assign, skip_completed=False)
        for t in (skipping, full):
            t.reset(env.realm.state, assignment=assignment)
        rng, obs, skipped, newcomers = np.random.default_rng(1), env._obs, 0, 0
        for _ in range(150):
            obs = env.step_arrays(random_actions(obs, rng)).obs
            state = env.realm.state  # `full` is given the tick: it looks for new agents every tick
            a, b = skipping.evaluate(state), full.evaluate(state, np.full(1, state.tick))
            for name in ("rewards", "progress", "completed"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), (assign, name)
            terms, all_terms = skipping._compiled.terms, full._compiled.terms
            skipped += sum(skipping._skip) + sum(level.skip for level in skipping._compiled.levels) + sum(
                all_terms.fills[g] and not terms.fills[g] for g in terms.fills) + (
                all_terms.tile_needed and not terms.tile_needed) + sum(not n for n in terms.changing_needed.values())
            newcomers += skipping._ctx.newcomers is not None
        assert skipped > 0 and newcomers > 0, (skipped, newcomers)  # both paths ran: skips, and restarts
        assert not any(full._skip)
