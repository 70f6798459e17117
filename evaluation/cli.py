"""`nmmo eval` (self-contained metric table) and `nmmo tournament` (TrueSkill leaderboard)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluation.metrics import LABELS, METRICS, TEAM_METRICS
from evaluation.tournament import TIE_BREAK, TOURNAMENT_CONFIG
from nmmo.runner import add_ray_flags, ray_options

if TYPE_CHECKING:
    from evaluation.tournament import Standings


#: Width of output that goes to a file or pipe (rich would assume 80); every table fits in it.
PIPE_WIDTH = 100


def wide_console() -> Console:
    """A console for this command's output: the terminal's width, or `PIPE_WIDTH` columns when the
    output goes to a file or pipe."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH, soft_wrap=True)


def short_labels(specs: list[str]) -> dict[str, str]:
    """A short column label per policy spec: ``scripted:Forage`` -> ``Forage``, ``path/my_agent.py:Agent``
    -> ``my_agent:Agent``, ``pkg.module:Agent`` -> ``module:Agent``, ``ckpt:out/run/checkpoint.pt``
    -> ``ckpt:run/checkpoint``. Labels that would collide stay full specs."""

    def label(spec: str) -> str:
        if spec.startswith("scripted:"):
            return spec.split(":", 1)[1]
        if spec.startswith("ckpt:"):
            path = Path(spec[5:])
            return f"ckpt:{path.parent.name + '/' if path.parent.name else ''}{path.stem}"
        where, sep, name = spec.rpartition(":")
        if not sep:
            return spec
        stem = Path(where).stem if where.endswith(".py") else where.rsplit(".", 1)[-1]
        return f"{stem}:{name}"

    labels = {spec: label(spec) for spec in specs}
    counts = {text: list(labels.values()).count(text) for text in labels.values()}
    return {spec: text if counts[text] == 1 else spec for spec, text in labels.items()}


def label_legend(specs: list[str]) -> str | None:
    """'label = spec' for every label that is not just the spec shortened obviously (None if none)."""
    labels = short_labels(specs)
    pairs = [f"{text} = {spec}" for spec, text in labels.items() if text != spec and not spec.startswith("scripted:")]
    return "policies: " + "; ".join(pairs) if pairs else None


def _fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def metric_table(results: dict[str, Any]) -> Table:
    """Mean, std and count of every metric for each policy of a result (pooled over episodes)."""
    settings = results["settings"]
    table = Table(title=escape(f"{', '.join(results['policies'])} on {results['config']['name']}: "
                               f"{settings['episodes']} episode(s) of {settings['ticks']} ticks on held-out maps"))
    table.add_column("policy")
    table.add_column("metric")
    for name in ("mean", "std", "lifetimes"):
        table.add_column(name, justify="right")
    for policy in results["policies"]:
        for name in METRICS:
            cell = results["metrics"][policy][name]
            table.add_row(escape(policy), LABELS[name], _fmt(cell["mean"]), _fmt(cell["std"]), str(cell["count"]))
    return table


def team_table(results: dict[str, Any]) -> Table:
    """Team aggregates per policy (team configs only): mean over the teams each policy played."""
    table = Table(title="Teams (lifetime: longest member's; achievement: members' mean; kills: total)")
    table.add_column("policy")
    for name in TEAM_METRICS:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("teams", justify="right")
    for policy in results["policies"]:
        cells = results["team_metrics"][policy]
        table.add_row(escape(policy), *(_fmt(cells[name]["mean"]) for name in TEAM_METRICS),
                      str(cells[TEAM_METRICS[0]]["count"]))
    return table


def fault_text(record: dict[str, Any]) -> str:
    """A compact fault summary for one policy ('-' when it never faulted)."""
    from evaluation.submission import Faults

    text = Faults.from_dict(record).summary()
    return "-" if text == "none" else text


