"""Recurrent PPO for nmmo, in one readable file (every hyper-parameter in `Args`).

Shared weights across all agents; rollouts from `nmmo.engines.vector.VectorEnv` (no per-agent Python on the
hot path: one batched forward per tick for every agent slot of every env); the LSTM memory of a slot
is reset when a new agent takes it; GAE, clipped objective, value loss, entropy bonus; minibatches
are sets of whole slot sequences so the recurrence replays in order. Logs a CSV/JSON row per
iteration, PNG curves and TensorBoard event files (OUT/tensorboard); wandb only when asked
(offline unless you are logged in). Checkpoints are written atomically and `--resume` continues
from one, step count included.

Read it top to bottom: `train` is the loop, and each iteration is four parts, one function each:
`collect` a rollout, `learn` from it (GAE, then the PPO epochs of `_update`), make its log row
(`iteration_row`), save the checkpoint and then the row (`save_iteration`). The optional features are `Hook`s, called at
fixed points of those parts and kept below them (skip them on a first reading): a scripted teacher's
labels (`TeacherHook`), the league's opponents (`LeagueHook`), the task tally (`TaskTallyHook`), the
resource-reward shaping (`ResourceReward`), wandb and TensorBoard (`LogHook`). Resuming is one
step of `prepare` (`_resume`).

    python -m baselines.ppo --config train_small --minutes 20
    nmmo train --config small_maps --minutes 20
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from baselines import checkpoint
from baselines.args import Args, add_arguments, args_from
from baselines.league import LEAGUE_FILE, LEARNER, League, Opponents
from baselines.model import MLPPolicy, Policy, act, parameter_count, to_tensors
from baselines.policy import baseline_class, checkpoint_class
from baselines.recipes.common import gae
from baselines.task_log import TaskTally, task_curves
from baselines.tb_log import TensorBoardLog
from baselines.teacher import UNLABELLED, Teacher, imitation_loss
from nmmo import config as config_module
from nmmo import console
from nmmo.config import Config
from nmmo.core.actions import NO_OP_ROW
from nmmo.engines.vector import METRIC_NAMES, VecStep, VectorEnv
from nmmo.envs.tasking import as_task_set
from nmmo.io.files import atomic_write_bytes, remove_stale_temps
from nmmo.policy import load_policy_class
from nmmo.tasks import embedding_size
from nmmo.tasks.spec import task_set_key


def save_checkpoint(path: Path, model: Policy, optimizer, args: Args, step: int, iteration: int, config,
                    rng: np.random.Generator | None = None, log_row: dict | None = None) -> None:
    """Tensors and plain data only (`baselines.checkpoint`): loading it never runs code. `log_row`
    is the iteration's log row, kept so a run killed before logging it can write it on resume."""
    checkpoint.save(path, {"model": model.state_dict(), "model_kwargs": model.kwargs,
                           "optimizer": optimizer.state_dict(), "args": dataclasses.asdict(args), "step": step,
                           "iteration": iteration, "config_toml": config.to_toml(), "config_name": config.name,
                           "rng": None if rng is None else rng.bit_generator.state, "log_row": log_row})


def load_checkpoint(path: str | os.PathLike, device: str = "cpu") -> dict:
    """A checkpoint's dict, read with the weights-only unpickler; `checkpoint.CheckpointError` (a
    ValueError) names the file when it is missing, unreadable or holds anything but plain data."""
    return checkpoint.load(path, device)


def act_rows(model: Policy, obs: dict[str, np.ndarray], state, reset: np.ndarray, alive: np.ndarray, device: str):
    """`act` for the rows that hold a live agent only (a slot whose agent died costs nothing until
    it is filled again; without respawn, most slots are empty late in an episode): actions (rows, 3),
    log-probs and values (zeros for the other rows, which the losses mask out), and the new state
    (the other rows' memory unchanged: it is reset when an agent takes the slot)."""
    live = np.flatnonzero(alive)
    actions = np.zeros((len(alive), 3), np.int64)
    logps, values = np.zeros(len(alive), np.float32), np.zeros(len(alive), np.float32)
    if live.size:
        index = torch.as_tensor(live, device=device)
        with torch.no_grad():
            a, logp, value, (h, c) = act(model, to_tensors({k: v[live] for k, v in obs.items()}, device),
                                         (state[0][:, index], state[1][:, index]),
                                         torch.as_tensor(reset[live], device=device))
        state = (state[0].index_copy(1, index, h), state[1].index_copy(1, index, c))
        actions[live], logps[live], values[live] = a.cpu().numpy(), logp.cpu().numpy(), value.cpu().numpy()
    return actions, logps, values, state


