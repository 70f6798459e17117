"""The machinery predicates run on: arguments, subjects, and leaves evaluated in batches.

A predicate is one class per name (`Predicate`); every use of it in the assigned tasks is a
*leaf*, and all leaves of one predicate are evaluated at once (`Leaves`): arguments are arrays
with one entry per leaf, and each leaf's subject is a set of agent slots (`Members`), stored as
flat (leaf, slot) pairs so that sums, counts, minima and maxima over every subject take one numpy
call. Subjects are named relative to the agent or team the task belongs to (`SUBJECTS`); a team's
leader is its first slot (teams are contiguous blocks of slots, `nmmo.core.systems.spawn`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

try:  # the clip ufunc: np.clip's Python wrapper costs more than the work on arrays this size
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as clip_ufunc

from nmmo.config import Config
from nmmo.core.enums import Event, Material, Skill
from nmmo.core.state import State
from nmmo.tasks.distances import Distances

#: Subject and target keywords, relative to the agent (or team) that holds the task. nmmo 2.x's
#: task-spec targets are the same words ("all_foes" is "foes", "my_team_leader" is "leader").
SUBJECTS: tuple[str, ...] = ("agent", "team", "leader", "foes", "foe_leaders", "left_team", "right_team",
                             "left_team_leader", "right_team_leader")
ALIASES = {"all_foes": "foes", "my_team_leader": "leader", "all_foe_leaders": "foe_leaders"}
REQUIRED = object()
#: Tiles per unit of a coordinate argument in the version-2 task embedding (a Medium map's playable side).
COORD_UNIT = 128


@dataclass(frozen=True)
class Param:
    """One argument of a predicate. `kind`: "int", "float", "choice" (one of `choices`, matched
    case-insensitively; `codes` gives the number each stands for, default its index) or "group"
    (a `SUBJECTS` keyword). `scale` is a typical size, for the embedding (version 1: log-scaled
    by it); `unit` the divisor of a number's linear value in version 2 (0: `scale`; coordinates:
    `COORD_UNIT` tiles, so that one tile is the same step anywhere on the map)."""

    name: str
    kind: str
    default: Any = REQUIRED
    low: float = 0
    high: float = 2**31 - 1
    choices: tuple[str, ...] = ()
    codes: tuple[int, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    scale: float = 100.0
    unit: float = 0.0

    def parse(self, value: Any) -> Any:
        """The canonical value of a spec's argument; raises ValueError saying what was expected."""
        if self.kind in ("int", "float"):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if self.kind == "int":  # not float(value): a 400-digit int overflows it
                ok = ok and (isinstance(value, int) or value.is_integer())
            if not ok:
                raise ValueError(f"expected {'an integer' if self.kind == 'int' else 'a number'}, got {value!r}")
            if not self.low <= value <= self.high:
                raise ValueError(f"expected a value in [{self.low}, {self.high}], got {value!r}")
            return int(value) if self.kind == "int" else float(value)
        words = SUBJECTS if self.kind == "group" else self.choices
        extra = dict(ALIASES) if self.kind == "group" else {}
        extra.update(self.aliases)
        if isinstance(value, str):
            key = extra.get(value.lower(), extra.get(value, value))
            for word in words:
                if word.lower() == key.lower():
                    return word
        raise ValueError(f"expected one of {', '.join(words)}, got {value!r}")

    def code(self, value: Any) -> float:
        """The number a canonical value stands for in the leaves' argument arrays."""
        if self.kind == "group":
            return SUBJECTS.index(value)
        if self.kind == "choice":
            index = self.choices.index(value)
            return self.codes[index] if self.codes else index
        return value

    def embed(self, value: Any) -> float:
        """The value normalized to [-1, 1] (numbers on a log scale), for the embedding."""
        if self.kind == "group":
            return (SUBJECTS.index(value) + 1) / len(SUBJECTS)
        if self.kind == "choice":
            return (self.choices.index(value) + 1) / len(self.choices)
        return float(np.clip(np.sign(value) * np.log1p(abs(value)) / np.log1p(self.scale), -1.0, 1.0))


