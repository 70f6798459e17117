"""Blocks of envs: what one process (or Ray actor) of a vector env steps, writing into its rows of
the shared buffers (`nmmo.engines.buffers`). `EnvBlock` loops over lone envs (any `nmmo.Env` subclass);
the fused engine (`nmmo.engines.fused.FusedBlock`) holds its worlds in one set of tables. `resolve_engine`
picks between them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nmmo.config import Config
from nmmo.core.layout import filled
from nmmo.core.rules import nobody_returns
from nmmo.engines.buffers import METRIC_NAMES, episode_width, final_name, stack_episodes
from nmmo.envs.env import Env


def load_env_class(env: type | str | None) -> type:
    """The env class `env` names: `nmmo.Env` for None, a subclass of it, or a spec string naming one."""
    from nmmo.policy import import_spec

    cls = Env if env is None else import_spec(env, "env class") if isinstance(env, str) else env
    if not (isinstance(cls, type) and issubclass(cls, Env)):
        raise ValueError(f"env {env!r} is not an nmmo.Env subclass")
    return cls


def env_spec(env: type | str | None) -> str | None:
    """`env` as a string a worker process or Ray actor can load: file paths made absolute (workers
    may run elsewhere on disk), classes named by their importable module."""
    from nmmo.policy import names_a_path

    if env is None or isinstance(env, str):
        if isinstance(env, str) and names_a_path(env.rsplit(":", 1)[0]):
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
    """The engine a vector env uses: "fused" (`nmmo.engines.fused`, K worlds in one set of tables) unless
    `env` names a custom env class, whose overrides (rewards, logs) only a loop of its own
    instances can run, or the observation has a computed field (`nmmo.core.layout.filled`) that
    reads a lone env (all but the task embedding with respawn on); asking for "fused" then is an error."""
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} (or None: the fastest that fits), got {engine!r}")
    custom = env is not None and load_env_class(env) is not Env
    if engine == "fused" and custom:
        raise ValueError(f"engine='fused' runs nmmo.Env's own rules and rewards for all worlds at once; the env class "
                         f"{env!r} may override them, so it needs engine='loop' (the default picks it)")
    computed = [spec.name for spec in filled(config) if spec.name not in fused_fills(config)] if config else []
    if config is not None and config.GAME:
        if engine == "fused":
            raise ValueError(f"engine='fused' does not play minigames (GAME={config.GAME!r}: its rules and early "
                             "ends run in a lone env); use engine='loop' (the default picks it)")
        return "loop"
    if engine == "fused" and computed:
        why = " (tasks: only with respawn on, see nmmo.engines.fused_tasks)" if computed == ["task"] else ""
        raise ValueError(f"engine='fused' does not compute the observation fields {computed}{why}; use engine='loop' "
                         "(the default picks it)")
    return engine or ("loop" if custom or computed else "fused")


def fused_fills(config: Config) -> set[str]:
    """The computed observation fields the fused engine fills itself: the task embedding, when
    every world's episode ends at the horizon (`nmmo.engines.fused_tasks`)."""
    return {"task"} if config.has_tasks() and not nobody_returns(config) else set()


#: What a mix of games (GAME_MIX) takes from the vector env's config; everything else is each game's
#: canonical config (its map, teams, horizon and rules).
MIX_CARRIES = ("GAME_ADAPTIVE", "TASK_CURRICULUM", "TASK_REWARD", "TASK_SURVIVAL_REWARD", "PATH_MAPS")


def member_configs(config: Config, first: int, count: int) -> list[Config]:
    """The configs of envs `first .. first + count - 1` of a vector env: `config` for all, or with
    GAME_MIX each env's game of the list in turn (its canonical config, with `MIX_CARRIES` from `config`)."""
    if not config.GAME_MIX:
        return [config] * count
    from nmmo import config as config_module

    names = [name.strip() for name in config.GAME_MIX.split(",")]
    carried = {key: getattr(config, key) for key in MIX_CARRIES}
    games = {name: config_module.resolve(name).update(carried) for name in names}
    return [games[names[(first + k) % len(names)]] for k in range(count)]