# ------------------------------------------------------------------------------------ the loop
@dataclass
class Run:
    """One training run: what `prepare` builds, what every iteration reads and advances, and what
    carries from one rollout to the next (the envs' last observation, each row's memory and agent)."""

    args: Args
    out: Path
    config: Config
    vec: VectorEnv
    model: Policy | MLPPolicy
    optimizer: torch.optim.Optimizer
    rng: np.random.Generator  # the minibatch shuffles: the same seed gives the same run
    learner: np.ndarray  # the rows the learner plays and trains on (all of them without a league)
    league: League | None = None
    step: int = 0  # live agent-steps trained on so far
    iteration: int = 0
    started: float = 0.0
    history: list[dict] = field(default_factory=list)
    obs: dict[str, np.ndarray] = field(default_factory=dict)
    state: tuple[torch.Tensor, torch.Tensor] | None = None  # each row's LSTM memory
    prev_ids: np.ndarray | None = None  # the agent each row held on the last tick
    prev_done: np.ndarray | None = None  # the row's last step ended its agent's episode


@dataclass
class Rollout:
    """One rollout, time-major: the (T, rows, ...) arrays PPO learns from, the memory each BPTT
    chunk starts from, the teacher's labels (when one labels), the finished agents' metrics and
    where the time went."""

    obs: dict[str, np.ndarray]
    actions: np.ndarray
    logps: np.ndarray
    values: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    valid: np.ndarray  # a live learner agent in the row: the rows the losses count
    resets: np.ndarray  # fresh memory at this tick (a new agent in the row, or a new episode)
    chunk_states: list = field(default_factory=list)
    labels: np.ndarray | None = None  # the teacher's [direction, style, target] (`TeacherHook`)
    teacher_weight: float = 0.0
    teacher_plays: bool = False  # the envs stepped with the teacher's actions: imitation without PPO's policy loss
    episodes: list[np.ndarray] = field(default_factory=list)  # each step's finished learner agents' metrics
    timing: dict[str, float] = field(default_factory=lambda: {"env": 0.0, "inference": 0.0, "teacher": 0.0,
                                                               "learn": 0.0})

    @classmethod
    def empty(cls, obs: dict[str, np.ndarray], t_len: int, rows: int) -> Rollout:
        """Zeroed arrays for `t_len` ticks of `rows` rows, observations shaped as `obs`."""
        def zeros(dtype: type) -> np.ndarray:
            return np.zeros((t_len, rows), dtype)

        return cls({k: np.zeros((t_len, rows, *v.shape[1:]), v.dtype) for k, v in obs.items()},
                   np.zeros((t_len, rows, 3), np.int64), zeros(np.float32), zeros(np.float32), zeros(np.float32),
                   zeros(bool), zeros(bool), zeros(bool))


def train(args: Args) -> dict:
    """Run PPO; returns a summary (steps, iterations, throughput, last metrics)."""
    check_args(args)
    run = prepare(args)
    hooks = make_hooks(run)
    begin(run)
    run.started = time.perf_counter()
    deadline = run.started + 60 * args.minutes
    bar = console.progress(total=args.total_steps or None, desc="train", unit="agent-step", enabled=args.progress,
                           initial=run.step)  # a time budget alone: no total to count down
    try:
        while time.perf_counter() < deadline and (not args.total_steps or run.step < args.total_steps) and (
                not args.iterations or run.iteration < args.iterations):
            rollout = collect(run, hooks)  # 1. play rollout_len ticks
            losses = learn(run, rollout)  # 2. GAE and the PPO epochs
            run.iteration += 1
            row = iteration_row(run, rollout, losses, hooks)  # 3. the iteration's log row
            save_iteration(run, row)  # 4. the checkpoint, then the row
            for hook in hooks:
                hook.logged(row, run.step)
            bar.set_postfix_str(f"iteration {run.iteration}, {row['agent_steps_per_s']:.0f} agent-steps/s, "
                                f"lifetime {row.get('lifetime', float('nan')):.1f}")
            bar.update(int(rollout.valid.sum()))
    finally:
        bar.close()
        run.vec.close()
        for hook in hooks:
            hook.close()
    return finish(run, hooks)


def check_args(args: Args) -> None:
    """Refuse settings that cannot train (ValueError naming them) before anything is built."""
    if args.bptt < 1 or args.rollout_len % min(args.bptt, args.rollout_len):
        raise ValueError(f"bptt must divide rollout_len ({args.rollout_len}), got {args.bptt}")
    if args.teacher_steps < 0 or args.teacher_coef < 0:
        raise ValueError(f"teacher_steps and teacher_coef must be >= 0, got {args.teacher_steps} and "
                         f"{args.teacher_coef}")
    if not 0 <= args.teacher_play_steps <= (args.teacher_steps if args.teacher else 0):
        raise ValueError(f"teacher_play_steps must be between 0 and teacher_steps ({args.teacher_steps}) with a "
                         f"teacher, 0 without one; got {args.teacher_play_steps}")
    if args.teacher_play_steps and not args.teacher_coef:
        raise ValueError("teacher_play_steps needs teacher_coef > 0: a teacher that plays is there to be imitated")
    if (args.task_curriculum or args.task_blind) and not args.tasks:
        raise ValueError("--task-curriculum and --task-blind need --tasks SET")
    if args.teacher:  # a bad spec fails now, naming it, not after the envs are built
        try:
            load_policy_class(args.teacher)
        except ValueError as err:
            raise ValueError(f"teacher {args.teacher!r}: {err}") from None