def leaderboard_table(results: dict[str, Any]) -> Table:
    """Final leaderboard: SR with its 95 % interval, mu, sigma, the scored episodes and the faults
    (metrics go in `leaderboard_metrics_table`, so both fit in 100 columns)."""
    settings = results["settings"]
    labels = short_labels(results["policies"])
    tie = settings.get("tie_break")
    table = Table(title=escape(f"Leaderboard (SR 1500 = {labels[settings['anchor']]})"),
                  caption=escape(f"{settings['episodes']} episode(s) of {settings['ticks']} ticks on "
                                 f"{results['config']['name']}, {settings.get('population', '?')} agents; ranked by "
                                 f"{settings['metric']}{f' then {tie}' if tie else ''}"))
    for name in ("#", "policy", "SR", "95% CI", "mu", "sigma", "ranked", "faults"):
        table.add_column(name, justify="left" if name in ("policy", "faults") else "right",
                         overflow="fold" if name == "faults" else "ellipsis")
    for row in results["leaderboard"]:
        policy = row["policy"]
        ranked = sum(entry["ranks"][policy] is not None for entry in results["episodes"])
        if row.get("failed"):
            table.add_row("-", escape(labels[policy]), "failed", "never ran", "-", "-", str(ranked),
                          fault_text(results["faults"][policy]))
            continue
        interval = f"{row['ci_low']:.0f}..{row['ci_high']:.0f}"
        table.add_row(str(row["rank"]), escape(labels[policy]), f"{row['sr']:.0f}", interval, f"{row['mu']:.2f}",
                      f"{row['sigma']:.2f}", str(ranked), fault_text(results["faults"][policy]))
    return table


def leaderboard_metrics_table(results: dict[str, Any]) -> Table:
    """Each policy's mean of every metric over all its lifetimes, in leaderboard order."""
    labels = short_labels(results["policies"])
    table = Table(title="Metrics (mean over every lifetime)")
    table.add_column("policy")
    for name in METRICS:
        table.add_column(LABELS[name], justify="right")
    table.add_column("lives", justify="right")
    for row in results["leaderboard"]:
        table.add_row(escape(labels[row["policy"]]), *(_fmt(row["metrics"][m]) for m in METRICS), str(row["lifetimes"]))
    return table


def history_table(results: dict[str, Any]) -> Table:
    """SR of every policy after each episode (and that episode's ranking), to show convergence."""
    policies = [row["policy"] for row in results["leaderboard"]]
    labels = short_labels(results["policies"])
    table = Table(title="SR after each episode (rank in that episode; - not ranked)")
    table.add_column("ep", justify="right")
    table.add_column("map", justify="right")
    for policy in policies:
        table.add_column(escape(labels[policy]), justify="right")
    for entry in results["episodes"]:
        cells = [f"{entry['sr'][p]:.0f} ({'-' if entry['ranks'][p] is None else entry['ranks'][p] + 1})"
                 for p in policies]
        table.add_row(str(entry["index"]), str(entry["map_seed"]), *cells)
    return table


def tie_note(results: dict[str, Any]) -> str | None:
    """A warning when some episodes ranked every policy equal (they carry no information)."""
    ties, episodes = results.get("all_way_ties", 0), results["settings"]["episodes"]
    if not ties:
        return None
    return (f"{ties} of {episodes} episode(s) were all-way ties: every policy scored the same, so they say nothing "
            "about skill (use longer episodes, another --metric or --tie-break)")


def _saved(console: Console, paths: dict[str, Path]) -> None:
    console.print("results: " + ", ".join(str(p) for p in paths.values()), highlight=False, markup=False)


def _cmd_eval(args: argparse.Namespace) -> int:
    from evaluation.results import save_results
    from evaluation.tournament import evaluate

    results = evaluate(args.config, args.policy, ticks=args.ticks, episodes=args.episodes, seed=args.seed,
                       workers=args.workers, time_budget=args.time_budget, progress=not args.quiet,
                       **ray_options(args))
    console = wide_console()
    console.print(metric_table(results))
    if "team_metrics" in results:
        console.print(team_table(results))
    faults = results["faults"][args.policy]
    if any(faults[k] for k in ("exception", "timeout", "malformed")):
        console.print(f"faults: {fault_text(faults)}", highlight=False, markup=False)
        for message in faults["messages"]:
            console.print(f"  {escape(message)}", highlight=False)
    if args.out is not None:
        _saved(console, save_results(results, args.out))
    episodes = results["settings"]["episodes"]
    if faults["disabled"] >= episodes:
        # the policy was disabled in every episode (e.g. it failed to load): the table measures nothing
        raise ValueError(f"{args.policy} never ran: disabled in all {episodes} episode(s) "
                         f"({fault_text(faults)}); the metrics above are not its own")
    return 0


