"""A task's fixed-length embedding: a deterministic float32 vector from its spec alone.

Layout (`EMBEDDING_SIZE` = 16 + 4 x 65 = 276 floats, whatever predicates are registered):

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
a choice or subject keyword (index + 1) / (number of choices).
"""

from __future__ import annotations

import hashlib

import numpy as np

from nmmo.tasks import registry
from nmmo.tasks.core import SUBJECTS
from nmmo.tasks.spec import KINDS, REWARD_TO, Node, TaskSpec

FIXED, HASHED, MAX_LEAVES, MAX_ARGS = 32, 16, 4, 6
ROOTS = ("predicate", "and", "or", "not", "sum", "at_least")
HEADER = 16
LEAF = FIXED + HASHED + len(SUBJECTS) + 2 + MAX_ARGS
EMBEDDING_SIZE = HEADER + MAX_LEAVES * LEAF
assert len(registry.BUILTINS) <= FIXED, "more built-ins than fixed identity slots"


def predicate_identity(name: str) -> int:
    """A predicate's position in a leaf's identity one-hot (stable across processes and runs)."""
    if name in registry.BUILTIN_INDEX:
        return registry.BUILTIN_INDEX[name]
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return FIXED + int.from_bytes(digest, "little") % HASHED


def embed(spec: TaskSpec) -> np.ndarray:
    """The spec's embedding (see the module notes)."""
    out = np.zeros(EMBEDDING_SIZE, dtype=np.float32)
    out[KINDS.index(spec.kind)] = 1.0
    out[3] = min(np.log1p(spec.hold) / np.log1p(1024), 1.0)
    out[4 + REWARD_TO.index(spec.reward_to)] = 1.0
    out[6] = spec.reward_on == "completion"
    out[7] = np.clip(np.sign(spec.reward) * np.log1p(abs(spec.reward)) / np.log1p(10), -1, 1)
    out[8 + ROOTS.index(spec.node.op)] = 1.0
    leaves = list(_leaves(spec.node, False, 1.0))
    out[14] = spec.node.n / len(leaves) if spec.node.op == "at_least" else 0.0
    out[15] = min(np.log1p(len(leaves)) / np.log1p(8), 1.0)
    vectors = [_leaf(leaf, negated, weight, spec.subject) for leaf, negated, weight in leaves]
    for i, vector in enumerate(vectors[: MAX_LEAVES - 1]):
        out[HEADER + i * LEAF: HEADER + (i + 1) * LEAF] = vector
    if len(vectors) >= MAX_LEAVES:
        out[HEADER + (MAX_LEAVES - 1) * LEAF:] = np.mean(vectors[MAX_LEAVES - 1:], axis=0)
    return out


def _leaves(node: Node, negated: bool, weight: float):
    if node.op == "predicate":
        yield node, negated, weight
        return
    for i, child in enumerate(node.children):
        yield from _leaves(child, negated ^ (node.op == "not"), weight * (node.weights[i] if node.op == "sum" else 1.0))


def _leaf(node: Node, negated: bool, weight: float, subject: str) -> np.ndarray:
    vector = np.zeros(LEAF, dtype=np.float32)
    vector[predicate_identity(node.predicate)] = 1.0
    vector[FIXED + HASHED + SUBJECTS.index(node.subject or subject)] = 1.0
    vector[FIXED + HASHED + len(SUBJECTS)] = float(negated)
    vector[FIXED + HASHED + len(SUBJECTS) + 1] = np.clip(weight, -1.0, 1.0)
    params = {param.name: param for param in registry.lookup(node.predicate).params}
    for i, (name, value) in enumerate(node.args[:MAX_ARGS]):
        vector[LEAF - MAX_ARGS + i] = params[name].embed(value)
    return vector
