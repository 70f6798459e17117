"""What the recipe tests share: TensorBoard's own reader over the event files a run wrote."""

from __future__ import annotations

from pathlib import Path

import pytest


def scalars(directory: str | Path, tag: str) -> list:
    """The scalar events named `tag` in the event files under `directory` (the one folder that holds
    them), read by the `tensorboard` package's `EventAccumulator`."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator").EventAccumulator
    folders = {path.parent for path in Path(directory).rglob("events.out.tfevents*")}
    assert len(folders) == 1, f"event files under {directory}: {sorted(folders)}"
    events = accumulator(str(folders.pop())).Reload()
    assert tag in events.Tags()["scalars"], events.Tags()["scalars"]
    return events.Scalars(tag)
