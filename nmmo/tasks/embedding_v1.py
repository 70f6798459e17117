"""Version 1 of the task embedding (frozen): what `baseline:tasks` was trained on. Select it with
the config key ``TASK_EMBEDDING = 1``; a checkpoint that reads it plays on version 2 too
(`nmmo.tasks.embedding.convert` rewrites each vector as this version's of the same spec).

Layout (`SIZE` = 16 + 4 x 65 = 276 floats, whatever predicates are registered):

| floats | what |
|---|---|
| 0-2 | type one-hot: task, ongoing, hold |
| 3 | hold ticks, log1p(hold) / log1p(1024), clipped to 1 |
| 4-5 | reward_to one-hot: agent, team |
| 6 | 1 when reward_on = completion |
| 7 | reward multiplier, sign(r) log1p(abs(r)) / log1p(10), clipped to [-1, 1] |
| 8-13 | the root node one-hot: predicate, and, or, not, sum, at_least |
| 14 | at_least's k / the number of leaves (0 otherwise) |
| 15 | number of leaves, log1p(n) / log1p(8), clipped to 1 |
| 16 + 65 i ... | leaf i (depth first; leaves past the fourth are averaged into the fourth slot): |
| + 0-47 | predicate identity one-hot: a built-in at its `registry.BUILTINS` position (< 32), others at 32 + h % 16 |
| + 48-56 | subject one-hot (`core.SUBJECTS`) |
| + 57 | 1 when under an odd number of ``not`` |
| + 58 | product of the ``sum`` weights above it (1 elsewhere), clipped to [-1, 1] |
| + 59-64 | its first six arguments in parameter order, by `Param.embed` (0 past the last) |

h is the first 8 bytes (little-endian) of the name's blake2b digest. `Param.embed`: a number v
is sign(v) log1p(abs(v)) / log1p(scale) clipped to [-1, 1] (`scale`: the parameter's typical size),
a choice or subject keyword (index + 1) / (number of choices). What it loses (version 2 keeps):
choices as one ordinal float, coordinates on a log scale, leaves past the fourth averaged.
"""

from __future__ import annotations

import numpy as np

from nmmo.tasks import registry
from nmmo.tasks.core import SUBJECTS
from nmmo.tasks.flat import FIXED, HASHED, ROOTS, FlatLeaf, FlatTask
from nmmo.tasks.spec import KINDS, REWARD_TO

MAX_LEAVES, MAX_ARGS = 4, 6
HEADER = 16
LEAF = FIXED + HASHED + len(SUBJECTS) + 2 + MAX_ARGS
SIZE = HEADER + MAX_LEAVES * LEAF


def vector(task: FlatTask) -> np.ndarray:
    """The version-1 embedding of a flattened spec (see the module notes)."""
    out = np.zeros(SIZE, dtype=np.float32)
    out[KINDS.index(task.kind)] = 1.0
    out[3] = min(np.log1p(task.hold) / np.log1p(1024), 1.0)
    out[4 + REWARD_TO.index(task.reward_to)] = 1.0
    out[6] = task.reward_on == "completion"
    out[7] = task.reward_code
    out[8 + ROOTS.index(task.root)] = 1.0
    out[14] = task.k / task.n_leaves if task.root == "at_least" else 0.0
    out[15] = min(np.log1p(task.n_leaves) / np.log1p(8), 1.0)
    vectors = [_leaf(leaf) for leaf in task.leaves]
    for i, leaf in enumerate(vectors[: MAX_LEAVES - 1]):
        out[HEADER + i * LEAF: HEADER + (i + 1) * LEAF] = leaf
    if len(vectors) >= MAX_LEAVES:
        out[HEADER + (MAX_LEAVES - 1) * LEAF:] = np.mean(vectors[MAX_LEAVES - 1:], axis=0)
    return out


def _leaf(leaf: FlatLeaf) -> np.ndarray:
    out = np.zeros(LEAF, dtype=np.float32)
    out[leaf.identity] = 1.0
    out[FIXED + HASHED + SUBJECTS.index(leaf.subject)] = 1.0
    out[FIXED + HASHED + len(SUBJECTS)] = float(leaf.negated)
    out[FIXED + HASHED + len(SUBJECTS) + 1] = np.clip(leaf.weight, -1.0, 1.0)
    cls = registry.lookup(leaf.predicate) if leaf.predicate else None
    if cls is None:  # a predicate no one here knows (a decoded plug-in's hashed identity): no arguments
        return out
    params = {param.name: param for param in cls.params}
    for i, (name, value) in enumerate(leaf.args[:MAX_ARGS]):
        out[LEAF - MAX_ARGS + i] = params[name].embed(value)
    return out