def standings_table(standings: Standings, episodes: int) -> Table:
    """The growing table: SR over the episodes rated so far and each policy's payoff against the others."""
    labels = short_labels(standings.policies)
    table = Table(title=f"{len(standings.results)}/{episodes} episodes finished, first {standings.rated} rated")
    for name in ("policy", "SR", "mu", "sigma"):
        table.add_column(name, justify="left" if name == "policy" else "right")
    short = [f"vs {i}" for i in range(len(standings.policies))]
    for name in short:
        table.add_column(name, justify="right")
    payoff = standings.payoff()
    for i, row in enumerate(standings.ratings.table()):
        policy = row["policy"]
        cells = ["" if j == i else _fmt(payoff[policy][other]) for j, other in enumerate(standings.policies)]
        table.add_row(f"{i}: {escape(labels[policy])}", f"{row['sr']:.0f}", f"{row['mu']:.2f}", f"{row['sigma']:.2f}",
                      *cells)
    return table


def _cmd_tournament(args: argparse.Namespace) -> int:
    from rich.live import Live

    from evaluation.journal import JOURNAL_FILE
    from evaluation.results import save_results
    from evaluation.tournament import run_tournament

    console = wide_console()
    live = Live(console=console, auto_refresh=False) if not args.quiet and console.is_terminal else None

    def show(standings: Standings) -> None:
        live.update(standings_table(standings, args.episodes), refresh=True)

    with live if live is not None else _nothing():
        results = run_tournament(args.config, args.policies, episodes=args.episodes, ticks=args.ticks, seed=args.seed,
                                 workers=args.workers, time_budget=args.time_budget, metric=args.metric,
                                 tie_break=None if args.tie_break == "none" else args.tie_break,
                                 progress=not args.quiet and live is None,
                                 record_dir=None if args.record is None else str(args.record),
                                 journal=None if args.out is None else args.out / JOURNAL_FILE, resume=args.resume,
                                 on_update=show if live is not None else None, **ray_options(args))
    print_tournament(console, results)
    if args.out is not None:
        _saved(console, save_results(results, args.out))
    if args.record is not None:
        from nmmo.runner import cli_command

        console.print(f"replays: {args.record}/ (watch them: {cli_command()} serve --replay-dir {args.record})",
                      highlight=False, markup=False)
    failed = [row["policy"] for row in results["leaderboard"] if row.get("failed")]
    if failed:
        raise ValueError(f"{', '.join(failed)} never ran in any episode (could not be built: see the faults above); "
                         "the leaderboard does not rank them")
    return 0


def print_tournament(console: Console, results: dict[str, Any]) -> None:
    """The history, the leaderboard, its metrics, team aggregates, warnings and fault messages."""
    console.print(history_table(results))
    console.print(leaderboard_table(results))
    console.print(leaderboard_metrics_table(results))
    if "team_metrics" in results:
        console.print(team_table(results))
    for line in (label_legend(results["policies"]), tie_note(results)):
        if line is not None:
            console.print(line, highlight=False, markup=False)
    labels = short_labels(results["policies"])
    for policy, record in results["faults"].items():
        for message in record["messages"]:
            console.print(f"[yellow]{escape(labels[policy])}[/]: {escape(message)}", highlight=False)


