"""`nmmo train`: the recurrent PPO baseline, every `Args` field a flag, and the learning experiments
`nmmo experiment population|maps|progression` (`baselines.experiments`); registered in the
``nmmo.commands`` entry point group, torch is imported only when a command runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from baselines.args import Args, add_arguments, args_from
from nmmo.cli import add_command, add_ray_flags, console, ray_options
from nmmo.cli.outputs import claim_output
from nmmo.cli.overrides import add_set_flag, apply_sets
from nmmo.cli.tables import print_table
from nmmo.policy import display_names


def _starting(options: Args) -> str:
    """The line `nmmo train` prints before anything else (before torch is even imported): a log
    shows at once what runs, until when, and where it keeps its files."""
    stops = [f"{options.minutes:g} minutes"] + [f"{options.total_steps:,} agent-steps"] * bool(options.total_steps) \
        + [f"{options.iterations:,} iterations"] * bool(options.iterations)
    return (f"train: {'resuming' if options.resume else 'starting'} on {options.config} with {options.num_envs} "
            f"envs, until {' or '.join(stops)} (the first); checkpoint, logs and curves in {options.out}/")


def _check_train(args: argparse.Namespace) -> None:
    """``--set`` on the run's config when --config was not given (a preset's or the default: the
    shared check changed a given one already), then the output folder rule (`nmmo.cli.outputs`)
    on the run's --out, a preset's included."""
    if "config" not in vars(args):
        apply_sets(args, base=args_from(args).config)
    options = args_from(args)
    claim_output(options.out, args.force, options.resume)


def _cmd_train(args: argparse.Namespace) -> int:
    options = args_from(args, **ray_options(args))
    if options.progress:
        console.print(_starting(options), highlight=False)
    try:
        from baselines.ppo import train
    except ImportError as err:
        raise ValueError(f"training needs the [train] extra (pip install torch==2.13.0, then -e '.[train]'): "
                         f"{err}") from None
    summary = train(options)
    last = summary["history"][-1] if summary["history"] else {}
    lifetime = last.get("lifetime", float("nan"))
    console.print(f"trained {summary['iterations']} iterations, {summary['steps']:,} agent-steps "
                  f"({summary['parameters']:,} parameters); last mean lifetime {lifetime:.1f}; "
                  f"checkpoint {summary['checkpoint']}; weights {summary['weights']}; "
                  f"curves {options.out}/curves.png", highlight=False)
    if "league" in summary:
        print_table(console, league_table(summary["league"]))
        console.print(f"league: {options.out}/league.json, {options.out}/league.png", highlight=False)
    return 0


def _train_interrupted(args: argparse.Namespace, resume: str) -> str:
    checkpoint = Path(args.out) / "checkpoint.pt"
    if not checkpoint.exists():
        return "stopped before the first iteration ended: nothing was kept (run it again)"
    return f"stopped; the last finished iteration is kept in {checkpoint}; continue with: {resume}"


def league_table(rows: list[dict]) -> Table:
    """The league after training: every member's SR, mu, sigma and match record (members by their
    display names, `nmmo.policy.display_names`)."""
    from evaluation.rating import ANCHOR

    names = display_names([*(row["policy"] for row in rows), ANCHOR])
    table = Table(title=f"League (SR 1500 = {names[ANCHOR]})")
    table.add_column("policy", overflow="fold")
    for name in ("SR", "mu", "sigma", "W", "L", "D", "joined"):
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(names[row["policy"]], f"{row['sr']:.0f}", f"{row['mu']:.2f}", f"{row['sigma']:.2f}",
                      str(row["wins"]), str(row["losses"]), str(row["draws"]), str(row["added"]))
    return table


def add_commands(sub: argparse._SubParsersAction) -> None:
    """`nmmo train`, and the learning experiments (`nmmo experiment population|maps|progression`)."""
    from baselines.experiments import cli as experiments

    experiments.add_commands(sub)
    train = add_command(sub, "train", "train the recurrent PPO baseline (needs the [train] extra); every "
                        "hyper-parameter of baselines.args.Args is a flag")
    add_arguments(train, skip=("backend", "ray_address"))  # --ray / --ray-address say where workers run
    add_set_flag(train)
    add_ray_flags(train)
    train.add_argument("--force", action="store_true", help="start over in a --out folder that already holds "
                       "files (this run's files replace those of the same names; without it, or --resume, such a "
                       "folder is refused)")
    train.set_defaults(func=_cmd_train, interrupted=_train_interrupted, check=_check_train)
