"""`nmmo eval` (self-contained metric table) and `nmmo tournament` (TrueSkill leaderboard)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluation.faults import require_answers
from evaluation.metrics import GAME_METRICS, RANKING_METRICS, TASK_INPUTS
from evaluation.rating import ANCHOR
from evaluation.sandbox.host import Limits
from evaluation.tables import (
    fault_text,
    metric_table,
    print_tournament,
    standings_table,
    table1_tables,
    team_table,
    wide_console,
)
from evaluation.tournament import METRIC, TIE_BREAK, TOURNAMENT_CONFIG
from nmmo.cli import add_command, add_game_flags, add_ray_flags, cli_command, ray_options
from nmmo.cli.outputs import add_out_flags
from nmmo.cli.overrides import add_set_flag
from nmmo.cli.tables import fitted, print_table

if TYPE_CHECKING:
    from evaluation.tournament import Standings

#: What ranks policies in a minigame's tournament unless --metric says otherwise.
GAME_METRIC = GAME_METRICS[0]


def _saved(console: Console, paths: dict[str, Path]) -> None:
    console.print("results: " + ", ".join(str(p) for p in paths.values()), highlight=False, markup=False)


def _cmd_eval(args: argparse.Namespace) -> int:
    from evaluation.faults import all_faults
    from evaluation.results import save_results
    from evaluation.tournament import evaluate

    inputs = list(dict.fromkeys(args.task_input))  # own shuffled: the same episodes once per input, compared

    def run(task_input: str) -> dict:
        return evaluate(args.config, args.policy, ticks=args.ticks, episodes=args.episodes, seed=args.seed,
                        workers=args.workers, time_budget=args.time_budget, limits=limits_from(args),
                        progress=not args.quiet, tasks=args.tasks, task_input=task_input, **ray_options(args))

    results = run(inputs[0])
    if len(inputs) > 1:
        results["task_inputs"] = task_inputs_compared(results, {i: run(i) for i in inputs[1:]})
    console = wide_console()
    faults = results["faults"][args.policy]
    measured = not all_faults(faults)  # a table of idle agents' numbers must not pass for a result
    if not args.quiet and measured:
        print_table(console, metric_table(results), keys=2)
        if "tasks" in results:
            from evaluation.task_results import task_table

            print_table(console, task_table(results["tasks"]))
        if "task_inputs" in results:
            print_table(console, task_input_table(results["task_inputs"]))
        if "team_metrics" in results:
            print_table(console, team_table(results))
    if any(faults[k] for k in ("exception", "timeout", "malformed")):
        console.print(f"faults: {fault_text(faults)}", highlight=False, markup=False)
        for message in faults["messages"]:
            console.print(f"  {escape(message)}", highlight=False)
    if measured and args.out is not None:
        _saved(console, save_results(results, args.out))
    require_answers(results)
    return 0


def _cmd_tournament(args: argparse.Namespace) -> int:
    from rich.live import Live

    from evaluation.journal import JOURNAL_FILE
    from evaluation.results import save_results
    from evaluation.tournament import run_tournament

    console = wide_console()
    live = Live(console=console, auto_refresh=False) if not args.quiet and console.is_terminal else None

    def show(standings: Standings) -> None:
        live.update(fitted(standings_table(standings, args.episodes), console), refresh=True)

    with live if live is not None else _nothing():
        results = run_tournament(args.config, args.policies, episodes=args.episodes, ticks=args.ticks, seed=args.seed,
                                 workers=args.workers, time_budget=args.time_budget, limits=limits_from(args),
                                 metric=args.metric, anchor=args.anchor,
                                 tie_break=None if args.tie_break == "none" else args.tie_break,
                                 progress=not args.quiet and live is None,
                                 record_dir=None if args.record is None else str(args.record),
                                 journal=None if args.out is None else args.out / JOURNAL_FILE, resume=args.resume,
                                 on_update=show if live is not None else None, secret=args.secret,
                                 tasks=args.tasks, **ray_options(args))
    print_tournament(console, results, quiet=args.quiet)
    if args.out is not None:
        _saved(console, save_results(results, args.out))
    if args.record is not None:
        console.print(f"replays: {args.record}/ (watch them: {cli_command()} serve --replay-dir {args.record})",
                      highlight=False, markup=False)
    require_answers(results)  # a policy that never acted: the leaderboard does not measure it
    return 0


def task_inputs_compared(first: dict, others: dict[str, dict]) -> dict:
    """Completion per episode under each task input, and each other input's paired difference from
    the first (the same episodes: seeds, maps, spawns and task draws)."""
    from evaluation.task_results import episode_completion, paired

    name = first["settings"]["task_input"]
    rates = {name: episode_completion(first["tasks"]), **{k: episode_completion(r["tasks"]) for k, r in others.items()}}
    return {"completion": rates,
            "paired": {f"{name} - {k}": paired(rates[name], rates[k]) for k in others}}


def task_input_table(compared: dict) -> Table:
    """Each task input's completion (mean over episodes) and each paired difference with its interval."""
    from evaluation.metrics import t_interval

    table = Table(title="task completion per task input (episode by episode on the same episodes; mean "
                        "[95 % t interval over episodes])")
    for column in ("task input", "episodes", "completion"):
        table.add_column(column, justify="left" if column == "task input" else "right")

    def cell(mean: float | None, low: float | None, high: float | None, sign: str = "") -> str:
        if mean is None:
            return "-"
        return f"{mean:{sign}.3f}" + ("" if low is None else f" [{low:{sign}.3f}, {high:{sign}.3f}]")

    for name, rates in compared["completion"].items():
        kept = [r for r in rates if r is not None]
        mean, low, high = t_interval(kept)
        table.add_row(name, str(len(kept)), cell(None if not kept else mean, low, high))
    for name, diff in compared["paired"].items():
        table.add_row(f"{name}, paired", str(diff["n"]), cell(diff["mean"], diff["low"], diff["high"], "+"))
    return table