def prepare(args: Args) -> Run:
    """Seed torch, clean the output folder, build the envs, the network and its optimizer, then
    warm-start the weights (`--init`) or resume from OUT/checkpoint.pt (`--resume`)."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)  # what a killed run's atomic writes left behind
    league = _league(args, out) if args.league else None  # its file's specs are checked before any env exists
    config = config_module.resolve(args.config)
    if args.game:  # a minigame (its canonical config, Args.__post_init__) with its curriculum on
        config.set("GAME_ADAPTIVE", True)
    if args.tasks:  # every agent draws a task; the network reads its embedding
        config.set("TASKS", task_set_key(args.tasks))
        config.set("TASK_CURRICULUM", args.task_curriculum)  # every env draws through it (nmmo.envs.tasking)
    vec = VectorEnv(config, num_envs=args.num_envs, seed=args.seed, workers=args.workers, backend=args.backend,
                    ray_address=args.ray_address, env=args.env)
    task_dim = embedding_size(config) if config.has_tasks() and not args.task_blind else 0  # blind: no task input
    if args.arch == "mlp":
        model = MLPPolicy.for_config(config, args.hidden, task=bool(task_dim)).to(args.device)
    else:
        model = Policy(side=2 * config.PLAYER_VISION_RADIUS + 1, hidden=args.hidden, task_dim=task_dim).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-5)
    learner = Opponents.learner_rows(args.num_envs, vec.slots) if league is not None else np.ones(vec.rows, bool)
    run = Run(args, out, config, vec, model, optimizer, np.random.default_rng(args.seed), learner, league)
    if args.init and not args.resume:
        warm_start(model, args.init)
    if args.resume:
        _resume(run)
    else:  # a fresh run: logs and curves of an earlier run in this directory must not mix in
        for name in ("log.csv", "log.jsonl", "curves.png", "tasks.png"):
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / "tensorboard", ignore_errors=True)
    return run


def begin(run: Run) -> None:
    """Reset the envs: the first observation, fresh memory in every row, no agent held before."""
    run.obs = run.vec.reset()
    run.state = run.model.initial_state(run.vec.rows, run.args.device)
    run.prev_ids = np.zeros(run.vec.rows, dtype=np.int64)
    run.prev_done = np.ones(run.vec.rows, dtype=bool)  # carried over rollouts


def collect(run: Run, hooks: list[Hook]) -> Rollout:
    """Play `rollout_len` ticks of every env: the learner acts for its live rows (one batched
    forward pass a tick), the envs step, and the arrays PPO learns from fill up."""
    args, vec, t_len = run.args, run.vec, run.args.rollout_len
    rollout = Rollout.empty(run.obs, t_len, vec.rows)
    for hook in hooks:
        hook.rollout_start(run, rollout)
    for t in range(t_len):
        if t % min(args.bptt, t_len) == 0:  # the memory each BPTT chunk starts from
            rollout.chunk_states.append((run.state[0][0].clone(), run.state[1][0].clone()))
        obs = run.obs
        alive, ids = vec.buffers["alive"].copy(), vec.buffers["agent_id"].copy()
        # a new agent (or none) in the slot, or a new episode (ids restart at the horizon): fresh memory
        rollout.resets[t] = (ids != run.prev_ids) | run.prev_done
        run.prev_ids = ids
        for k, v in obs.items():
            rollout.obs[k][t] = v
        tick = time.perf_counter()
        a, rollout.logps[t], rollout.values[t], run.state = act_rows(run.model, obs, run.state, rollout.resets[t],
                                                                     alive & run.learner, args.device)
        rollout.timing["inference"] += time.perf_counter() - tick
        rollout.actions[t] = a
        rollout.valid[t] = alive & run.learner  # opponents' rows play but do not train
        for hook in hooks:
            hook.before_step(rollout, t, obs, ids)
        tick = time.perf_counter()
        played = np.where(alive[:, None], a, np.array(NO_OP_ROW))
        for hook in hooks:
            played = hook.play(played, obs, ids, alive)
        result = vec.step(played)
        rollout.timing["env"] += time.perf_counter() - tick
        rollout.rewards[t] = result.reward
        rollout.dones[t] = result.terminated | result.truncated
        run.prev_done = rollout.dones[t].copy()
        rollout.episodes.append(result.episodes[run.learner[result.episode_rows]])
        for hook in hooks:
            hook.after_step(rollout, t, obs, ids, result)
        run.obs = result.obs
    run.step += int(rollout.valid.sum())
    return rollout


def learn(run: Run, rollout: Rollout) -> dict:
    """The advantages (GAE from the value of the state after the rollout; no value bootstrapped
    past a done, a truncated agent is gone), then the PPO epochs (`_update`); returns the losses."""
    args, vec = run.args, run.vec
    tick = time.perf_counter()
    next_reset = (vec.buffers["agent_id"] != run.prev_ids) | run.prev_done
    _, _, next_value, _ = act_rows(run.model, run.obs, run.state, next_reset, vec.buffers["alive"], args.device)
    advantages = gae(rollout.rewards, rollout.values, next_value, rollout.dones, rollout.dones, args.gamma,
                     args.gae_lambda)
    losses = _update(run.model, run.optimizer, args, rollout.obs, rollout.actions, rollout.logps, rollout.values,
                     advantages, rollout.valid, rollout.resets, rollout.chunk_states, run.rng, rollout.labels,
                     rollout.teacher_weight, rollout.teacher_plays)
    rollout.timing["learn"] += time.perf_counter() - tick
    return losses


def iteration_row(run: Run, rollout: Rollout, losses: dict, hooks: list[Hook]) -> dict:
    """The iteration's log row (`_log_row`: throughput, reward, losses, the finished agents'
    metrics), the hooks' columns after it; kept in the run's history."""
    finished = np.concatenate(rollout.episodes) if rollout.episodes else np.zeros((0, len(METRIC_NAMES)))
    row = _log_row(run.iteration, run.step, run.started, rollout.timing, rollout.valid, rollout.rewards, finished,
                   losses)
    for hook in hooks:
        hook.extend_row(run, row)
    run.history.append(row)
    return row


def save_iteration(run: Run, row: dict) -> None:
    """The checkpoint first, then the log row: a kill in between leaves the row in the checkpoint,
    and --resume writes it (`reconcile_log`); the log never runs ahead of the checkpoint."""
    save_checkpoint(run.out / "checkpoint.pt", run.model, run.optimizer, run.args, run.step, run.iteration,
                    run.config, run.rng, row)
    _append_log(run.out, row)


def finish(run: Run, hooks: list[Hook]) -> dict:
    """Curves, the exported weights (OUT/weights.pt) and the run's summary."""
    out = run.out
    curves(out)
    task_curves(out, read_log(out))
    weights = out / "weights.pt"
    if (out / "checkpoint.pt").exists():
        checkpoint.export_weights(load_checkpoint(out / "checkpoint.pt"), weights,
                                  preset=run.args.extra.get("preset"))
    summary = {"steps": run.step, "iterations": run.iteration, "parameters": parameter_count(run.model),
               "history": run.history, "checkpoint": str(out / "checkpoint.pt"), "weights": str(weights),
               "model": run.model}
    for hook in hooks:
        hook.finish(summary)
    return summary


