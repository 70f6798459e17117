"""Predicates by name: the built-ins, those registered in-process, and plug-ins' entry points.

A task file names predicates; a name resolves to a built-in, to one registered with `register`,
or to an entry point of the ``nmmo.predicates`` group (an installed package's ``[project.entry-
points."nmmo.predicates"]`` table: ``MyPredicate = "my_pkg.tasks:MyPredicate"``, a `Predicate`
subclass), which is imported only when a task names it. Entry points are how worker processes and
Ray actors see a plug-in: each process finds them in the installed metadata. Nothing else is
importable from a task file: a name that is none of these is refused.

Built-ins beside nmmo 2.1.1's `nmmo/task/base_predicates.py` (same names, arguments and meanings
unless the last column says otherwise). Everywhere: the subject is a keyword relative to the task's
holder (agent, team, leader = the team's first slot, foes, foe_leaders, left_team, right_team,
left_team_leader, right_team_leader; nmmo 2.1.1's all_foes and my_team_leader are accepted), not
a list of agent ids; dead members are out of state predicates, as in nmmo 2.1.1 where the dead
leave the datastore; events count from the task's start (its agent's spawn, or the episode's
start for a team's task), not over the whole event log.

| predicate | arguments | differences from nmmo 2.1.1 |
|---|---|---|
| Success | | |
| TickGE | num_tick (0: HORIZON) | 0 instead of None for "the horizon" |
| StayAlive | | the subject is the spec's `subject` (2.1.1: a "target" keyword) |
| AllDead | | as StayAlive |
| CheckAgentStatus | target, status | target is a subject keyword, not agent ids |
| OccupyTile | row, col | |
| CanSeeTile | tile_type | a material name (Lava, Water, Grass, Scrub, Forest, Stone) |
| CanSeeAgent | target | a keyword naming one agent (leader, ...), not an id |
| CanSeeGroup | target | a keyword |
| DistanceTraveled | dist | |
| AttainSkill | skill, level, num_agent | each member counts up to `level` (2.1.1 lets one member cover others) |
| GainExperience | skill, experience, num_agent | XP gained since spawn (2.1.1: total XP) |
| CountEvent | event, N | our event names (`nmmo.core.enums.Event`); counts since the task began |
| ScoreHit | combat_style, N | hits that landed (our attacks can miss; 2.1.1's always land) |
| DefeatEntity | agent_type, level, num_agent | level is the victim's combat level (2.1.1: its best attack skill) |
| ProgressTowardCenter | | |
| AllMembersWithinRange | dist | |
| SeizeTile | row, col, num_ticks, progress_bonus, seize_bonus | any tile (2.1.1: tiles the map marks as targets) |
| SeizeCenter | num_ticks, progress_bonus, seize_bonus | |
| SeizeQuadCenter | num_ticks, quadrant, progress_bonus, seize_bonus | |
| ProtectLeader | target_protect, target_destroy | keywords (default leader, foes) |
| EquipmentLevel | level, num_agent | ours: equipment level (2.1.1's EquipItem / FullyArmed count items) |
| AttainCombatLevel | level, num_agent | ours |
| NearTile | row, col, dist | ours: a live member within Chebyshev `dist` of (row, col) |

Not built: HoardGold, EarnGold, SpendGold, MakeProfit, InventorySpaceGE, OwnItem, EquipItem,
FullyArmed, ConsumeItem, HarvestItem, FireAmmo, ListItem, BuyItem (items, gold and the market are
not in this game). Composition (`nmmo.tasks.spec`): and = min, or = max, not = 1 - p (2.1.1's
AND, OR, NOT), sum = weighted sum clipped to [0, 1] (2.1.1's ADD and SUB with weights 1 and -1),
at_least = the mean of the n best (ours). nmmo 2.1.1's MUL has no counterpart.
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
