"""A task's fixed-length embedding: a deterministic float32 vector from its spec alone, versioned.

- Version 2 (`LATEST`, the default; `nmmo.tasks.embedding_v2`): 730 floats; every argument of up
  to six leaves, choices one-hot, numbers linear, coordinates in tiles / 128; `decode` reads a vector
  back into the spec's header and leaves (`nmmo.tasks.flat.FlatTask`).
- Version 1 (`nmmo.tasks.embedding_v1`, frozen): 276 floats, what `baseline:tasks` was trained on.

The config key ``TASK_EMBEDDING`` (default 2) says which one the observation's ``Task`` field holds
(`embedding_size(config)` floats). A network trained on version 1 plays on version 2 through
`convert`, which rewrites each version-2 vector as the version-1 vector of the same spec (exact
whenever `decode` is; `baselines.policy.CheckpointPolicy` does it when its network's task input is
version 1's width). The other way cannot be done: version 1 does not carry its tasks.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from nmmo.tasks import embedding_v1, embedding_v2
from nmmo.tasks.flat import FlatLeaf, FlatTask, flatten, predicate_identity
from nmmo.tasks.spec import TaskSpec

VERSIONS = (1, 2)
LATEST = 2
EMBEDDING_SIZES = {1: embedding_v1.SIZE, 2: embedding_v2.SIZE}
#: The length of the default (latest) version; `embedding_size(config)` gives a config's.
EMBEDDING_SIZE = EMBEDDING_SIZES[LATEST]
_WRITERS = {1: embedding_v1.vector, 2: embedding_v2.vector}

__all__ = ["EMBEDDING_SIZE", "EMBEDDING_SIZES", "LATEST", "VERSIONS", "FlatLeaf", "FlatTask", "convert", "decode",
           "embed", "embedding_size", "predicate_identity", "version_of"]


def check_version(version: Any) -> int:
    """`version` when it is a known embedding version; a ValueError naming the known ones otherwise."""
    if isinstance(version, bool) or version not in VERSIONS:
        raise ValueError(f"unknown task embedding version {version!r}; known: {', '.join(map(str, VERSIONS))}")
    return int(version)


def embedding_size(version: Any = LATEST) -> int:
    """Floats per task embedding of a version, or of a config (its TASK_EMBEDDING key)."""
    version = getattr(version, "TASK_EMBEDDING", version)
    return EMBEDDING_SIZES[check_version(version)]


def embed(spec: TaskSpec, version: int = LATEST) -> np.ndarray:
    """The spec's embedding in a version (see the module notes of each)."""
    return _WRITERS[check_version(version)](flatten(spec))


def decode(vector: np.ndarray) -> FlatTask:
    """The spec's header and leaves back from a version-2 embedding (`embedding_v2.decode`)."""
    return embedding_v2.decode(vector)


def version_of(width: int) -> int:
    """The version whose embeddings have `width` floats (a ValueError when none has)."""
    for version, size in EMBEDDING_SIZES.items():
        if size == width:
            return version
    raise ValueError(f"no task embedding version has {width} floats (sizes: {EMBEDDING_SIZES})")


def convert(rows: np.ndarray, version: int) -> np.ndarray:
    """Task embeddings (n, width) of any version rewritten in `version`: the same rows when they are
    in it already; version 2 to version 1 through `decode` (the spec's version-1 vector, exact
    whenever decode is). Raises ValueError for version 1 to 2 (version 1 does not carry its tasks)."""
    rows = np.asarray(rows, dtype=np.float32)
    have, want = version_of(rows.shape[-1]), check_version(version)
    if have == want:
        return rows
    if (have, want) != (2, 1):
        raise ValueError(f"task embeddings of version {have} cannot be rewritten in version {want}: version 1 "
                         "does not carry its tasks (play with the config key TASK_EMBEDDING = 1 instead)")
    flat = rows.reshape(-1, rows.shape[-1])
    out = np.stack([_as_v1(row.tobytes()) for row in flat]) if len(flat) else np.zeros((0, embedding_v1.SIZE))
    return out.astype(np.float32).reshape(*rows.shape[:-1], embedding_v1.SIZE)


@lru_cache(maxsize=4096)
def _as_v1(row: bytes) -> np.ndarray:
    """One version-2 row (its bytes: a policy converts the same few tasks every tick) in version 1;
    zeros (a slot without a task) stay zeros."""
    vector = np.frombuffer(row, dtype=np.float32)
    return embedding_v1.vector(embedding_v2.decode(vector)) if vector.any() else np.zeros(embedding_v1.SIZE, np.float32)
