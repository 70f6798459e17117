"""What the trainer logs about tasks (``nmmo train --tasks SET``): per iteration, how the curriculum
(or the specs' weights) dealt the tasks and how often each was completed, and their plot.

- ``task_share/NAME``: the share of the learner's agent slots holding task NAME, over the
  iteration's ticks. A slot keeps the task it drew at its episode's reset for the whole episode
  (a respawned agent holds the same spec), so this is the share of the draws in play, each
  weighted by the ticks it was in play: under a curriculum it follows the sampler's choices.
- ``task_completion/NAME``: the completion rate of the lives that held NAME and ended in the
  iteration (None where none ended); ``task_completion`` and ``task_lives`` pool every task.

`task_curves` draws them into ``OUT/tasks.png`` beside the trainer's ``curves.png``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from nmmo.tasks import TaskSet


class TaskTally:
    """One iteration's task counts: `slots` every tick, `lives` every step's ended lives, `row`
    at the end (which starts the next iteration's counts)."""

    def __init__(self, tasks: TaskSet) -> None:
        self.names = [spec.name for spec in tasks]
        n = len(self.names)
        self.held, self.lives, self.done = np.zeros(n), np.zeros(n), np.zeros(n)

    def slots(self, task_index: np.ndarray, learner: np.ndarray) -> None:
        """The task each learner slot holds this tick (`VecStep.tasks["task_index"]`)."""
        self.held += np.bincount(task_index[learner].astype(np.int64), minlength=len(self.names))

    def ended(self, outcomes: np.ndarray | None) -> None:
        """Rows of `VecStep.episode_tasks` (task index, progress, completed, reward) of ended lives."""
        if outcomes is None or not len(outcomes):
            return
        index = outcomes[:, 0].astype(np.int64)
        self.lives += np.bincount(index, minlength=len(self.names))
        self.done += np.bincount(index, weights=outcomes[:, 2], minlength=len(self.names))

    def row(self) -> dict[str, float | None]:
        """The iteration's log columns (see the module notes); the counts start over."""
        share = self.held / max(self.held.sum(), 1.0)
        rate = np.where(self.lives > 0, self.done / np.maximum(self.lives, 1.0), np.nan)
        out: dict[str, float | None] = {
            "task_lives": float(self.lives.sum()),
            "task_completion": float(self.done.sum() / self.lives.sum()) if self.lives.sum() else float("nan")}
        out.update({f"task_share/{name}": float(s) for name, s in zip(self.names, share, strict=True)})
        out.update({f"task_completion/{name}": float(r) for name, r in zip(self.names, rate, strict=True)})
        self.held[:], self.lives[:], self.done[:] = 0.0, 0.0, 0.0
        return out


def task_curves(out: str | os.PathLike, rows: list[dict]) -> Path | None:
    """``OUT/tasks.png``: each task's share of the slots over training (stacked) and its completion
    rate (a moving average weighted by lives); None when the log has no task columns."""
    names = [key.split("/", 1)[1] for key in (rows[0] if rows else {}) if key.startswith("task_share/")]
    if not names:
        return None
    from baselines.experiments.report import label_agent_steps, pyplot, save_figure

    plt = pyplot()
    steps = np.array([r["step"] for r in rows], dtype=np.float64)
    colours = [plt.get_cmap("tab20")(i % 20) if i < 20 else plt.get_cmap("tab20b")(i % 20) for i in range(len(names))]
    fig, (left, right) = plt.subplots(1, 2, figsize=(17, 6.5))
    shares = np.array([[r.get(f"task_share/{n}") or 0.0 for r in rows] for n in names])
    left.stackplot(steps, shares, colors=colours, labels=names)
    left.set_ylim(0, 1)
    left.set_title("share of the slots holding each task (the draws in play)")
    window = max(1, len(rows) // 20)
    for name, colour in zip(names, colours, strict=True):
        rate = np.array([_number(r.get(f"task_completion/{name}")) for r in rows])
        lives = np.nan_to_num(np.array([_number(r.get("task_lives")) for r in rows]))  # pooled count as weight
        kept = np.isfinite(rate)
        if not kept.any():
            continue
        weights, kernel = np.where(kept, lives, 0.0), np.ones(window)
        mass = np.convolve(weights, kernel, "same")
        smooth = np.convolve(np.nan_to_num(rate) * weights, kernel, "same") / np.maximum(mass, 1e-9)
        smooth[mass == 0] = np.nan
        right.plot(steps, smooth, color=colour, label=name)
    right.set_ylim(-0.02, 1.02)
    right.set_title(f"completion rate of the lives that ended (mean of {window} iterations)")
    for ax in (left, right):
        label_agent_steps(ax)
    right.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return save_figure(fig, Path(out) / "tasks.png")


def _number(value) -> float:
    return float("nan") if value is None else float(value)
