"""Tasks are data: task sets as TOML or JSON files of specs, checked field by field, never run.

A task set file holds ``[[task]]`` tables (JSON: ``{"task": [...]}``)::

    name = "foraging"                      # optional, as is description
    [[task]]
    name = "eat_10"                        # optional (default: task<index>)
    predicate = "CountEvent"               # a registered predicate name (`nmmo.tasks.registry`)
    args = { event = "EAT_FOOD", N = 10 }  # its arguments; omitted ones take their defaults
    subject = "agent"                      # whose state counts: agent, team, leader, foes, ... (`SUBJECTS`);
                                           #   default: agent, or team when reward_to = "team"
    reward_to = "agent"                    # agent, or team: one task per team, every member rewarded
    type = "task"                          # task (reward until complete), ongoing (reward every tick),
                                           #   hold (complete after `hold` consecutive satisfied ticks)
    hold = 0                               # ticks, for type = "hold"
    reward = 1.0                           # reward multiplier
    reward_on = "progress"                 # progress (its increments) or completion (once)
    weight = 1.0                           # sampling weight
    tags = ["foraging"]

Instead of ``predicate``/``args`` a task (or any node inside one) may combine nodes: ``and = [n,
...]`` (min), ``or = [...]`` (max), ``not = n`` (1 - p), ``sum = [...]`` with optional ``weights =
[...]`` (weighted sum clipped to [0, 1]), ``at_least = k`` with ``of = [...]`` (mean of the k
best: 1 when k of them are satisfied). A node is an inline table with the same keys (a leaf may
set its own ``subject``). Loading reads the file with tomllib or json and nothing else: a name
that is not a registered predicate (a "module:function", say) is refused, as is any unknown
field. Errors are ValueErrors naming the file, the task (index and name) and the field.

A task file may come from anyone, so it is bounded before it is parsed (`MAX_TASK_FILE_BYTES`,
`MAX_TASKS`, `MAX_DEPTH`, `MAX_INT`, `MAX_MAGNITUDE`): its size by ``stat`` before a byte is read,
then what tomllib would take quadratic time on, then every value (depth, integer size, finite
floats) before any task is read. Loading is linear in the file's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from nmmo.tasks import registry
from nmmo.tasks.bounds import (  # noqa: F401 - the caps, re-exported: a task file's limits
    MAX_DEPTH,
    MAX_HOLD,
    MAX_INT,
    MAX_MAGNITUDE,
    MAX_TASK_FILE_BYTES,
    MAX_TASKS,
    check_values,
    field_name,
    no_cycle_collection,
    parse_file,
    prescan_toml,
    read_bounded,
    show,
)
from nmmo.tasks.core import REQUIRED, SUBJECTS, Param

KINDS = ("task", "ongoing", "hold")
REWARD_TO = ("agent", "team")
REWARD_ON = ("progress", "completion")
OPS = ("and", "or", "not", "sum", "at_least")
_NODE_KEYS = {"predicate", "args", "subject", "weights", "of", *OPS}
_TASK_KEYS = _NODE_KEYS | {"name", "reward_to", "type", "hold", "reward", "reward_on", "weight", "tags", "description"}


@dataclass(frozen=True)
class Node:
    """A predicate with its arguments (``op == "predicate"``), or a combination of nodes."""

    op: str
    predicate: str = ""
    args: tuple[tuple[str, Any], ...] = ()  # every parameter, defaults filled in
    subject: str | None = None  # None: the task's subject
    children: tuple[Node, ...] = ()
    weights: tuple[float, ...] = ()
    n: int = 0  # at_least's k

    def leaves(self) -> list[Node]:
        """The predicate nodes, depth first."""
        return [self] if self.op == "predicate" else [leaf for child in self.children for leaf in child.leaves()]

    def to_dict(self) -> dict:
        if self.op == "predicate":
            out = {"predicate": self.predicate, "args": dict(self.args)}
            return {**out, "subject": self.subject} if self.subject else out
        children = [child.to_dict() for child in self.children]
        if self.op == "not":
            return {"not": children[0]}
        if self.op == "at_least":
            return {"at_least": self.n, "of": children}
        return {self.op: children, "weights": list(self.weights)} if self.op == "sum" else {self.op: children}


@dataclass(frozen=True)
class TaskSpec:
    """One task: what satisfies it (`node`), whose state it reads and who is rewarded, how."""

    name: str
    node: Node
    subject: str = "agent"
    reward_to: str = "agent"
    kind: str = "task"
    hold: int = 0
    reward: float = 1.0
    reward_on: str = "progress"
    weight: float = 1.0
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The spec as a task-file table (`parse_task` reads it back)."""
        return {"name": self.name, **self.node.to_dict(), "subject": self.subject, "reward_to": self.reward_to,
                "type": self.kind, "hold": self.hold, "reward": self.reward, "reward_on": self.reward_on,
                "weight": self.weight, "tags": list(self.tags)}


