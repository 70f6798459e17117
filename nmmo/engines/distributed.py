"""Ray as the scale-out backend: one programming model on a laptop or a cluster.

`init()` connects to a running Ray cluster (``address="ray://host:10001"``, ``"auto"`` or a head
node's ``host:port``) or, with no address, starts a private local one with this machine's cores,
no dashboard and usage statistics off. Every entry point that takes ``--ray``/``--ray-address``
calls it, and a second call is a no-op, so one process shares one Ray session.

`RayBlocks` is the Ray backend of `nmmo.engines.vector.VectorEnv`: each actor steps a block of envs (one
fused block, `nmmo.engines.fused`, with the default engine). The parent keeps, per env, the seed of the
running episode and the actions played since it began (the engine is deterministic), so when an
actor dies a new one is started and replays them: the run goes on with exactly the state, and so
exactly the results, it would have had.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from nmmo import config as config_module
from nmmo.config import Config
from nmmo.core.layout import layout as obs_layout
from nmmo.engines.blocks import make_block
from nmmo.engines.buffers import allocate_buffers, episode_width, final_name, stack_episodes, step_fields

MAX_REPLACEMENTS = 3  # per call: an actor that dies this often in a row points at a bug, not bad luck


def require_ray() -> Any:
    """The `ray` module, or an error that says how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError("the Ray backend needs the [scale] extra: pip install 'flatmmo[scale]'") from err
    return ray


