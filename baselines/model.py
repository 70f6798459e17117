"""Reusable PyTorch subnetworks for nmmo observations, and the recurrent baseline policy.

Shapes (B = batch of agents, W = 2R + 1 window side, N = PLAYER_N_OBS entity rows, P = rows of the
batch that hold an entity, H = hidden):

- `TileEncoder`: Tile (B, W*W, 4) int -> (B, H). One-hot materials + occupied flag as channels of
  a W x W image, a 3x3 convolution with stride 3 (a per-cell material embedding), a linear layer.
- `EntityEncoder`: Entity (B, N, 19) int -> `EntityCodes`: a code (P, E) for each present row only
  (an MLP on its scaled features, positions relative to the observer), where those rows are, the
  observer's own code (B, E) and the mean code per agent (B, E).
- `Policy`: tile code, own code and pooled code fused into (B, H), an LSTM core (hidden H), and
  heads that respect the ActionTargets masks: Move (5), Attack style (3), Attack target as a pointer
  over the entity codes plus a no-op logit (N + 1), and a value.
- `MLPPolicy` (``nmmo train --arch mlp``): the trainer recipes' network under the same interface, a
  feedforward MLP over the flat observation, so a recipe and `nmmo train` can be compared with one
  network on both sides.

`build` makes either from a checkpoint's ``model_kwargs``; `act` samples (or picks greedily) the
actions of either, for the trainer (`baselines.ppo`) and for checkpoints played as policies
(`baselines.policy`), which share it here rather than import each other.

The model does not depend on N: a checkpoint trained with 32 entity rows plays with 100.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from nmmo.core.enums import EntityAttr, TileAttr

N_MATERIALS = 6
NEG = -1e9

#: Entity columns fed to the encoder and their scales (row and col become offsets from the observer).
ENTITY_COLUMNS = [
    (EntityAttr.IS_SELF, 1.0), (EntityAttr.NPC_TYPE, 3.0), (EntityAttr.ROW, 7.0), (EntityAttr.COL, 7.0),
    (EntityAttr.HEALTH, 10.0), (EntityAttr.FOOD, 10.0), (EntityAttr.WATER, 10.0), (EntityAttr.FREEZE, 3.0),
    (EntityAttr.COMBAT_LEVEL, 10.0), (EntityAttr.ARMOUR, 10.0), (EntityAttr.DAMAGE, 10.0),
    (EntityAttr.TIME_ALIVE, 100.0), (EntityAttr.MELEE, 10.0), (EntityAttr.RANGE, 10.0), (EntityAttr.MAGE, 10.0),
    (EntityAttr.DEFENSE, 10.0),
]


class TileEncoder(nn.Module):
    """Materials one-hot plus the occupied flag as 7 channels of a W x W image; a 3x3 convolution
    with stride 3 (so its first layer is a learned material embedding per cell of each 3x3 patch),
    then a linear layer. One-hot beats nn.Embedding here: the embedding's backward pass (a scatter
    over every tile of every agent) cost 3x the whole encoder on CPU. The one-hot is built
    channel-first by one comparison (F.one_hot, a cat and a permute cost as much as the
    convolution; a matrix product over gathered patches instead of the convolution was no faster)."""

    def __init__(self, side: int, hidden: int, channels: int = 16) -> None:
        super().__init__()
        self.side = side
        cells = -(-side // 3)  # ceil: the last partial patch is padded
        self.pad = cells * 3 - side
        self.conv = nn.Sequential(nn.Conv2d(N_MATERIALS + 1, channels, 3, stride=3), nn.ReLU())
        self.linear = nn.Linear(channels * cells * cells, hidden)
        self.register_buffer("materials", torch.arange(N_MATERIALS).view(1, -1, 1), persistent=False)

    def forward(self, tile: torch.Tensor) -> torch.Tensor:
        b = tile.shape[0]
        material = tile[..., TileAttr.MATERIAL].unsqueeze(1)  # (B, 1, W*W)
        occupied = tile[..., TileAttr.OCCUPIED].unsqueeze(1) != 0
        image = torch.cat([material == self.materials, occupied], dim=1)  # (B, 7, W*W) bool, channel-first
        image = image.view(b, N_MATERIALS + 1, self.side, self.side).float()
        if self.pad:
            image = nn.functional.pad(image, (0, self.pad, 0, self.pad))
        return torch.relu(self.linear(self.conv(image).flatten(1)))


class EntityCodes(NamedTuple):
    """The encoded entity rows of a batch (only the rows that hold an entity are encoded)."""

    codes: torch.Tensor  # (P, E) one per present row
    where: torch.Tensor  # (P,) flat index b * N + row of each
    owner: torch.Tensor  # (P,) the batch row b each belongs to
    own: torch.Tensor  # (B, E) the observer's own code (row 0; zeros for an empty slot)
    pooled: torch.Tensor  # (B, E) the mean code over the present rows
    rows: int  # N


class EntityEncoder(nn.Module):
    """An MLP on the rows that hold an entity (positions relative to the observer). Only the present
    rows are encoded: a window usually shows a few entities among its N rows (2.7 of 100 in the
    canonical tournament, 13 of 32 in train_small), and encoding the padding dominated the
    learner's time."""

    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code
        self.columns = [c for c, _ in ENTITY_COLUMNS]
        self.register_buffer("scales", torch.tensor([s for _, s in ENTITY_COLUMNS], dtype=torch.float32))
        self.mlp = nn.Sequential(nn.Linear(len(ENTITY_COLUMNS), code), nn.ReLU(), nn.Linear(code, code), nn.ReLU())

    def forward(self, entity: torch.Tensor) -> EntityCodes:
        b, n, _ = entity.shape
        present = entity[..., EntityAttr.ID] != 0
        where = present.view(-1).nonzero().squeeze(1)
        owner = torch.div(where, n, rounding_mode="floor")
        rows = entity.view(b * n, -1)[where]
        me = entity[:, 0][owner]
        feats = rows[:, self.columns].float()
        feats[:, 2] = (rows[:, EntityAttr.ROW] - me[:, EntityAttr.ROW]).float()
        feats[:, 3] = (rows[:, EntityAttr.COL] - me[:, EntityAttr.COL]).float()
        codes = self.mlp(feats / self.scales)
        pooled = codes.new_zeros(b, self.code).index_add(0, owner, codes)
        pooled = pooled / present.sum(1, keepdim=True).clamp(min=1)
        is_own = where % n == 0
        own = codes.new_zeros(b, self.code).index_copy(0, owner[is_own], codes[is_own])
        return EntityCodes(codes, where, owner, own, pooled, n)


