"""TorchRL's EnvBase over the engine's vector env (`nmmo.integrations.torchrl_env.NativeEnv`):
TorchRL's own spec check, seats as the trainer form's through the horizon with
`step_and_maybe_reset`, the last observations of an ended world under "next", and no per-agent dict."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torchrl")
torch = pytest.importorskip("torch")

from torchrl.envs.utils import check_env_specs  # noqa: E402

import nmmo  # noqa: E402
from nmmo.integrations.torchrl_env import GROUP, NativeEnv  # noqa: E402

CONFIG = nmmo.config.resolve("trainers_small")


def masked_actions(td, rng: np.random.Generator) -> torch.Tensor:
    """A random allowed (direction, style, target) per seat, from the mask in the tensordict."""
    mask = td[GROUP, "action_mask"].numpy()
    parts = np.split(mask, np.cumsum([5, 3])[:2], axis=-1)
    return torch.from_numpy(np.stack([np.argmax(p + rng.random(p.shape), axis=-1) for p in parts], axis=-1))


def test_native_torchrl_env_passes_its_spec_check_and_plays_through_the_horizon(monkeypatch):
    from .helpers import forbid_dict_translations

    forbid_dict_translations(monkeypatch)
    env = NativeEnv(CONFIG, num_worlds=2, seed=4)
    check_env_specs(env)
    td = env.reset()
    rng, tick = np.random.default_rng(0), env.layout.slices["tick"].start
    horizon_steps = 0
    for step in range(CONFIG.HORIZON + 4):
        td[GROUP, "action"] = masked_actions(td, rng)
        td, root = env.step_and_maybe_reset(td)
        nxt = td["next"]
        assert not nxt[GROUP, "terminated"].any()  # respawn: no seat ends before the horizon
        if nxt["done"].any():
            horizon_steps += 1
            assert nxt["done"].all() and nxt["truncated"].all() and nxt[GROUP, "truncated"].all()
            assert (nxt[GROUP, "observation", "observation"][..., tick] == CONFIG.HORIZON).all()  # the last view
            assert (root[GROUP, "observation", "observation"][..., tick] == 0).all()  # the next episode
            assert step == CONFIG.HORIZON - 1
        mask = root[GROUP, "action_mask"]
        assert mask.any(-1).all()  # never an all-zero mask, empty seats included
        td = root
    env.close()
    assert horizon_steps == 1
