"""Predicates by name: the built-ins, those registered in-process, and plug-ins' entry points.

A task file names predicates; a name resolves to a built-in, to one registered with `register`,
or to an entry point of the ``nmmo.predicates`` group (an installed package's ``[project.entry-
points."nmmo.predicates"]`` table: ``MyPredicate = "my_pkg.tasks:MyPredicate"``, a `Predicate`
subclass), which is imported only when a task names it. Entry points are how worker processes and
Ray actors see a plug-in: each process finds them in the installed metadata. Nothing else is
importable from a task file: a name that is none of these is refused.

Built-ins beside nmmo 2.1.1's `nmmo/task/base_predicates.py`: same names, arguments and meanings
unless the class's `differences` says otherwise; `predicate_table` makes the table of docs/tasks.md
("Predicates beside nmmo 2.1.1", with what is not built and how composition maps) from the
classes, and a test keeps the page equal to it. Everywhere: the subject is a keyword relative to
the task's holder (agent, team, leader = the team's first slot, foes, foe_leaders, left_team,
right_team, left_team_leader, right_team_leader; nmmo 2.1.1's all_foes and my_team_leader are
accepted), not a list of agent ids; dead members are out of state predicates, as in nmmo 2.1.1
where the dead leave the datastore; events count from the task's start (its agent's spawn, or the
episode's start for a team's task), not over the whole event log.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from nmmo.tasks import predicates, spatial
from nmmo.tasks.core import Predicate

GROUP = "nmmo.predicates"
#: Built-ins in a fixed order: a predicate's position is its identity in task embeddings, so new
#: built-ins are appended, never inserted.
BUILTINS: tuple[type[Predicate], ...] = (
    predicates.Success, predicates.TickGE, predicates.StayAlive, predicates.AllDead, predicates.CheckAgentStatus,
    spatial.OccupyTile, spatial.CanSeeTile, spatial.CanSeeAgent, spatial.CanSeeGroup, spatial.DistanceTraveled,
    predicates.AttainSkill, predicates.GainExperience, predicates.CountEvent, predicates.ScoreHit,
    predicates.DefeatEntity, spatial.ProgressTowardCenter, spatial.AllMembersWithinRange, spatial.SeizeTile,
    spatial.SeizeCenter, spatial.SeizeQuadCenter, predicates.ProtectLeader, predicates.EquipmentLevel,
    predicates.AttainCombatLevel, spatial.NearTile,
)
BUILTIN_INDEX = {cls.name: i for i, cls in enumerate(BUILTINS)}
_registered: dict[str, type[Predicate]] = {}


def register(cls: type[Predicate]) -> type[Predicate]:
    """Register a predicate class in this process (usable as a decorator). Worker processes do
    not see it: declare an ``nmmo.predicates`` entry point for those."""
    _check(cls, cls.name)
    if cls.name in BUILTIN_INDEX:
        raise ValueError(f"predicate {cls.name!r} is a built-in; pick another name")
    _registered[cls.name] = cls
    return cls


def lookup(name: str) -> type[Predicate] | None:
    """The predicate class of a name, or None when no built-in, registration or entry point has it."""
    if name in BUILTIN_INDEX:
        return BUILTINS[BUILTIN_INDEX[name]]
    if name in _registered:
        return _registered[name]
    for point in entry_points(group=GROUP, name=name):
        cls = point.load()
        _check(cls, f"entry point {point.name} = {point.value}")
        if cls.name != name:
            raise ValueError(f"entry point {point.name} = {point.value}: its class names itself {cls.name!r}")
        _registered[name] = cls
        return cls
    return None


def known() -> list[str]:
    """Every predicate name a task file may use (entry points listed without importing them)."""
    return [*BUILTIN_INDEX, *sorted(set(_registered) | {point.name for point in entry_points(group=GROUP)})]


def _check(cls: object, where: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Predicate) and cls.name):
        raise ValueError(f"{where}: a predicate is a nmmo.tasks.Predicate subclass with a name, got {cls!r}")


def predicate_table(classes: tuple[type[Predicate], ...] = BUILTINS) -> str:
    """The Markdown table of docs/tasks.md: each predicate's name, arguments (its `params`) and
    `differences` from nmmo 2.1.1, made from the classes so the page cannot restate them wrongly."""
    lines = ["| predicate | arguments | differences from nmmo 2.1.1 |", "|---|---|---|"]
    for cls in classes:
        arguments = ", ".join(param.name for param in cls.params)
        cells = [text.replace("|", r"\|") for text in (cls.name, arguments, cls.differences)]
        lines.append("|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|")
    return "\n".join(lines) + "\n"
