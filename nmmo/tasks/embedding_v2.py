"""Version 2 of the task embedding (the default): every argument of up to six leaves, choices as
one-hots, numbers linear (coordinates in tiles), and `decode`, which reads a vector back.

Version 1 could not carry a directed task: a choice (quadrant, skill, style) was one ordinal float,
coordinates were log-scaled (adjacent tiles near a Medium map's far edge differed by 0.001) and
leaves past the fourth were averaged. Here a policy, or a test, can read the task back exactly.

Layout (`SIZE` = 16 + 6 x 119 = 730 floats, whatever predicates are registered):

| floats | what |
|---|---|
| 0-2 | type one-hot: task, ongoing, hold |
| 3 | hold ticks / 1024 (linear, clipped at 16) |
| 4-5 | reward_to one-hot: agent, team |
| 6 | 1 when reward_on = completion |
| 7 | reward multiplier, sign(r) log1p(abs(r)) / log1p(10), clipped to [-1, 1] (as version 1) |
| 8-13 | the root node one-hot: predicate, and, or, not, sum, at_least |
| 14 | at_least's k / 8 (0 otherwise) |
| 15 | number of leaves / 8 |
| 16 + 119 i ... | leaf i (depth first; leaves past the sixth are averaged into the sixth slot): |
| + 0-47 | predicate identity one-hot (as version 1: a built-in at its `registry.BUILTINS` position) |
| + 48-56 | subject one-hot (`core.SUBJECTS`) |
| + 57 | 1 when under an odd number of ``not`` |
| + 58 | product of the ``sum`` weights above it (1 elsewhere), clipped to [-1, 1] |
| + 59-64 | its parent's operator one-hot (as the root's; "predicate": the leaf is the root) |
| + 65-70 | its first six arguments in parameter order: a number v as v / `Param.unit` (0 for choices) |
| + 71-94 | one-hot of its first choice or subject-keyword argument (choice index mod 24) |
| + 95-118 | one-hot of its second one |

`Param.unit` is the parameter's `scale` unless it sets its own: coordinates (row, col) use
`core.COORD_UNIT` = 128 tiles, so a tile is 1/128 wherever it lies, in the units of the agent's own
position (the Entity observation's row and column, in tiles). Exact for what tasks use: integers
read back by rounding (|v| / unit below 2^23), floats of up to 7 significant digits by their
shortest float32 form, choices with at most 24 values, two choice arguments and six arguments per
leaf, six leaves. A third choice argument, a seventh argument or leaf is not carried.
"""

from __future__ import annotations

import numpy as np

from nmmo.tasks import registry
from nmmo.tasks.core import SUBJECTS, Param
from nmmo.tasks.flat import FIXED, HASHED, ROOTS, FlatLeaf, FlatTask, identity_name
from nmmo.tasks.spec import KINDS, REWARD_ON, REWARD_TO

MAX_LEAVES, MAX_ARGS, CHOICE_BLOCKS, CHOICE_WIDTH = 6, 6, 2, 24
HEADER, HOLD_UNIT, HOLD_CAP, COUNT_UNIT = 16, 1024, 16, 8
IDENTITY = FIXED + HASHED
SUBJECT = IDENTITY
NEGATED = SUBJECT + len(SUBJECTS)
WEIGHT = NEGATED + 1
PARENT = WEIGHT + 1
NUMBERS = PARENT + len(ROOTS)
CHOICES = NUMBERS + MAX_ARGS
LEAF = CHOICES + CHOICE_BLOCKS * CHOICE_WIDTH
SIZE = HEADER + MAX_LEAVES * LEAF


def unit(param: Param) -> float:
    """The divisor of a number argument's linear value."""
    return param.unit or param.scale


def vector(task: FlatTask) -> np.ndarray:
    """The version-2 embedding of a flattened spec (see the module notes)."""
    out = np.zeros(SIZE, dtype=np.float32)
    out[KINDS.index(task.kind)] = 1.0
    out[3] = min(task.hold, HOLD_CAP * HOLD_UNIT) / HOLD_UNIT
    out[4 + REWARD_TO.index(task.reward_to)] = 1.0
    out[6] = task.reward_on == "completion"
    out[7] = task.reward_code
    out[8 + ROOTS.index(task.root)] = 1.0
    out[14] = task.k / COUNT_UNIT
    out[15] = task.n_leaves / COUNT_UNIT
    vectors = [_leaf(leaf) for leaf in task.leaves]
    for i, leaf in enumerate(vectors[: MAX_LEAVES - 1]):
        out[HEADER + i * LEAF: HEADER + (i + 1) * LEAF] = leaf
    if len(vectors) >= MAX_LEAVES:
        out[HEADER + (MAX_LEAVES - 1) * LEAF:] = np.mean(vectors[MAX_LEAVES - 1:], axis=0)
    return out


