"""PPO with RLlib on nmmo (docs: trainers/rllib.md): RLlib's ``PPOConfig`` (new API stack, its own
GAE) over RLlib's ``ParallelPettingZooEnv`` around the trainer form (`nmmo.integrations.rllib`), one
policy shared by every seat, sampled in-process. The checkpoint is RLlib's own (a pickle); its
owner exports the shared actor as weights to play it in a tournament:
``python -m nmmo.integrations.rllib export CKPT OUT``, then ``rllib:OUT``.

Run: ``python -m baselines.recipes.rllib --config trainers_small --agent-steps 1000000 --out runs/rllib``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from baselines.recipes import common
from baselines.tb_log import TensorBoardLog
from nmmo.config import Config
from nmmo.integrations import require

require("ray.rllib", "rllib")

from ray.rllib.algorithms.algorithm import Algorithm  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402

from nmmo.integrations.rllib import DEFAULT_CONFIG, ENV_NAME, POLICY_ID, register  # noqa: E402

__all__ = ["agent_steps_of", "main", "ppo_config", "shared_policy", "train"]


def shared_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """RLlib's ``policy_mapping_fn``: every seat plays (and trains) the one shared policy."""
    return POLICY_ID


def ppo_config(config: Config | str = DEFAULT_CONFIG, seed: int | None = 0, *, train_batch_size: int = 512,
               minibatch_size: int = 512, num_epochs: int = 4, lr: float = 3e-4, mask: bool = False,
               env: str = ENV_NAME) -> PPOConfig:
    """PPO on the trainer form, sampled in-process (``num_env_runners=0``), one shared policy;
    with `mask`, RLlib's action-masking example RLModule on the masked observation.

    `train_batch_size` counts env steps (RLlib's default in multi-agent; each one is PLAYER_N
    agent-steps), `minibatch_size` agent-steps. Registers `env` (`register`) first."""
    register(env)
    ppo = (PPOConfig()
           .environment(env, env_config={"config": config, "seed": seed, "mask": mask})
           .multi_agent(policies={POLICY_ID}, policy_mapping_fn=shared_policy)
           .env_runners(num_env_runners=0)
           .training(train_batch_size=train_batch_size, minibatch_size=minibatch_size, num_epochs=num_epochs, lr=lr)
           .debugging(seed=seed))
    if mask:
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

        module = RLModuleSpec(module_class=ActionMaskingTorchRLModule)
        ppo = ppo.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={POLICY_ID: module}))
    return ppo


def agent_steps_of(result: Mapping) -> int:
    """Agent-steps sampled so far, from a ``train()`` result (summed over the seats)."""
    runners = result.get("env_runners", {})
    counts = runners.get("num_agent_steps_sampled_lifetime") or runners.get("num_module_steps_sampled_lifetime")
    if isinstance(counts, Mapping):
        return int(sum(counts.values()))
    return int(counts or 0)


def train(config: Config | str = DEFAULT_CONFIG, agent_steps: int = 20_000, seed: int = 0, out: str | None = None,
          *, train_batch_size: int = 512, minibatch_size: int = 512, num_epochs: int = 4, mask: bool = False,
          log: Callable[[str], None] | None = None, tensorboard: str | os.PathLike | None = None) -> dict:
    """Train PPO (`ppo_config`) until `agent_steps` agent-steps are sampled; save the algorithm to
    `out` (`Algorithm.save_to_path`) when given; with `tensorboard`, a directory, the numbers of
    each iteration's result there (`baselines.tb_log`). Starts a local Ray unless one is running."""
    import ray

    log = log or (lambda line: print(line, flush=True))
    started = not ray.is_initialized()
    if started:
        from nmmo.engines import distributed
        distributed.init()
    try:
        with common.one_thread_seeded(seed):  # batches of 8 rows: more threads only contend with the env
            algo = ppo_config(config, seed, train_batch_size=train_batch_size, minibatch_size=minibatch_size,
                              num_epochs=num_epochs, mask=mask).build_algo()
            board = TensorBoardLog(tensorboard) if tensorboard is not None else None
            try:
                result = _train_loop(algo, agent_steps, log, board)
            finally:
                if board is not None:
                    board.close()
            if out is not None:
                result["checkpoint"] = algo.save_to_path(os.path.abspath(out))
            algo.stop()
    finally:
        if started:
            ray.shutdown()
    return result


def _train_loop(algo: Algorithm, agent_steps: int, log: Callable[[str], None],
                board: TensorBoardLog | None = None) -> dict:
    """``algo.train()`` until `agent_steps` agent-steps; the result dict of `train` (the mean
    return of the episodes finished in the last iteration, None when none finished)."""
    start, steps, iterations, returns = time.perf_counter(), 0, 0, float("nan")
    while steps < agent_steps:
        result = algo.train()
        iterations += 1
        steps = agent_steps_of(result)
        returns = float(result.get("env_runners", {}).get("episode_return_mean", float("nan")))
        seconds = time.perf_counter() - start
        log(f"iteration {iterations} agent_steps {steps} episode_return_mean {returns:.3f} "
            f"agent_steps_per_s {steps / seconds:.0f}")
        if board is not None:  # the env runners' and learners' numbers, as RLlib names them
            board.log({"agent_steps_per_s": steps / seconds, "env_runners": result.get("env_runners", {}),
                       "learners": result.get("learners", {})}, steps)
    seconds = time.perf_counter() - start
    return {"agent_steps": steps, "seconds": seconds, "agent_steps_per_s": steps / seconds if seconds else 0.0,
            "iterations": iterations, "episode_return_mean": returns if np.isfinite(returns) else None}


def main(argv: Sequence[str] | None = None) -> dict:
    """``python -m baselines.recipes.rllib``: `train`, then the result as one JSON line."""
    parser = common.parser("python -m baselines.recipes.rllib", __doc__.split("\n\n")[0], agent_steps=20_000,
                           out_help="save the algorithm here (an RLlib checkpoint; export it for rllib:PATH)")
    parser.add_argument("--train-batch-size", type=int, default=512, help="env steps per iteration")
    parser.add_argument("--minibatch-size", type=int, default=512, help="agent-steps per SGD minibatch")
    parser.add_argument("--num-epochs", type=int, default=4)
    parser.add_argument("--mask", action="store_true", help="mask actions (RLlib's action-masking example RLModule)")
    args = parser.parse_args(argv)
    return common.report(train(args.config, args.agent_steps, args.seed, args.out,
                               train_batch_size=args.train_batch_size, minibatch_size=args.minibatch_size,
                               num_epochs=args.num_epochs, mask=args.mask,
                               # only where asked: OUT is RLlib's own checkpoint directory
                               tensorboard=None if args.no_tensorboard else args.tensorboard))


if __name__ == "__main__":
    main(sys.argv[1:])
