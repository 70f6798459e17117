"""How fast task files over the caps are refused, and how loading grows with the number of tasks.

Refusals: a file one byte over MAX_TASK_FILE_BYTES (sparse: refused by its size), MAX_TASKS + 1
tasks in TOML and in JSON, 100k nested arrays in TOML and JSON, a dotted key of 100k parts. Loads:
1k, 4k and 16k distinct tasks (a predicate with arguments and an ``and`` of two, alternately) in
TOML and JSON, with the ratios of consecutive sizes; the acceptance is at most 5x the time for 4x
the tasks (before the caps, the duplicate-name check made it quadratic: 40k tasks took about 30 s).
Each time is the best of `--repeats` (loads of fewer tasks get more tries, at the same cost).
Prints a table, then one JSON line.

    python benchmarks/bench_task_files.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nmmo.tasks import load_task_set
from nmmo.tasks.spec import MAX_TASK_FILE_BYTES, MAX_TASKS

SIZES = (1_000, 4_000, 16_000)
DEEP = 100_000


def best(repeats: int, action: Callable[[], object]) -> float:
    """The fastest of `repeats` runs of `action`, seconds, each from a collected heap (the garbage
    of the run before would otherwise tilt the next one's collections)."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def refusing(path: Path) -> Callable[[], None]:
    def action() -> None:
        try:
            load_task_set(path)
        except ValueError:
            return
        raise SystemExit(f"{path} was not refused")

    return action


def task(i: int) -> dict:
    if i % 2:
        return {"name": f"eat_{i}", "predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": i % 50 + 1},
                "tags": ["foraging"]}
    return {"name": f"both_{i}", "and": [{"predicate": "CountEvent", "args": {"event": "DRINK_WATER", "N": 3}},
                                         {"predicate": "DistanceTraveled", "args": {"dist": i % 32 + 1}}]}


def toml_text(tasks: list[dict]) -> str:
    """`tasks` as TOML (json.dumps writes valid TOML strings, numbers and inline arrays here)."""
    lines = []
    for entry in tasks:
        lines.append("[[task]]")
        for key, value in entry.items():
            lines.append(f"{key} = {inline(value)}")
    return "\n".join(lines) + "\n"


def inline(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {inline(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(inline(item) for item in value) + "]"
    return json.dumps(value)


def over_cap_files(folder: Path) -> dict[str, Path]:
    files = {}
    files["size"] = folder / "size.toml"
    with files["size"].open("wb") as handle:
        handle.truncate(MAX_TASK_FILE_BYTES + 1)
    files["count_toml"] = folder / "count.toml"
    files["count_toml"].write_text('[[task]]\npredicate = "TickGE"\n' * (MAX_TASKS + 1))
    files["count_json"] = folder / "count.json"
    files["count_json"].write_text(json.dumps({"task": [{"predicate": "TickGE"}] * (MAX_TASKS + 1)}))
    deep = "[" * DEEP + "]" * DEEP
    files["deep_toml"] = folder / "deep.toml"
    files["deep_toml"].write_text(f'[[task]]\npredicate = "TickGE"\ntags = {deep}\n')
    files["deep_json"] = folder / "deep.json"
    files["deep_json"].write_text('{"task": [{"predicate": "TickGE", "tags": ' + deep + "}]}")
    files["dotted_key"] = folder / "dotted.toml"
    files["dotted_key"].write_text(f'[[task]]\npredicate = "TickGE"\nargs.{".".join(["a"] * DEEP)} = 1\n')
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    out: dict[str, dict[str, float]] = {"refuse_s": {}, "load_s": {}, "ratio": {}}
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        for name, path in over_cap_files(folder).items():
            out["refuse_s"][name] = best(args.repeats, refusing(path))
            print(f"refuse {name:<11} {path.stat().st_size:>10,} bytes  {out['refuse_s'][name]:7.3f} s")
        for kind in ("toml", "json"):
            for n in SIZES:
                tasks = [task(i) for i in range(n)]
                path = folder / f"tasks_{n}.{kind}"
                path.write_text(toml_text(tasks) if kind == "toml" else json.dumps({"task": tasks}))
                repeats = max(args.repeats, args.repeats * SIZES[-1] // n // 4)  # the small ones are cheap: more tries
                seconds = best(repeats, lambda path=path: load_task_set(path))
                out["load_s"][f"{kind}_{n}"] = seconds
                print(f"load   {kind} {n:>6,} tasks  {path.stat().st_size:>10,} bytes  {seconds:7.3f} s  "
                      f"{seconds / n * 1e6:5.1f} us/task")
            for small, large in zip(SIZES, SIZES[1:], strict=False):
                ratio = out["load_s"][f"{kind}_{large}"] / out["load_s"][f"{kind}_{small}"]
                out["ratio"][f"{kind}_{large}/{small}"] = ratio
                print(f"ratio  {kind} {large:,}/{small:,} tasks: {ratio:.2f} (acceptance: <= 5)")
    out["worst_refuse_s"] = max(out["refuse_s"].values())
    out["worst_ratio"] = max(out["ratio"].values())
    print(json.dumps({key: {k: round(v, 4) for k, v in value.items()} if isinstance(value, dict) else round(value, 4)
                      for key, value in out.items()}))


if __name__ == "__main__":
    main()