def table1_tables(results: dict[str, Any]) -> list[Table]:
    """Table 1 beside the paper, the orderings check, the sensitivity runs and the material fractions
    (each metric's mean, and below it its 95 % interval over maps: the tables read at 100 columns)."""
    from evaluation.table1 import PAPER

    def interval(value: dict[str, float]) -> str:
        return f"{value['low']:.1f}-{value['high']:.1f}"

    settings = results["settings"]
    main = Table(title=escape(f"Table 1: each bot alone on {settings['config']}, {settings['maps']} held-out maps"),
                 caption="mean over every lifetime; 95 %: interval over maps (bootstrap); paper: its Table 1")
    main.add_column("bot")
    for name in METRICS:
        main.add_column(LABELS[name], justify="right")
    for bot, metrics in results["main"].items():
        main.add_row(escape(bot.split(":")[-1]), *(f"{metrics[m]['mean']:.2f}" for m in METRICS))
        main.add_row("  95 %", *(interval(metrics[m]) for m in METRICS), style="dim")
        paper = PAPER.get(bot, {})
        if paper:
            main.add_row("  paper", *(f"{paper[m]:.2f}" if m in paper else "" for m in METRICS), style="dim")
    checks = Table(title="The paper's orderings on our means")
    for name in ("metric", "relation", "values", "holds"):
        checks.add_column(name)
    for row in results["orderings"]:
        checks.add_row(row["metric"], row["relation"], ", ".join(f"{v:.2f}" for v in row["values"]),
                       "yes" if row["holds"] else "NO")
    shown = ("lifetime", "achievement", "explore", "forage")
    sensitivity = Table(title="Sensitivity (mean; 95 % interval over maps below)")
    for name in ("run", "bot", "forest", *(LABELS[m] for m in shown)):
        sensitivity.add_column(name, justify="left" if name in ("run", "bot") else "right")
    for run in results["runs"].values():
        if run["kind"] == "main":
            continue
        label = f"cap {run['value']}" if run["kind"] == "cap" else f"grass thr {run['value']:.3f}"
        forest = f"{run['forest_fraction']:.3f}" if "forest_fraction" in run else ""
        sensitivity.add_row(label, escape(run["bot"].split(":")[-1]), forest,
                            *(f"{run['metrics'][m]['mean']:.2f}" for m in shown))
        sensitivity.add_row("", "", "", *(interval(run["metrics"][m]) for m in shown), style="dim")
    materials = Table(title="Material fractions of the playable square (the maps played)")
    materials.add_column("generator")
    names = list(next(iter(results["materials"].values())))
    for name in names:
        materials.add_column(name, justify="right")
    for generator, fractions in results["materials"].items():
        materials.add_row(generator, *(f"{fractions.get(n, 0.0):.3f}" for n in names))
    return [main, checks, sensitivity, materials]