def _check_tournament(args: argparse.Namespace) -> None:
    """Fill in what --game decides unless given: the metric (win) and the anchor (the game's bot)."""
    from evaluation.submission import shipped_module

    shipped_module("scripted")  # this install's bots, checked before any of their code runs
    from scripted.games import GAME_BOTS

    if not hasattr(args, "metric"):
        args.metric = GAME_METRIC if args.game else METRIC
    if not hasattr(args, "anchor"):
        args.anchor = GAME_BOTS[args.game] if args.game else ANCHOR


def _tournament_interrupted(args: argparse.Namespace, resume: str) -> str:
    from evaluation.journal import JOURNAL_FILE

    if args.out is None:
        return "stopped; nothing was kept (a tournament keeps its finished episodes with --out DIR)"
    journal = args.out / JOURNAL_FILE
    kept = max(_lines(journal) - 1, 0)  # the first line is the journal's header
    return f"stopped; {kept} finished episode(s) kept in {journal}; continue with: {resume}"


def _eval_interrupted(args: argparse.Namespace, resume: str) -> str:
    return "stopped; nmmo eval keeps nothing until it ends and cannot resume: run it again (fewer --episodes " \
           "make it shorter; nmmo tournament --out DIR keeps each finished episode)"


def _table1_interrupted(args: argparse.Namespace, resume: str) -> str:
    return f"stopped; finished runs are kept in {args.out}/table1.json; continue with: {resume}"


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _cmd_table1(args: argparse.Namespace) -> int:
    from evaluation.table1 import run_table1

    results = run_table1(args.config, bots=args.bots, maps=args.maps, seed=args.seed, caps=args.caps,
                         forest=args.forest, sensitivity_bots=args.sensitivity_bots, workers=args.workers,
                         out=args.out, resume=args.resume, reference_python=args.reference_python,
                         progress=not args.quiet, time_budget=args.time_budget, limits=limits_from(args),
                         **ray_options(args))
    console = wide_console()
    for table in table1_tables(results) if not args.quiet else ():
        print_table(console, table)
    console.print(f"results: {args.out / 'table1.json'}, {args.out / 'table1.png'}", highlight=False, markup=False)
    return 0


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def _secret(text: str) -> int:
    """A --secret value: a non-negative int, decimal or 0x-hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def limits_from(args: argparse.Namespace) -> Limits:
    """The submission limits the flags ask for (checked: a nonsense value is a clear error)."""
    return Limits(memory_mb=args.memory_limit, cpu_seconds=args.cpu_limit, open_files=args.open_files,
                  init_timeout=args.init_timeout, group_memory_mb=args.group_memory_limit,
                  processes=args.processes).check()


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """`nmmo eval`, `nmmo tournament`, `nmmo experiment table1`, `nmmo demo` and `nmmo arena ...`."""
    from evaluation import demo
    from evaluation.arena import cli as arena
    from evaluation.table1 import BOTS, CAPS, FOREST_THRESHOLDS
    from nmmo.cli import command_group
    from nmmo.policy import spec_forms

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--seed", type=int, default=0, help="run seed (episode seeds derive from it)")
    common.add_argument("--workers", type=int, default=2, help="episodes run in parallel (0: in this process)")
    common.add_argument("--time-budget", type=float, default=1.0, help="seconds per tick for each submission")
    defaults = Limits()
    common.add_argument("--init-timeout", type=float, default=defaults.init_timeout,
                        help="seconds a submission has to import and build its policy")
    common.add_argument("--memory-limit", type=int, default=defaults.memory_mb, metavar="MIB",
                        help="address space of each submission's worker process, MiB (0: no limit)")
    common.add_argument("--cpu-limit", type=int, default=defaults.cpu_seconds, metavar="SECONDS",
                        help="CPU time of each submission's worker per episode (0: no limit)")
    common.add_argument("--open-files", type=int, default=defaults.open_files, metavar="N",
                        help="open files of each submission's worker (0: no limit)")
    common.add_argument("--group-memory-limit", type=int, default=defaults.group_memory_mb, metavar="MIB",
                        help="memory of each submission's worker and all it forks together, MiB (a cgroup; 0: none)")
    common.add_argument("--processes", type=int, default=defaults.processes, metavar="N",
                        help="processes and threads of each submission's worker and its forks (a cgroup; 0: none)")
    common.add_argument("--quiet", action="store_true", help="no progress and no tables: only the paths of the "
                        "results (and faults, errors)")
    add_ray_flags(common)

    ev = add_command(subparsers, "eval", "one policy controls every agent on held-out maps: its metric table",
                     parents=[common])
    add_game_flags(ev, "small_maps", "config name, preset or TOML path (small_maps: the paper's Table 1 setting)")
    ev.add_argument("--policy", required=True, help=f"the policy: {spec_forms()}. Only the registered names (random, "
                    "idle, scripted:BOT, baseline:NAME) run in-process; anything else runs in the sandbox")
    ev.add_argument("--ticks", type=int, default=None, help="ticks per episode (None: the config's HORIZON)")
    ev.add_argument("--episodes", type=int, default=4, help="episodes, episode i on held-out map i")
    add_out_flags(ev, Path("out/eval"), "directory for results.json and CSVs")
    ev.add_argument("--tasks", default=None, metavar="SET",
                    help="give every agent a task from this task set (a shipped name: foraging, exploration, "
                         "combat, npc_hunting, team, heldout; or a .toml / .json file) and report completion and "
                         "progress per task and tag")
    ev.add_argument("--task-input", choices=TASK_INPUTS, nargs="+", default=["own"],
                    help="with --tasks: what the policy's task input holds: each agent's own task, or (shuffled, an "
                         "ablation: does the policy use its task?) another task of the episode's; completion is "
                         "scored on the agent's own task either way. Several (own shuffled): the same episodes "
                         "are played once per input, and the table compares each to the first episode by episode "
                         "(a paired 95 %% t interval); the main tables are the first input's")
    ev.set_defaults(func=_cmd_eval, interrupted=_eval_interrupted)

    tour = add_command(subparsers, "tournament", "policies share one world; TrueSkill SR leaderboard (anchor: "
                       f"{ANCHOR}, or the game's bot with --game)", parents=[common])
    add_game_flags(tour, TOURNAMENT_CONFIG, "config name, preset or TOML path (tournament: the canonical format, "
                   "100 agents in equal shares, no respawn, 1024 ticks)",
                   "; the metric defaults to win and the anchor to the game's scripted bot (scripted:Racer, Hill, "
                   "Battler, Guard, Survivor: scripted.games.GAME_BOTS)")
    tour.add_argument("--policies", nargs="+", required=True,
                      help=f"policy specs ({spec_forms()}); the anchor is added when missing")
    tour.add_argument("--anchor", default=argparse.SUPPRESS, metavar="SPEC",
                      help=f"the policy whose SR is pinned at 1500 (default: {ANCHOR}; with --game: the game's bot)")
    tour.add_argument("--episodes", type=int, default=16, help="episodes, episode i on held-out map i")
    tour.add_argument("--ticks", type=int, default=None, help="ticks per episode (None: the config's HORIZON)")
    tour.add_argument("--metric", choices=RANKING_METRICS, default=argparse.SUPPRESS,
                      help="what ranks policies in an episode: the mean over their agents (task_reward, "
                           f"task_completion: with --tasks; win: in a minigame) (default: {METRIC}; with --game: "
                           f"{GAME_METRIC})")
    tour.add_argument("--tie-break", choices=(*RANKING_METRICS, "none"), default=TIE_BREAK,
                      help="what orders equal metrics; none: equal metrics are draws")
    add_out_flags(tour, Path("out/tournament"), "directory for results.json, the CSVs and the journal of finished "
                  "episodes (episodes.jsonl)",
                  resume="continue the run journaled in OUT/episodes.jsonl (same settings; --episodes may grow)")
    tour.add_argument("--secret", type=_secret, default=None, metavar="INT",
                      help="the deal's secret (default: a fresh one, or the journal's with --resume); recorded in "
                           "OUT/episodes.jsonl: pass it back with --seed to re-run a tournament exactly")
    tour.add_argument("--tasks", default=None, metavar="SET",
                      help="give every agent a task from this task set (a shipped name or a .toml / .json file); "
                           "every policy's agents hold the same tasks")
    tour.add_argument("--record", type=Path, default=None, metavar="DIR",
                      help="also save every episode as a replay in DIR (watch with nmmo serve --replay-dir DIR)")
    tour.set_defaults(func=_cmd_tournament, interrupted=_tournament_interrupted, check=_check_tournament)

    experiment = command_group(subparsers, "experiment", "the paper's experiments as commands")
    table1 = add_command(experiment, "table1", "the paper's Table 1 with its sensitivity to population cap and "
                         "forest abundance (self-contained scripted bots)", parents=[common])
    table1.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    add_set_flag(table1)
    table1.add_argument("--bots", nargs="+", default=list(BOTS), help="the bots of the main table")
    table1.add_argument("--maps", type=int, default=8, help="held-out maps (one episode each) per run")
    table1.add_argument("--caps", nargs="*", type=int, default=list(CAPS), help="population caps to try")
    table1.add_argument("--forest", nargs="*", type=float, default=list(FOREST_THRESHOLDS),
                        help="MAP_GRASS_THRESHOLD values to try: lower means more forest (0.73: about 12 %%; "
                             "0.70, the config's: 16 %%; 0.655: 20 %%; 0.597: 27 %%)")
    table1.add_argument("--sensitivity-bots", nargs="*", default=["scripted:Forage"],
                        help="the bots of the sensitivity runs")
    table1.add_argument("--reference-python", default=None, metavar="PYTHON",
                        help="nmmo 2.1.1's interpreter (`python benchmarks/reference.py` builds it and prints it): "
                             "its map fractions too")
    add_out_flags(table1, Path("out/table1"), "table1.json and table1.png go here",
                  resume="skip the runs already in OUT/table1.json")
    table1.set_defaults(func=_cmd_table1, interrupted=_table1_interrupted)

    demo.add_command_to(subparsers)
    arena.add_commands(subparsers)
