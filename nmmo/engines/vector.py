"""A vector env: K envs stepped as one, returning stacked arrays for K x agent slots.

Row ``k * PLAYER_N + s`` of every array is slot ``s`` of env ``k``. Envs that reach their horizon
reset at once (their rows report ``truncated`` and then hold the new episode's agents). With
``workers > 0`` the envs are split across worker processes that write observations straight into
shared-memory buffers, so the parent reads them without copies or pickling; ``workers=0`` steps
them in this process; ``backend="ray"`` puts the blocks of envs in Ray actors instead (on this
machine or a cluster, see `nmmo.engines.distributed`), and a killed actor is replaced and brought back to
the same state by replaying its episodes. Whatever the backend, the results are identical for the
same seeds.

    vec = VectorEnv(config, num_envs=8, seed=0, workers=2)   # or backend="ray"
    obs = vec.reset()
    out = vec.step(actions)          # actions: (8 * PLAYER_N, 3) ints, as in Env.step_arrays
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing import shared_memory

import numpy as np

from nmmo import config as config_module
from nmmo.config import Config
from nmmo.core.layout import layout as obs_layout
from nmmo.engines.blocks import ENGINES, EnvBlock, env_spec, load_env_class, make_block, resolve_engine
from nmmo.engines.buffers import (
    METRIC_NAMES,
    STEP_FIELDS,
    TASK_FIELDS,
    VecStep,
    allocate_buffers,
    episode_width,
    final_name,
    stack_episodes,
)
from nmmo.engines.process import die_with_parent

__all__ = ["ENGINES", "METRIC_NAMES", "STEP_FIELDS", "EnvBlock", "VecStep", "VectorEnv", "allocate_buffers",
           "env_spec", "load_env_class", "make_block", "resolve_engine", "stack_episodes"]

def _worker(config_toml: str, config_name: str, seeds: list[int], shm_name: str, rows: int, start_row: int,
            actions_name: str, pipe, env: str | None, engine: str,
            parent: int) -> None:  # pragma: no cover - a child process
    die_with_parent(parent)  # a killed trainer leaves no env workers behind
    config = config_module.from_toml(config_toml, config_name)
    shm = shared_memory.SharedMemory(name=shm_name)
    actions_shm = shared_memory.SharedMemory(name=actions_name)
    buffers = allocate_buffers(config, rows, shm)
    actions = np.ndarray((rows, 3), np.int64, buffer=actions_shm.buf)
    block = make_block(config, seeds, buffers, start_row, env, engine)
    n = len(seeds) * config.PLAYER_N
    try:
        while True:
            command = pipe.recv()
            if command == "reset":
                block.reset()
                pipe.send(None)
            elif command == "step":
                pipe.send(block.step(actions[start_row : start_row + n]))
            else:
                break
    finally:
        shm.close()
        actions_shm.close()


class _InProcess:
    """workers=0: the envs step in this process."""

    def __init__(self, config: Config, seeds: list[int], buffers: dict[str, np.ndarray],
                 env: type | str | None, engine: str) -> None:
        self.block = make_block(config, seeds, buffers, 0, env, engine)

    def reset(self) -> None:
        self.block.reset()

    def step(self, actions: np.ndarray) -> np.ndarray:
        return self.block.step(actions)

    def close(self) -> None:
        pass


class _Processes:
    """Worker processes writing into shared memory; the parent owns and unlinks the segments."""

    def __init__(self, config: Config, seeds: list[int], workers: int, env: str | None, engine: str) -> None:
        rows = len(seeds) * config.PLAYER_N
        nbytes = allocate_buffers(config, 1)["_bytes"] * rows + 4096
        self.shm = shared_memory.SharedMemory(create=True, size=int(nbytes))
        self.actions_shm = shared_memory.SharedMemory(create=True, size=rows * 3 * 8)
        self.buffers = allocate_buffers(config, rows, self.shm)
        self.width = episode_width(config)
        self.actions = np.ndarray((rows, 3), np.int64, buffer=self.actions_shm.buf)
        context = multiprocessing.get_context("spawn")
        self.procs, self.pipes = [], []
        for part in np.array_split(np.arange(len(seeds)), workers):
            parent, child = context.Pipe()
            proc = context.Process(target=_worker, daemon=True, args=(
                config.to_toml(), config.name, [seeds[i] for i in part], self.shm.name, rows,
                int(part[0]) * config.PLAYER_N, self.actions_shm.name, child, env, engine, os.getpid()))
            proc.start()
            self.procs.append(proc)
            self.pipes.append(parent)

    def reset(self) -> None:
        for pipe in self.pipes:
            pipe.send("reset")
        for pipe in self.pipes:
            pipe.recv()

    def step(self, actions: np.ndarray) -> np.ndarray:
        self.actions[:] = actions
        for pipe in self.pipes:
            pipe.send("step")
        return stack_episodes([pipe.recv() for pipe in self.pipes], self.width)

    def close(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send("close")
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        for shm in (self.shm, self.actions_shm):
            shm.close()
            shm.unlink()
        self.procs, self.pipes = [], []


def _check_mix(config: Config) -> None:
    """A mix of games (GAME_MIX) needs one observation layout and population for all of them."""
    from nmmo.engines.blocks import member_configs

    names = config.GAME_MIX.split(",") if config.GAME_MIX else []
    for member in member_configs(config, 0, len(names)):
        if obs_layout(member) != obs_layout(config) or member.PLAYER_N != config.PLAYER_N:
            raise ValueError(f"GAME_MIX: {member.name} does not share {config.name}'s observation layout and PLAYER_N")


class VectorEnv:
    """K copies of an env config stepped together: in this process (``workers=0``), across worker
    processes (``workers=N``) or across Ray actors (``backend="ray"``, ``workers`` actors; pass
    ``ray_address`` to use an existing cluster, see `nmmo.engines.distributed.init`).

    `env` picks the env class, for example an `nmmo.Env` subclass that overrides ``reward`` (the
    custom-reward recipe): the class itself, or a ``pkg.module:Class`` / ``path/to/file.py:Class``
    string. Workers and Ray actors build their envs from the string, so a class defined in a
    script's ``__main__`` only works with ``workers=0``; default: `nmmo.Env`.

    `engine` says how each block of envs (all of them in this process, or each worker's or actor's
    share) is stepped: ``"fused"`` holds the block's worlds in one set of tables and runs every
    system once per tick for all of them (`nmmo.engines.fused`; several times faster for small worlds,
    identical results), ``"loop"`` steps one `Env` after another. The default, None, is
    ``"fused"``, or ``"loop"`` when `env` names a custom env class (the fused engine runs
    `nmmo.Env`'s own rules and rewards; ``engine="fused"`` with such a class is a ValueError).
    Either way, an env whose agents are all dead with none to respawn resets at once, as one that
    reaches its horizon does."""

    BACKENDS = ("process", "ray")

    def __init__(self, config: Config | str | None = None, num_envs: int = 4, seed: int = 0, workers: int = 0,
                 backend: str = "process", ray_address: str | None = None, env: type | str | None = None,
                 engine: str | None = None) -> None:
        self.config = config_module.resolve(config).validate()
        load_env_class(env)  # fail here, naming the problem, rather than in a worker
        _check_mix(self.config)
        self.engine = resolve_engine(engine, env, self.config)
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        if backend not in self.BACKENDS:
            raise ValueError(f"backend must be one of {self.BACKENDS}, got {backend!r}")
        self.num_envs, self.slots = num_envs, self.config.PLAYER_N
        self.rows = num_envs * self.slots
        seeds = np.random.SeedSequence(seed).generate_state(num_envs).tolist()
        self.backend = backend
        if backend == "ray":
            from nmmo.engines.distributed import RayBlocks

            self.workers = min(max(workers, 1), num_envs)
            self.buffers = allocate_buffers(self.config, self.rows)
            self._impl = RayBlocks(self.config, seeds, self.workers, self.buffers, ray_address, env_spec(env),
                                   self.engine)
        elif workers == 0:
            self.workers = 0
            self.buffers = allocate_buffers(self.config, self.rows)
            self._impl = _InProcess(self.config, seeds, self.buffers, env, self.engine)
        else:
            self.workers = min(workers, num_envs)
            self._impl = _Processes(self.config, seeds, self.workers, env_spec(env), self.engine)
            self.buffers = self._impl.buffers

    def _observations(self) -> dict[str, np.ndarray]:
        return {name: self.buffers[name] for name in obs_layout(self.config)}

    def reset(self) -> dict[str, np.ndarray]:
        """Reset every env; returns the stacked observations (views of the shared buffers)."""
        self._impl.reset()
        return self._observations()

    def step(self, actions: np.ndarray) -> VecStep:
        """Step all envs with (rows, 3) int actions. Returned arrays are views that the next
        step overwrites: copy what you keep, and do not write into them (the fused engine checks
        the next actions against the masks they hold)."""
        actions = np.asarray(actions)
        if actions.shape != (self.rows, 3):
            raise ValueError(f"actions must have shape ({self.rows}, 3), got {actions.shape}")
        finished = self._impl.step(actions.astype(np.int64))
        b, m = self.buffers, len(METRIC_NAMES)
        tasks = {name: b[name] for name in TASK_FIELDS} if self.config.has_tasks() else None
        final = {name: b[final_name(name)] for name in obs_layout(self.config)}
        return VecStep(self._observations(), b["reward"], b["terminated"], b["truncated"], b["alive"], b["agent_id"],
                       finished[:, :m], finished[:, -1].astype(np.int64), tasks,
                       finished[:, m:-1] if self.config.has_tasks() else None, b["reset"], final)

    def tasks(self) -> dict[str, np.ndarray] | None:
        """Each row's task, progress and completion now (views; None with tasks off): after a reset,
        the tasks the new episodes hold."""
        return {name: self.buffers[name] for name in TASK_FIELDS} if self.config.has_tasks() else None

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