def _resume(run: Run) -> None:
    """Continue from OUT/checkpoint.pt: its weights, optimizer, step count and shuffle RNG, the logs
    made to hold exactly its iterations (`reconcile_log`)."""
    ckpt = load_checkpoint(run.out / "checkpoint.pt", run.args.device)
    _check_resume(ckpt, run.model, run.config)
    run.model.load_state_dict(ckpt["model"])
    run.optimizer.load_state_dict(ckpt["optimizer"])
    run.step, run.iteration = ckpt["step"], ckpt["iteration"]
    if ckpt.get("rng") is not None:
        run.rng.bit_generator.state = ckpt["rng"]
    reconcile_log(run.out, run.iteration, ckpt.get("log_row"))


# ------------------------------------------------------- optional features, as hooks (skip at first)
class Hook:
    """An optional feature of the loop. Each method is called at one point of an iteration, in the
    order of `make_hooks`' list, and does nothing unless a feature overrides it."""

    def rollout_start(self, run: Run, rollout: Rollout) -> None:
        """Before the rollout's first tick."""

    def before_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray) -> None:
        """Tick `t`: the learner has acted on `obs` (the rows' agents: `ids`); the envs have not stepped."""

    def play(self, played: np.ndarray, obs: dict[str, np.ndarray], ids: np.ndarray, alive: np.ndarray) -> np.ndarray:
        """The actions the envs step with (given: the learner's, the no-op for empty rows)."""
        return played

    def after_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray,
                   result: VecStep) -> None:
        """Tick `t` has been stepped from `obs`: `result` holds its rewards, ends and next observation."""

    def extend_row(self, run: Run, row: dict) -> None:
        """Add columns to the iteration's log row (before it is checkpointed and written)."""

    def logged(self, row: dict, step: int) -> None:
        """The row has been checkpointed and written to the log."""

    def close(self) -> None:
        """Training stopped (always called, as the envs are closed)."""

    def finish(self, summary: dict) -> None:
        """Add to the run's summary."""


def make_hooks(run: Run) -> list[Hook]:
    """The optional features `run.args` asks for, built in this order (a league's and a teacher's
    policies may draw on torch's RNG) and called in the order of the list."""
    args, vec = run.args, run.vec
    wandb_run = _wandb(args, run.config) if args.wandb else None
    board = TensorBoardLog(run.out / "tensorboard") if args.tensorboard else None
    opponents = Opponents(run.config, args.num_envs, args.seed) if run.league is not None else None
    teaches = args.teacher and args.teacher_steps  # a teacher with no steps to teach is none
    teacher = Teacher(run.config, args.teacher, args.num_envs, args.seed) if teaches else None
    hooks: list[Hook | None] = [
        TeacherHook(teacher, args) if teacher is not None else None,
        TaskTallyHook(TaskTally(as_task_set(run.config.TASKS)), vec, run.learner) if args.tasks else None,
        ResourceReward(args.resource_reward, vec) if args.resource_reward else None,
        LeagueHook(run.league, opponents, run.learner) if run.league is not None else None,
        LogHook(lambda row, step: wandb_run.log(row, step=step), wandb_run.finish) if wandb_run is not None else None,
        LogHook(board.log, board.close) if board is not None else None,
    ]
    return [hook for hook in hooks if hook is not None]


