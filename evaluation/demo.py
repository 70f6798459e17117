"""`nmmo demo`: the main job on embedded defaults, and what `make demo` runs.

A held-out map (generated, previewed as a PNG), a tournament of the scripted bots and the shipped
neural baseline (`baseline:small`) in the canonical format recording a replay per episode (with the
baseline's critic over the whole map as the ``value landscape`` overlay, `nmmo.envs.landscape`, and its
agents' estimates as the ``value`` one), the leaderboard, and with ``--serve`` the 3D viewer on the
first replay (`client_server`), opened on the landscape, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

from nmmo import config as config_module
from nmmo.cli import add_command, cli_command, console
from nmmo.cli.outputs import add_out_flags
from nmmo.cli.overrides import add_set_flag
from nmmo.envs.landscape import NAME as LANDSCAPE

DEMO_POLICIES = ["scripted:Combat", "scripted:Forage", "scripted:Meander", "random"]
#: The shipped neural baseline joins the demo when its package (torch, the [train] extra) is there.
DEMO_BASELINE = "baseline:small"
#: `nmmo demo --tasks`: the task-conditioned baseline beside the task-blind one, a forager and random,
#: every agent holding a task of the set (default: the held-out tasks neither baseline trained on).
TASK_BASELINE = "baseline:tasks"
TASK_POLICIES = ["scripted:Forage", "random"]


def _loadable(spec: str) -> bool:
    from nmmo.policy import load_policy_class

    try:
        load_policy_class(spec)
    except ValueError as err:
        console.print(f"(the demo runs without {spec}: {err})", highlight=False)
        return False
    return True


def demo_policies(tasks: bool = False) -> list[str]:
    """The scripted bots, and the shipped baseline when it can be loaded (it paints the replays'
    value overlays); without torch the demo runs with the bots alone and says so. With `tasks`: the
    task baselines (`TASK_BASELINE`, `DEMO_BASELINE`), scripted:Forage and random."""
    if tasks:
        return [*(spec for spec in (TASK_BASELINE, DEMO_BASELINE) if _loadable(spec)), *TASK_POLICIES]
    if not _loadable(DEMO_BASELINE):
        return list(DEMO_POLICIES)
    return [*DEMO_POLICIES[:2], DEMO_BASELINE, *DEMO_POLICIES[2:]]


def _check_demo(args: argparse.Namespace) -> None:
    if args.serve:  # a bad origin or a busy port fails now, not after the tournament
        from client_server.cli import check_server_flags

        check_server_flags(args)


def _reused(journal: Path, resume: bool) -> int:
    """Finished episodes a ``--resume`` finds in the demo's journal (its first line is the header)."""
    if not resume or not journal.is_file():
        return 0
    with open(journal, "rb") as f:
        return max(sum(1 for line in f if line.strip()) - 1, 0)


