"""Checks anyone can run on the engine, a wrapper or a custom env (as ``pettingzoo.test`` is for
PettingZoo): the suite calls them, and so can users' own tests.

- `check_state(state)`: the tables agree with each other (health, food and water within their
  bounds, every live entity on a walkable tile or in lava, the occupancy grid indexing exactly
  the entities standing on the map, one per tile, ids unique and signed by kind, levels in range).
  Raises `StateError` naming the broken rule.
- `check_env(env)`: `check_state` plus the env's own bookkeeping (its `agents` are live players).
- `check_api(make_env)`: PettingZoo's `parallel_api_test`, cached spaces, observations inside
  them, and N-step determinism: two envs made by `make_env` and reset with one seed, stepped with
  one stream of random valid actions, return identical observations and rewards byte for byte
  (PettingZoo's own seed test stops after one step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nmmo.core.enums import Material
from nmmo.core.rules import WALKABLE
from nmmo.core.state import State


class StateError(RuntimeError):
    """The game state broke one of its invariants; the message says which, and where."""


def _require(ok: Any, message: str) -> None:
    if not bool(np.all(ok)):
        raise StateError(message)


def check_state(state: State) -> None:
    """Raise `StateError` unless the tables agree with each other (see the module notes)."""
    ent, tiles = state.entities, state.tiles
    alive = np.flatnonzero(ent.alive)
    health = ent.health[alive]
    _require(health >= 0, f"negative health at rows {alive[health < 0].tolist()[:5]}")
    over = alive[health > ent.max_health[alive]]
    _require(over.size == 0, f"health above max health at rows {over.tolist()[:5]}")
    players = alive[alive < ent.n_players]
    for name, amount, capacity in (("food", ent.food, ent.food_capacity), ("water", ent.water, ent.water_capacity)):
        bad = players[(amount[players] < 0) | (amount[players] > capacity[players])]
        _require(bad.size == 0, f"{name} outside 0..capacity at player rows {bad.tolist()[:5]}")
    levels = ent.level[alive]
    _require((levels >= 1) & (levels <= 99), "a skill level outside 1..99")
    material = tiles.material[ent.row[alive], ent.col[alive]]
    in_lava = material == Material.LAVA
    stuck = alive[~(WALKABLE[material] | in_lava)]
    _require(stuck.size == 0, f"live entities on unwalkable tiles at rows {stuck.tolist()[:5]}")
    _require(health[in_lava] == 0, "a live entity in lava with health left (lava kills)")
    standing = alive[~in_lava]
    cells = ent.row[standing].astype(np.int64) * tiles.cols + ent.col[standing]
    _require(np.unique(cells).size == cells.size, "two entities share a tile")
    _require(tiles.occupancy.ravel()[cells] == standing, "the occupancy grid does not point at an entity's tile")
    _require((tiles.occupancy >= 0).sum() == standing.size, "the occupancy grid holds entities that are not there")
    ids = ent.id[alive]
    _require(np.unique(ids).size == ids.size, "two live entities share an id")
    _require(ids[alive < ent.n_players] > 0, "a player with an id <= 0 (player ids are 1, 2, 3, ...)")
    _require(ids[alive >= ent.n_players] < 0, "an NPC with an id >= 0 (NPC ids are negative)")


def check_env(env: Any) -> None:
    """`check_state` of an `nmmo.Env` (or anything wrapping one: `env.unwrapped`), plus: every agent
    in `env.agents` is a live player."""
    raw = getattr(env, "unwrapped", env)
    state = raw.realm.state
    check_state(state)
    ent = state.entities
    live = set(ent.id[np.flatnonzero(ent.alive[: ent.n_players])].tolist())
    missing = [a for a in raw.agents if a not in live]
    _require(not missing, f"env.agents lists {missing[:5]}, which are not live players")


def random_actions(env: Any, obs: dict, rng: np.random.Generator) -> dict:
    """A random valid action per live agent, drawn from its ActionTargets masks (needs raw observations)."""
    actions = {}
    for agent in env.agents:
        masks = obs[agent]["ActionTargets"]
        moves = np.flatnonzero(masks["Move"]["Direction"])
        action = {"Move": {"Direction": int(rng.choice(moves))}}
        targets, styles = np.flatnonzero(masks["Attack"]["Target"][:-1]), np.flatnonzero(masks["Attack"]["Style"])
        if targets.size and styles.size:
            action["Attack"] = {"Style": int(rng.choice(styles)), "Target": int(rng.choice(targets))}
        actions[agent] = action
    return actions


def check_api(make_env: Callable[[], Any], steps: int = 100, seed: int = 0,
              actions: Callable[[Any, dict, np.random.Generator], dict] | None = None) -> None:
    """PettingZoo's parallel API test on a fresh env, cached spaces, observations in their spaces,
    and `steps`-step determinism between two envs from `make_env` (raises AssertionError or
    `StateError`). `actions(env, obs, rng)` draws the actions (default: `random_actions`, which
    reads raw nmmo observations; pass your own for a wrapper that changes them)."""
    from pettingzoo.test import parallel_api_test

    parallel_api_test(make_env(), num_cycles=min(steps, 50))
    draw = actions or random_actions
    runs = []
    for _ in range(2):
        env = make_env()
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        agent = env.agents[0]
        assert env.observation_space(agent) is env.observation_space(agent), "observation_space(a) is not cached"
        assert env.action_space(agent) is env.action_space(agent), "action_space(a) is not cached"
        trace = []
        for _ in range(steps):
            if not env.agents:
                break
            obs, rewards, terminations, truncations, _ = env.step(draw(env, obs, rng))
            for a, ob in obs.items():
                assert env.observation_space(a).contains(ob), f"agent {a}'s observation is outside its space"
            trace.append((_digest(obs), sorted(rewards.items()), sorted(terminations.items()),
                          sorted(truncations.items())))
            if hasattr(getattr(env, "unwrapped", env), "realm"):
                check_env(env)
        runs.append(trace)
    assert runs[0] == runs[1], f"two envs with seed {seed} and the same actions diverged by step {_first_diff(*runs)}"


def _digest(obs: dict) -> list:
    """Observations as bytes, in agent order (what determinism compares)."""
    def flat(value: Any) -> bytes:
        if isinstance(value, dict):
            return b"".join(flat(value[k]) for k in sorted(value))
        return np.asarray(value).tobytes()

    return [(agent, flat(obs[agent])) for agent in sorted(obs)]


def _first_diff(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