@dataclass(frozen=True)
class TaskSet:
    """Specs in file order; a task's index here is its identity in infos and evaluation."""

    specs: tuple[TaskSpec, ...]
    name: str = ""
    source: str = "<data>"
    description: str = field(default="", compare=False)

    def __len__(self) -> int:
        return len(self.specs)

    def __getitem__(self, index: int) -> TaskSpec:
        return self.specs[index]

    def __iter__(self):
        return iter(self.specs)


def shipped() -> dict[str, Path]:
    """Task sets shipped in the package (``nmmo/configs/tasks/*.toml``) by name."""
    folder = Path(str(resources.files("nmmo.configs"))) / "tasks"
    return {path.stem: path for path in sorted(folder.glob("*.toml"))}


def every_shipped_spec() -> TaskSet:
    """Every spec of the shipped sets, each name once, in the sets' order (``train`` repeats the
    families' specs)."""
    first: dict[str, TaskSpec] = {}
    for path in shipped().values():
        for spec in load_task_set(path):
            first.setdefault(spec.name, spec)
    return TaskSet(tuple(first.values()), "every_shipped", "<shipped sets>")


def task_set_key(name_or_path: str | Path) -> str:
    """The config key TASKS for a task set: a .toml / .json file as an absolute path (worker
    processes may start elsewhere), a shipped set's name as it is."""
    path = Path(name_or_path)
    return str(path.resolve()) if path.suffix in (".toml", ".json") else str(name_or_path)


def load_task_set(name_or_path: str | Path) -> TaskSet:
    """A task set from a shipped name ("foraging") or a .toml / .json path."""
    sets = shipped()
    path = sets[str(name_or_path)] if str(name_or_path) in sets else Path(name_or_path)
    if not path.is_file():
        raise ValueError(f"no task set {str(name_or_path)!r}: not a file, nor a shipped set ({', '.join(sets)})")
    raw = read_bounded(path)
    if path.suffix != ".json":
        prescan_toml(raw, path)
    with no_cycle_collection():
        return task_set_from_data(parse_file(raw, path), str(path), default_name=path.stem)


def task_set_from_data(data: Any, source: str = "<data>", default_name: str = "") -> TaskSet:
    """A task set from parsed data: a table with a ``task`` list (or the list itself)."""
    if isinstance(data, list):
        data = {"task": data}
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a table with a 'task' list, got {type(data).__name__}")
    unknown = sorted(set(data) - {"name", "description", "task"})
    if unknown:
        raise ValueError(f"{source}: unknown field {show(unknown[0])} (a task set has name, description and task)")
    for key in ("name", "description"):
        if not isinstance(data.get(key, ""), str):
            raise ValueError(f"{source}: field {key!r}: expected a string, got {show(data[key])}")
    tasks = data.get("task")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError(f"{source}: field 'task': expected a non-empty list of task tables")
    if len(tasks) > MAX_TASKS:
        raise ValueError(f"{source}: field 'task': {len(tasks)} tasks, over the {MAX_TASKS} a task set may have "
                         "(MAX_TASKS)")
    with no_cycle_collection():
        specs = tuple(parse_task(entry, source, i) for i, entry in enumerate(tasks))
    first: dict[str, int] = {}  # name -> index: linear, where list.index made 40k tasks take 30 s
    for i, spec in enumerate(specs):
        if first.setdefault(spec.name, i) != i:
            raise ValueError(f"{source}: task {i} ({show(spec.name)}): field 'name': task {first[spec.name]} "
                             "has it too")
    return TaskSet(specs, data.get("name", default_name), source, data.get("description", ""))


