"""The rich tables of `nmmo eval`, `nmmo tournament` and `nmmo experiment table1`. A policy goes by
one name in all of them, its display name (`nmmo.policy.display_names`, with a legend line for
names that are not their spec shortened obviously); they are printed through
`nmmo.cli.tables.print_table`, which splits a table too wide for the console instead of cutting
names (metrics are also in their own table below the leaderboard, so most fit in 100 columns)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evaluation.metrics import LABELS, METRICS, TASK_LABELS, TEAM_METRICS, present_metrics
from nmmo.cli.tables import print_table
from nmmo.policy import display_legend, display_names

if TYPE_CHECKING:
    from evaluation.tournament import Standings

#: Width of output that goes to a file or pipe (rich would assume 80); every table fits in it.
PIPE_WIDTH = 100


def wide_console() -> Console:
    """A console for this command's output: the terminal's width, or `PIPE_WIDTH` columns when the
    output goes to a file or pipe."""
    return Console(width=None if sys.stdout.isatty() else PIPE_WIDTH, soft_wrap=True)


def metric_names(results: dict[str, Any]) -> list[str]:
    """The metrics a result holds: `METRICS`, and the task metrics with tasks on."""
    return present_metrics(next(iter(results["metrics"].values()), {}))


def label(name: str) -> str:
    return LABELS.get(name) or TASK_LABELS[name]


def _fmt(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def metric_table(results: dict[str, Any]) -> Table:
    """Mean, std and count of every metric for each policy of a result (pooled over episodes)."""
    settings, names = results["settings"], display_names(results["policies"])
    table = Table(title=escape(f"{', '.join(names.values())} on {results['config']['name']}: "
                               f"{settings['episodes']} episode(s) of {settings['ticks']} ticks on held-out maps"))
    table.add_column("policy")
    table.add_column("metric")
    for name in ("mean", "std", "lifetimes"):
        table.add_column(name, justify="right")
    for policy in results["policies"]:
        for name in metric_names(results):
            cell = results["metrics"][policy][name]
            table.add_row(escape(names[policy]), label(name), _fmt(cell["mean"]), _fmt(cell["std"]), str(cell["count"]))
    return table


def team_table(results: dict[str, Any]) -> Table:
    """Team aggregates per policy (team configs only): mean over the teams each policy played."""
    table = Table(title="Teams (lifetime: longest member's; achievement: members' mean; kills: total)")
    table.add_column("policy")
    for name in TEAM_METRICS:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("teams", justify="right")
    names = display_names(results["policies"])
    for policy in results["policies"]:
        cells = results["team_metrics"][policy]
        table.add_row(escape(names[policy]), *(_fmt(cells[name]["mean"]) for name in TEAM_METRICS),
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
    labels = display_names(results["policies"])
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
    labels = display_names(results["policies"])
    table = Table(title="Metrics (mean over every lifetime)")
    table.add_column("policy")
    names = metric_names(results)
    for name in names:
        table.add_column(label(name), justify="right")
    table.add_column("lives", justify="right")
    for row in results["leaderboard"]:
        table.add_row(escape(labels[row["policy"]]), *(_fmt(row["metrics"][m]) for m in names), str(row["lifetimes"]))
    return table


def history_table(results: dict[str, Any]) -> Table:
    """SR of every policy after each episode (and that episode's ranking), to show convergence."""
    policies = [row["policy"] for row in results["leaderboard"]]
    labels = display_names(results["policies"])
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


def standings_table(standings: Standings, episodes: int) -> Table:
    """The growing table: SR over the episodes rated so far and each policy's payoff against the others."""
    labels = display_names(standings.policies)
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


def print_tournament(console: Console, results: dict[str, Any], quiet: bool = False) -> None:
    """The history, the leaderboard, its metrics, team aggregates, warnings and fault messages
    (`quiet`: the fault messages alone)."""
    if not quiet:
        print_tables(console, results)
    labels = display_names(results["policies"])
    for policy, record in results["faults"].items():
        for message in record["messages"]:
            console.print(f"[yellow]{escape(labels[policy])}[/]: {escape(message)}", highlight=False)


def print_tables(console: Console, results: dict[str, Any]) -> None:
    """A tournament's tables (none cut at the console's width), the names' legend and the tie note."""
    print_table(console, history_table(results), keys=2)
    print_table(console, leaderboard_table(results), keys=2)
    print_table(console, leaderboard_metrics_table(results))
    if "team_metrics" in results:
        print_table(console, team_table(results))
    for line in (display_legend(results["policies"]), tie_note(results)):
        if line is not None:
            console.print(line, highlight=False, markup=False)


def table1_tables(results: dict[str, Any]) -> list[Table]:
    """Table 1 beside the paper, the orderings check, the sensitivity runs and the material fractions
    (each metric's mean, and below it its 95 % interval over maps: the tables read at 100 columns)."""
    from evaluation.table1 import PAPER

    def interval(value: dict[str, float]) -> str:
        return f"{value['low']:.1f}-{value['high']:.1f}"

    settings = results["settings"]
    bots = display_names([*results["main"], *(run["bot"] for run in results["runs"].values())])
    main = Table(title=escape(f"Table 1: each bot alone on {settings['config']}, {settings['maps']} held-out maps"),
                 caption="mean over every lifetime; 95 %: interval over maps (bootstrap); paper: its Table 1")
    main.add_column("bot")
    for name in METRICS:
        main.add_column(LABELS[name], justify="right")
    for bot, metrics in results["main"].items():
        main.add_row(escape(bots[bot]), *(f"{metrics[m]['mean']:.2f}" for m in METRICS))
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
        sensitivity.add_row(label, escape(bots[run["bot"]]), forest,
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
