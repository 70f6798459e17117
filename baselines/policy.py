"""A trained checkpoint as a policy (`ckpt:PATH`, or `baseline:NAME` for the weights shipped in the
package), for tournaments, `nmmo run` and value overlays.

It keeps each agent's LSTM memory between calls (keyed by agent id; new agents start fresh, gone
ones are forgotten), acts for all its agents in one batched forward pass, and keeps the value
estimates of its last call in `last_values` (used to paint the value-function overlay).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from baselines import checkpoint as checkpoints
from baselines import model as models
from nmmo.config import Config
from nmmo.core.layout import ObsBatch
from nmmo.io import torchzip
from nmmo.policy import ArrayPolicy
from nmmo.tasks.embedding import convert, version_of


class CheckpointPolicy(ArrayPolicy):
    """Plays a PPO checkpoint. Subclasses set `path` (see `nmmo.policy.load_policy_class`)."""

    path: str = ""

    def __init__(self, config: Config, seed: int | None = None, path: str | None = None,
                 greedy: bool = False) -> None:
        super().__init__(config)
        checkpoint = checkpoints.load(path or self.path)
        self.model = models.build(checkpoint["model_kwargs"])
        self.model.load_state_dict(checkpoint["model"])
        self.model.eval()
        self.greedy = greedy
        self.memory: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.last_values: dict[int, float] = {}
        self.trained_steps = int(checkpoint["step"])
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.memory.clear()
        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))

    def act_arrays(self, batch: ObsBatch) -> np.ndarray:
        """One batched forward pass over every field of the batch (the encoder input: one tensor per
        field, by its layout name); rows choosing the no-op target do not attack."""
        if batch.n == 0:
            return np.zeros((0, 3), dtype=np.int64)
        ids = batch.ids.tolist()
        tensors = {name: torch.as_tensor(values) for name, values in self._inputs(batch).items()}
        zeros = torch.zeros(self.model.state_size)
        h = torch.stack([self.memory.get(i, (zeros, zeros))[0] for i in ids]).unsqueeze(0)
        c = torch.stack([self.memory.get(i, (zeros, zeros))[1] for i in ids]).unsqueeze(0)
        with torch.no_grad():
            state = torch.get_rng_state()
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator)))
            actions, _, values, (h, c) = models.act(self.model, tensors, (h, c), torch.zeros(len(ids)), self.greedy)
            torch.set_rng_state(state)
        self.memory = {i: (h[0, k], c[0, k]) for k, i in enumerate(ids)}
        self.last_values = dict(zip(ids, values.tolist(), strict=True))
        rows = actions.numpy().astype(np.int64)
        rows[rows[:, 2] >= batch["target_mask"].shape[1] - 1, 1:] = -1
        return rows


    def _inputs(self, batch: ObsBatch) -> dict[str, np.ndarray]:
        """The batch's arrays, the task embedding rewritten in the version the network was trained
        on when the observation holds another (`nmmo.tasks.embedding.convert`: a network trained on
        version 1, as the shipped baseline:tasks, plays on the default version 2)."""
        arrays = dict(batch.items())
        width = self.model.kwargs.get("task_dim")  # the recurrent network's; the MLP sizes it from the layout
        task = arrays.get("task")
        if width and task is not None and task.shape[1] != width:
            try:
                arrays["task"] = convert(task, version_of(width))
            except ValueError as err:
                raise ValueError(f"this checkpoint reads task embeddings of {width} floats, the observation "
                                 f"holds {task.shape[1]}: {err}") from None
        return arrays


def checkpoint_class(path: str) -> type:
    """The ``ckpt:PATH`` policy scheme (registered in pyproject.toml): a `CheckpointPolicy` class
    bound to that checkpoint file, whose zip members are sized now (`nmmo.io.torchzip`: a file
    that would inflate past the caps is refused before a policy is made of it)."""
    if not Path(path).is_file():
        raise ValueError(f"checkpoint {path!r} does not exist")
    with torchzip.open_checked(path, f"checkpoint {path!r}"):
        pass
    return type("Checkpoint", (CheckpointPolicy,), {"path": path})


#: Where shipped baselines live (inside the package, so a wheel carries them).
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"


def shipped_baselines() -> list[str]:
    """Names of the baselines in the package (`baseline:NAME`)."""
    return sorted(path.stem for path in WEIGHTS_DIR.glob("*.pt"))


def baseline_class(name: str) -> type:
    """The ``baseline:NAME`` policy scheme (registered in pyproject.toml): a `CheckpointPolicy` on
    the weights shipped as baselines/weights/NAME.pt (tensors and plain data, loaded weights-only)."""
    if name not in shipped_baselines():
        raise ValueError(f"no shipped baseline named {name!r}; the package has "
                         f"{', '.join(f'baseline:{n}' for n in shipped_baselines()) or 'none'}")
    return type(f"Baseline_{name}", (CheckpointPolicy,), {"path": str(WEIGHTS_DIR / f"{name}.pt")})