def parse_task(entry: Any, source: str = "<data>", index: int = 0) -> TaskSpec:
    """One task table, checked; errors name the source, the task and the field."""
    name = entry.get("name", f"task{index}") if isinstance(entry, dict) else f"task{index}"

    def fail(where: str, message: str) -> ValueError:
        return ValueError(f"{source}: task {index} ({show(name)}): field {where!r}: {message}")

    if not isinstance(entry, dict):
        raise ValueError(f"{source}: task {index}: expected a table, got {type(entry).__name__}")
    check_values(entry, fail)
    if not isinstance(name, str) or not name:
        raise fail("name", f"expected a non-empty string, got {show(name)}")
    for key in entry:
        if key not in _TASK_KEYS:
            raise fail(key, f"unknown field; a task has {', '.join(sorted(_TASK_KEYS))}")
    reward_to = _choice(entry.get("reward_to", "agent"), REWARD_TO, "reward_to", fail)
    subject = _choice(entry.get("subject", "team" if reward_to == "team" else "agent"), SUBJECTS, "subject", fail)
    kind = _choice(entry.get("type", "task"), KINDS, "type", fail)
    hold = _number(entry.get("hold", 0), "hold", fail, high=MAX_HOLD, integer=True)
    if (kind == "hold") != (hold > 0):
        raise fail("hold", "type 'hold' needs hold > 0 ticks; other types take none")
    reward = _number(entry.get("reward", 1.0), "reward", fail, low=-MAX_MAGNITUDE)
    weight = _number(entry.get("weight", 1.0), "weight", fail)
    tags = entry.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise fail("tags", f"expected a list of strings, got {show(tags)}")
    node_table = {key: entry[key] for key in _NODE_KEYS if key in entry}
    if "subject" in node_table:
        del node_table["subject"]  # the task's subject is the default of every leaf
    node = _node(node_table, "", fail)
    reward_on = _choice(entry.get("reward_on", "progress"), REWARD_ON, "reward_on", fail)
    spec = TaskSpec(name, node, subject, reward_to, kind, int(hold), float(reward), reward_on, float(weight),
                    tuple(tags))
    if reward_to == "team":
        _check_no_agent(spec, fail)
    return spec


def parse_node(table: Any, fail) -> Node:
    """A node table (a predicate or a combination), checked; `fail(field, message)` makes the error."""
    return _node(table, "", fail)


def _node(table: Any, path: str, fail) -> Node:
    if not isinstance(table, dict):
        raise fail(path or "predicate", f"expected a table (a predicate or a combination), got {show(table)}")
    for key in table:
        if key not in _NODE_KEYS:
            raise fail(f"{path}{key}", f"unknown field; a node has {', '.join(sorted(_NODE_KEYS))}")
    kinds = [key for key in ("predicate", *OPS) if key in table]
    if len(kinds) != 1:
        raise fail(path or "predicate", f"expected exactly one of predicate, {', '.join(OPS)}; got {kinds or 'none'}")
    op = kinds[0]
    if op == "predicate":
        return _leaf(table, path, fail)
    extra = set(table) - {op, "weights" if op == "sum" else "of" if op == "at_least" else op}
    if extra:
        raise fail(f"{path}{sorted(extra)[0]}", f"does not go with {op!r}")
    if op == "not":
        return Node("not", children=(_node(table["not"], f"{path}not.", fail),))
    key = "of" if op == "at_least" else op
    items = table.get(key)
    if not isinstance(items, list) or not items:
        raise fail(f"{path}{key}", f"expected a non-empty list of nodes, got {show(items)}")
    children = tuple(_node(item, f"{path}{key}[{i}].", fail) for i, item in enumerate(items))
    if op == "sum":
        weights = table.get("weights", [1.0] * len(children))
        if not isinstance(weights, list) or len(weights) != len(children) or not all(map(_weight, weights)):
            raise fail(f"{path}weights", f"expected {len(children)} numbers, each finite and within "
                                         f"+-{MAX_MAGNITUDE:g}, got {show(weights)}")
        return Node("sum", children=children, weights=tuple(float(w) for w in weights))
    if op == "at_least":
        k = table["at_least"]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(children):
            raise fail(f"{path}at_least", f"expected an integer in [1, {len(children)}], got {show(k)}")
        return Node("at_least", children=children, n=k)
    return Node(op, children=children)


