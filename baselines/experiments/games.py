"""`nmmo experiment games`: one generalist across the minigames beside each game's specialist.

Meta MMO (on nmmo 2.x) trained one policy on all its minigames and compared it with a specialist
per game. Here every run gets the same agent-steps: a specialist per game trains on that game's
canonical config (`nmmo.games`; king of the hill's hold on its curriculum, GAME_ADAPTIVE), the
generalist on all five at once (a vector env whose envs play the games in turn: GAME_MIX; the
network tells the games apart by their team tasks' embeddings). So the generalist sees each game a
fifth as often as its specialist does. Each checkpoint then plays tournaments of `--eval-episodes`
episodes on held-out maps against `random` teams (every team of one policy runs the same network)
in each game it trained on; the score is the share of episodes its teams won (a team of it among
the game's winners) and the mean task reward of its agents' lives, with 95 % t intervals over seeds.
For scale, the game's scripted bot is scored the same way (docs/games.md: it wins 80 % or more).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from baselines.experiments.report import pyplot, save_figure
from baselines.experiments.results import save_results
from baselines.experiments.run import Budget, Run, run_all
from baselines.experiments.stats import seed_interval
from nmmo import config as config_module
from nmmo.games import GAMES

SEEDS = (0,)
#: Agent-steps per run of the default budget (6 runs per seed): about 5 minutes of training each on
#: the 2-core VM (docs/experiments.md, "Minigames: a generalist and its specialists").
DEFAULT_STEPS = 600_000
EVAL_EPISODES = 6
GENERALIST = "generalist"


def make_runs(seeds: tuple[int, ...] = SEEDS, games: tuple[str, ...] = tuple(GAMES)) -> list[Run]:
    """A specialist per game and the generalist of all of them, per seed (seeds outermost)."""
    unknown = [game for game in games if game not in GAMES]
    if unknown or not games:
        raise ValueError(f"--games must name minigames ({', '.join(GAMES)}), got {list(games)}")
    runs = []
    for seed in seeds:
        for game in games:
            runs.append(Run(f"{game}-seed{seed}", game, 0, seed, config_module.resolve(game).set("GAME_ADAPTIVE",
                                                                                              True)))
        mix = config_module.resolve(games[0]).set("GAME_MIX", ",".join(games)).set("GAME_ADAPTIVE", True)
        runs.append(Run(f"{GENERALIST}-seed{seed}", GENERALIST, 0, seed, mix))
    return runs


def play(game: str, policy: str, budget: Budget, label: str) -> dict[str, Any]:
    """`policy`'s teams against `random` teams in `game`: the share of episodes it won and its agents'
    mean task reward."""
    from evaluation.tournament import run_tournament

    ticks = budget.eval_ticks
    results = run_tournament(game, [policy, "random"], episodes=budget.eval_episodes, ticks=ticks,
                             seed=budget.eval_seed, workers=budget.workers, metric="win", anchor="random",
                             progress=budget.progress, secret=budget.eval_seed)
    won = [bool((e["metrics"][policy]["win"]["mean"] or 0) > 0) for e in results["episodes"]]
    reward = results["metrics"][policy]["task_reward"]["mean"]
    return {"label": label, "episodes": len(won), "won": sum(won), "win_rate": sum(won) / max(len(won), 1),
            "task_reward": reward}


def evaluator(budget: Budget):
    """Each checkpoint in each game it trained on."""

    def evaluate(run: Run, entry: dict[str, Any]) -> dict[str, Any]:
        if not budget.eval_episodes:
            return {}
        games = run.config.GAME_MIX.split(",") if run.condition == GENERALIST else [run.condition]
        return {game: play(game, f"ckpt:{entry['checkpoint']}", budget, f"{run.key} in {game}") for game in games}

    return evaluate


def run_games(seeds: tuple[int, ...] = SEEDS, budget: Budget | None = None, out: str | Path = "out/experiments/games",
              resume: bool = False, command: str | None = None, on_run=None,
              games: tuple[str, ...] = tuple(GAMES)) -> dict[str, Any]:
    """Train every run, evaluate, summarize; writes OUT/games.json and OUT/games.png."""
    budget = (budget or Budget(DEFAULT_STEPS, eval_episodes=EVAL_EPISODES)).check()
    runs = make_runs(tuple(seeds), tuple(games))
    out = Path(out)
    results = run_all("games", runs, budget, out, {"games": list(games)}, evaluator(budget), resume, command,
                      on_run, reward="each game's team task (nmmo.games), TASK_REWARD 1, no survival reward")
    if budget.eval_episodes:
        results["bots"] = {game: play(game, _bots()[game], budget, f"{_bots()[game]} in {game}") for game in games}
    results["summary"] = summarize(results, runs, tuple(games))
    save_results(out / "games.json", results)
    plot(results, out / "games.png")
    return results


def _bots() -> dict[str, str]:
    from scripted.games import GAME_BOTS

    return dict(GAME_BOTS)


def summarize(results: dict[str, Any], runs: list[Run], games: tuple[str, ...] = tuple(GAMES)) -> dict[str, Any]:
    """Per game: the specialist's and the generalist's win rate and task reward over seeds."""
    rows = []
    for game in games:
        row = {"game": game}
        for who in (game, GENERALIST):
            entries = [results["runs"][r.key] for r in runs if r.condition == who and r.key in results["runs"]]
            evals = [e["eval"][game] for e in entries if game in e.get("eval", {})]
            role = "specialist" if who == game else GENERALIST
            row[role] = {"win_rate": seed_interval([e["win_rate"] for e in evals]),
                         "task_reward": seed_interval([e["task_reward"] for e in evals])}
        bot = results.get("bots", {}).get(game)
        row["bot_win_rate"] = bot["win_rate"] if bot else None
        rows.append(row)
    return {"rows": rows, "verdict": verdict(rows)}


def verdict(rows: list[dict]) -> list[str]:
    """Where the generalist stands against each specialist (by mean win rate; the intervals say how sure)."""
    lines = []
    for row in rows:
        mine, theirs = row[GENERALIST]["win_rate"]["mean"], row["specialist"]["win_rate"]["mean"]
        if mine is None or theirs is None:
            continue
        word = "above" if mine > theirs else "below" if mine < theirs else "level with"
        lines.append(f"{row['game']}: the generalist wins {mine:.0%} of episodes against random, {word} the "
                     f"specialist's {theirs:.0%}")
    return lines or ["no evaluation (--eval-episodes 0)"]


def _cell(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "-"
    if stat.get("low") is None:
        return f"{stat['mean']:.2f}"
    return f"{stat['mean']:.2f} [{stat['low']:.2f}, {stat['high']:.2f}]"


def table(results: dict[str, Any]) -> Table:
    out = Table(title="Minigames: win rate against random teams (task reward), specialist vs generalist, "
                      "equal agent-steps")
    for column in ("game", "specialist", "generalist", "scripted bot"):
        out.add_column(column, justify="left" if column == "game" else "right")
    for row in results["summary"]["rows"]:
        cells = [f"{_cell(row[who]['win_rate'])} ({_cell(row[who]['task_reward'])})"
                 for who in ("specialist", GENERALIST)]
        bot = row["bot_win_rate"]
        out.add_row(row["game"], *cells, "-" if bot is None else f"{bot:.2f}")
    return out


def plot(results: dict[str, Any], path: Path) -> Path:
    """Win rates per game: specialist, generalist, scripted bot."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    rows = results["summary"]["rows"]
    for offset, (who, colour) in enumerate((("specialist", "tab:blue"), (GENERALIST, "tab:orange"))):
        means = [row[who]["win_rate"]["mean"] or 0.0 for row in rows]
        ax.bar([i + 0.27 * (offset - 1) for i in range(len(rows))], means, width=0.27, color=colour, label=who)
    bots = [row["bot_win_rate"] or 0.0 for row in rows]
    ax.bar([i + 0.27 for i in range(len(rows))], bots, width=0.27, color="tab:gray", label="scripted bot")
    ax.set_xticks(range(len(rows)), [row["game"].replace("_", " ") for row in rows])
    ax.set_ylabel("episodes won vs random")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)
