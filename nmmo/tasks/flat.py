"""A task spec as the task embeddings see it: its header and its leaves in order, each with what
the tree above it adds (negation, sum weights, the parent's operator).

Both embedding versions (`nmmo.tasks.embedding`) are written from a `FlatTask`, and version 2 is
read back into one (`nmmo.tasks.embedding_v2.decode`), so that a version-2 vector can be rewritten
as the version-1 vector of the same spec (what a checkpoint trained on version 1 reads) and a
policy can act on what its observation says (the scripted task follower).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from nmmo.tasks import registry
from nmmo.tasks.spec import Node, TaskSpec

#: A leaf's predicate identity one-hot: built-ins at their `registry.BUILTINS` position (FIXED
#: slots), others at FIXED + a hash of the name (HASHED slots).
FIXED, HASHED = 32, 16
#: Node operators, in one-hot order ("predicate": the root is a lone predicate).
ROOTS = ("predicate", "and", "or", "not", "sum", "at_least")
assert len(registry.BUILTINS) <= FIXED, "more built-ins than fixed identity slots"


def predicate_identity(name: str) -> int:
    """A predicate's position in a leaf's identity one-hot (stable across processes and runs)."""
    if name in registry.BUILTIN_INDEX:
        return registry.BUILTIN_INDEX[name]
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return FIXED + int.from_bytes(digest, "little") % HASHED


def identity_name(identity: int) -> str:
    """The predicate name at an identity position: a built-in's, else the one known predicate
    (registered or an entry point) that hashes there; "" when none or several do."""
    if identity < len(registry.BUILTINS):
        return registry.BUILTINS[identity].name
    names = [name for name in registry.known() if name not in registry.BUILTIN_INDEX
             and predicate_identity(name) == identity]
    return names[0] if len(names) == 1 else ""


@dataclass(frozen=True)
class FlatLeaf:
    """One leaf: its predicate (name, "" when the identity names no single known predicate, and
    identity position), whose state it reads, whether an odd number of ``not`` lie above it, the
    product of the ``sum`` weights above it, its parent's operator, and its arguments in parameter
    order (every parameter, defaults filled in)."""

    predicate: str
    identity: int
    subject: str
    negated: bool
    weight: float
    parent: str
    args: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class FlatTask:
    """A spec's header and leaves. `reward_code` is the reward as both versions embed it
    (sign(r) log1p(|r|) / log1p(10), clipped to [-1, 1], as float32); `k` is at_least's count (0
    for other roots); `n_leaves` counts every leaf, `leaves` holds those an embedding carries."""

    kind: str
    hold: int
    reward_to: str
    reward_on: str
    reward_code: float
    root: str
    k: int
    n_leaves: int
    leaves: tuple[FlatLeaf, ...]

    @property
    def reward(self) -> float:
        """The reward multiplier back from its code (exact up to float32 rounding; ±10 and past read as ±10)."""
        return float(np.sign(self.reward_code) * np.expm1(abs(self.reward_code) * np.log1p(10)))


def reward_code(reward: float) -> float:
    """The reward multiplier as the embeddings carry it."""
    return float(np.float32(np.clip(np.sign(reward) * np.log1p(abs(reward)) / np.log1p(10), -1, 1)))


def flatten(spec: TaskSpec) -> FlatTask:
    """The spec's header and every leaf, depth first."""
    leaves = tuple(FlatLeaf(node.predicate, predicate_identity(node.predicate), node.subject or spec.subject, negated,
                            weight, parent, node.args) for node, negated, weight, parent in _walk(spec.node))
    return FlatTask(spec.kind, spec.hold, spec.reward_to, spec.reward_on, reward_code(spec.reward), spec.node.op,
                    spec.node.n if spec.node.op == "at_least" else 0, len(leaves), leaves)


def _walk(node: Node, negated: bool = False, weight: float = 1.0,
          parent: str = "predicate") -> Iterator[tuple[Node, bool, float, str]]:
    if node.op == "predicate":
        yield node, negated, weight, parent
        return
    for i, child in enumerate(node.children):
        yield from _walk(child, negated ^ (node.op == "not"),
                         weight * (node.weights[i] if node.op == "sum" else 1.0), node.op)
