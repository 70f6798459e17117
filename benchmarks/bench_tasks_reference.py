"""Task evaluation per tick beside nmmo 2.1.1: the same 128 distinct agent tasks, 128 agents, one sitting.

The claim measured: our task evaluation takes at least 20x less time per tick than nmmo 2.1.1's.
One list of specs (`spec_entries`) makes both sides' tasks: ours as a task set
(`nmmo.tasks.task_set_from_data`, what a TOML file would hold), nmmo 2.1.1's as its
`nmmo.task.task_spec.TaskSpec`s given at reset with `make_task_from_spec` (in
`benchmarks/ref_tasks_driver.py`, run by the reference interpreter that `benchmarks/reference.py`
builds; it imports nothing from this repository). Agent i (slot i, nmmo 2.1.1's agent id i + 1)
holds spec i. Predicates: those both have with the same meaning, with different numbers so that
all 128 are distinct (TickGE, StayAlive, AllDead, ProtectLeader, CheckAgentStatus, OccupyTile,
CanSeeTile, CanSeeAgent, CanSeeGroup, DistanceTraveled, AttainSkill, GainExperience, CountEvent
of EAT_FOOD / DRINK_WATER / GO_FARTHEST / SCORE_HIT / PLAYER_KILL / LEVEL_UP, ScoreHit,
DefeatEntity, ProgressTowardCenter, AllMembersWithinRange, SeizeTile, SeizeCenter,
SeizeQuadCenter) and the three task types (task, ongoing = OngoingTask, hold = HoldDurationTask),
taken round-robin from each predicate's variants.

Setting, both sides: the Medium preset (160 x 160 map, 128 x 128 centre) with the four systems
Resource, Combat, Progression and NPC (nmmo 2.1.1: its Medium + Terrain + those four, the config of
`benchmarks/reference.py --throughput medium`, map cached in its environment; ours:
`nmmo.config.Default()`), 128 agents in teams of one, immortal (both have IMMORTAL), one map, a
random valid move per agent from its mask each tick. Warm-up ticks, then timed ticks; the two sides
alternate (ours, then nmmo 2.1.1, per repeat) and the table shows each repeat and the medians.

Timed with code timers, per tick:
- ours: `TaskState.evaluate` (its `.seconds`) plus the event log's writers (`state.event_seconds`,
  inside our step): our event log is counted against us;
- nmmo 2.1.1: `Env._compute_rewards`, the call in its `step` that evaluates tasks (the GameState
  snapshot of its datastores, then every task's `compute_rewards`), wrapped on the instance; its
  event log is written inside `realm.step` and is NOT in its figure;
- for context, each env's step (ours: `step_arrays`, no tasks in it; nmmo 2.1.1: `env.step`,
  its task evaluation included).

Equivalence caveats (`CAVEATS`, printed with the table):
- Left out: predicates on items, gold and the market (HoardGold, EarnGold, SpendGold, MakeProfit,
  InventorySpaceGE, OwnItem, EquipItem, FullyArmed, ConsumeItem, HarvestItem, FireAmmo, ListItem,
  BuyItem: not in our game), Success (trivial), our EquipmentLevel and AttainCombatLevel (no
  nmmo 2.1.1 twin), combinations (and / or / not / sum: nmmo 2.1.1 builds those as Python
  predicate objects, not through TaskSpec's eval_fn_kwargs), team tasks (reward_to = "team").
- CanSeeTile: Water, Grass, Scrub and Stone only (the materials both have by that name).
- AttainSkill / GainExperience: Melee, Range, Mage and Fishing only; the skills gain XP from
  different actions in the two games (nmmo 2.1.1's Fishing needs its Profession system, not in
  this config), so progress differs while the work does not.
- CountEvent / ScoreHit / DefeatEntity: the same event names; ours count since the task began,
  nmmo 2.1.1's over the whole log (the same here: immortal agents never respawn); our hits can
  miss, 2.1.1's land; DefeatEntity's level is the victim's combat level (2.1.1: its best attack
  skill). With random moves and no attacks, combat events stay at 0 on both sides.
- SeizeTile / SeizeCenter / SeizeQuadCenter: ours track any tile; nmmo 2.1.1 tracks only tiles a
  mini-game marks as seize targets (none in its default game), so its tasks always take the
  "approach" branch. Same defaults (progress_bonus 0.3, seize_bonus 0.3 for the centres).
- CanSeeAgent / CanSeeGroup: ours is "within PLAYER_VISION_RADIUS (Chebyshev)"; nmmo 2.1.1 looks
  for the id in the agent's observed entities (capped at PLAYER_N_OBS = 100).
- nmmo 2.1.1 stops evaluating a task ("task" type) once it completes; ours evaluates every
  task every tick. The arguments are chosen so that few complete; the completed counts are printed.
- The maps, spawns and trajectories differ (different generators): the same specs, not the same
  game; mean progress is printed for a rough check only.

    python benchmarks/bench_tasks_reference.py                      # 20 warm-up + 200 timed ticks, 3 repeats
    python benchmarks/bench_tasks_reference.py --ticks 50 --repeats 1   # a quick look
    python benchmarks/reference.py --tasks                          # build the reference if needed, then this
"""

