import json

import pytest

from nmmo.cli import main
from nmmo.tasks import load_task_set
from nmmo.tasks.events import EVENT_NAMES
from nmmo.tasks.registry import known, lookup

GOOD = """name = "mine"
[[task]]
name = "eat_5"
predicate = "CountEvent"
args = { event = "EAT_FOOD", N = 5 }
[[task]]
name = "eat_and_explore"
and = [
    { predicate = "CountEvent", args = { event = "EAT_FOOD" } },
    { predicate = "DistanceTraveled", args = { dist = 16 } },
]
weight = 2.0
"""


def test_tasks_lists_the_registry_and_checks_files_as_loading_does(tmp_path, capsys):
    # list: every predicate of the registry, each argument with its type, range or choices and default
    assert main(["tasks", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in listed["predicates"]] == known()
    count = next(p for p in listed["predicates"] if p["name"] == "CountEvent")
    assert [a["name"] for a in count["args"]] == [param.name for param in lookup("CountEvent").params]
    event, n = count["args"]
    assert event["type"] == "choice" and event["default"] is None and "EAT_FOOD" in event["accepts"]
    assert n == {"name": "N", "type": "int", "accepts": [1, 2**31 - 1], "default": 1}
    assert [e["name"] for e in listed["events"]] == list(EVENT_NAMES)
    assert "foraging" in listed["shipped_sets"]
    assert main(["tasks", "list"]) == 0
    assert "SeizeQuadCenter" in capsys.readouterr().out

    # check: a good file's specs, as loaded
    good = tmp_path / "mine.toml"
    good.write_text(GOOD)
    assert main(["tasks", "check", str(good)]) == 0
    out = capsys.readouterr().out
    assert "2 valid tasks" in out and "eat_and_explore" in out and "and(CountEvent(" in out
    assert main(["tasks", "check", str(good), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["task"] == [spec.to_dict() for spec in load_task_set(good)]

    # a bad file: loading's own error (the file, the task, the field), exit status 2, nothing printed but it
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace('dist = 16', 'dist = "far"'))
    with pytest.raises(ValueError) as loading:
        load_task_set(bad)
    assert main(["tasks", "check", str(bad)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error: ") and str(loading.value) in out
    assert "task 1 ('eat_and_explore'): field 'and[1].args.dist'" in out
    bad.write_text(GOOD.replace("weight = 2.0", "weight = 0").replace('"eat_5"', '"eat_5"\nweight = 0'))  # as envs do
    assert main(["tasks", "check", str(bad)]) == 2
    assert "every task has weight 0" in capsys.readouterr().out
