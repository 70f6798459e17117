"""The value landscape: a policy's critic evaluated at every walkable tile of a map.

The ``value`` overlay (`nmmo.replays.overlays.ValueMap`) averages the estimates agents actually got where
they stood, so it covers only the tiles they visited, and at tick 0 almost none. The landscape
asks the critic about every tile instead, for one *standard agent*: a freshly spawned player (full
health, food and water, level 1, every feature as a real `env.reset()` makes it) with a fresh
recurrent state, alone (no other entity in view), seeing the real terrain around the tile. It
answers "how good is it to stand here, all else equal", which makes the whole map readable from
tick 0. It is not what the agents' own estimates were: those depend on their health, company and
memory.

It costs a forward pass per walkable tile (batched; `benchmarks/bench_landscape.py`), so it is
computed once per map when an episode is recorded and stored in the replay like any overlay: a
replay shows it without torch or the checkpoint. Pass a policy instance of its own: stateful
policies (`CheckpointPolicy`) keep memory only for the ids of their last call, so the instance
that plays must not see the synthetic agents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nmmo import console
from nmmo.core.enums import EntityAttr, Style, TileAttr
from nmmo.core.layout import ObsBatch, layout
from nmmo.core.obs import ObservationBuilder
from nmmo.core.rules import STEPS, WALKABLE, enterable
from nmmo.policy import act_rows

if TYPE_CHECKING:
    from nmmo.envs.env import Env

#: What the landscape's unwalkable tiles show (the viewer's legend says it).
BLANK = "tiles an agent cannot stand on (water, stone, lava) show the landscape's minimum, the cold end"


def standard_cells(material: np.ndarray) -> np.ndarray:
    """(row, col) of every tile an agent can stand on (`WALKABLE`), row-major: where the landscape
    is evaluated."""
    return np.argwhere(WALKABLE[material])


class StandardAgent:
    """Builds the raw observations of the standard agent (see the module notes) on a map.

    Everything but the position comes from a real reset of a scratch env on the same map (the
    playing env is not touched): the Entity row of its first agent, its AgentId's form and the
    tick; the Tile window and the masks follow `nmmo.core.obs.ObservationBuilder.build` for an agent
    that sees nobody."""

    def __init__(self, env: Env) -> None:
        from nmmo.envs.env import Env  # nmmo.envs.env imports most of the engine; only this needs it

        scratch = Env(env.config, seed=0)
        obs, _ = scratch.reset(options={"map_seed": int(env.realm.map.seed)})
        first = obs[min(obs)]
        self.row = np.array(first["Entity"][0])  # a fresh player's own row (IS_SELF set)
        self.tick = first["CurrentTick"]
        self.material = np.array(scratch.material)  # the map as it is at reset
        builder = ObservationBuilder(env.config, 1)
        self.radius, self.side = builder.radius, builder.side
        self.tile_dr, self.tile_dc = builder.tile_dr, builder.tile_dc
        self.n_obs = env.config.PLAYER_N_OBS
        self.enterable = enterable(env.config)
        self.windows = sliding_window_view(self.material, (self.side, self.side))
        self.layout = layout(env.config)

    def batch(self, cells: np.ndarray, first_id: int) -> ObsBatch:
        """The array batch of standard agents on `cells` ((n, 2) rows and cols), with ids
        `first_id`, `first_id` + 1, ... (fresh ids start a stateful policy's memory afresh). A
        field the layout computes (`nmmo.core.layout.filled`) is zero: the standard agent has none."""
        rows, cols = cells[:, 0], cells[:, 1]
        ids = np.arange(first_id, first_id + len(cells), dtype=np.int64)
        style = np.ones((ids.size, len(Style)), dtype=np.int8)  # nobody in reach: every style, only the no-op
        target = np.zeros((ids.size, self.n_obs + 1), dtype=np.int8)
        target[:, -1] = 1
        arrays = {"tile": self.tiles(rows, cols), "entity": self.entities(rows, cols, ids),
                  "move_mask": self.moves(rows, cols), "style_mask": style, "target_mask": target}
        for name, (shape, dtype) in self.layout.items():
            arrays.setdefault(name, np.zeros((ids.size, *shape), dtype))
        return ObsBatch(ids, arrays, self.tick)

    def observations(self, cells: np.ndarray, first_id: int) -> dict[int, dict]:
        """{agent id: observation}: `batch` in the dict form."""
        return self.batch(cells, first_id).to_dicts()

    def tiles(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Tile windows (n, (2R+1)^2, 4): the map's materials, OCCUPIED only at the centre (the
        agent itself), ROW and COL of each tile as `ObservationBuilder.build` writes them."""
        n, window = rows.size, self.side * self.side
        tile = np.zeros((n, window, len(TileAttr)), dtype=np.int16)
        tile[:, :, TileAttr.MATERIAL] = self.windows[rows - self.radius, cols - self.radius].reshape(n, window)
        tile[:, window // 2, TileAttr.OCCUPIED] = 1
        tile[:, :, TileAttr.ROW] = rows[:, None] + self.tile_dr
        tile[:, :, TileAttr.COL] = cols[:, None] + self.tile_dc
        return tile

    def entities(self, rows: np.ndarray, cols: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Entity rows (n, PLAYER_N_OBS, attrs): row 0 the fresh player's, moved to its tile and
        given its id; the others empty (nobody in view)."""
        entity = np.zeros((rows.size, self.n_obs, len(EntityAttr)), dtype=np.int32)
        entity[:, 0] = self.row
        entity[:, 0, EntityAttr.ID] = ids
        entity[:, 0, EntityAttr.ROW], entity[:, 0, EntityAttr.COL] = rows, cols
        return entity

    def moves(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Move masks (n, 5): the enterable neighbours (no one blocks them), and stay."""
        move = np.ones((rows.size, len(STEPS) + 1), dtype=np.int8)
        move[:, : len(STEPS)] = self.enterable[self.material[rows[:, None] + STEPS[:, 0], cols[:, None] + STEPS[:, 1]]]
        return move


def standard_observations(env: Env, cells: np.ndarray, first_id: int = 1) -> dict[int, dict]:
    """The standard agent's observations on `cells` ((n, 2) rows and cols) of `env`'s map (one
    call; `value_landscape` keeps one `StandardAgent` for all its batches)."""
    return StandardAgent(env).observations(np.asarray(cells, dtype=np.int64).reshape(-1, 2), first_id)


def value_landscape(policy: Any, env: Env, batch: int = 1024, progress: bool = True) -> np.ndarray:
    """The critic's estimate for the standard agent on every walkable tile of `env`'s map as it is
    at reset (S x S float32); tiles an agent cannot stand on hold the landscape's minimum (`BLANK`).

    `policy` exposes value estimates (`last_values` after `act`, as `ckpt:` and `baseline:`
    policies do) and is used for nothing else: pass an instance of its own. Agents go `batch` at
    a time, each batch with ids never used before in this call."""
    if not hasattr(policy, "last_values"):
        raise ValueError(f"{type(policy).__name__} has no value estimates (last_values): a landscape needs a critic")
    agent = StandardAgent(env)
    cells = standard_cells(agent.material)
    values = np.zeros(len(cells), dtype=np.float64)
    if callable(getattr(policy, "reset", None)):
        policy.reset(0)  # no memory carried over from an earlier call
    starts = range(0, len(cells), batch)
    with console.progress(total=len(cells), desc="value landscape", unit="tile", enabled=progress,
                          min_interval=2.0) as bar:  # in a log: a line every 2 s and the last, not one per batch
        for start in starts:
            agents = agent.batch(cells[start : start + batch], first_id=start + 1)
            act_rows(policy, agents)
            estimates = policy.last_values
            values[start : start + agents.n] = [estimates[a] for a in agents.ids.tolist()]
            bar.update(agents.n)
    out = np.full(agent.material.shape, values.min() if values.size else 0.0, dtype=np.float32)
    out[cells[:, 0], cells[:, 1]] = values
    return out


#: The overlay's name (``value landscape: SPEC`` when several policies paint one).
NAME = "value landscape"


def paint_landscape(env: Env, policy: Any, name: str = NAME, progress: bool = True) -> np.ndarray:
    """Register `policy`'s landscape on `env`'s map as the overlay `name` (with its `BLANK` note);
    done before the first step, a recording stores it at tick 0. Returns the landscape."""
    landscape = value_landscape(policy, env, progress=progress)
    env.overlays.register(name, landscape, blank=BLANK)
    return landscape