def init(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect to Ray once per process and return the `ray` module.

    With `address` (or the RAY_ADDRESS variable) it joins that cluster; without, it starts a local
    one with `num_cpus` (default: this machine's cores) on 127.0.0.1, no dashboard, no usage
    statistics. The worker processes import this package, so on a cluster every node needs
    ``pip install flatmmo`` (or a `runtime_env`, see the README's "Scaling out")."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray = require_ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1")
    return ray


def check_capacity(ray: Any, workers: int) -> None:
    """Actors take one CPU each: more actors than the cluster's CPUs would wait forever."""
    cpus = int(ray.cluster_resources().get("CPU", 0))
    if workers > cpus:
        raise ValueError(f"workers={workers} Ray actors need {workers} CPUs but the Ray cluster has {cpus}")


class _Memory:
    """Lets `allocate_buffers` lay its views over a plain byte array (as it does over shared memory)."""

    def __init__(self, raw: np.ndarray) -> None:
        self.buf = memoryview(raw)


def _contiguous(config: Config, rows: int) -> np.ndarray:
    """One byte array for all of a block's outputs: a single object per step through Ray's store."""
    return np.zeros(allocate_buffers(config, 1)["_bytes"] * rows + 4096, dtype=np.uint8)


class BlockActor:
    """A block of envs in a Ray actor (wrapped with `ray.remote` by `RayBlocks`)."""

    def __init__(self, config_toml: str, config_name: str, seeds: list[int], env: str | None = None,
                 engine: str = "loop") -> None:
        self.config = config = config_module.from_toml(config_toml, config_name)
        self.raw = _contiguous(config, len(seeds) * config.PLAYER_N)
        self.buffers = allocate_buffers(config, len(seeds) * config.PLAYER_N, _Memory(self.raw))
        self.block = make_block(config, seeds, self.buffers, 0, env, engine)

    def reset(self) -> tuple[dict[str, np.ndarray], np.ndarray, list[int], list[bool]]:
        self.block.reset()
        none_finished = stack_episodes([], episode_width(self.config))
        return self.raw, none_finished, self.block.episode_seeds(), [True] * len(self.block.envs)

    def step(self, actions: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, list[int], list[bool]]:
        episodes = self.block.step(actions)
        resets = [tick == 0 for tick in self.block.ticks()]  # auto-reset during this step
        return self.raw, episodes, self.block.episode_seeds(), resets

    def restore(self, seeds: list[int], logs: list[list[np.ndarray]]) -> None:
        self.block.restore(seeds, logs)

    def pid(self) -> int:
        return os.getpid()


class RayBlocks:
    """The Ray backend of `VectorEnv`: `workers` actors, each stepping a contiguous block of envs."""

    def __init__(self, config: Config, seeds: list[int], workers: int, buffers: dict[str, np.ndarray],
                 address: str | None = None, env: str | None = None, engine: str = "loop") -> None:
        self.ray = init(address)
        check_capacity(self.ray, workers)
        self.config, self.slots = config, config.PLAYER_N
        self.config_toml, self.config_name = config.to_toml(), config.name
        self.buffers, self.env, self.engine = buffers, env, engine
        self.parts = [part.tolist() for part in np.array_split(np.arange(len(seeds)), workers)]
        self.seeds = seeds
        self.remote_class = self.ray.remote(num_cpus=1, max_restarts=0)(BlockActor)
        self.actors = [self._start(i) for i in range(workers)]
        self.episode_seeds: list[list[int]] = [[0] * len(part) for part in self.parts]
        self.logs: list[list[list[np.ndarray]]] = [[[] for _ in part] for part in self.parts]
        self.replacements = 0  # actors that died and were replaced, over the whole run

    def _start(self, i: int) -> Any:
        return self.remote_class.remote(self.config_toml, self.config_name, [self.seeds[k] for k in self.parts[i]],
                                        self.env, self.engine)

    def _rows(self, i: int) -> slice:
        return slice(self.parts[i][0] * self.slots, (self.parts[i][-1] + 1) * self.slots)

    def _call(self, method: str, actions: np.ndarray | None) -> list[tuple]:
        """Call `method` on every actor; an actor that died is replaced, restored and called again."""
        args = [() if actions is None else (actions[self._rows(i)],) for i in range(len(self.actors))]
        refs = [getattr(actor, method).remote(*a) for actor, a in zip(self.actors, args, strict=True)]
        out = []
        for i, ref in enumerate(refs):
            for attempt in range(MAX_REPLACEMENTS + 1):
                try:
                    out.append(self.ray.get(ref))
                    break
                except self.ray.exceptions.RayActorError:
                    if attempt == MAX_REPLACEMENTS:
                        raise RuntimeError(f"Ray actor for envs {self.parts[i]} died {attempt + 1} times in a row "
                                           f"during {method}()") from None
                    self._replace(i, restore=method != "reset")
                    ref = getattr(self.actors[i], method).remote(*args[i])
        return out

    def _replace(self, i: int, restore: bool) -> None:
        self.replacements += 1
        self.actors[i] = self._start(i)
        if restore:
            self.ray.get(self.actors[i].restore.remote(self.episode_seeds[i], self.logs[i]))

    def _absorb(self, results: list[tuple], actions: np.ndarray | None) -> np.ndarray:
        """Copy each actor's rows into the parent's buffers and keep the replay logs current."""
        episodes = []
        for i, (raw, finished, seeds, resets) in enumerate(results):
            rows = self._rows(i)
            arrays = allocate_buffers(self.config, len(self.parts[i]) * self.slots, _Memory(raw))
            names = [*obs_layout(self.config), *step_fields(self.config)]
            if any(resets):  # a world's episode ended: its final observations too
                names += [final_name(name) for name in obs_layout(self.config)]
            for name in names:
                self.buffers[name][rows] = arrays[name]
            finished = finished.copy()
            finished[:, -1] += rows.start  # the actor numbers rows within its own block
            episodes.append(finished)
            for j, k in enumerate(self.parts[i]):
                if resets[j]:
                    self.episode_seeds[i][j], self.logs[i][j] = seeds[j], []
                else:
                    self.logs[i][j].append(actions[k * self.slots : (k + 1) * self.slots].astype(np.int16))
        return stack_episodes(episodes, episode_width(self.config))

    def reset(self) -> None:
        self._absorb(self._call("reset", None), None)

    def step(self, actions: np.ndarray) -> np.ndarray:
        return self._absorb(self._call("step", actions), actions)

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
