"""Engine-driving commands: `nmmo demo` (and, with the engine, `nmmo run`)."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from nmmo import config as config_module

console = Console()


def _cmd_demo(args: argparse.Namespace) -> int:
    from nmmo import world

    config = config_module.resolve(args.config)
    console.rule(f"nmmo demo: {config.name}")
    start = time.perf_counter()
    game_map = world.get_map(config, world.map_seed(config, 0, "eval"))
    stats = world.map_stats(game_map)
    elapsed = time.perf_counter() - start
    table = Table(title=f"held-out map 0 ({game_map.size}x{game_map.size}, seed {game_map.seed})")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for name, value in stats["fractions"].items():
        table.add_row(f"fraction {name}", f"{value:.3f}")
    table.add_row("reachable from spawns", f"{stats['reachable_fraction']:.3f}")
    console.print(table)
    preview = world.preview_png(game_map, args.out / "demo_map.png")
    console.print(f"map generated and cached in {elapsed:.2f} s; preview: {preview}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    from pathlib import Path

    demo = sub.add_parser("demo", help="the main job on embedded defaults")
    demo.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where outputs go")
    demo.set_defaults(func=_cmd_demo)
