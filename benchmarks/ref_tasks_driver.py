"""Task evaluation time of the published nmmo 2.1.1, one agent task per agent (its half of
`benchmarks/bench_tasks_reference.py`).

Runs under the REFERENCE interpreter and imports only nmmo 2.1.1, numpy and the standard library
(plus `reference_driver.py` beside it, for the same config and random moves as
`benchmarks/reference.py --throughput`). Run it from a directory outside any checkout, so that
`import nmmo` finds nmmo 2.1.1 (`benchmarks/reference.py`'s `task_timing` does):

    cd "$(mktemp -d)" && REF_PYTHON /path/to/benchmarks/ref_tasks_driver.py SPECS.json --maps DIR

SPECS.json: ``{"specs": [{"predicate": "CountEvent", "kwargs": {"event": "EAT_FOOD", "N": 50},
"task_cls": "Task", "hold": 0}, ...]}``, one spec per agent in agent-id order. A predicate is a
function of nmmo 2.1.1's `nmmo.task.base_predicates`; ``skill`` and ``combat_style`` arguments name a
class of `nmmo.systems.skill` (Melee, Fishing, ...), ``tile_type`` one of `nmmo.lib.material`
(Water, Grass, ...); ``target*`` keywords (left_team, all_foes, my_team_leader, ...) are translated
by nmmo 2.1.1's own `make_task_from_spec`; task_cls is Task, OngoingTask or HoldDurationTask (with
``hold`` ticks). The tasks are given at reset (`env.reset(make_task_fn=...)`), agent i + 1 holding
spec i (`make_task_from_spec(range(1, N + 1), specs)`: a one-agent team each).

Timed with code timers: every `env.step` (context), and inside it `Env._compute_rewards`, where
nmmo 2.1.1 evaluates tasks (the GameState snapshot of the datastores, then `task.compute_rewards`
of each task), wrapped on the instance, not edited; the GameState generation inside it is also
reported apart. nmmo 2.1.1's event log is written during `realm.step`, so it is in its step, not
in its task figure. Prints one JSON object on the last line of stdout.
"""

import argparse
import json
import time

import numpy as np
from nmmo.lib import material
from nmmo.systems import skill
from nmmo.task import base_predicates, task_api
from nmmo.task.task_spec import TaskSpec, make_task_from_spec
from reference_driver import make_config, random_moves  # beside this file; nmmo 2.1.1 + numpy only

import nmmo

CLASS_ARGS = {"skill": skill, "combat_style": skill, "tile_type": material}


def build_specs(raw):
    specs = []
    for entry in raw:
        kwargs = {key: getattr(CLASS_ARGS[key], value) if key in CLASS_ARGS else value
                  for key, value in entry["kwargs"].items()}
        task_cls = getattr(task_api, entry.get("task_cls", "Task"))
        task_kwargs = {"hold_duration": int(entry["hold"])} if task_cls is task_api.HoldDurationTask else {}
        specs.append(TaskSpec(eval_fn=getattr(base_predicates, entry["predicate"]), eval_fn_kwargs=kwargs,
                              task_cls=task_cls, task_kwargs=task_kwargs))
    return specs


class Timed:
    """Wraps a bound method, accumulating its wall time."""

    def __init__(self, method):
        self.method, self.seconds, self.calls = method, 0.0, 0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.method(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("specs", help="JSON file of specs (see above)")
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--maps", required=True, help="map cache directory (absolute)")
    args = parser.parse_args()
    if nmmo.__version__ != "2.1.1":
        raise SystemExit(f"this is nmmo {nmmo.__version__} at {nmmo.__file__}, not nmmo 2.1.1")
    with open(args.specs) as handle:
        raw = json.load(handle)["specs"]

    config = make_config("medium", args.maps)
    agents = list(range(1, config.PLAYER_N + 1))
    if len(raw) != len(agents):
        raise SystemExit(f"{len(raw)} specs for {len(agents)} agents: give one per agent")
    specs = build_specs(raw)
    env = nmmo.Env(config, seed=args.seed)
    obs, _ = env.reset(seed=args.seed, make_task_fn=lambda: make_task_from_spec(agents, specs))
    if len(env.tasks) != len(agents) or len({task.name for task in env.tasks}) != len(agents):
        raise SystemExit(f"expected {len(agents)} distinct tasks, got {len(env.tasks)} "
                         f"({len({task.name for task in env.tasks})} distinct)")
    rewards_timer = env._compute_rewards = Timed(env._compute_rewards)  # the instance's, shadowing the method
    generate_timer = env._gamestate_generator.generate = Timed(env._gamestate_generator.generate)
    rng = np.random.default_rng(args.seed)
    step_s = 0.0
    for tick in range(args.warmup + args.ticks):
        if tick == args.warmup:
            step_s, rewards_timer.seconds, generate_timer.seconds = 0.0, 0.0, 0.0
        actions = random_moves(obs, rng)  # not timed
        start = time.perf_counter()
        obs, *_ = env.step(actions)
        step_s += time.perf_counter() - start
    ticks = args.ticks
    out = {
        "nmmo": nmmo.__version__, "agents": len(agents), "tasks": len(env.tasks), "ticks": ticks,
        "step_ms": 1e3 * step_s / ticks,
        "tasks_ms": 1e3 * rewards_timer.seconds / ticks,
        "gamestate_ms": 1e3 * generate_timer.seconds / ticks,
        "completed": sum(task.completed for task in env.tasks),
        "completed_specs": [i for i, task in enumerate(env.tasks) if task.completed],  # spec i: agent i + 1
        "mean_progress": float(np.mean([task.progress for task in env.tasks])),
        "alive": len(env.realm.players),
        "immortal": bool(config.IMMORTAL),
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