def _cmd_demo(args: argparse.Namespace) -> int:
    from evaluation.faults import require_answers
    from evaluation.journal import JOURNAL_FILE
    from evaluation.results import save_results
    from evaluation.tables import print_tournament, wide_console
    from evaluation.tournament import run_tournament
    from nmmo.core import world
    from nmmo.policy import display_names

    config = config_module.resolve(args.config)
    console.rule(f"nmmo demo: {config.name}")
    start = time.perf_counter()
    game_map = world.get_map(config, world.map_seed(config, 0, "eval"))
    stats = world.map_stats(game_map)
    preview = world.preview_png(game_map, args.out / "demo_map.png")
    console.print(f"1. generated held-out map 0 ({game_map.size}x{game_map.size}, seed {game_map.seed}) in "
                  f"{time.perf_counter() - start:.2f} s: water {stats['fractions']['water']:.2f}, forest "
                  f"{stats['fractions']['forest']:.2f}, {stats['reachable_fraction']:.0%} of walkable tiles "
                  f"reachable from spawns; preview {preview}")
    ticks = config.HORIZON if args.ticks is None else args.ticks
    policies = demo_policies(bool(args.tasks))
    ranking = ("task reward, every agent holding a task of the set '" + args.tasks + "' (the inspector shows it)"
               if args.tasks else "lifetime then achievement")
    journal = args.out / JOURNAL_FILE
    reused = _reused(journal, args.resume)
    console.print(f"2. tournament: {', '.join(display_names(policies).values())} share {config.PLAYER_N} agents in "
                  f"equal shares with {config.NPC_N if config.has('NPC') else 0} NPCs; {args.episodes} episodes of "
                  f"{ticks} ticks on held-out maps, ranked by {ranking}, rated with TrueSkill"
                  + (f"; {reused} finished episode(s) kept from {journal} (--force plays them again)"
                     if reused else ""))
    replays = args.out / "replays"
    task_options = {"tasks": args.tasks, "metric": "task_reward", "anchor": "scripted:Forage"} if args.tasks else {}
    results = run_tournament(config, policies, episodes=args.episodes, ticks=ticks, seed=0,
                             workers=args.workers, record_dir=str(replays), journal=journal, resume=args.resume,
                             **task_options)
    print_tournament(wide_console(), results)
    paths = save_results(results, args.out)
    console.print("3. results: " + ", ".join(str(p) for p in paths.values()) + f"; replays in {replays}/",
                  highlight=False)
    require_answers(results)
    overlay = LANDSCAPE if DEMO_BASELINE in policies else None
    if not args.serve:
        console.print(f"4. watch an episode: {cli_command()} serve --replay {replays / 'episode_000.replay'}"
                      + (f" --overlay {shlex.quote(overlay)}" if overlay else ""), highlight=False)
        return 0
    from client_server.cli import serve_viewer, server_options

    console.print("4. serving the 3D viewer on episode 0 (the others are in its replay list)"
                  + (f"; it opens on the '{overlay}' overlay: {DEMO_BASELINE}'s learned critic over the whole map, "
                     "for one standard agent (the 'value' overlay has its agents' own estimates where they "
                     "stood; the overlay menu has the others)" if overlay else ""), highlight=False)
    return serve_viewer(replay=replays / "episode_000.replay", replay_dir=replays,
                        **{**server_options(args), "overlay": args.overlay or overlay})


def add_command_to(subparsers: argparse._SubParsersAction) -> None:
    """`nmmo demo`."""
    demo = add_command(subparsers, "demo", "the main job on embedded defaults: a map, a recorded tournament of the "
                       "scripted bots, its leaderboard, and with --serve the viewer on it")
    demo.add_argument("--config", default="tournament", help="config name, preset or TOML path (tournament: the "
                      "canonical format)")
    add_set_flag(demo)
    demo.add_argument("--ticks", type=int, default=None, help="ticks per tournament episode (None: the HORIZON)")
    demo.add_argument("--episodes", type=int, default=4, help="tournament episodes")
    demo.add_argument("--workers", type=int, default=2, help="episodes run in parallel (0: in this process)")
    add_out_flags(demo, Path("out/demo"), "where outputs go (the map, replays, results and the journal of "
                  "finished episodes)", resume="keep the tournament's finished episodes (OUT/episodes.jsonl, their "
                  "replays) and play only the missing ones: make demo passes it, so a second make demo serves at once")
    demo.add_argument("--serve", action="store_true", help="end by serving the viewer on the first episode")
    demo.add_argument("--tasks", nargs="?", const="heldout", default=None, metavar="SET",
                      help="every agent holds a task (default set: heldout, tasks the baselines never trained "
                           "on); baseline:tasks and baseline:small play beside scripted:Forage and random, ranked "
                           "by task reward; the viewer's inspector shows each agent's task")
    from client_server.cli import add_server_flags

    add_server_flags(demo)
    demo.set_defaults(func=_cmd_demo, check=_check_demo)
