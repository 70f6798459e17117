"""`nmmo experiment population|maps|progression|tasks|games`, beside `nmmo experiment table1` in the same group.

Registered from `baselines.cli.add_commands` (the ``nmmo.commands`` entry point of the baselines
package); torch is imported only when one of them runs.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baselines.experiments import games, maps, population, progression, tasks
from baselines.experiments.run import Budget, reward_recipe
from nmmo.cli import add_command, add_ray_flags, command_group, ray_options
from nmmo.cli.outputs import add_out_flags
from nmmo.cli.overrides import add_set_flag
from nmmo.cli.tables import print_table

#: Flags of every experiment that go into the command line recorded in the results file.
RECORDED = ("config", "games", "caps", "test_cap", "maps", "train_tasks", "heldout", "curriculum", "teacher",
            "teacher_steps", "teacher_play_steps", "lr", "init", "eval_config", "seeds", "steps", "minutes", "rows",
            "minibatch_agent_steps", "eval_episodes", "eval_ticks", "eval_seed", "out")


def budget_from(args: argparse.Namespace) -> Budget:
    """The `Budget` the flags ask for (checked)."""
    ray = ray_options(args)
    return Budget(steps=args.steps, minutes=args.minutes, rows=args.rows,
                  minibatch_agent_steps=args.minibatch_agent_steps, eval_episodes=args.eval_episodes,
                  eval_ticks=args.eval_ticks, eval_seed=args.eval_seed, threads=args.threads, workers=args.workers,
                  backend=ray["backend"], ray_address=ray["ray_address"], progress=not args.quiet).check()


def command_line(args: argparse.Namespace) -> str:
    """The full command that repeats this experiment (every setting spelled out, defaults included)."""
    parts = ["nmmo", "experiment", args.experiment_command]
    for name in RECORDED:
        value = getattr(args, name, None)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        parts += [flag, *map(str, value)] if isinstance(value, list) else [flag, str(value)]
    return shlex.join(parts)


def _seeds(args: argparse.Namespace) -> tuple[int, ...]:
    if not args.seeds or any(seed < 0 for seed in args.seeds):
        raise ValueError(f"--seeds must be one or more seeds >= 0, got {args.seeds}")
    if len(set(args.seeds)) != len(args.seeds):
        raise ValueError(f"--seeds lists a seed twice: {args.seeds}")
    return tuple(args.seeds)


def _report(results: dict[str, Any], table: Callable[[dict], Any], out: Path, name: str, quiet: bool = False) -> int:
    from evaluation.tables import wide_console

    console = wide_console()
    if not quiet:
        print_table(console, table(results))
        for line in results["summary"]["verdict"]:
            console.print(f"- {line}", highlight=False, markup=False)
        console.print(f"reward: {results['reward']}", highlight=False, markup=False)
    console.print(f"results: {out / f'{name}.json'}, {out / f'{name}.png'}; checkpoints under {out / 'runs'}",
                  highlight=False, markup=False)
    return 0


def _cmd_population(args: argparse.Namespace) -> int:
    results = population.run_population(args.config, tuple(args.caps), _seeds(args), args.test_cap, budget_from(args),
                                        args.out, args.resume, command_line(args))
    return _report(results, population.table, args.out, "population", args.quiet)


def _cmd_maps(args: argparse.Namespace) -> int:
    results = maps.run_maps(args.config, tuple(args.maps), _seeds(args), budget_from(args), args.out, args.resume,
                            command_line(args))
    return _report(results, maps.table, args.out, "maps", args.quiet)


def _cmd_progression(args: argparse.Namespace) -> int:
    results = progression.run_progression(args.config, _seeds(args), budget_from(args), args.out, args.resume,
                                          command_line(args))
    return _report(results, progression.table, args.out, "progression", args.quiet)


def _cmd_tasks(args: argparse.Namespace) -> int:
    results = tasks.run_tasks(args.config, _seeds(args), budget_from(args), args.out, args.resume, command_line(args),
                              train_tasks=args.train_tasks, heldout=args.heldout, curriculum=args.curriculum,
                              teacher=args.teacher, teacher_steps=args.teacher_steps, init=args.init,
                              eval_config=args.eval_config, teacher_play_steps=args.teacher_play_steps, lr=args.lr)
    return _report(results, tasks.table, args.out, "tasks", args.quiet)


def _cmd_games(args: argparse.Namespace) -> int:
    results = games.run_games(_seeds(args), budget_from(args), args.out, args.resume, command_line(args),
                              games=tuple(args.games))
    return _report(results, games.table, args.out, "games", args.quiet)


def _common(parser: argparse.ArgumentParser, name: str, config: str | None, steps: int, seeds: tuple[int, ...],
            eval_episodes: int) -> None:
    """The flags every experiment has, with its own defaults (`config` None: no --config, the
    experiment's worlds are fixed)."""
    if config is not None:
        parser.add_argument("--config", default=config, help="the base config (name, preset or TOML path)")
        add_set_flag(parser)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(seeds), help="training seeds (a run per "
                        "condition and seed)")
    parser.add_argument("--steps", type=int, default=steps, help="agent-steps of training per run (every condition "
                        "gets the same; the trainer stops at the first iteration past it)")
    parser.add_argument("--minutes", type=float, default=None, help="also stop each run after this many minutes "
                        "(runs may then differ in agent-steps: the results file records each run's)")
    parser.add_argument("--rows", type=int, default=512, help="agent slots stepped per tick: each run steps "
                        "max(1, ROWS // population cap) envs")
    parser.add_argument("--minibatch-agent-steps", type=int, default=Budget.minibatch_agent_steps,
                        help="one minibatch per this many live agent-steps: every condition makes the same "
                        "gradient steps per agent-step")
    parser.add_argument("--eval-episodes", type=int, default=eval_episodes, help="self-contained evaluation "
                        "episodes per checkpoint and setting (0: none)")
    parser.add_argument("--eval-ticks", type=int, default=None, help="ticks per evaluation episode (default: the "
                        "config's horizon)")
    parser.add_argument("--eval-seed", type=int, default=0, help="seed of the evaluation episodes (the same for "
                        "every run)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of training and evaluation")
    parser.add_argument("--workers", type=int, default=0, help="env worker processes per run (Ray actors with --ray)")
    add_ray_flags(parser)
    add_out_flags(parser, Path(f"out/experiments/{name}"), f"{name}.json, {name}.png and runs/KEY/ (each run's "
                  "checkpoint, logs, curves and map cache) go here",
                  resume=f"skip the runs already in OUT/{name}.json and continue an interrupted run from its "
                  "checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress and no tables: only the paths of the results")