from __future__ import annotations

import argparse
import statistics
import sys
from itertools import zip_longest
from pathlib import Path
from time import perf_counter

import numpy as np

import nmmo
from nmmo import config as cfg
from nmmo.tasks import TaskState, task_set_from_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference  # noqa: E402  (benchmarks/reference.py: builds and drives nmmo 2.1.1)

AGENTS = 128
TARGET_RATIO = 20.0
CAVEATS = (
    "ours = TaskState.evaluate + our event log writers; nmmo 2.1.1 = Env._compute_rewards (GameState + "
    "task.compute_rewards), its event log inside its step, not counted",
    "left out: item / gold / market predicates (not in our game), Success, EquipmentLevel and AttainCombatLevel "
    "(ours only), combinations and team tasks",
    "CanSeeTile: Water, Grass, Scrub, Stone only; AttainSkill / GainExperience: Melee, Range, Mage, Fishing only "
    "(XP comes from different actions in the two games)",
    "events count from the task's start (ours) vs the whole log (2.1.1): the same with immortal agents; "
    "combat events stay 0 (random moves, no attacks)",
    "SeizeTile / SeizeCenter / SeizeQuadCenter: nmmo 2.1.1 tracks no seize targets in its default game "
    "(always the approach branch); ours tracks any tile",
    "CanSeeAgent / CanSeeGroup: ours by vision radius, 2.1.1 by the observed entity ids (at most 100)",
    "nmmo 2.1.1 skips completed 'task'-type tasks, ours evaluates all: completed counts printed (they differ "
    "where the games do: spawns, which skills gain XP)",
    "different maps and trajectories: the same specs, not the same game",
)


def _entry(predicate: str, args: dict | None = None, kind: str = "task", hold: int = 0, subject: str = "") -> dict:
    """`subject`: another subject than the agent (StayAlive, AllDead: nmmo 2.1.1's "target")."""
    return {"predicate": predicate, "args": dict(args or {}), "type": kind, "hold": hold, "subject": subject}


def _variants() -> list[list[dict]]:
    """Each predicate's variants (different numbers, targets or task types)."""
    e = _entry
    skills = ("Melee", "Range", "Mage", "Fishing")
    events = ("EAT_FOOD", "DRINK_WATER", "GO_FARTHEST", "SCORE_HIT", "PLAYER_KILL", "LEVEL_UP")
    foes = ("all_foes", "left_team", "right_team")
    leaders = ("left_team_leader", "right_team_leader")
    tiles = ((40, 40), (40, 120), (120, 40), (120, 120), (60, 90), (90, 60), (30, 80), (80, 30), (100, 130),
             (130, 100))
    return [
        [e("TickGE", {"num_tick": n}) for n in (300, 400, 500, 600, 700, 800, 900, 1000)],
        [e("StayAlive", kind="ongoing"), e("StayAlive", kind="hold", hold=500),
         e("StayAlive", kind="ongoing", subject="left_team"), e("AllDead", subject="left_team"),
         e("AllDead", subject="right_team")],
        [e("ProtectLeader", {"target_protect": "my_team_leader", "target_destroy": "all_foes"})],
        [e("CheckAgentStatus", {"target": t, "status": "alive"}, "ongoing") for t in (*foes, *leaders)]
        + [e("CheckAgentStatus", {"target": t, "status": "dead"}) for t in foes],
        [e("OccupyTile", {"row": r, "col": c}) for r, c in tiles],
        [e("CanSeeTile", {"tile_type": t}, "hold", h) for h in (300, 400, 500) for t in ("Water", "Grass", "Scrub",
                                                                                         "Stone")],
        [e("CanSeeAgent", {"target": t}, *kh) for kh in (("ongoing", 0), ("hold", 300), ("hold", 400))
         for t in leaders],
        [e("CanSeeGroup", {"target": t}, *kh) for kh in (("ongoing", 0), ("hold", 300), ("hold", 400)) for t in foes],
        [e("DistanceTraveled", {"dist": d}) for d in (40, 60, 80, 100, 150, 200, 250, 300, 400, 500)],
        [e("AttainSkill", {"skill": s, "level": lv, "num_agent": 1}) for lv in (3, 5, 10) for s in skills],
        [e("GainExperience", {"skill": s, "experience": x, "num_agent": 1}) for x in (500, 2000, 10000)
         for s in skills],
        [e("CountEvent", {"event": ev, "N": n}) for n in (100, 200, 400) for ev in events],
        [e("ScoreHit", {"combat_style": s, "N": n}) for n in (5, 10, 20) for s in skills[:3]],
        [e("DefeatEntity", {"agent_type": t, "level": lv, "num_agent": n}) for n in (1, 3) for lv in (0, 2)
         for t in ("player", "npc")],
        [e("ProgressTowardCenter"), e("ProgressTowardCenter", kind="ongoing")],
        [e("AllMembersWithinRange", {"dist": d}, "ongoing") for d in (4, 8, 16, 32)],
        [e("SeizeTile", {"row": r, "col": c, "num_ticks": n}) for n in (50, 100) for r, c in tiles[:3]],
        [e("SeizeCenter", {"num_ticks": n}) for n in (50, 100, 200)],
        [e("SeizeQuadCenter", {"num_ticks": n, "quadrant": q}) for n in (100, 200)
         for q in ("first", "second", "third", "fourth")],
    ]


