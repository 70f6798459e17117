"""Reusable PyTorch subnetworks for nmmo observations, and the recurrent baseline policy.

Shapes (B = batch of agents, W = 2R + 1 window side, N = PLAYER_N_OBS entity rows, H = hidden):

- `TileEncoder`: Tile (B, W*W, 4) int -> (B, H). One-hot materials + occupied flag as channels of
  a W x W image, a 3x3 convolution with stride 3 (a per-cell material embedding), a linear layer.
- `EntityEncoder`: Entity (B, N, 19) int -> per-entity codes (B, N, E) and a pooled vector (B, E):
  an MLP on each row's scaled features (positions relative to the observer), masked mean pooling
  over the rows that hold an entity.
- `Policy`: tile code, the observer's own row code and the pooled entity code fused into (B, H),
  an LSTM core (hidden H), and heads that respect the ActionTargets masks: Move (5), Attack style
  (3), Attack target as a pointer over the entity codes plus a no-op logit (N + 1), and a value.

The model does not depend on N: a checkpoint trained with 32 entity rows plays with 100.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from nmmo.enums import EntityAttr, TileAttr

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
    over every tile of every agent) cost 3x the whole encoder on CPU."""

    def __init__(self, side: int, hidden: int, channels: int = 16) -> None:
        super().__init__()
        self.side = side
        cells = -(-side // 3)  # ceil: the last partial patch is padded
        self.pad = cells * 3 - side
        self.conv = nn.Sequential(nn.Conv2d(N_MATERIALS + 1, channels, 3, stride=3), nn.ReLU())
        self.linear = nn.Linear(channels * cells * cells, hidden)

    def forward(self, tile: torch.Tensor) -> torch.Tensor:
        b = tile.shape[0]
        material = tile[..., TileAttr.MATERIAL].long().clamp(0, N_MATERIALS - 1)
        occupied = tile[..., TileAttr.OCCUPIED].float().unsqueeze(-1)
        image = torch.cat([nn.functional.one_hot(material, N_MATERIALS).float(), occupied], dim=-1)
        image = image.view(b, self.side, self.side, N_MATERIALS + 1).permute(0, 3, 1, 2)
        if self.pad:
            image = nn.functional.pad(image, (0, self.pad, 0, self.pad))
        return torch.relu(self.linear(self.conv(image).flatten(1)))


class EntityEncoder(nn.Module):
    def __init__(self, code: int) -> None:
        super().__init__()
        self.columns = [c for c, _ in ENTITY_COLUMNS]
        self.register_buffer("scales", torch.tensor([s for _, s in ENTITY_COLUMNS], dtype=torch.float32))
        self.mlp = nn.Sequential(nn.Linear(len(ENTITY_COLUMNS), code), nn.ReLU(), nn.Linear(code, code), nn.ReLU())

    def forward(self, entity: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-row codes (B, N, E), the masked mean (B, E) and the row mask (B, N)."""
        present = entity[..., EntityAttr.ID] != 0
        feats = entity[..., self.columns].float()
        me = entity[:, :1]
        feats[..., 2] = (entity[..., EntityAttr.ROW] - me[..., EntityAttr.ROW]).float()
        feats[..., 3] = (entity[..., EntityAttr.COL] - me[..., EntityAttr.COL]).float()
        codes = self.mlp(feats / self.scales) * present.unsqueeze(-1)
        pooled = codes.sum(1) / present.sum(1, keepdim=True).clamp(min=1)
        return codes, pooled, present


class Policy(nn.Module):
    """Shared-weight recurrent policy over all agents (see the module docstring for shapes)."""

    def __init__(self, side: int = 15, hidden: int = 64, entity_code: int = 32) -> None:
        super().__init__()
        self.kwargs = {"side": side, "hidden": hidden, "entity_code": entity_code}
        self.hidden = hidden
        self.tiles = TileEncoder(side, hidden)
        self.entities = EntityEncoder(entity_code)
        self.fuse = nn.Sequential(nn.Linear(hidden + 2 * entity_code, hidden), nn.ReLU())
        self.lstm = nn.LSTM(hidden, hidden)
        self.move = nn.Linear(hidden, 5)
        self.style = nn.Linear(hidden, 3)
        self.query = nn.Linear(hidden, entity_code)
        self.noop = nn.Linear(hidden, 1)
        self.value = nn.Linear(hidden, 1)

    def initial_state(self, batch: int, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(1, batch, self.hidden, device=device)
        return zeros, zeros.clone()

    def encode(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        codes, pooled, present = self.entities(obs["entity"])
        state = self.fuse(torch.cat([self.tiles(obs["tile"]), codes[:, 0], pooled], dim=-1))
        return state, codes, present

    def heads(self, core: torch.Tensor, codes: torch.Tensor, obs: dict[str, torch.Tensor]):
        """Masked logits for the three action parts, and the value."""
        move = self.move(core).masked_fill(obs["move_mask"] == 0, NEG)
        style = self.style(core).masked_fill(obs["style_mask"] == 0, NEG)
        pointer = torch.einsum("be,bne->bn", self.query(core), codes)
        target = torch.cat([pointer, self.noop(core)], dim=-1).masked_fill(obs["target_mask"] == 0, NEG)
        style = torch.where((obs["style_mask"].sum(-1, keepdim=True) > 0), style, torch.zeros_like(style))
        return move, style, target, self.value(core).squeeze(-1)

    def forward(self, obs: dict[str, torch.Tensor], state, reset: torch.Tensor):
        """One step for a batch: `reset` (B,) zeroes the memory of rows that hold a new agent."""
        encoded, codes, _ = self.encode(obs)
        keep = (1.0 - reset.float()).view(1, -1, 1)
        h, c = state[0] * keep, state[1] * keep
        core, (h, c) = self.lstm(encoded.unsqueeze(0), (h, c))
        return (*self.heads(core.squeeze(0), codes, obs), (h, c))

    def unroll(self, obs: dict[str, torch.Tensor], state, resets: torch.Tensor):
        """T steps for B sequences (obs tensors are (T*B, ...), resets (T, B)); memory reset per step."""
        t, b = resets.shape
        encoded, codes, _ = self.encode(obs)
        encoded = encoded.view(t, b, -1)
        h, c = state
        outputs = []
        for step in range(t):
            keep = (1.0 - resets[step].float()).view(1, -1, 1)
            out, (h, c) = self.lstm(encoded[step : step + 1], (h * keep, c * keep))
            outputs.append(out)
        core = torch.cat(outputs).view(t * b, -1)
        return self.heads(core, codes, obs)


def to_tensors(obs: dict[str, np.ndarray], device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.asarray(v), device=device) for k, v in obs.items()}


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
