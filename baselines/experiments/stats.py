"""The experiments' statistics: JSON-safe numbers, intervals over episodes and over seeds, and the
smoothed training curves.

A run's evaluation pools every lifetime of its episodes, with a 95 % bootstrap interval over
episodes (`pooled_metrics`); a condition with several seeds gets a Student t interval over the
seeds' means (`seed_interval`, `condition_stat`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluation.metrics import METRICS, T_975, t_interval  # noqa: F401 - T_975 re-exported

#: Student t quantiles (0.975) for 1..30 degrees of freedom: 95 % intervals over a few seeds.

def clean(value: Any, digits: int = 4) -> Any:
    """A JSON-safe number: floats rounded, NaN and infinities as None."""
    if isinstance(value, float | np.floating):
        return round(float(value), digits) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def pooled_metrics(episodes: list[dict], seed: int = 0, draws: int = 2000) -> dict[str, dict[str, float | None]]:
    """{metric: {mean, low, high}}: the mean over every lifetime of the episodes, with a 95 %
    bootstrap interval over episodes (each resample pooled the same way; None from one episode)."""
    counts = np.array([e["count"] for e in episodes], dtype=np.float64)
    picks = np.random.default_rng(seed).integers(len(episodes), size=(draws, len(episodes)))
    out = {}
    for name in METRICS:
        sums = np.array([e["sums"][name] for e in episodes])
        if not counts.sum():
            out[name] = {"mean": None, "low": None, "high": None}
            continue
        resampled = sums[picks].sum(axis=1) / np.maximum(counts[picks].sum(axis=1), 1)
        low, high = np.percentile(resampled, [2.5, 97.5]) if len(episodes) > 1 else (None, None)
        out[name] = {"mean": clean(sums.sum() / counts.sum()), "low": clean(low), "high": clean(high)}
    return out


def seed_interval(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean of per-seed values with a 95 % Student t interval (None bounds for a single seed)."""
    kept = np.array([v for v in values if v is not None], dtype=np.float64)
    if not len(kept):
        return {"mean": None, "low": None, "high": None, "n": 0, "values": []}
    mean, low, high = t_interval(kept)
    return {"mean": clean(mean), "low": clean(low), "high": clean(high), "n": int(len(kept)),
            "values": [clean(v) for v in kept]}


def condition_stat(entries: list[dict], value: Callable[[dict], dict]) -> dict[str, Any]:
    """One condition's statistic over its seeds: a t interval over the seeds' means when there are
    several, else the single run's bootstrap interval over episodes (`kind` says which)."""
    cells = [value(e) for e in entries]
    if len(cells) == 1:
        return {**cells[0], "n": 1, "values": [cells[0]["mean"]], "kind": "bootstrap over episodes"}
    return {**seed_interval([c["mean"] for c in cells]), "kind": "t over seeds"}


def iterations_note(rows: list[dict], key: str) -> list[str]:
    """A warning when the runs made very different numbers of gradient steps per agent-step.

    The trainer's batch is a rollout of fixed ticks, so a condition whose slots hold few live agents
    (a large cap filling at two spawns a tick) runs more iterations for the same agent-steps; with a
    fixed minibatch count it would also make more gradient steps per agent-step, which alone can make
    it learn faster early. The experiments size minibatches by live agent-steps
    (`Budget.minibatch_agent_steps`) so that this holds; the note says when it does not."""
    rates = {}
    for row in rows:
        steps, updates = row.get("steps"), row.get("updates")
        if steps and updates and all(updates):
            rates[row[key]] = 1000 * float(np.sum(updates)) / float(np.sum(steps))
    if len(rates) < 2 or max(rates.values()) < 1.5 * min(rates.values()):
        return []
    spread = ", ".join(f"{key} {k}: {v:.2f}" for k, v in rates.items())
    return [f"Caution: the runs made very different numbers of gradient steps per 1,000 agent-steps ({spread}), "
            "which confounds the comparison at this budget."]


def smooth(steps: list, values: list, weights: list, window: int) -> tuple[np.ndarray, np.ndarray]:
    """A moving average of a history column, weighted by the lifetimes each row averaged (rows
    without finished lifetimes are skipped), with a point for every row. The window is centred, so
    a rise is placed where it happened, not half a window late; it shrinks to the first row at the
    start (the untrained policy's level is not averaged with what came after) and keeps its full
    width at the end (a last iteration with few finished agents does not swing the curve)."""
    data = [(s, v, w or 0) for s, v, w in zip(steps, values, weights, strict=True) if v is not None and w]
    if not data:
        return np.zeros(0), np.zeros(0)
    x, y, w = (np.array(c, dtype=np.float64) for c in zip(*data, strict=True))
    reach, rows = max(1, window) // 2, np.arange(len(y))
    half = np.minimum(reach, rows)
    high = np.minimum(len(y), rows + half + 1)
    low = np.minimum(rows - half, np.maximum(0, high - (2 * reach + 1)))
    sums, mass = np.concatenate(([0.0], np.cumsum(y * w))), np.concatenate(([0.0], np.cumsum(w)))
    return x, (sums[high] - sums[low]) / np.maximum(mass[high] - mass[low], 1e-9)
