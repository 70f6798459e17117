"""A scripted teacher for the learner's first agent-steps (DAgger-style imitation inside PPO).

The learner acts; a teacher policy (any spec, e.g. ``scripted:Combat``) looks at the same
observations and says what it would have done. The trainer adds the cross-entropy of the
learner's heads on those labels to the PPO loss, with a weight that falls linearly to zero over
`Args.teacher_steps` agent-steps, after which PPO goes on alone on the reward. Labelling the states
the learner itself visits (not the teacher's) is what keeps imitation useful once the learner
drifts from the teacher (DAgger's point). Each training env has its own teacher
(`baselines.env_policies`), which forgets its map when the env starts a new episode.
"""

from __future__ import annotations

import numpy as np
import torch

from baselines.env_policies import EnvPolicies
from nmmo.config import Config
from nmmo.core.actions import NO_OP_ROW

#: [direction, style, target] of a row with no label (a label's target of -1: no attack).
UNLABELLED = np.array([-1, -1, -1])


class Teacher(EnvPolicies):
    """`spec` in every env, labelling the rows it is asked about (`label`)."""

    def __init__(self, config: Config, spec: str, num_envs: int, seed: int) -> None:
        super().__init__(config, num_envs, seed)
        for k in range(num_envs):
            self.assign(k, spec)

    def label(self, obs: dict[str, np.ndarray], ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(all rows, 3): the teacher's [direction, style, target] where `rows` is True, UNLABELLED
        elsewhere; an action without an attack has style and target -1."""
        labels = self.act(obs, ids, rows, missing=UNLABELLED)
        labels[rows & (labels[:, 0] < 0), 0] = NO_OP_ROW[0]  # no move given: the agent stays
        return labels


def imitation_loss(logits: tuple[torch.Tensor, torch.Tensor, torch.Tensor], labels: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the (move, style, target) heads on the teacher's labels, over the rows
    of `mask` that have one. A label that the row's action mask forbids teaches nothing (its logit
    is masked far below the others); a target of -1 is the no-op (the last column); style is learned
    only where the teacher attacks."""
    move, style, target = logits
    direction, attack_style = labels[:, 0], labels[:, 1]
    attack_target = torch.where(labels[:, 2] < 0, target.shape[-1] - 1, labels[:, 2])
    labelled = mask * (direction >= 0)

    def allowed(head: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return (head.gather(1, label.clamp(min=0)[:, None]).squeeze(1) > -1e8).float()

    def cross_entropy(head: torch.Tensor, label: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return (torch.nn.functional.cross_entropy(head, label.clamp(min=0), reduction="none") * weight).sum()

    move_ok = labelled * allowed(move, direction)
    target_ok = labelled * allowed(target, attack_target)
    style_ok = target_ok * (labels[:, 2] >= 0) * (attack_style >= 0) * allowed(style, attack_style)
    total = cross_entropy(move, direction, move_ok) + cross_entropy(target, attack_target, target_ok)
    return (total + cross_entropy(style, attack_style, style_ok)) / labelled.sum().clamp(min=1)
