"""What a task asks of an agent, read from its observation's task embedding alone.

`read` decodes a version-2 embedding (`nmmo.tasks.embedding.decode`) and turns its leaves into a
`Directive`: the attack style to use, what to hunt (NPCs, players) and from which level, where to go
(a tile and how near), what to gather (food or water) and what to keep from doing (drinking,
eating, hitting players). The scripted task follower (`scripted.follower.Follower`) pursues it with
the existing bots' skills. Nothing here reads the task set or the spec: only the floats an agent
observes, so a follower that completes its tasks also shows that the embedding carries them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmmo.config import Config
from nmmo.core.enums import Style
from nmmo.tasks import registry
from nmmo.tasks.embedding import decode
from nmmo.tasks.flat import FlatLeaf

NONE, NPC, PLAYER, ANY = 0, 1, 2, 3  # prey kinds
EAT, DRINK = 1, 2  # gathering
STYLE_NAMES = tuple(style.name.capitalize() for style in Style)
#: Events a hunter counts, by the prey they need; events that count any hit.
_PREY_EVENTS = {"HIT_NPC": NPC, "KILL_NPC": NPC, "HIT_PLAYER": PLAYER, "KILL_PLAYER": PLAYER, "SCORE_HIT": ANY,
                "DAMAGE_DEALT": ANY, "PLAYER_KILL": ANY}
_GATHER_EVENTS = {"EAT_FOOD": EAT, "DRINK_WATER": DRINK, "LEVEL_HUNTING": EAT, "LEVEL_FISHING": DRINK}
_GATHER_SKILLS = {"Hunting": EAT, "Fishing": DRINK}
_PLACES = ("OccupyTile", "SeizeTile", "SeizeCenter", "SeizeQuadCenter", "NearTile", "ProgressTowardCenter")


@dataclass
class Directive:
    """One task's asks. `style`: a `Style` or -1 (any); `prey`: NONE, NPC, PLAYER or ANY, of combat
    level `prey_level` or more; `goal`: a (row, col) tile or None, reached within `radius`;
    `gather`: 0, EAT or DRINK; `avoid`: the gathering to keep from (0, EAT or DRINK);
    `spare_players`: never hit players."""

    style: int = -1
    prey: int = NONE
    prey_level: int = 0
    goal: tuple[int, int] | None = None
    radius: int = 0
    gather: int = 0
    avoid: int = 0
    spare_players: bool = False


def read(vector: np.ndarray, config: Config) -> Directive:
    """The directive of one task embedding (all zeros: no task, an empty directive). Raises
    ValueError when the vector is not a version-2 embedding (the config key TASK_EMBEDDING = 1)."""
    if not np.asarray(vector).any():
        return Directive()
    out = Directive()
    for leaf in decode(vector).leaves:
        if leaf.negated:
            _avoid(out, leaf)
        else:
            _ask(out, leaf, config)
    return out


def _ask(out: Directive, leaf: FlatLeaf, config: Config) -> None:
    """What a leaf that should come true asks for."""
    args, name = dict(leaf.args), leaf.predicate
    if name == "ScoreHit":
        out.style = STYLE_NAMES.index(args["combat_style"])
        out.prey = out.prey or ANY
    elif name in ("AttainSkill", "GainExperience"):
        skill = args["skill"]
        if skill in STYLE_NAMES:
            out.style, out.prey = STYLE_NAMES.index(skill), out.prey or ANY
        out.gather = _GATHER_SKILLS.get(skill, out.gather)
    elif name == "CountEvent":
        event = args["event"]
        if event.startswith("HIT_") and event[4:].capitalize() in STYLE_NAMES:
            out.style, out.prey = STYLE_NAMES.index(event[4:].capitalize()), out.prey or ANY
        if event in _PREY_EVENTS:
            out.prey = _PREY_EVENTS[event] if out.prey in (NONE, ANY) else out.prey
        out.gather = _GATHER_EVENTS.get(event, out.gather)
    elif name == "DefeatEntity":
        out.prey, out.prey_level = (NPC if args["agent_type"] == "npc" else PLAYER), int(args["level"])
    elif name in _PLACES:
        out.goal, out.radius = _place(name, args, config)


def _avoid(out: Directive, leaf: FlatLeaf) -> None:
    """What a leaf under a ``not`` asks to keep from."""
    args = dict(leaf.args)
    if leaf.predicate == "CountEvent":
        event = args["event"]
        if event in ("HIT_PLAYER", "KILL_PLAYER"):
            out.spare_players = True
        out.avoid = _GATHER_EVENTS.get(event, out.avoid)


def _place(name: str, args: dict, config: Config) -> tuple[tuple[int, int], int]:
    """The tile a place predicate names and how near counts (predicates that are another with fixed
    arguments, as SeizeQuadCenter, say which tile through their own rewrite)."""
    if name == "ProgressTowardCenter":
        return (config.MAP_SIZE // 2, config.MAP_SIZE // 2), 0
    cls = registry.lookup(name)
    rewritten = cls().rewrite(args, config)
    if rewritten is not None:
        args = rewritten["args"]
    return (int(args["row"]), int(args["col"])), int(args.get("dist", 0))
