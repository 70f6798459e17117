"""TensorBoard event files of a training run (`nmmo train`'s OUT/tensorboard, the hand-written
recipes' and RLlib's): every number of each log row as a scalar at the run's agent-step count, so
``tensorboard --logdir OUT`` shows what the log holds.

The writer is torch's own `SummaryWriter`, which needs the `tensorboard` package (in the ``train``
extra): the same package reads the files back (its `EventAccumulator`), and torch users have it
already. tensorboardX would write the same format without the package but ships no reader."""

from __future__ import annotations

import math
from pathlib import Path

#: Log-row keys and the TensorBoard section each goes to (others: "train/").
SECTIONS = {"loss": ("policy_loss", "value_loss", "entropy", "approx_kl", "imitation_loss", "teacher_weight",
                     "updates"),
            "perf": ("seconds", "agent_steps_per_s", "rollout_steps_per_s", "env_s", "inference_s", "teacher_s",
                     "learn_s")}
#: Keys that are the x-axis, not a curve.
NOT_CURVES = ("iteration", "step")


def tag(key: str) -> str:
    """The scalar's name: a key with a "/" (task_share/NAME) as it is, others in their section."""
    if "/" in key:
        return key
    section = next((name for name, keys in SECTIONS.items() if key in keys), "train")
    return f"{section}/{key}"


def flatten(row: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a/b": 1}: nested results as TensorBoard's slash-separated names."""
    flat = {}
    for key, value in row.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


class TensorBoardLog:
    """Writes log rows as scalars (`log`); one event file per process, so a resumed run adds its own."""

    def __init__(self, directory: str | Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as err:
            raise ValueError("--tensorboard needs the tensorboard package (pip install -e '.[train]'), or pass "
                             "--no-tensorboard") from err
        self.directory = Path(directory)
        self.writer = SummaryWriter(log_dir=str(self.directory))

    def log(self, row: dict, step: int) -> None:
        """Every finite number of `row` at x = `step` (agent-steps), flushed: a killed run keeps its
        curves. Nested dicts (an RLlib result) give "outer/inner" names."""
        for key, value in flatten(row).items():
            if key in NOT_CURVES or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                self.writer.add_scalar(tag(key), value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