def _leaf(leaf: FlatLeaf) -> np.ndarray:
    out = np.zeros(LEAF, dtype=np.float32)
    out[leaf.identity] = 1.0
    out[SUBJECT + SUBJECTS.index(leaf.subject)] = 1.0
    out[NEGATED] = float(leaf.negated)
    out[WEIGHT] = np.clip(leaf.weight, -1.0, 1.0)
    out[PARENT + ROOTS.index(leaf.parent)] = 1.0
    params = _params(leaf.predicate)
    block = 0
    for i, (name, value) in enumerate(leaf.args[:MAX_ARGS]):
        param = params[name]
        if param.kind in ("choice", "group"):
            if block < CHOICE_BLOCKS:
                out[CHOICES + block * CHOICE_WIDTH + _choice_index(param, value) % CHOICE_WIDTH] = 1.0
            block += 1
        else:
            out[NUMBERS + i] = value / unit(param)
    return out


def decode(vector: np.ndarray) -> FlatTask:
    """The flattened spec a version-2 vector was made from: every header field and every argument
    of every leaf it carries (see the module notes for the limits). Raises ValueError when the
    vector is not a version-2 embedding."""
    x = np.asarray(vector, dtype=np.float32)
    if x.shape != (SIZE,):
        raise ValueError(f"a version-2 task embedding has {SIZE} floats, got shape {x.shape}")
    kind, reward_to = _one(x[0:3], KINDS, "type"), _one(x[4:6], REWARD_TO, "reward_to")
    root = _one(x[8:14], ROOTS, "root")
    n_leaves = int(round(float(x[15]) * COUNT_UNIT))
    carried = n_leaves if n_leaves <= MAX_LEAVES else MAX_LEAVES - 1  # the last slot: an average
    leaves = tuple(_decode_leaf(x[HEADER + i * LEAF: HEADER + (i + 1) * LEAF], i) for i in range(carried))
    return FlatTask(kind, int(round(float(x[3]) * HOLD_UNIT)), reward_to, REWARD_ON[int(x[6] > 0.5)], float(x[7]),
                    root, int(round(float(x[14]) * COUNT_UNIT)), n_leaves, leaves)


def _decode_leaf(x: np.ndarray, index: int) -> FlatLeaf:
    identity = _one_index(x[:IDENTITY], f"leaf {index} predicate")
    name = identity_name(identity)
    subject = SUBJECTS[_one_index(x[SUBJECT: SUBJECT + len(SUBJECTS)], f"leaf {index} subject")]
    parent = ROOTS[_one_index(x[PARENT: PARENT + len(ROOTS)], f"leaf {index} parent")]
    args: list[tuple[str, object]] = []
    cls = registry.lookup(name) if name else None
    block = 0
    for i, param in enumerate(cls.params[:MAX_ARGS] if cls else ()):
        if param.kind in ("choice", "group"):
            words = SUBJECTS if param.kind == "group" else param.choices
            if block < CHOICE_BLOCKS:
                start = CHOICES + block * CHOICE_WIDTH
                which = _one_index(x[start: start + CHOICE_WIDTH], f"leaf {index} {param.name}")
                args.append((param.name, words[which]))
            block += 1
        else:
            args.append((param.name, _number(param, float(x[NUMBERS + i]))))
    return FlatLeaf(name, identity, subject, bool(x[NEGATED] > 0.5), float(x[WEIGHT]), parent, tuple(args))


def _number(param: Param, value: float) -> int | float:
    """A number argument back from its linear value: an int by rounding, a float by the shortest
    decimal that rounds to the same float32 (the spec's own, when it had up to 7 significant digits)."""
    if param.kind == "int":
        return int(round(value * unit(param)))
    return float(str(np.float32(np.float32(value) * np.float32(unit(param)))))


def _choice_index(param: Param, value: str) -> int:
    return (SUBJECTS if param.kind == "group" else param.choices).index(value)


def _one(x: np.ndarray, words: tuple[str, ...], what: str) -> str:
    return words[_one_index(x, what)]


def _one_index(x: np.ndarray, what: str) -> int:
    if not (x > 0.5).any():
        raise ValueError(f"not a version-2 task embedding: no {what} is set")
    return int(np.argmax(x))


def _params(name: str) -> dict[str, Param]:
    cls = registry.lookup(name)
    return {param.name: param for param in cls.params} if cls else {}