def _leaf(table: dict, path: str, fail) -> Node:
    name = table["predicate"]
    where = f"{path}predicate"
    if not isinstance(name, str):
        raise fail(where, f"expected a predicate name, got {show(name)}")
    if ":" in name or "." in name or "/" in name:
        raise fail(where, f"{show(name)} names a Python object; task files name registered predicates only "
                          f"({', '.join(registry.known())})")
    cls = registry.lookup(name)
    if cls is None:
        raise fail(where, f"unknown predicate {show(name)}; known: {', '.join(registry.known())} (register new ones "
                          "through the nmmo.predicates entry-point group)")
    args = table.get("args", {})
    if not isinstance(args, dict):
        raise fail(f"{path}args", f"expected a table of arguments, got {show(args)}")
    params = {param.name: param for param in cls.params}
    for key in args:
        if key not in params:
            raise fail(f"{path}args.{key}", f"{name} has no argument {key!r}; it takes {', '.join(params) or 'none'}")
    values = []
    for param in cls.params:
        values.append((param.name, _argument(param, args, f"{path}args.{param.name}", fail)))
    subject = table.get("subject")
    if subject is not None:
        subject = _choice(subject, SUBJECTS, f"{path}subject", fail)
    return Node("predicate", name, tuple(values), subject)


def _argument(param: Param, args: dict, where: str, fail) -> Any:
    if param.name not in args:
        if param.default is REQUIRED:
            raise fail(where, "missing (it has no default)")
        return param.default
    try:
        return param.parse(args[param.name])
    except ValueError as err:
        raise fail(where, str(err)) from None


def _choice(value: Any, choices: tuple[str, ...], where: str, fail) -> str:
    value = {"all_foes": "foes", "my_team_leader": "leader"}.get(value, value) if isinstance(value, str) else value
    if value not in choices:
        raise fail(where, f"expected one of {', '.join(choices)}, got {show(value)}")
    return value


def _number(value: Any, where: str, fail, low: float = 0.0, high: float = MAX_MAGNITUDE,
            integer: bool = False) -> float:
    """`value` as a number in [low, high] (NaN is in no range); an integer when `integer`."""
    if not _is_number(value) or (integer and isinstance(value, float) and not value.is_integer()):
        raise fail(where, f"expected {'an integer' if integer else 'a number'}, got {show(value)}")
    if not low <= value <= high:
        raise fail(where, f"expected a finite value >= {low:g} and <= {high:g}, got {show(value)}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _weight(value: Any) -> bool:
    """A sum weight: finite, within +-MAX_MAGNITUDE (so is its product over the sums above it)."""
    return _is_number(value) and -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE


def _check_no_agent(spec: TaskSpec, fail) -> None:
    """A team's task has no single agent to name."""
    if spec.subject == "agent":
        raise fail("subject", "'agent' names one agent, and a task with reward_to = 'team' belongs to a team")
    for leaf in spec.node.leaves():
        cls = registry.lookup(leaf.predicate)
        groups = [value for key, value in leaf.args if any(p.name == key and p.kind == "group" for p in cls.params)]
        if leaf.subject == "agent" or "agent" in groups:
            raise fail("subject", f"{leaf.predicate} names 'agent', and a team's task (reward_to = 'team') has none")