def spec_entries(n: int = AGENTS) -> list[dict]:
    """`n` distinct specs, taken round-robin from each predicate's variants."""
    mixed = [entry for row in zip_longest(*_variants()) for entry in row if entry is not None]
    if len(mixed) < n:
        raise ValueError(f"only {len(mixed)} distinct specs, asked for {n}")
    return mixed[:n]


def ours_task_set(entries: list[dict]):
    """Our task set (the TOML tables a file would hold) from the entries."""
    tables = []
    for i, entry in enumerate(entries):
        table = {"name": f"t{i:03d}_{entry['predicate']}", "predicate": entry["predicate"], "args": entry["args"],
                 "type": entry["type"]}
        if entry["type"] == "hold":
            table["hold"] = entry["hold"]
        if entry["subject"]:
            table["subject"] = entry["subject"]
        tables.append(table)
    return task_set_from_data({"name": "beside_nmmo_2.1.1", "task": tables}, "<bench_tasks_reference>")


def reference_specs(entries: list[dict]) -> list[dict]:
    """nmmo 2.1.1's specs (`benchmarks/ref_tasks_driver.py`'s JSON entries) from the entries."""
    classes = {"task": "Task", "ongoing": "OngoingTask", "hold": "HoldDurationTask"}
    return [{"predicate": entry["predicate"],
             "kwargs": {**entry["args"], **({"target": entry["subject"]} if entry["subject"] else {})},
             "task_cls": classes[entry["type"]], "hold": entry["hold"]} for entry in entries]


def _random_moves(obs, rng: np.random.Generator) -> np.ndarray:
    """A random valid move per slot from its mask (bench_env's draw), no attacks."""
    rows = obs.move_mask.shape[0]
    actions = np.full((rows, 3), -1, dtype=np.int64)
    actions[:, 0] = np.argmax(rng.random((rows, 5)) * obs.move_mask, axis=1)
    return actions