class Predicate:
    """A family of objectives. Subclasses set `name` and `params` and implement one of: `rewrite`
    (the leaf is another node: SeizeCenter is a SeizeTile), `term` (the leaf is one `Term`; most
    built-ins are, and every term of every predicate is evaluated in one batch) or `progress`
    (all leaves of this predicate at once, one value in [0, 1] per leaf, 1 when satisfied), with
    `bind` to precompute per-leaf data once tasks are assigned. Register new ones under the
    ``nmmo.predicates`` entry-point group (the entry point's name is the predicate's name in task
    files), or in-process with `nmmo.tasks.register`."""

    name: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: How it differs from nmmo 2.1.1's predicate of the same name ("ours" when 2.1.1 has none; empty:
    #: not at all), the last column of `nmmo.tasks.registry.predicate_table` (docs/tasks.md).
    differences: ClassVar[str] = ""

    def rewrite(self, args: dict[str, Any], config: Config) -> dict | None:
        """The leaf as another node, in task-file form (its arguments as parsed), or None: a
        predicate that is another with fixed arguments (SeizeCenter is a SeizeTile) shares its batch."""
        return None

    def term(self, args: dict[str, Any], config: Config) -> Term | None:
        """The leaf as a `Term` (its arguments as parsed, `Param.code` applied), or None."""
        return None

    def bind(self, leaves: Leaves, ctx: Context) -> None:
        """Precompute per-leaf data (kept in ``leaves.static``) after tasks are assigned."""

    def progress(self, ctx: Context, leaves: Leaves) -> np.ndarray:
        raise NotImplementedError(f"{self.name} implements neither term nor progress")


# Columns of the per-slot feature matrix terms read (`features`).
EVENTS = 0  # + `nmmo.core.enums.Event`: this tick's events
ALIVE = len(Event)
LEVEL = ALIVE + 1  # + Skill
XP_GAINED = LEVEL + len(Skill)  # + Skill: XP gained since spawning
COMBAT_LEVEL = XP_GAINED + len(Skill)
ARMOUR = COMBAT_LEVEL + 1  # the two armour pieces' levels summed: twice the equipment level
SPAWN_DISTANCE = ARMOUR + 1  # Chebyshev distance from the spawn tile
KILLED_PLAYER_LEVEL = SPAWN_DISTANCE + 1  # combat level of a player killed this tick (-1: none)
KILLED_NPC_LEVEL = KILLED_PLAYER_LEVEL + 1
TICK = KILLED_NPC_LEVEL + 1  # the world's tick
TILE = TICK + 1  # row * MAP_SIZE + col within the world
# The columns that depend on the agent's tile only, side by side (one gather fills them):
CENTER_DISTANCE = TILE + 1  # Chebyshev distance from the centre tile
SEES = CENTER_DISTANCE + 1  # + Material: 1 when a tile of that material is within PLAYER_VISION_RADIUS
N_FEATURES = SEES + len(Material)
VALUE, AT_LEAST, EQUALS = 0, 1, 2  # Term.op
SUM, MIN = 0, 1  # Term.agg
RATIO, ONE_MINUS, FLOOR = 0, 1, 2  # Term.post
BIG = 1e18


def _constant(value) -> np.ndarray:
    constant = np.array(value)
    constant.flags.writeable = False
    return constant


#: Constants as read-only 0-d arrays: a ufunc converts a Python scalar argument on every call,
#: which costs about as much as the operation itself on arrays of a few hundred elements.
ZERO, ONE = _constant(0.0), _constant(1.0)


@dataclass(frozen=True)
class Term:
    """A leaf as arithmetic on one feature column (integer-valued): per member y = min(x - offset,
    cap) (op VALUE), x >= threshold (AT_LEAST) or x == threshold (EQUALS), dead members left out when
    `alive_only`; summed (SUM) or the least (MIN) over the members; with `accumulate`, added up
    over the ticks since the task began; then r = that / denom (denom "members": the member count;
    denom <= 0: progress 1) and progress r (RATIO), 1 - r (ONE_MINUS) or floor(r) (FLOOR),
    clipped to [0, 1]. `members`: "subject" or a group parameter's name."""

    column: int
    op: int = VALUE
    offset: float = 0.0
    cap: float = BIG
    threshold: float = 0.0
    alive_only: bool = True
    agg: int = SUM
    accumulate: bool = False
    denom: float | str = 1.0
    post: int = RATIO
    members: str = "subject"