class TeacherHook(Hook):
    """A scripted teacher's labels (`baselines.teacher`): while its weight (`teacher_weight`) is
    above 0, it labels every learner row of every tick, and `_update` adds the imitation loss."""

    def __init__(self, teacher: Teacher, args: Args) -> None:
        self.teacher, self.args = teacher, args
        self.playing: np.ndarray | None = None  # this tick's actions while the teacher plays

    def rollout_start(self, run: Run, rollout: Rollout) -> None:
        rollout.teacher_weight = teacher_weight(self.args, run.step)
        if rollout.teacher_weight > 0:
            rollout.labels = np.tile(UNLABELLED, (*rollout.valid.shape, 1))
            rollout.teacher_plays = run.step < self.args.teacher_play_steps
        self.playing = None

    def before_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray) -> None:
        if rollout.labels is not None:
            tick = time.perf_counter()
            rollout.labels[t] = self.teacher.label(obs, ids, rollout.valid[t])
            rollout.timing["teacher"] += time.perf_counter() - tick
            self.playing = label_actions(rollout.labels[t]) if rollout.teacher_plays else None

    def play(self, played: np.ndarray, obs: dict[str, np.ndarray], ids: np.ndarray, alive: np.ndarray) -> np.ndarray:
        if self.playing is None:
            return played
        return np.where((alive & (self.playing[:, 0] >= 0))[:, None], self.playing, played)

    def after_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray,
                   result: VecStep) -> None:
        self.teacher.new_episodes(result.truncated)  # a new episode is a new map: its memories start over


class TaskTallyHook(Hook):
    """With --tasks: the tasks dealt and completed (`baselines.task_log`), as log columns."""

    def __init__(self, tally: TaskTally, vec: VectorEnv, learner: np.ndarray) -> None:
        self.tally, self.vec, self.learner = tally, vec, learner

    def before_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray) -> None:
        self.tally.slots(self.vec.buffers["task_index"], self.learner)

    def after_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray,
                   result: VecStep) -> None:
        self.tally.ended(result.episode_tasks[self.learner[result.episode_rows]])

    def extend_row(self, run: Run, row: dict) -> None:
        row.update(self.tally.row())


class ResourceReward(Hook):
    """Shaping (`Args.resource_reward`): a reward per unit of food and water gained by the same agent
    (not a newcomer), and not on a tick it attacked: loot taken from a victim must not pay, or agents
    learn to kill neighbours (an agent truncated at the horizon is replaced by the next episode's,
    maybe of the same id)."""

    def __init__(self, coef: float, vec: VectorEnv) -> None:
        self.coef, self.vec = coef, vec

    def before_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray) -> None:
        self.supplies = _supplies(obs)  # before the step: the envs write their next observation in place

    def after_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray,
                   result: VecStep) -> None:
        same = (self.vec.buffers["agent_id"] == ids) & ~result.terminated & ~result.truncated
        peaceful = rollout.actions[t][:, 2] == obs["target_mask"].shape[1] - 1
        gained = np.maximum(_supplies(result.obs) - self.supplies, 0).sum(axis=1)
        rollout.rewards[t] += self.coef * gained * same * peaceful


class LeagueHook(Hook):
    """Population play (`baselines.league`): each rollout every env draws an opponent that plays
    its odd slots (`run.learner` is False there); after it, the matches are rated and the learner's
    SR is logged (``league_sr``), a snapshot of it joining the pool every `snapshot_every` iterations."""

    def __init__(self, league: League, opponents: Opponents, learner: np.ndarray) -> None:
        self.league, self.opponents, self.learner = league, opponents, learner

    def rollout_start(self, run: Run, rollout: Rollout) -> None:
        self.members = self.league.sample(run.args.num_envs)
        self.opponents.play(self.members)
        self.deaths = np.zeros(run.vec.rows)

    def play(self, played: np.ndarray, obs: dict[str, np.ndarray], ids: np.ndarray, alive: np.ndarray) -> np.ndarray:
        return np.where(self.learner[:, None], played, self.opponents.opponent_actions(obs, ids, alive))

    def after_step(self, rollout: Rollout, t: int, obs: dict[str, np.ndarray], ids: np.ndarray,
                   result: VecStep) -> None:
        self.opponents.new_episodes(result.truncated)  # a new episode is a new map: bots' memories start over
        self.deaths += result.terminated

    def extend_row(self, run: Run, row: dict) -> None:
        row["league_sr"] = _league_iteration(self.league, self.members, self.deaths, self.learner, run.vec.slots,
                                             run.iteration, run.model, run.optimizer, run.args, run.step, run.config)

    def finish(self, summary: dict) -> None:
        self.league.plot()
        summary["league"] = self.league.table()


