"""The results file of an experiment (``OUT/EXPERIMENT.json``): its format, the versions that
can change results, the runs an earlier invocation finished (for ``--resume``), and atomic saves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nmmo.io.files import atomic_write_json

if TYPE_CHECKING:
    from baselines.experiments.run import Run

FORMAT = "flatmmo-experiment"
FORMAT_VERSION = 1


def versions() -> dict[str, str]:
    """Versions that can change results (the evaluation's, and torch's)."""
    from evaluation.tournament import versions as evaluation_versions

    out = evaluation_versions()
    try:
        import torch

        out["torch"] = torch.__version__
    except ImportError:  # pragma: no cover - the trainer needs it anyway
        pass
    return out


def previous_runs(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The finished runs of an earlier invocation, for ``--resume``; ValueError when it was made
    with other settings (its runs would not be comparable with new ones)."""
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    if saved.get("settings") != settings:
        raise ValueError(f"cannot resume {path}: it was made with other settings ({saved.get('settings')}); "
                         f"this run has {settings}")
    return saved.get("runs", {})


def save_results(path: Path, results: dict[str, Any]) -> Path:
    """Write the results file atomically (a kill leaves the previous version)."""
    return atomic_write_json(path, results)


def by_condition(results: dict[str, Any], runs: list[Run]) -> dict[str, list[dict]]:
    """The finished entries of `runs` grouped by condition, in the order of `runs`."""
    groups: dict[str, list[dict]] = {}
    for run in runs:
        groups.setdefault(run.condition, []).append(results["runs"][run.key])
    return groups