@dataclass
class Layout:
    """Where agents are: `n_worlds` worlds of `slots` agent slots each (world w's slot s is row
    w * slots + s, as in the fused engine), in teams of `team_size` contiguous slots."""

    slots: int
    team_size: int
    n_worlds: int = 1

    @property
    def n_teams(self) -> int:
        return -(-self.slots // self.team_size)

    def team_slots(self, world: int, team: int) -> np.ndarray:
        team %= self.n_teams
        local = np.arange(team * self.team_size, min((team + 1) * self.team_size, self.slots))
        return world * self.slots + local

    def members(self, keyword: str, world: int, team: int, slot: int | None) -> np.ndarray:
        """Slots named by a subject keyword for the task of `slot` (an agent's task) or of team
        `team` (a team's task, `slot` None) in `world`."""
        if keyword == "agent":
            if slot is None:
                raise ValueError("subject 'agent' names one agent: a team's task has none")
            return np.array([slot], dtype=np.int64)
        if keyword == "team":
            return self.team_slots(world, team)
        if keyword in ("left_team", "right_team"):
            return self.team_slots(world, team + (1 if keyword == "left_team" else -1))
        if keyword.endswith("leader") and keyword != "foe_leaders":
            shift = {"leader": 0, "left_team_leader": 1, "right_team_leader": -1}[keyword]
            return self.team_slots(world, team + shift)[:1]
        others = [t for t in range(self.n_teams) if t != team]
        if keyword == "foes":
            return np.concatenate([self.team_slots(world, t) for t in others] or [np.zeros(0, np.int64)])
        if keyword == "foe_leaders":
            return np.array([world * self.slots + t * self.team_size for t in others], dtype=np.int64)
        raise ValueError(f"unknown subject {keyword!r}")


class Members:
    """Each leaf's set of slots as flat (leaf, slot) pairs, leaves in order; reductions over the
    pairs give one value per leaf (empty sets give `empty`)."""

    def __init__(self, sets: list[np.ndarray]) -> None:
        self.n = len(sets)
        self.counts = np.array([len(s) for s in sets], dtype=np.int64)
        self.slots = np.concatenate(sets).astype(np.int64) if sets else np.zeros(0, np.int64)
        self.owner = np.repeat(np.arange(self.n), self.counts)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self._filled = self.counts > 0
        self._all_filled = bool(self._filled.all())

    def sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.owner, weights=values, minlength=self.n)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.owner, weights=mask, minlength=self.n) > 0

    def all(self, mask: np.ndarray) -> np.ndarray:
        return (np.bincount(self.owner, weights=mask, minlength=self.n) == self.counts) & self._filled

    def max(self, values: np.ndarray, empty: float = 0.0) -> np.ndarray:
        return self._reduce(np.maximum, values, empty)

    def min(self, values: np.ndarray, empty: float = 0.0) -> np.ndarray:
        return self._reduce(np.minimum, values, empty)

    def _reduce(self, ufunc: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        if self.slots.size and self._all_filled:
            return ufunc.reduceat(values, self.starts).astype(np.float64, copy=False)
        out = np.full(self.n, empty, dtype=np.float64)
        if self.slots.size:
            out[self._filled] = ufunc.reduceat(values, self.starts[self._filled])
        return out


@dataclass
class Leaves:
    """Every leaf of one predicate: `args` (one array per parameter, `Param.code` values),
    `subject` (`Members`), `groups` (`Members` per group parameter), `world` (per leaf), `static`
    (what `bind` precomputes), `memory` (per-leaf arrays kept across ticks and zeroed when a
    leaf's task restarts, for counts since the task began) and `kept` (arrays never zeroed)."""

    predicate: Predicate
    nodes: np.ndarray
    args: dict[str, np.ndarray]
    subject: Members
    groups: dict[str, Members]
    world: np.ndarray
    static: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, np.ndarray] = field(default_factory=dict)
    kept: dict[str, np.ndarray] = field(default_factory=dict)
    block: slice | None = None  # `nodes` as a range, once compiled

    @property
    def n(self) -> int:
        return len(self.nodes)

    def total(self, key: str, per_tick: np.ndarray) -> np.ndarray:
        """Add this tick's values to the leaves' running total `key` and return it."""
        total = self.memory.get(key)
        if total is None:
            total = self.memory[key] = np.zeros(self.n, dtype=np.float64)
        total += per_tick
        return total

    def restart(self, leaves: np.ndarray) -> None:
        for values in self.memory.values():
            values[leaves] = 0


