"""`nmmo tasks`: what a task file may say, and whether one says it right, without running a world.

``nmmo tasks list`` prints the predicates a task file may name (from the registry itself, plug-ins
included, so the list is never a hand-kept copy), each argument's type, range or choices and
default, the events ``CountEvent`` counts, and the shipped sets. ``nmmo tasks check FILE`` loads a
set exactly as an env does (`nmmo.tasks.TaskSampler`: `load_task_set` and the weights' check), so it
fails with the same error, exit status 2, and prints the specs it read.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from nmmo.tasks.core import REQUIRED, SUBJECTS, Param, Predicate


def describe_param(param: Param) -> dict[str, Any]:
    """One argument as data: its name, type, what it accepts and its default (None: required)."""
    accepts: list[str] | list[float]
    if param.kind in ("int", "float"):
        accepts = [param.low, param.high]
    else:
        accepts = list(SUBJECTS if param.kind == "group" else param.choices)
    return {"name": param.name, "type": "subject" if param.kind == "group" else param.kind, "accepts": accepts,
            "default": None if param.default is REQUIRED else param.default}


def describe_predicate(cls: type[Predicate]) -> dict[str, Any]:
    """A predicate as data: name, the first paragraph of its docstring, its arguments in order."""
    doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    return {"name": cls.name, "description": doc, "args": [describe_param(p) for p in cls.params]}


def predicates() -> list[dict[str, Any]]:
    """Every predicate a task file may name, from the registry (built-ins, then registered ones and
    plug-ins); a plug-in that fails to import is listed with the error instead of its arguments."""
    from nmmo.tasks import registry

    out = []
    for name in registry.known():
        try:
            cls = registry.lookup(name)
        except Exception as err:  # a broken plug-in: say so, list the rest
            out.append({"name": name, "description": f"cannot be loaded: {type(err).__name__}: {err}", "args": []})
            continue
        out.append(describe_predicate(cls))
    return out


def events() -> list[dict[str, Any]]:
    """The event log's columns: each name, whether ``CountEvent`` counts it, and the nmmo 2.x names
    that mean it."""
    from nmmo.tasks.events import ALIASES, COUNTABLE, EVENT_NAMES

    return [{"name": name, "countable": name in COUNTABLE,
             "aliases": sorted(alias for alias, target in ALIASES.items() if target == name)} for name in EVENT_NAMES]


def param_text(arg: dict[str, Any]) -> str:
    """``N: int in [1, 2147483647] = 1``; choices listed; ``(required)`` without a default."""
    accepts = arg["accepts"]
    if arg["type"] in ("int", "float"):
        low, high = (int(v) if arg["type"] == "int" else v for v in accepts)
        kind = f"{arg['type']} in [{low}, {high}]"
    else:
        kind = f"{arg['type']}: {' | '.join(accepts)}" if arg["type"] == "choice" else "subject"
    default = " (required)" if arg["default"] is None else f" = {arg['default']}"
    return f"{arg['name']}: {kind}{default}"


def node_text(node) -> str:
    """A spec's node on one line: ``and(CountEvent(event=EAT_FOOD, N=5), DistanceTraveled(dist=16))``."""
    if node.op == "predicate":
        args = ", ".join(f"{key}={value}" for key, value in node.args)
        subject = f" @{node.subject}" if node.subject else ""
        return f"{node.predicate}({args}){subject}"
    children = ", ".join(node_text(child) for child in node.children)
    if node.op == "sum":
        return f"sum({children}; weights {', '.join(f'{w:g}' for w in node.weights)})"
    return f"at_least {node.n} of({children})" if node.op == "at_least" else f"{node.op}({children})"


# ------------------------------------------------------------------ commands
def _cmd_list(args: argparse.Namespace) -> int:
    from nmmo.cli import console
    from nmmo.cli.tables import print_table
    from nmmo.tasks import shipped

    listed = {"predicates": predicates(), "events": events(), "subjects": list(SUBJECTS),
              "shipped_sets": list(shipped())}
    if args.json:
        print(json.dumps(listed, indent=1))
        return 0
    table = Table(title="predicates (a task's predicate = NAME, args = {...}; omitted arguments take their default)")
    for column in ("predicate", "arguments", "what it measures"):
        table.add_column(column)
    for entry in listed["predicates"]:
        table.add_row(entry["name"], "\n".join(map(param_text, entry["args"])) or "-", entry["description"])
    print_table(console, table)
    table = Table(title="events (CountEvent's event; counted since the task began)")
    for column in ("event", "CountEvent counts it", "nmmo 2.x name"):
        table.add_column(column)
    for entry in listed["events"]:
        table.add_row(entry["name"], "yes" if entry["countable"] else "no (a value)", ", ".join(entry["aliases"]))
    print_table(console, table)
    console.print(f"subjects: {', '.join(SUBJECTS)}")
    console.print(f"shipped sets: {', '.join(listed['shipped_sets'])}  (check one: nmmo tasks check NAME)")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from nmmo.cli import console
    from nmmo.cli.tables import print_table
    from nmmo.tasks import TaskSampler

    tasks = TaskSampler(args.file).tasks  # what an env does with a set: load_task_set, then the weights
    if args.json:
        print(json.dumps({"name": tasks.name, "description": tasks.description,
                          "task": [spec.to_dict() for spec in tasks]}, indent=1))
        return 0
    table = Table(title=f"{tasks.source}: {len(tasks)} valid tasks (set {tasks.name!r})")
    for column in ("#", "name", "satisfied by", "settings"):
        table.add_column(column)
    for i, spec in enumerate(tasks):
        kind = f"hold {spec.hold} ticks" if spec.kind == "hold" else spec.kind
        tags = f", tags {', '.join(spec.tags)}" if spec.tags else ""
        table.add_row(str(i), spec.name, node_text(spec.node),
                      f"subject {spec.subject}, {spec.reward:g} to {spec.reward_to} on {spec.reward_on}, type {kind}, "
                      f"weight {spec.weight:g}{tags}")
    print_table(console, table, keys=2)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """`nmmo tasks list` and `nmmo tasks check FILE`."""
    from nmmo.cli import add_command

    group = add_command(sub, "tasks", "list the predicates and events task files use; check a task file")
    group.allow_abbrev = False  # --j is not --json: every parser refuses abbreviations
    commands = group.add_subparsers(dest="tasks_command", required=True)
    listing = add_command(commands, "list", "the predicates (arguments, types, defaults), events, subjects and "
                                            "shipped task sets")
    check = add_command(commands, "check", "load a task set as an env would (nothing runs) and print its specs; "
                                           "a bad file's error names the task and the field (exit status 2)")
    check.add_argument("file", metavar="FILE", help="a .toml or .json task file, or a shipped set's name")
    for parser, func in ((listing, _cmd_list), (check, _cmd_check)):
        parser.allow_abbrev = False
        parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
        parser.set_defaults(func=func)