class LogHook(Hook):
    """Each log row sent to another logger too (wandb, TensorBoard: `Args.wandb`, `Args.tensorboard`)."""

    def __init__(self, log: Callable[[dict, int], None], close: Callable[[], None]) -> None:
        self._log, self._close = log, close

    def logged(self, row: dict, step: int) -> None:
        self._log(row, step)

    def close(self) -> None:
        self._close()


# ------------------------------------------------------------------------------- the helpers

def warm_start(model: Policy, spec: str) -> None:
    """Copy the weights of `spec` (``baseline:NAME`` or ``ckpt:PATH``) into `model`, tensor by
    tensor (ValueError naming a tensor whose shape differs). The one difference allowed is the
    task input: a source without one gives the fuse layer's task columns zero weight, so the model
    computes what the source did until training moves them."""
    scheme, _, rest = spec.partition(":")
    resolve = {"baseline": baseline_class, "ckpt": checkpoint_class}.get(scheme)
    if resolve is None:
        raise ValueError(f"--init takes baseline:NAME or ckpt:PATH, got {spec!r}")
    try:  # the policy schemes' own lookup: the same file, the same message, as when the spec plays
        path = resolve(rest).path
    except ValueError as err:
        raise ValueError(f"--init {spec!r}: {err}") from None
    source, own = load_checkpoint(path)["model"], model.state_dict()
    added = model.task[0].out_features if model.task is not None and "task.0.weight" not in source else 0
    expected = {name for name in own if not (added and name.startswith("task."))}  # a new task input: its own init
    if set(source) != expected:
        raise ValueError(f"--init {spec}: tensors {sorted(set(source) ^ expected)} differ from this model's")
    for name, tensor in source.items():
        if name == "fuse.0.weight" and added:  # the task columns come last in the fused input
            tensor = torch.cat([tensor, tensor.new_zeros(tensor.shape[0], added)], dim=1)
        if tensor.shape != own[name].shape:
            raise ValueError(f"--init {spec}: {name} is {tuple(tensor.shape)}, this model's {tuple(own[name].shape)}")
        own[name] = tensor
    model.load_state_dict(own)


def _check_resume(ckpt: dict, model: Policy, config) -> None:
    """Refuse to resume a checkpoint of another env config or model size (ValueError naming the difference)."""
    from evaluation.journal import first_difference

    if "config_toml" in ckpt and ckpt["config_toml"] != config.to_toml():
        theirs, ours = first_difference(ckpt["config_toml"], config.to_toml())
        raise ValueError(f"cannot resume: the checkpoint's config {theirs}, this run's config {ours}")
    theirs, ours = ckpt.get("model_kwargs", {}).get("arch", "lstm"), model.kwargs.get("arch", "lstm")
    if theirs != ours:
        raise ValueError(f"cannot resume: the checkpoint's network is --arch {theirs}, this run asks for --arch {ours}")
    changed = [k for k, v in model.kwargs.items() if ckpt.get("model_kwargs", {}).get(k, v) != v]
    if changed:
        raise ValueError("cannot resume: " + ", ".join(
            f"checkpoint has {k} {ckpt['model_kwargs'][k]}, this run asks for {model.kwargs[k]}" for k in changed))


def _league(args: Args, out: Path) -> League:
    """The league of this run: read back on --resume (a member that imports code only when given
    again this run, see `League.load`), else a new one with the configured bots."""
    if args.resume and (out / LEAGUE_FILE).exists():
        return League.load(out, allowed=args.given_specs())
    return League.create(out, args.league_bots, sampling=args.league_sampling,
                         snapshot_every=args.league_snapshot_every, seed=args.seed)


def _league_iteration(league: League, members: list, deaths: np.ndarray, learner: np.ndarray, slots: int,
                      iteration: int, model: Policy, optimizer, args: Args, step: int, config) -> float:
    """Rate this iteration's matches (one per env: deaths per slot of each side), maybe add a
    snapshot of the learner to the pool; returns the learner's SR."""
    per_env = deaths.reshape(len(members), slots)
    side = learner[:slots]
    for k, member in enumerate(members):
        league.record(member, per_env[k, side].sum() / side.sum(), per_env[k, ~side].sum() / (~side).sum())
    if iteration % league.snapshot_every == 0:
        path = league.snapshot_path(iteration)
        save_checkpoint(path, model, optimizer, args, step, iteration, config)
        league.add_snapshot(path, iteration)
    league.end_iteration(iteration)
    return league.sr()[LEARNER]


def _supplies(obs: dict[str, np.ndarray]) -> np.ndarray:
    """(rows, 2) food and water of each row's own agent, from its Entity row 0."""
    from nmmo.core.enums import EntityAttr

    return obs["entity"][:, 0, [EntityAttr.FOOD, EntityAttr.WATER]].astype(np.float32)