@dataclass
class Context:
    """What predicates read on a tick: the state, and per agent slot whether it is alive and its
    position within its world (the fused engine stacks worlds' maps; `row_offset` undoes it).
    `TaskState` keeps one per episode and `advance`s it every tick."""

    state: State
    config: Config
    layout: Layout
    world_ticks: np.ndarray  # each world's tick in its episode
    row_offset: np.ndarray  # per slot: the first grid row of its world
    team_of_row: np.ndarray | None = None  # per entity row, and -1 last: its team across worlds (-1: NPCs)
    newcomers: np.ndarray | None = None  # per slot: a new agent this tick (None: nobody new)
    cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._position_buffer: np.ndarray | None = None  # kept across ticks (np.stack costs 7x two copies)
        self._cols_array: tuple[int, np.ndarray] | None = None
        self.distances = Distances()  # slot-to-point distances readers ask for when bound
        self._refresh()

    def advance(self, state: State, world_ticks: np.ndarray, newcomers: np.ndarray | None) -> None:
        """The next tick's context (cheaper than a new one: the per-episode fields stay)."""
        self.state, self.world_ticks, self.newcomers = state, world_ticks, newcomers
        if self.cache:
            self.cache = {}
        self.distances.next_tick()
        self._refresh()

    def _refresh(self) -> None:
        ent, n = self.state.entities, self.layout.slots * self.layout.n_worlds
        self.ent = ent
        self.alive = ent.alive[:n]
        self.all_alive = all_of(self.alive)
        self.row = ent.row[:n] - self.row_offset if self.layout.n_worlds > 1 else ent.row[:n]
        self.col = ent.col[:n]
        self._flat: np.ndarray | None = None
        self._position: np.ndarray | None = None

    @property
    def flat(self) -> np.ndarray:
        """Per slot: its tile's index in the flattened (stacked) map, computed once a tick when asked."""
        if self._flat is None:
            n = len(self.alive)
            self._flat = self.ent.row[:n] * self._cols() + self.col  # int32 holds 2**31 tiles
        return self._flat

    @property
    def position(self) -> np.ndarray:
        """(2, slots) float64: each slot's row and column within its world, computed once a tick when
        asked (for `chebyshev_between`: one array op serves both coordinates; float, as the
        feature columns the distances go to)."""
        if self._position is None:
            buffer = self._position_buffer
            if buffer is None or buffer.shape[1] != len(self.row):
                buffer = self._position_buffer = np.empty((2, len(self.row)))
            buffer[0], buffer[1] = self.row, self.col
            self._position = buffer
        return self._position

    def _cols(self) -> np.ndarray:
        """The grid's row stride as a 0-d array of the rows' type (see `ONE`)."""
        cols = self.state.tiles.cols
        if self._cols_array is None or self._cols_array[0] != cols:
            self._cols_array = (cols, np.array(cols, dtype=self.ent.row.dtype))
        return self._cols_array[1]

    def ticks(self, leaves: Leaves) -> np.ndarray:
        """Each leaf's world tick."""
        return self.world_ticks[leaves.world]


def any_of(values: np.ndarray) -> bool:
    """Whether some element is true (nonzero). `np.count_nonzero` costs a third of ndarray.any or
    a logical_or reduction on arrays this size (they go through more Python and ufunc machinery)."""
    return np.count_nonzero(values) != 0


def all_of(values: np.ndarray) -> bool:
    """Whether every element is true (nonzero); see `any_of`."""
    return np.count_nonzero(values) == values.size


def clip01(values: np.ndarray) -> np.ndarray:
    return clip_ufunc(values, ZERO, ONE)
