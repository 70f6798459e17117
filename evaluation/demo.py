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
from nmmo.envs.landscape import NAME as LANDSCAPE

DEMO_POLICIES = ["scripted:Combat", "scripted:Forage", "scripted:Meander", "random"]
#: The shipped neural baseline joins the demo when its package (torch, the [train] extra) is there.
DEMO_BASELINE = "baseline:small"


def demo_policies() -> list[str]:
    """The scripted bots, and the shipped baseline when it can be loaded (it paints the replays'
    value overlays); without torch the demo runs with the bots alone and says so."""
    from nmmo.policy import load_policy_class

    try:
        load_policy_class(DEMO_BASELINE)
    except ValueError as err:
        console.print(f"(the demo runs without {DEMO_BASELINE}: {err})", highlight=False)
        return list(DEMO_POLICIES)
    return [*DEMO_POLICIES[:2], DEMO_BASELINE, *DEMO_POLICIES[2:]]


def _check_demo(args: argparse.Namespace) -> None:
    if args.serve:  # a bad origin or a busy port fails now, not after the tournament
        from client_server.cli import check_server_flags

        check_server_flags(args)


def _cmd_demo(args: argparse.Namespace) -> int:
    from evaluation.results import save_results
    from evaluation.tables import print_tournament, wide_console
    from evaluation.tournament import run_tournament
    from nmmo.core import world

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
    policies = demo_policies()
    console.print(f"2. tournament: {', '.join(policies)} share {config.PLAYER_N} agents in equal shares with "
                  f"{config.NPC_N if config.has('NPC') else 0} NPCs; {args.episodes} episodes of {ticks} "
                  "ticks on held-out maps, ranked by lifetime then achievement, rated with TrueSkill")
    replays = args.out / "replays"
    results = run_tournament(config, policies, episodes=args.episodes, ticks=ticks, seed=0,
                             workers=args.workers, record_dir=str(replays))
    print_tournament(wide_console(), results)
    paths = save_results(results, args.out)
    console.print("3. results: " + ", ".join(str(p) for p in paths.values()) + f"; replays in {replays}/",
                  highlight=False)
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
    demo.add_argument("--ticks", type=int, default=None, help="ticks per tournament episode (None: the HORIZON)")
    demo.add_argument("--episodes", type=int, default=4, help="tournament episodes")
    demo.add_argument("--workers", type=int, default=2, help="episodes run in parallel (0: in this process)")
    demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where outputs go")
    demo.add_argument("--serve", action="store_true", help="end by serving the viewer on the first episode")
    from client_server.cli import add_server_flags

    add_server_flags(demo)
    demo.set_defaults(func=_cmd_demo, check=_check_demo)