def _interrupted(args: argparse.Namespace, resume: str) -> str:
    return (f"stopped; finished runs are kept in {args.out}/ and the run in progress at its last checkpoint; "
            f"continue with: {resume}")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """`nmmo experiment population`, `maps`, `progression`, `tasks` and `games`."""
    group = command_group(subparsers, "experiment", "the paper's experiments as commands")
    recipe = f"Reward: {reward_recipe()}."
    pop = add_command(group, "population", "the paper's population experiment (Fig. 5, Table 4): train with "
                      "population caps 4 / 32 / 256, evaluate exploration and lifetime at each training cap and "
                      f"at a common test cap, over several seeds. {recipe}")
    _common(pop, "population", population.CONFIG, population.DEFAULT_STEPS, population.SEEDS, population.EVAL_EPISODES)
    pop.add_argument("--caps", nargs="+", type=int, default=list(population.CAPS), help="training population caps")
    pop.add_argument("--test-cap", type=int, default=population.TEST_CAP, help="the common test cap every checkpoint "
                     "is also evaluated at")
    pop.set_defaults(func=_cmd_population, interrupted=_interrupted)
    pools = add_command(group, "maps", "the paper's map-pool experiment (Table 2, Fig. 6): train on pools of "
                        "1 / 32 / 256 / 16384 maps, evaluate on held-out maps against the training maps each run "
                        f"saw, and count them. {recipe}")
    _common(pools, "maps", maps.CONFIG, maps.DEFAULT_STEPS, maps.SEEDS, maps.EVAL_EPISODES)
    pools.add_argument("--maps", nargs="+", type=int, default=list(maps.POOLS), help="training map pool sizes (MAP_N)")
    pools.set_defaults(func=_cmd_maps, interrupted=_interrupted)
    prog = add_command(group, "progression", "the paper's skill-progression experiment (Fig. 4): train on small "
                       f"maps and follow the metric curves over training. {recipe}")
    _common(prog, "progression", progression.CONFIG, progression.DEFAULT_STEPS, progression.SEEDS, 0)
    prog.set_defaults(func=_cmd_progression, interrupted=_interrupted)
    gen = add_command(group, "tasks", "task generalization: train a task-conditioned agent and a task-blind one "
                      "(no task embedding) on the same training tasks, reward, curriculum and agent-steps; compare "
                      "their completion of held-out tasks over several seeds")
    _common(gen, "tasks", tasks.CONFIG, tasks.DEFAULT_STEPS, tasks.SEEDS, tasks.EVAL_EPISODES)
    gen.add_argument("--train-tasks", default=tasks.TRAIN_TASKS, help="the training task set (name or file)")
    gen.add_argument("--heldout", default=tasks.HELDOUT_TASKS, help="the held-out task set evaluated (name or file)")
    gen.add_argument("--curriculum", default=tasks.CURRICULUM, choices=("", "edge"), help="how training draws the "
                     "tasks (TASK_CURRICULUM; '' by the specs' weights); the same for both arms")
    gen.add_argument("--teacher", default=tasks.TEACHER, help="a policy spec both arms imitate at first ('': none)")
    gen.add_argument("--teacher-steps", type=int, default=tasks.TEACHER_STEPS, help="agent-steps over which the "
                     "imitation weight falls from 1 to 0 (linearly; longer than --steps: it never reaches 0)")
    gen.add_argument("--teacher-play-steps", type=int, default=tasks.TEACHER_PLAY_STEPS, help="agent-steps at the "
                     "start in which the teacher plays and both arms learn its labels alone (behaviour cloning); "
                     "after them the learner plays, the teacher labels and PPO joins (0: the learner plays "
                     "throughout)")
    gen.add_argument("--lr", type=float, default=tasks.LR, help="the trainer's learning rate, both arms")
    gen.add_argument("--init", default=tasks.INIT, help="the weights both arms start from (baseline:NAME or "
                     "ckpt:PATH; '': from scratch)")
    gen.add_argument("--eval-config", default=tasks.EVAL_CONFIG, help="the world of the held-out episodes "
                     "(nmmo eval's --config)")
    gen.set_defaults(rows=tasks.ROWS, minibatch_agent_steps=tasks.MINIBATCH_AGENT_STEPS, eval_ticks=tasks.EVAL_TICKS,
                     eval_seed=tasks.EVAL_SEED)
    gen.set_defaults(func=_cmd_tasks, interrupted=_interrupted)
    mini = add_command(group, "games", "minigames: a specialist per game and one generalist across them, each on the "
                       "same agent-steps; their win rate against random teams in each game, beside the scripted bots")
    _common(mini, "games", None, games.DEFAULT_STEPS, games.SEEDS, games.EVAL_EPISODES)
    mini.add_argument("--games", nargs="+", default=list(games.GAMES), choices=list(games.GAMES),
                      help="the games: a specialist for each, the generalist plays them all")
    mini.set_defaults(func=_cmd_games, interrupted=_interrupted)
