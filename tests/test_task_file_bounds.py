"""Task files are bounded before they are parsed (issue 49): size, task count, nesting depth and
integer size have documented caps, every number is finite, and every refusal is a ValueError
naming the file, the task and the field, never a hang, a RecursionError or an OverflowError. The
timings (refusal under 1 s, loading linear in the tasks) are in benchmarks/bench_task_files.py."""

import json
from pathlib import Path

import numpy as np
import pytest

from evaluation.episode import EpisodeResult
from evaluation.faults import Faults
from evaluation.journal import Journal
from evaluation.metrics import METRICS
from evaluation.tournament import run_tournament
from nmmo.tasks import load_task_set, spec, task_set_from_data
from nmmo.tasks.spec import MAX_DEPTH, MAX_TASK_FILE_BYTES, MAX_TASKS, parse_node

ROOT = Path(__file__).resolve().parent.parent
OK = '[[task]]\nname = "ok"\npredicate = "TickGE"\n\n'
HUGE = "9" * 400
DEEP = 100_000


def refused(path: Path, *parts: str) -> str:
    """The message of loading `path`, checked to be a ValueError holding the file and `parts`."""
    with pytest.raises(ValueError) as info:
        load_task_set(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and all(part in message for part in parts), message
    return message


def write(tmp_path: Path, text: str, name: str = "tasks.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_file_over_the_size_cap_is_refused_by_its_size(tmp_path):
    path = tmp_path / "big.toml"
    with path.open("wb") as handle:  # sparse: refused by stat, never read
        handle.truncate(MAX_TASK_FILE_BYTES + 1)
    refused(path, f"{MAX_TASK_FILE_BYTES + 1} bytes", "MAX_TASK_FILE_BYTES")


def test_more_tasks_than_the_cap_are_refused(tmp_path):
    toml = write(tmp_path, '[[task]]\npredicate = "TickGE"\n' * (MAX_TASKS + 1))  # counted before parsing
    refused(toml, f"{MAX_TASKS + 1} [[task]] tables", "MAX_TASKS")
    path = write(tmp_path, json.dumps({"task": [{"predicate": "TickGE"}] * (MAX_TASKS + 1)}), "tasks.json")
    refused(path, "field 'task'", f"{MAX_TASKS + 1} tasks", "MAX_TASKS")
    with pytest.raises(ValueError, match="MAX_TASKS"):
        task_set_from_data([{"predicate": "TickGE"}] * (MAX_TASKS + 1))


@pytest.mark.parametrize(("body", "field", "says"), [
    ('sum = [{ predicate = "TickGE" }]\nweights = [nan]', "weights[0]", "nan: numbers in task files are finite"),
    ('sum = [{ predicate = "TickGE" }, { predicate = "TickGE" }]\nweights = [1, -inf]', "weights[1]", "-inf"),
    ('sum = [{ predicate = "TickGE" }]\nweights = [1e999]', "weights[0]", "inf"),  # overflows to inf
    ('predicate = "TickGE"\nreward = inf', "reward", "finite"),
    ('predicate = "TickGE"\nweight = nan', "weight", "finite"),
    ('predicate = "SeizeCenter"\nargs = { progress_bonus = nan }', "args.progress_bonus", "finite"),
    ('predicate = "TickGE"\nreward = 1e300', "reward", "<= 1e+06"),
    ('sum = [{ predicate = "TickGE" }]\nweights = [1e7]', "weights", "within +-1e+06"),
])
def test_every_number_is_finite_and_bounded(tmp_path, body, field, says):
    refused(write(tmp_path, f'{OK}[[task]]\nname = "bad"\n{body}\n'), "task 1 ('bad')", f"field '{field}'", says)


def test_json_nan_and_infinity_are_refused(tmp_path):
    for word in ("NaN", "Infinity", "-Infinity"):
        text = '{"task": [{"name": "s", "sum": [{"predicate": "TickGE"}], "weights": [1, WORD]}]}'
        path = write(tmp_path, text.replace("WORD", word), "tasks.json")
        refused(path, "task 0 ('s')", "field 'weights[1]'", "finite")


@pytest.mark.parametrize(("body", "field"), [
    (f'predicate = "CountEvent"\nargs = {{ event = "EAT_FOOD", N = {HUGE} }}', "args.N"),
    (f'predicate = "TickGE"\ntype = "hold"\nhold = {HUGE}', "hold"),
    (f'predicate = "TickGE"\nreward = -{HUGE}', "reward"),
    (f'sum = [{{ predicate = "TickGE" }}]\nweights = [{HUGE}]', "weights[0]"),
    (f'at_least = {HUGE}\nof = [{{ predicate = "TickGE" }}]', "at_least"),
])
def test_huge_integers_name_the_field(tmp_path, body, field):
    refused(write(tmp_path, f'{OK}[[task]]\nname = "big"\n{body}\n'), "task 1 ('big')", f"field '{field}'",
            "an integer of 1329 bits", "MAX_INT")


def test_integers_past_the_parsers_digit_limit_name_the_file(tmp_path):
    path = write(tmp_path, '{"task": [{"predicate": "TickGE", "reward": ' + "9" * 5000 + "}]}", "tasks.json")
    refused(path, "not valid JSON", "4300 digits")
    refused(write(tmp_path, f'[[task]]\npredicate = "TickGE"\nreward = {"9" * 5000}\n'), "not valid TOML")


def test_parse_node_refuses_huge_and_non_finite_numbers_itself():
    """Nodes parsed outside a file (a predicate's rewrite) get the same checks: ValueError, no OverflowError."""

    def fail(where, message):
        return ValueError(f"field {where!r}: {message}")

    with pytest.raises(ValueError, match=r"field 'args.N': expected a value in \[1, "):
        parse_node({"predicate": "CountEvent", "args": {"event": "EAT_FOOD", "N": 10**400}}, fail)
    with pytest.raises(ValueError, match="field 'weights': expected 1 numbers, each finite"):
        parse_node({"sum": [{"predicate": "TickGE"}], "weights": [float("nan")]}, fail)


def test_nesting_past_the_parsers_limit_names_file_task_and_field(tmp_path):
    """100k nested arrays make tomllib and json raise RecursionError; it arrives as a ValueError."""
    deep = "[" * DEEP + "]" * DEEP
    toml = write(tmp_path, f'{OK}[[task]]\nname = "deep"\npredicate = "TickGE"\ntags = {deep}\n')
    refused(toml, "task 1, field 'tags', line 8", f"nested more than {MAX_DEPTH} deep", "MAX_DEPTH")
    tasks = [{"name": 'a "[[[" string', "predicate": "TickGE"}, {"name": "deep", "predicate": "TickGE", "tags": 0}]
    text = json.dumps({"task": tasks}, indent=1).replace('"tags": 0', f'"tags": {deep}')
    path = write(tmp_path, text, "tasks.json")
    refused(path, "task 1, field 'tags', line 10", "MAX_DEPTH")
    inline = write(tmp_path, f'[[task]]\npredicate = "TickGE"\nargs = {{ x = {"{a = " * DEEP}1{"}" * DEEP} }}\n')
    refused(inline, "task 0, field 'args', line 3", "MAX_DEPTH")


def test_a_long_dotted_key_is_refused_before_tomllib_reads_it(tmp_path):
    """tomllib is quadratic in a dotted key's parts (10k parts: 2 s; 40k: 46 s)."""
    path = write(tmp_path, f'{OK}[[task]]\npredicate = "TickGE"\nargs.{".".join(["a"] * DEEP)} = 1\n')
    refused(path, "task 1, field 'args.a.a.", "line 7", f"dotted key of more than {MAX_DEPTH} parts")


def test_nesting_past_the_cap_names_the_field_and_the_cap_itself_loads(tmp_path):
    def nots(n: int) -> dict:
        node = {"predicate": "TickGE"}
        for _ in range(n):
            node = {"not": node}
        return node

    assert len(task_set_from_data([nots(MAX_DEPTH - 1)])) == 1  # the innermost table is MAX_DEPTH deep
    path = write(tmp_path, json.dumps({"task": [{"name": "n", **nots(MAX_DEPTH)}]}), "tasks.json")
    refused(path, "task 0 ('n')", "field '" + ".".join(["not"] * MAX_DEPTH) + "'", "MAX_DEPTH")
    table: list = []
    for _ in range(DEEP):  # far past any recursion limit, refused by a walk that does not recurse
        table = [table]
    with pytest.raises(ValueError, match=r"task 0 \('task0'\): field 'tags\[0\]\[0\]"):
        task_set_from_data([{"predicate": "TickGE", "tags": table}])


def test_duplicate_names_are_still_refused(tmp_path):
    tasks = [{"name": f"t{i}", "predicate": "TickGE"} for i in range(5000)] + [{"name": "t17", "predicate": "TickGE"}]
    refused(write(tmp_path, json.dumps({"task": tasks}), "tasks.json"), "task 5000 ('t17')", "field 'name'",
            "task 17 has it too")


def test_the_set_name_and_description_are_strings(tmp_path):
    refused(write(tmp_path, f"name = nan\n{OK}"), "field 'name': expected a string")
    refused(write(tmp_path, f"description = [1]\n{OK}"), "field 'description': expected a string")


def test_a_task_reward_tournament_on_a_nan_weight_stops_before_it_plays(tmp_path):
    """Before the caps, it played to the end and died writing its results."""
    path = write(tmp_path, '[[task]]\nname = "s"\nsum = [{ predicate = "TickGE" }]\nweights = [nan]\n')
    played = []
    with pytest.raises(ValueError, match=r"task 0 \('s'\): field 'weights\[0\]': nan"):
        run_tournament("small_maps", ["scripted:Forage"], episodes=2, ticks=8, workers=0, progress=False,
                       metric="task_reward", tasks=str(path), journal=tmp_path / "out" / "episodes.jsonl",
                       on_update=played.append)
    assert not played and not (tmp_path / "out").exists()


def test_the_journal_refuses_a_non_finite_result_by_name(tmp_path):
    """Second line: a NaN that reached an episode's results stops at the journal with a message
    naming it, not JSON's "Out of range float values"."""
    journal = Journal(tmp_path / "episodes.jsonl", {"policies": ["a"]})
    lifetimes = np.zeros((2, len(METRICS)))
    tasks = np.array([[0, 0.5, 0, np.nan], [0, 1, 1, 1.0]])
    result = EpisodeResult(3, 0, 0, 10, lifetimes, np.zeros(2, np.int64), [Faults()], tasks=tasks)
    with pytest.raises(ValueError, match="episode 3: its tasks hold a NaN or an infinity"):
        journal.append(result)
    assert len(journal.path.read_text().splitlines()) == 1  # nothing recorded but the header


def test_the_caps_are_documented():
    text = (ROOT / "docs" / "tasks.md").read_text()
    assert f"{MAX_TASK_FILE_BYTES // 2**20} MiB" in text and f"{MAX_TASKS:,}" in text
    assert f"{MAX_DEPTH} deep" in text and "2**53" in text and "NaN" in text
    assert spec.MAX_INT == 2**53