def _cmd_table1(args: argparse.Namespace) -> int:
    from evaluation.table1 import run_table1

    results = run_table1(args.config, bots=args.bots, maps=args.maps, seed=args.seed, caps=args.caps,
                         forest=args.forest, sensitivity_bots=args.sensitivity_bots, workers=args.workers,
                         out=args.out, resume=args.resume, reference_python=args.reference_python,
                         progress=not args.quiet, time_budget=args.time_budget, **ray_options(args))
    console = wide_console()
    for table in table1_tables(results):
        console.print(table)
    console.print(f"results: {args.out / 'table1.json'}, {args.out / 'table1.png'}", highlight=False, markup=False)
    return 0


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `eval` and `tournament` to the `nmmo` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--seed", type=int, default=0, help="run seed (episode seeds derive from it)")
    common.add_argument("--workers", type=int, default=2, help="episodes run in parallel (0: in this process)")
    common.add_argument("--time-budget", type=float, default=1.0, help="seconds per tick for each submission")
    common.add_argument("--quiet", action="store_true", help="no progress bar")
    add_ray_flags(common)

    ev = subparsers.add_parser("eval", parents=[common], help="one policy controls every agent: its metric table")
    ev.add_argument("--config", default="small_maps",
                    help="config name, preset or TOML path (default: small_maps, the paper's Table 1 setting)")
    ev.add_argument("--policy", required=True, help="random, idle, scripted:Forage, pkg.module:Class or file.py:Class")
    ev.add_argument("--ticks", type=int, default=None, help="ticks per episode (default: the config's HORIZON)")
    ev.add_argument("--episodes", type=int, default=4, help="episodes, episode i on held-out map i")
    ev.add_argument("--out", type=Path, default=Path("out/eval"), help="directory for results.json and CSVs")
    ev.set_defaults(func=_cmd_eval)

    tour = subparsers.add_parser("tournament", parents=[common],
                                 help="policies share one world; TrueSkill SR leaderboard (anchor: scripted:Combat)")
    tour.add_argument("--config", default=TOURNAMENT_CONFIG,
                      help="config name, preset or TOML path (default: tournament, the canonical format: "
                           "100 agents in equal shares, no respawn, 1024 ticks)")
    tour.add_argument("--policies", nargs="+", required=True,
                      help="policy specs; scripted:Combat is added when missing")
    tour.add_argument("--episodes", type=int, default=16, help="episodes, episode i on held-out map i")
    tour.add_argument("--ticks", type=int, default=None, help="ticks per episode (default: the config's HORIZON)")
    tour.add_argument("--metric", choices=METRICS, default="achievement",
                      help="what ranks policies in an episode: the mean over their agents (default: achievement)")
    tour.add_argument("--tie-break", choices=(*METRICS, "none"), default=TIE_BREAK,
                      help="what orders equal metrics (default: lifetime); none: equal metrics are draws")
    tour.add_argument("--out", type=Path, default=Path("out/tournament"), help="directory for results.json and CSVs")
    tour.add_argument("--resume", action="store_true",
                      help="continue the run journaled in OUT/episodes.jsonl (same settings; --episodes may grow)")
    tour.add_argument("--record", type=Path, default=None, metavar="DIR",
                      help="also save every episode as a replay in DIR (watch with nmmo serve --replay-dir DIR)")
    tour.set_defaults(func=_cmd_tournament)

    from evaluation.table1 import BOTS, CAPS, FOREST_THRESHOLDS

    experiment = experiment_parsers(subparsers)
    table1 = experiment.add_parser("table1", parents=[common], help="the paper's Table 1 with its sensitivity to "
                                   "population cap and forest abundance (self-contained scripted bots)")
    table1.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    table1.add_argument("--bots", nargs="+", default=list(BOTS), help="the bots of the main table")
    table1.add_argument("--maps", type=int, default=8, help="held-out maps (one episode each) per run")
    table1.add_argument("--caps", nargs="*", type=int, default=list(CAPS), help="population caps to try")
    table1.add_argument("--forest", nargs="*", type=float, default=list(FOREST_THRESHOLDS),
                        help="MAP_GRASS_THRESHOLD values to try: lower means more forest (0.70, the default, "
                             "about 12 %%; 0.672 16 %%; 0.645 20 %%; 0.60 27 %%)")
    table1.add_argument("--sensitivity-bots", nargs="*", default=["scripted:Forage"],
                        help="the bots of the sensitivity runs")
    table1.add_argument("--reference-python", default=None, metavar="PYTHON",
                        help="nmmo 2.1.1's interpreter (../shared/reference/setup-nmmo2.sh): its map fractions too")
    table1.add_argument("--out", type=Path, default=Path("out/table1"), help="table1.json and table1.png go here")
    table1.add_argument("--resume", action="store_true", help="skip the runs already in OUT/table1.json")
    table1.set_defaults(func=_cmd_table1)


def experiment_parsers(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The `nmmo experiment` group's sub-commands (made once; each package adds its experiments)."""
    for action in subparsers._get_subactions():
        if action.dest == "experiment":
            return subparsers.choices["experiment"]._experiments  # type: ignore[attr-defined]
    parser = subparsers.add_parser("experiment", help="the paper's experiments as commands")
    parser._experiments = parser.add_subparsers(dest="experiment_command", required=True)  # type: ignore[attr-defined]
    return parser._experiments  # type: ignore[attr-defined]