def as_chunks(a: np.ndarray, length: int) -> np.ndarray:
    """(T, rows, ...) -> (length, T // length * rows, ...): sequence c * rows + r is row r's chunk c."""
    t_len, rows = a.shape[:2]
    if length == t_len:
        return a
    chunks = a.reshape(t_len // length, length, rows, *a.shape[2:]).swapaxes(0, 1)
    return chunks.reshape(length, t_len // length * rows, *a.shape[2:])


def minibatch_count(args, live_agent_steps: int) -> int:
    """Minibatches per epoch: `args.minibatches`, or one per `args.minibatch_agent_steps` live
    agent-steps when that is set (at least one)."""
    if args.minibatch_agent_steps > 0:
        return max(1, round(live_agent_steps / args.minibatch_agent_steps))
    return args.minibatches


def label_actions(labels: np.ndarray) -> np.ndarray:
    """The teacher's labels as actions the envs step with: no attack (-1) becomes the no-op's."""
    actions = labels.copy()
    no_attack = labels[:, 2] < 0
    actions[no_attack, 1], actions[no_attack, 2] = NO_OP_ROW[1], NO_OP_ROW[2]
    return actions


def teacher_weight(args: Args, step: int) -> float:
    """The imitation loss's weight after `step` agent-steps: `teacher_coef`, falling linearly to 0
    at `teacher_steps`."""
    if not args.teacher or args.teacher_steps <= 0:
        return 0.0
    return args.teacher_coef * max(0.0, 1.0 - step / args.teacher_steps)


def _update(model, optimizer, args, batch, actions, logps, values, advantages, valid, resets, chunk_states,
            rng: np.random.Generator, labels: np.ndarray | None = None, weight: float = 0.0,
            imitate_only: bool = False) -> dict:
    """PPO epochs over the rollout cut into BPTT chunks of `args.bptt` ticks, each replayed through
    the LSTM from the memory it started with; chunks without a live agent are skipped. With a
    teacher's `labels`, their cross-entropy times `weight` joins the loss; `imitate_only` (the
    teacher played the rollout) drops the policy loss and the entropy bonus, keeping the value's."""
    length = min(args.bptt, valid.shape[0])
    returns = as_chunks(advantages + values, length)
    batch = {k: as_chunks(v, length) for k, v in batch.items()}
    actions, logps, advantages = as_chunks(actions, length), as_chunks(logps, length), as_chunks(advantages, length)
    valid, resets = as_chunks(valid, length), as_chunks(resets, length)
    labels = None if labels is None else as_chunks(labels, length)
    initial_state = (torch.cat([h for h, _ in chunk_states]).unsqueeze(0),
                     torch.cat([c for _, c in chunk_states]).unsqueeze(0))
    order = np.flatnonzero(valid.any(axis=0))  # chunks with no live agent teach nothing
    count = minibatch_count(args, int(valid.sum()))
    stats = {"policy_loss": [], "value_loss": [], "entropy": [], "approx_kl": [], "imitation_loss": []}
    for _ in range(args.epochs):
        rng.shuffle(order)
        for cols in np.array_split(order, max(1, min(count, len(order)))):
            def take(a: np.ndarray, cols: np.ndarray = cols) -> torch.Tensor:
                return torch.as_tensor(a[:, cols].reshape(length * len(cols), *a.shape[2:]), device=args.device)

            obs = {k: take(v) for k, v in batch.items()}
            index = torch.as_tensor(cols, device=args.device)
            move, style, target, value = model.unroll(obs, (initial_state[0][:, index], initial_state[1][:, index]),
                                                      torch.as_tensor(resets[:, cols], device=args.device))
            a = take(actions)
            new_logp, entropy = 0.0, 0.0
            for i, logits in enumerate((move, style, target)):
                dist = torch.distributions.Categorical(logits=logits)
                new_logp = new_logp + dist.log_prob(a[:, i])
                entropy = entropy + dist.entropy()
            mask = take(valid).float()
            adv = take(advantages)
            if mask.sum() > 1:  # normalise over the valid rows only
                adv = (adv - adv[mask > 0].mean()) / (adv[mask > 0].std() + 1e-8)
            log_ratio = (new_logp - take(logps)) * mask  # padded rows: ratio 1, not exp(-large) = 0
            ratio = torch.exp(log_ratio)
            clipped = torch.clamp(ratio, 1 - args.clip, 1 + args.clip)
            policy_loss = -(torch.min(ratio * adv, clipped * adv) * mask).sum() / mask.sum().clamp(min=1)
            value_loss = (((value - take(returns)) ** 2) * mask).sum() / mask.sum().clamp(min=1)
            entropy_mean = (entropy * mask).sum() / mask.sum().clamp(min=1)
            loss = args.vf_coef * value_loss
            if not imitate_only:
                loss = loss + policy_loss - args.ent_coef * entropy_mean
            if labels is not None:
                imitation = imitation_loss((move, style, target), take(labels), mask)
                loss = loss + weight * imitation
                stats["imitation_loss"].append(float(imitation.detach()))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                kl = (((ratio - 1) - log_ratio) * mask).sum() / mask.sum().clamp(min=1)
            for name, value_ in (("policy_loss", policy_loss), ("value_loss", value_loss),
                                 ("entropy", entropy_mean), ("approx_kl", kl)):
                stats[name].append(float(value_.detach()))
    means = {k: float(np.mean(v)) if v else float("nan") for k, v in stats.items()}
    if imitate_only:  # the teacher's actions: PPO's ratio and its loss were never optimized
        means["policy_loss"] = means["approx_kl"] = float("nan")
    return {**means, "teacher_weight": weight, "teacher_plays": int(imitate_only),
            "updates": len(stats["policy_loss"])}  # gradient steps this iteration


def _log_row(iteration, step, started, timing, valid, rewards, finished, losses) -> dict:
    elapsed = time.perf_counter() - started
    steps_now = int(valid.sum())
    busy = sum(timing.values())
    row = {"iteration": iteration, "step": step, "seconds": elapsed,
           "agent_steps_per_s": steps_now / max(busy, 1e-9),
           "rollout_steps_per_s": steps_now / max(timing["env"] + timing["inference"], 1e-9),
           "env_s": timing["env"], "inference_s": timing["inference"], "teacher_s": timing["teacher"],
           "learn_s": timing["learn"],
           "reward": float(rewards[valid].mean()) if valid.any() else 0.0, "episodes": int(len(finished)), **losses}
    for i, name in enumerate(METRIC_NAMES):
        row[name] = float(finished[:, i].mean()) if len(finished) else float("nan")
    return row


def _append_log(out: Path, row: dict) -> None:
    path = out / "log.csv"
    new = not path.exists()
    with path.open("a") as f:
        if new:
            f.write(",".join(row) + "\n")
        f.write(",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row.values()) + "\n")
    with (out / "log.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")


def read_log(out: str | os.PathLike) -> list[dict]:
    """The rows of OUT/log.jsonl (a line a kill cut short is skipped)."""
    path = Path(out) / "log.jsonl"
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def reconcile_log(out: Path, iteration: int, last_row: dict | None) -> None:
    """Make the logs hold exactly one row per iteration up to the checkpoint's `iteration`: rows
    past it are dropped (they would be logged again), the checkpoint's own row is added when a kill
    came between saving it and logging it; both files are rewritten atomically."""
    rows = [row for row in read_log(out) if row.get("iteration", 0) <= iteration]
    if last_row is not None and (not rows or rows[-1].get("iteration", 0) < iteration):
        rows.append(last_row)
    atomic_write_bytes(out / "log.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode())
    csv = [",".join(rows[0])] if rows else []
    csv += [",".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row.values()) for row in rows]
    atomic_write_bytes(out / "log.csv", "".join(line + "\n" for line in csv).encode())


def curves(out: str | os.PathLike) -> Path | None:
    """PNG training curves from the log (lifetime, reward, metrics, losses, throughput)."""
    rows = read_log(out)
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("lifetime", "mean lifetime (finished agents)"), ("reward", "mean reward per agent-step"),
              ("achievement", "achievement"), ("explore", "explore"), ("forage", "forage"),
              ("policy_loss", "policy loss"), ("value_loss", "value loss"), ("entropy", "entropy"),
              ("imitation_loss", "imitation loss (while a teacher labels)"),
              ("agent_steps_per_s", "agent-steps/s (end to end)")]
    fig, axes = plt.subplots(2, 5, figsize=(20, 7))
    steps = np.array([r["step"] for r in rows], dtype=np.float64)
    window = max(1, len(rows) // 40)
    for ax, (key, title) in zip(axes.ravel(), panels, strict=True):
        values = np.array([r.get(key, float("nan")) for r in rows], dtype=np.float64)
        # metrics average the agents that finished in an iteration: weigh each row by their number
        weights = np.array([r.get("episodes", 1) for r in rows], dtype=np.float64) if key in METRIC_NAMES \
            else np.ones(len(rows))
        weights[~np.isfinite(values)] = 0
        ax.plot(steps, values, color="tab:blue", alpha=0.3, linewidth=0.8)
        if window > 1:
            kernel = np.ones(window)
            total = np.convolve(weights, kernel, "valid")
            mean = np.convolve(np.nan_to_num(values) * weights, kernel, "valid") / np.maximum(total, 1e-9)
            mean[total == 0] = np.nan  # a window with no value (e.g. after the teacher stopped) shows none
            ax.plot(steps[window - 1:], mean, color="tab:blue", label=f"mean of {window} iterations")
            ax.legend(fontsize=7, loc="best")
        ax.set_title(title)
        ax.set_xlabel("agent-steps")
    # fixed margins for the fixed 2 x 5 grid: tight_layout measured every label (2-3 s a call)
    fig.subplots_adjust(left=0.035, right=0.99, bottom=0.08, top=0.95, wspace=0.28, hspace=0.38)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    path = Path(out) / "curves.png"
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _wandb(args: Args, config):  # pragma: no cover - optional dependency
    try:
        import wandb
    except ImportError as err:
        raise ValueError("--wandb needs the wandb package (pip install -e '.[train]')") from err
    os.environ.setdefault("WANDB_MODE", "offline")
    return wandb.init(project="flatmmo", config={**dataclasses.asdict(args), "env": config.to_dict()},
                      dir=args.out)


def main(argv: list[str] | None = None) -> int:
    from nmmo.cli import Parser  # the nmmo command's parser: flags are never abbreviated

    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    summary = train(args_from(parser.parse_args(argv)))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("history", "model")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