def time_ours(entries: list[dict], ticks: int, warmup: int, seed: int) -> dict:
    """Our side of one repeat: per-tick ms of tasks + events, events alone, and the step."""
    config = cfg.Default().update({"PLAYER_N": AGENTS, "PLAYER_TEAM_SIZE": 1, "IMMORTAL": True, "MAP_N": 1})
    env = nmmo.Env(config, seed=seed)
    env.reset()
    state = TaskState(ours_task_set(entries), config, assign="agent")
    state.reset(env.realm.state, assignment=np.arange(AGENTS))
    rng = np.random.default_rng(seed)
    obs, step_s = env._obs, 0.0
    events0 = tasks0 = 0.0
    for tick in range(warmup + ticks):
        if tick == warmup:
            events0, tasks0, step_s = env.realm.state.event_seconds, state.seconds, 0.0
        start = perf_counter()
        out = env.step_arrays(_random_moves(obs, rng))
        step_s += perf_counter() - start
        step = state.evaluate(env.realm.state)
        obs = out.obs
    events_s = env.realm.state.event_seconds - events0
    tasks_s = state.seconds - tasks0
    return {"tasks_ms": 1e3 * (events_s + tasks_s) / ticks, "events_ms": 1e3 * events_s / ticks,
            "evaluate_ms": 1e3 * tasks_s / ticks, "step_ms": 1e3 * step_s / ticks,
            "completed": int(step.completed.sum()), "mean_progress": float(step.progress.mean()),
            "completed_specs": [int(i) for i in np.flatnonzero(step.completed)],  # slot i holds spec i
            "alive": int(env.realm.state.entities.alive[:AGENTS].sum()), "tasks": len(state.tasks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=200, help="timed ticks per repeat")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reference-python", default=None,
                        help="nmmo 2.1.1's interpreter (default: build or reuse it with benchmarks/reference.py)")
    parser.add_argument("--list", action="store_true", help="print the specs and exit")
    args = parser.parse_args()

    entries = spec_entries(AGENTS)
    ours_set = ours_task_set(entries)
    if len({(spec.node, spec.subject, spec.kind, spec.hold) for spec in ours_set}) != AGENTS:
        raise SystemExit("the specs are not distinct")
    if args.list:
        for i, entry in enumerate(entries):
            print(i, entry)
        return
    python = args.reference_python or reference.ensure(log=lambda line: print(line, file=sys.stderr, flush=True))
    theirs_specs = reference_specs(entries)

    ours, theirs = [], []
    for r in range(args.repeats):
        ours.append(time_ours(entries, args.ticks, args.warmup, args.seed))
        theirs.append(reference.task_timing(theirs_specs, args.ticks, args.warmup, args.seed, python))
        print(f"repeat {r + 1}/{args.repeats}: ours {ours[-1]['tasks_ms']:.3f} ms/tick, nmmo 2.1.1 "
              f"{theirs[-1]['tasks_ms']:.2f} ms/tick", file=sys.stderr, flush=True)
    report(ours, theirs, args)


def report(ours: list[dict], theirs: list[dict], args) -> None:
    from rich.console import Console
    from rich.table import Table

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(row[key] for row in rows)

    table = Table(title=f"Task evaluation per tick, {AGENTS} agents, {ours[0]['tasks']} distinct agent tasks, "
                        f"{args.warmup} warm-up + {args.ticks} timed ticks")
    for column in ("repeat", "ours ms/tick\n(evaluate + events)", "of which\nevents", "nmmo 2.1.1 ms/tick\n"
                   "(_compute_rewards)", "of which\nGameState", "ratio\ntheirs / ours", "ours step\nms",
                   "2.1.1 step ms\n(tasks incl.)"):
        table.add_column(column, justify="right")
    rows = [(str(i + 1), o, t) for i, (o, t) in enumerate(zip(ours, theirs, strict=True))]
    for label, o, t in rows:
        table.add_row(label, f"{o['tasks_ms']:.3f}", f"{o['events_ms']:.3f}", f"{t['tasks_ms']:.2f}",
                      f"{t['gamestate_ms']:.2f}", f"{t['tasks_ms'] / o['tasks_ms']:.1f}x", f"{o['step_ms']:.2f}",
                      f"{t['step_ms']:.1f}")
    ratio = med(theirs, "tasks_ms") / med(ours, "tasks_ms")
    table.add_row("median", f"{med(ours, 'tasks_ms'):.3f}", f"{med(ours, 'events_ms'):.3f}",
                  f"{med(theirs, 'tasks_ms'):.2f}", f"{med(theirs, 'gamestate_ms'):.2f}", f"{ratio:.1f}x",
                  f"{med(ours, 'step_ms'):.2f}", f"{med(theirs, 'step_ms'):.1f}", style="bold")
    console = Console(width=140)
    console.print(table)
    o, t = ours[-1], theirs[-1]
    console.print(f"last repeat, end of run: completed tasks ours {o['completed']} / nmmo 2.1.1 {t['completed']}; "
                  f"mean progress ours {o['mean_progress']:.3f} / nmmo 2.1.1 {t['mean_progress']:.3f}; live agents "
                  f"ours {o['alive']} / nmmo 2.1.1 {t['alive']} (immortal: {t['immortal']})")
    names = [spec.name for spec in ours_task_set(spec_entries(AGENTS))]
    ours_done, theirs_done = set(o["completed_specs"]), set(t["completed_specs"])
    for side, only in (("ours", ours_done - theirs_done), ("nmmo 2.1.1", theirs_done - ours_done)):
        if only:
            console.print(f"  completed on {side}'s side only: {', '.join(names[i] for i in sorted(only))}")
    verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
    console.print(f"target: ours >= {TARGET_RATIO:.0f}x less time per tick: {verdict} (median ratio {ratio:.1f}x)")
    console.print("caveats:")
    for line in CAVEATS:
        console.print(f"  - {line}")


if __name__ == "__main__":
    main()