def make_block(config: Config, seeds: list[int], buffers: dict[str, np.ndarray], start_row: int,
               env: type | str | None = None, engine: str = "fused"):
    """The block of envs one process (or Ray actor) steps: a `FusedBlock` or an `EnvBlock`."""
    if engine == "fused":
        from nmmo.engines.fused import FusedBlock

        return FusedBlock(config, seeds, buffers, start_row, env)
    return EnvBlock(config, seeds, buffers, start_row, env)


class EnvBlock:
    """A few envs stepped in order, writing into a slice of the shared buffers (the "loop" engine)."""

    def __init__(self, config: Config, seeds: list[int], buffers: dict[str, np.ndarray], start_row: int,
                 env: type | str | None = None) -> None:
        env_class = load_env_class(env)
        configs = member_configs(config, start_row // config.PLAYER_N, len(seeds))
        self.envs = [env_class(c, seed=s) for c, s in zip(configs, seeds, strict=True)]
        self.slots = config.PLAYER_N
        self.buffers, self.start = buffers, start_row
        self.nobody_returns = nobody_returns(config)
        self.tasks_on, self.width = config.has_tasks(), episode_width(config)

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

    def _write_obs(self, k: int, final: bool = False) -> None:
        """Env k's observations into its rows (`final`: into the final observations' buffers)."""
        obs, rows = self.envs[k]._obs, self._rows(k)
        for name, values in obs.fields().items():
            self.buffers[final_name(name) if final else name][rows] = values

    def reset(self) -> None:
        for k, env in enumerate(self.envs):
            env.reset()
            rows = self._rows(k)
            self._write_obs(k)
            self.buffers["reward"][rows] = 0
            self.buffers["terminated"][rows] = self.buffers["truncated"][rows] = self.buffers["reset"][rows] = False
            self.buffers["alive"][rows] = env.realm.state.entities.alive[: self.slots]
            self.buffers["agent_id"][rows] = env.realm.state.entities.id[: self.slots] * self.buffers["alive"][rows]
            self._write_tasks(k)

    def _write_tasks(self, k: int) -> None:
        """Each slot's task, progress and completion (tasks on)."""
        if self.tasks_on:
            status, rows = self.envs[k].task_status(np.arange(self.slots)), self._rows(k)
            self.buffers["task_index"][rows] = status[:, 0]
            self.buffers["task_progress"][rows] = status[:, 1]
            self.buffers["task_completed"][rows] = status[:, 2]

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Step every env; returns the metric rows of agents that finished."""
        episodes = []
        for k, env in enumerate(self.envs):
            rows = self._rows(k)
            out = env.step_arrays(actions[k * self.slots : (k + 1) * self.slots])
            self.buffers["reward"][rows] = out.rewards
            self.buffers["terminated"][rows] = out.terminated
            self.buffers["truncated"][rows] = out.truncated
            if out.episodes is not None:  # metric columns, the task outcome, then the row each lifetime was played in
                rows_of = (rows.start + out.episode_slots).astype(np.float64)
                outcome = env.task_status(out.episode_slots).T if self.tasks_on else []
                episodes.append(np.stack([*(out.episodes[m] for m in METRIC_NAMES), *outcome, rows_of], axis=1))
            over = env.done or (self.nobody_returns and not out.alive.any())
            self.buffers["reset"][rows] = over
            if over:  # auto-reset: the rows now hold the next episode's agents
                self._write_obs(k, final=True)
                env.reset()
                self.buffers["alive"][rows] = env.realm.state.entities.alive[: self.slots]
                self.buffers["agent_id"][rows] = env.realm.state.entities.id[: self.slots]
            else:
                self.buffers["alive"][rows] = out.alive
                self.buffers["agent_id"][rows] = np.where(out.alive, out.agent_ids, 0)
            self._write_obs(k)
            self._write_tasks(k)
        return stack_episodes(episodes, self.width)