class Policy(nn.Module):
    """Shared-weight recurrent policy over all agents (see the module docstring for shapes).

    The LSTM's weights live in an `nn.LSTM` (the checkpoint layout), but steps run through
    `_cell`: the input projection of a whole unroll is one matrix product, and each step is a few
    small tensor ops, far cheaper on CPU than one `nn.LSTM` call per step. Acting and the unroll
    use the same cell, so a rollout's log-probabilities are what the learner recomputes."""

    def __init__(self, side: int = 15, hidden: int = 64, entity_code: int = 32, task_dim: int = 0) -> None:
        super().__init__()
        self.kwargs = {"side": side, "hidden": hidden, "entity_code": entity_code}
        if task_dim:  # a task-conditioned policy reads the observation's task embedding (`nmmo.tasks`)
            self.kwargs["task_dim"] = task_dim
        self.hidden = hidden
        self.tiles = TileEncoder(side, hidden)
        self.entities = EntityEncoder(entity_code)
        self.task = nn.Sequential(nn.Linear(task_dim, entity_code), nn.ReLU()) if task_dim else None
        fused = hidden + 2 * entity_code + (entity_code if task_dim else 0)
        self.fuse = nn.Sequential(nn.Linear(fused, hidden), nn.ReLU())
        self.lstm = nn.LSTM(hidden, hidden)
        self.move = nn.Linear(hidden, 5)
        self.style = nn.Linear(hidden, 3)
        self.query = nn.Linear(hidden, entity_code)
        self.noop = nn.Linear(hidden, 1)
        self.value = nn.Linear(hidden, 1)

    @property
    def state_size(self) -> int:
        """Width of the memory kept per agent between steps."""
        return self.hidden

    def initial_state(self, batch: int, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(1, batch, self.state_size, device=device)
        return zeros, zeros.clone()

    def encode(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, EntityCodes]:
        entities = self.entities(obs["entity"])
        parts = [self.tiles(obs["tile"]), entities.own, entities.pooled]
        if self.task is not None:
            if "task" not in obs:
                raise ValueError("this policy was trained on tasks: its observations need the task embedding "
                                 "(a config with TASKS, e.g. nmmo eval --tasks SET)")
            parts.append(self.task(obs["task"].float()))
        return self.fuse(torch.cat(parts, dim=-1)), entities

    def heads(self, core: torch.Tensor, entities: EntityCodes, obs: dict[str, torch.Tensor]):
        """Masked logits for the three action parts, and the value."""
        b = core.shape[0]
        move = self.move(core).masked_fill(obs["move_mask"] == 0, NEG)
        style = self.style(core).masked_fill(obs["style_mask"] == 0, NEG)
        scores = (self.query(core)[entities.owner] * entities.codes).sum(-1)
        pointer = core.new_zeros(b * entities.rows).index_copy(0, entities.where, scores).view(b, entities.rows)
        target = torch.cat([pointer, self.noop(core)], dim=-1).masked_fill(obs["target_mask"] == 0, NEG)
        style = torch.where((obs["style_mask"].sum(-1, keepdim=True) > 0), style, torch.zeros_like(style))
        return move, style, target, self.value(core).squeeze(-1)

    def _cell(self, gates_x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One LSTM step (PyTorch's gate order i, f, g, o) from the precomputed input projection."""
        gates = gates_x + h @ self.lstm.weight_hh_l0.t()
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def _project(self, encoded: torch.Tensor) -> torch.Tensor:
        return encoded @ self.lstm.weight_ih_l0.t() + (self.lstm.bias_ih_l0 + self.lstm.bias_hh_l0)

    def forward(self, obs: dict[str, torch.Tensor], state, reset: torch.Tensor):
        """One step for a batch: `reset` (B,) zeroes the memory of rows that hold a new agent."""
        encoded, entities = self.encode(obs)
        keep = (1.0 - reset.float()).view(-1, 1)
        h, c = self._cell(self._project(encoded), state[0][0] * keep, state[1][0] * keep)
        return (*self.heads(h, entities, obs), (h.unsqueeze(0), c.unsqueeze(0)))

    def unroll(self, obs: dict[str, torch.Tensor], state, resets: torch.Tensor):
        """T steps for B sequences (obs tensors are (T*B, ...), resets (T, B)); memory reset per step."""
        t, b = resets.shape
        encoded, entities = self.encode(obs)
        gates_x = self._project(encoded).view(t, b, -1).unbind(0)
        keep = (1.0 - resets.float()).unsqueeze(-1).unbind(0)
        h, c = state[0][0], state[1][0]
        outputs = []
        for step in range(t):
            h, c = self._cell(gates_x[step], h * keep[step], c * keep[step])
            outputs.append(h)
        return self.heads(torch.stack(outputs).view(t * b, -1), entities, obs)


class MLPPolicy(nn.Module):
    """The PufferLib recipe's network (`nmmo.integrations.pufferlib.Policy`) behind `Policy`'s
    interface: the observation's non-mask fields flattened in the trainer form's order (sorted by
    their dict key: entity, task, tile), symlog-scaled, two tanh layers of `hidden`, one linear
    actor over the three action parts (masked like `Policy`'s) and a linear critic. It keeps no
    memory: its state is a dummy of width 1 that `nmmo train`'s loop carries unchanged. The one
    input difference from the recipe: no agent-id and tick scalars (2 of its ~1,200 inputs)."""

    def __init__(self, fields: list[str], obs_size: int, targets: int, hidden: int = 128) -> None:
        super().__init__()
        self.kwargs = {"arch": "mlp", "fields": list(fields), "obs_size": int(obs_size), "targets": int(targets),
                       "hidden": int(hidden)}
        self.hidden, self.task = hidden, None
        self.trunk = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, 5 + 3 + targets)
        self.critic = nn.Linear(hidden, 1)
        for layer in (*self.trunk[::2], self.actor, self.critic):  # CleanRL's init, as the recipe's layer_init
            nn.init.orthogonal_(layer.weight, {self.actor: 0.01, self.critic: 1.0}.get(layer, 2 ** 0.5))
            nn.init.zeros_(layer.bias)

    @classmethod
    def for_config(cls, config, hidden: int = 128, task: bool = True) -> MLPPolicy:
        """Sized for `config`'s observation (its task embedding left out when `task` is False)."""
        from nmmo.interfaces.arrays import SCALARS, FlatLayout

        layout = FlatLayout.of(config)
        names = [n for n in layout.slices if n not in SCALARS.values() and (task or n != "task")]
        size = sum(layout.slices[n].stop - layout.slices[n].start for n in names)
        return cls(names, size, config.PLAYER_N_OBS + 1, hidden)

    @property
    def state_size(self) -> int:
        return 1

    def initial_state(self, batch: int, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(1, batch, 1, device=device)
        return zeros, zeros.clone()

    def _heads(self, obs: dict[str, torch.Tensor]):
        x = torch.cat([obs[name].reshape(len(obs[name]), -1).float() for name in self.kwargs["fields"]], dim=-1)
        hidden = self.trunk(torch.sign(x) * torch.log1p(x.abs()))
        move, style, target = self.actor(hidden).split([5, 3, self.kwargs["targets"]], dim=-1)
        move = move.masked_fill(obs["move_mask"] == 0, NEG)
        style = style.masked_fill(obs["style_mask"] == 0, NEG)
        style = torch.where((obs["style_mask"].sum(-1, keepdim=True) > 0), style, torch.zeros_like(style))
        target = target.masked_fill(obs["target_mask"] == 0, NEG)
        return move, style, target, self.critic(hidden).squeeze(-1)

    def forward(self, obs: dict[str, torch.Tensor], state, reset: torch.Tensor):
        return (*self._heads(obs), state)

    def unroll(self, obs: dict[str, torch.Tensor], state, resets: torch.Tensor):
        return self._heads(obs)


def build(kwargs: dict) -> Policy | MLPPolicy:
    """The network a checkpoint's ``model_kwargs`` describe (no ``arch``: the recurrent `Policy`)."""
    kwargs = dict(kwargs)
    arch = kwargs.pop("arch", "lstm")
    if arch not in ("lstm", "mlp"):
        raise ValueError(f"model_kwargs: unknown arch {arch!r} (lstm or mlp)")
    return MLPPolicy(**kwargs) if arch == "mlp" else Policy(**kwargs)


def act(model: Policy | MLPPolicy, obs: dict[str, torch.Tensor], state, reset: torch.Tensor, greedy: bool = False):
    """Actions for every row: (rows, 3) [direction, style, target], their joint log-prob, values, state."""
    move, style, target, value, state = model(obs, state, reset)
    parts, logp = [], 0.0
    for logits in (move, style, target):
        dist = torch.distributions.Categorical(logits=logits)
        choice = logits.argmax(-1) if greedy else dist.sample()
        parts.append(choice)
        logp = logp + dist.log_prob(choice)
    return torch.stack(parts, dim=1), logp, value, state


def to_tensors(obs: dict[str, np.ndarray], device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.asarray(v), device=device) for k, v in obs.items()}


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
