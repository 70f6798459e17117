"""Built-in predicates on agents' state and on the event log (the spatial ones: `nmmo.tasks.spatial`).

Each returns progress in [0, 1] for every leaf at once; names, arguments and meanings follow nmmo
2.1.1's `base_predicates` (each class's `differences` says where it parts from its twin;
`nmmo.tasks.registry.predicate_table` tables them). Members that are dead count as nmmo 2.x counts
them: they are not in the game, so state predicates read the live members only, while events they
caused before dying stay counted.
"""

from __future__ import annotations

from typing import Any

from nmmo.config import Config
from nmmo.core.enums import Event, Skill, Style
from nmmo.tasks import core
from nmmo.tasks.core import AT_LEAST, FLOOR, MIN, ONE_MINUS, Param, Predicate, Term
from nmmo.tasks.events import COUNTABLE, event_column

SKILLS = tuple(skill.name.capitalize() for skill in Skill)
STYLES = tuple(style.name.capitalize() for style in Style)
_NUM_AGENT = Param("num_agent", "int", 1, 0, 2**16, scale=8)


class Success(Predicate):
    """Always satisfied (for debugging)."""

    name = "Success"

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.ALIVE, alive_only=False, denom=0)


class TickGE(Predicate):
    """The episode's tick over `num_tick` (0: the horizon)."""

    name = "TickGE"
    differences = "num_tick 0 means the horizon (2.1.1: None)"
    params = (Param("num_tick", "int", 0, 0, scale=1024),)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.TICK, alive_only=False, agg=MIN, denom=args["num_tick"] or config.HORIZON)


class StayAlive(Predicate):
    """1 while every subject member is alive."""

    name = "StayAlive"
    differences = "the subject is the spec's `subject` (2.1.1: a `target` keyword)"

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.ALIVE, alive_only=False, denom="members", post=FLOOR)


class AllDead(Predicate):
    """The fraction of subject members that are dead."""

    name = "AllDead"
    differences = "as StayAlive"

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.ALIVE, alive_only=False, denom="members", post=ONE_MINUS)


class CheckAgentStatus(Predicate):
    """The fraction of `target` that is alive (status "alive") or dead ("dead")."""

    name = "CheckAgentStatus"
    differences = "target is a subject keyword, not agent ids"
    params = (Param("target", "group"), Param("status", "choice", "alive", choices=("alive", "dead")))

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.ALIVE, alive_only=False, denom="members", post=ONE_MINUS if args["status"] else core.RATIO,
                    members="target")


class ProtectLeader(Predicate):
    """0 once `target_protect` has died, else the tick over the horizon (`target_destroy` is
    informative only, as in nmmo 2.x): StayAlive of target_protect and TickGE of the horizon."""

    name = "ProtectLeader"
    differences = "keywords (default leader, foes)"
    params = (Param("target_protect", "group", "leader"), Param("target_destroy", "group", "foes"))

    def rewrite(self, args: dict[str, Any], config: Config) -> dict:
        return {"and": [{"predicate": "StayAlive", "subject": args["target_protect"]}, {"predicate": "TickGE"}]}


class AttainSkill(Predicate):
    """`num_agent` live members at `level` in `skill`: the sum of members' levels above 1 (each
    capped at `level` - 1) over num_agent * (level - 1); 1 when level <= 1."""

    name = "AttainSkill"
    differences = "each member counts up to `level` (2.1.1 lets one member cover others)"
    params = (Param("skill", "choice", choices=SKILLS), Param("level", "int", low=1, high=99, scale=99), _NUM_AGENT)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        above = args["level"] - 1
        return Term(core.LEVEL + args["skill"], offset=1, cap=above, denom=args["num_agent"] * above)


class AttainCombatLevel(Predicate):
    """`num_agent` live members with a combat level of at least `level` (ours: no nmmo 2.x twin)."""

    name = "AttainCombatLevel"
    differences = "ours"
    params = (Param("level", "int", low=1, high=99, scale=99), _NUM_AGENT)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.COMBAT_LEVEL, AT_LEAST, threshold=args["level"], denom=args["num_agent"])


class GainExperience(Predicate):
    """XP the live members gained in `skill` since spawning, over `experience` * `num_agent`."""

    name = "GainExperience"
    differences = "XP gained since spawn (2.1.1: total XP)"
    params = (Param("skill", "choice", choices=SKILLS), Param("experience", "int", low=1, scale=10_000), _NUM_AGENT)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.XP_GAINED + args["skill"], denom=args["experience"] * max(args["num_agent"], 1))


class EquipmentLevel(Predicate):
    """`num_agent` live members whose equipment level (mean of the two armour pieces) is at least
    `level` (ours; nmmo 2.x's EquipItem and FullyArmed count items)."""

    name = "EquipmentLevel"
    differences = "ours: equipment level (2.1.1's EquipItem / FullyArmed count items)"
    params = (Param("level", "int", low=0, high=99, scale=99), _NUM_AGENT)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.ARMOUR, AT_LEAST, threshold=2 * args["level"], denom=args["num_agent"])


class CountEvent(Predicate):
    """Events of one kind by the subject members since the task began, over `N`."""

    name = "CountEvent"
    differences = "our event names (`nmmo.core.enums.Event`); counts since the task began"
    params = (Param("event", "choice", choices=COUNTABLE, codes=tuple(event_column(e) for e in COUNTABLE),
                    aliases=(("equip_item", "EQUIPMENT_UP"),)), Param("N", "int", 1, 1, scale=100))

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(core.EVENTS + args["event"], alive_only=False, accumulate=True, denom=args["N"])


class ScoreHit(Predicate):
    """Hits that landed in `combat_style` since the task began, over `N`."""

    name = "ScoreHit"
    differences = "hits that landed (our attacks can miss; 2.1.1's always land)"
    params = (Param("combat_style", "choice", choices=STYLES), Param("N", "int", 1, 1, scale=100))

    def term(self, args: dict[str, Any], config: Config) -> Term:
        column = core.EVENTS + int(Event.HIT_MELEE) + args["combat_style"]
        return Term(column, alive_only=False, accumulate=True, denom=args["N"])


class DefeatEntity(Predicate):
    """Kills of `agent_type` ("player" or "npc") of combat level >= `level` since the task
    began, over `num_agent` (1 when num_agent is 0). As in nmmo 2.x, teammates count as players."""

    name = "DefeatEntity"
    differences = "level is the victim's combat level (2.1.1: its best attack skill)"
    params = (Param("agent_type", "choice", choices=("player", "npc"),
                    codes=(core.KILLED_PLAYER_LEVEL, core.KILLED_NPC_LEVEL)),
              Param("level", "int", 0, 0, 99, scale=99), _NUM_AGENT)

    def term(self, args: dict[str, Any], config: Config) -> Term:
        return Term(args["agent_type"], AT_LEAST, threshold=args["level"], alive_only=False, accumulate=True,
                    denom=args["num_agent"])
