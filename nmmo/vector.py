"""A vector env: K envs stepped as one, returning stacked arrays for K x agent slots.

Row ``k * PLAYER_N + s`` of every array is slot ``s`` of env ``k``. Envs that reach their horizon
reset at once (their rows report ``truncated`` and then hold the new episode's agents). With
``workers > 0`` the envs are split across worker processes that write observations straight into
shared-memory buffers, so the parent reads them without copies or pickling; ``workers=0`` steps
them in this process; ``backend="ray"`` puts the blocks of envs in Ray actors instead (on this
machine or a cluster, see `nmmo.distributed`), and a killed actor is replaced and brought back to
the same state by replaying its episodes. Whatever the backend, the results are identical for the
same seeds.

    vec = VectorEnv(config, num_envs=8, seed=0, workers=2)   # or backend="ray"
    obs = vec.reset()
    out = vec.step(actions)          # actions: (8 * PLAYER_N, 3) ints, as in Env.step_arrays
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np

from nmmo import config as config_module
from nmmo.config import Config
from nmmo.layout import filled
from nmmo.layout import layout as obs_layout
from nmmo.metrics import METRICS
from nmmo.process import die_with_parent
from nmmo.rules import nobody_returns

STEP_FIELDS = {"reward": np.float32, "terminated": bool, "truncated": bool, "alive": bool, "agent_id": np.int64}
METRIC_NAMES = METRICS  # the columns of `VecStep.episodes`


@dataclass
class VecStep:
    """Stacked outputs; `episodes` holds one row of metrics per agent that finished this step and
    `episode_rows` the row (env k, slot s: k * PLAYER_N + s) it played in."""

    obs: dict[str, np.ndarray]
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    alive: np.ndarray
    agent_id: np.ndarray
    episodes: np.ndarray  # (finished agents, len(METRIC_NAMES)) float64
    episode_rows: np.ndarray  # (finished agents,) the row each of those lifetimes was played in


def allocate_buffers(config: Config, rows: int, shm: shared_memory.SharedMemory | None = None) -> dict[str, np.ndarray]:
    """Views of every buffer, laid out one after another (in `shm` when given)."""
    specs = {name: ((rows, *shape), dtype) for name, (shape, dtype) in obs_layout(config).items()}
    specs.update({name: ((rows,), np.dtype(dtype)) for name, dtype in STEP_FIELDS.items()})
    out, offset = {}, 0
    for name, (shape, dtype) in specs.items():
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if shm is None:
            out[name] = np.zeros(shape, dtype)
        else:
            out[name] = np.ndarray(shape, dtype, buffer=shm.buf, offset=offset)
        offset += (nbytes + 63) // 64 * 64
    out["_bytes"] = offset  # type: ignore[assignment]
    return out


def load_env_class(env: type | str | None) -> type:
    """The env class `env` names: `nmmo.Env` for None, a subclass of it, or a spec string naming one."""
    import nmmo
    from nmmo.policy import import_spec

    cls = nmmo.Env if env is None else import_spec(env, "env class") if isinstance(env, str) else env
    if not (isinstance(cls, type) and issubclass(cls, nmmo.Env)):
        raise ValueError(f"env {env!r} is not an nmmo.Env subclass")
    return cls


def env_spec(env: type | str | None) -> str | None:
    """`env` as a string a worker process or Ray actor can load: file paths made absolute (workers
    may run elsewhere on disk), classes named by their importable module."""
    if env is None or isinstance(env, str):
        if isinstance(env, str) and env.rsplit(":", 1)[0].endswith(".py"):
            where, name = env.rsplit(":", 1)
            return f"{Path(where).resolve()}:{name}"
        return env
    module = getattr(env, "__module__", "__main__")
    if module == "__main__" or "<locals>" in env.__qualname__:
        raise ValueError(f"env class {env.__qualname__} is defined in __main__ or a function, where worker processes "
                         "cannot import it: define it in a module or a .py file and pass 'file.py:Class' (or use "
                         "workers=0)")
    return f"{module}:{env.__qualname__}"


ENGINES = ("fused", "loop")


def resolve_engine(engine: str | None, env: type | str | None, config: Config | None = None) -> str:
    """The engine a vector env uses: "fused" (`nmmo.fused`, K worlds in one set of tables) unless
    `env` names a custom env class, whose overrides (rewards, logs) only a loop of its own
    instances can run, or the observation has a computed field (`nmmo.layout.filled`), which
    reads a lone env; asking for "fused" then is an error."""
    import nmmo

    if engine is not None and engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} (or None: the fastest that fits), got {engine!r}")
    custom = env is not None and load_env_class(env) is not nmmo.Env
    if engine == "fused" and custom:
        raise ValueError(f"engine='fused' runs nmmo.Env's own rules and rewards for all worlds at once; the env class "
                         f"{env!r} may override them, so it needs engine='loop' (the default picks it)")
    computed = [spec.name for spec in filled(config)] if config is not None else []
    if engine == "fused" and computed:
        raise ValueError(f"engine='fused' does not compute the observation fields {computed}; use engine='loop' "
                         "(the default picks it)")
    return engine or ("loop" if custom or computed else "fused")


def make_block(config: Config, seeds: list[int], buffers: dict[str, np.ndarray], start_row: int,
               env: type | str | None = None, engine: str = "fused"):
    """The block of envs one process (or Ray actor) steps: a `FusedBlock` or an `EnvBlock`."""
    if engine == "fused":
        from nmmo.fused import FusedBlock

        return FusedBlock(config, seeds, buffers, start_row, env)
    return EnvBlock(config, seeds, buffers, start_row, env)


class EnvBlock:
    """A few envs stepped in order, writing into a slice of the shared buffers (the "loop" engine)."""

    def __init__(self, config: Config, seeds: list[int], buffers: dict[str, np.ndarray], start_row: int,
                 env: type | str | None = None) -> None:
        env_class = load_env_class(env)
        self.envs = [env_class(config, seed=s) for s in seeds]
        self.slots = config.PLAYER_N
        self.buffers, self.start = buffers, start_row
        self.nobody_returns = nobody_returns(config)

    def episode_seeds(self) -> list[int]:
        """The seed each env's current episode started from (`Env.episode_seed`)."""
        return [int(env.episode_seed) for env in self.envs]

    def ticks(self) -> list[int]:
        """Each env's tick in its episode (0 right after a reset)."""
        return [int(env.realm.state.tick) for env in self.envs]

    def restore(self, seeds: list[int], logs: list[list[np.ndarray]]) -> None:
        """Bring fresh envs to where lost ones were: each env resets with its episode's seed and
        replays that episode's actions (the engine is deterministic, so the state is the same)."""
        for env, seed, log in zip(self.envs, seeds, logs, strict=True):
            env.reset(seed=seed)
            for actions in log:
                env.step_arrays(actions)

    def _rows(self, k: int) -> slice:
        begin = self.start + k * self.slots
        return slice(begin, begin + self.slots)

    def _write_obs(self, k: int) -> None:
        obs, rows = self.envs[k]._obs, self._rows(k)
        for name, values in obs.fields().items():
            self.buffers[name][rows] = values

    def reset(self) -> None:
        for k, env in enumerate(self.envs):
            env.reset()
            rows = self._rows(k)
            self._write_obs(k)
            self.buffers["reward"][rows] = 0
            self.buffers["terminated"][rows] = False
            self.buffers["truncated"][rows] = False
            self.buffers["alive"][rows] = env.realm.state.entities.alive[: self.slots]
            self.buffers["agent_id"][rows] = env.realm.state.entities.id[: self.slots] * self.buffers["alive"][rows]

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Step every env; returns the metric rows of agents that finished."""
        episodes = []
        for k, env in enumerate(self.envs):
            rows = self._rows(k)
            out = env.step_arrays(actions[k * self.slots : (k + 1) * self.slots])
            self.buffers["reward"][rows] = out.rewards
            self.buffers["terminated"][rows] = out.terminated
            self.buffers["truncated"][rows] = out.truncated
            if out.episodes is not None:  # metric columns, then the row each lifetime was played in
                rows_of = (rows.start + out.episode_slots).astype(np.float64)
                episodes.append(np.stack([*(out.episodes[m] for m in METRIC_NAMES), rows_of], axis=1))
            if env.done or (self.nobody_returns and not out.alive.any()):  # auto-reset: the rows now hold the
                #                                                               next episode's agents
                env.reset()
                self.buffers["alive"][rows] = env.realm.state.entities.alive[: self.slots]
                self.buffers["agent_id"][rows] = env.realm.state.entities.id[: self.slots]
            else:
                self.buffers["alive"][rows] = out.alive
                self.buffers["agent_id"][rows] = np.where(out.alive, out.agent_ids, 0)
            self._write_obs(k)
        return stack_episodes(episodes)


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
        return stack_episodes([pipe.recv() for pipe in self.pipes])

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


def stack_episodes(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros((0, len(METRIC_NAMES) + 1))


class VectorEnv:
    """K copies of an env config stepped together: in this process (``workers=0``), across worker
    processes (``workers=N``) or across Ray actors (``backend="ray"``, ``workers`` actors; pass
    ``ray_address`` to use an existing cluster, see `nmmo.distributed.init`).

    `env` picks the env class, for example an `nmmo.Env` subclass that overrides ``reward`` (the
    custom-reward recipe): the class itself, or a ``pkg.module:Class`` / ``path/to/file.py:Class``
    string. Workers and Ray actors build their envs from the string, so a class defined in a
    script's ``__main__`` only works with ``workers=0``; default: `nmmo.Env`.

    `engine` says how each block of envs (all of them in this process, or each worker's or actor's
    share) is stepped: ``"fused"`` holds the block's worlds in one set of tables and runs every
    system once per tick for all of them (`nmmo.fused`; several times faster for small worlds,
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
            from nmmo.distributed import RayBlocks

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
        b = self.buffers
        return VecStep(self._observations(), b["reward"], b["terminated"], b["truncated"], b["alive"], b["agent_id"],
                       finished[:, :-1], finished[:, -1].astype(np.int64))

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
