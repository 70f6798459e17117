"""The `nmmo` command line: maps, configs, simulation runs and the demo."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nmmo import config as config_module
from nmmo.config import ConfigError

# paths and commands stay on one line, for copy and paste; no markup: user text (paths, names, error
# messages) is printed as typed, brackets included
console = Console(soft_wrap=True, markup=False)

#: The viewer's speed range in ticks per second (client_server.server.SPEED_RANGE, which needs the
#: [serve] extra to import); `serve --speed` is checked against it before anything starts.
SPEED_RANGE = (0.5, 60.0)


# ------------------------------------------------------------------ maps
def _cmd_maps_generate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from nmmo import world

    config = config_module.resolve(args.config)
    pool = config.MAP_N if args.split == "train" else config.MAP_N_EVAL
    count = pool if args.n is None else args.n
    if args.start < 0 or count < 1 or args.start + count > pool:
        raise ConfigError(
            f"maps {args.start}..{args.start + count - 1} are outside the {args.split} pool of {pool} "
            f"maps ({'MAP_N' if args.split == 'train' else 'MAP_N_EVAL'}={pool})"
        )
    out = Path(args.out or f"out/maps/{config.name}")
    totals: dict[str, float] = {}
    start = time.perf_counter()
    for index in tqdm(range(args.start, args.start + count), desc=f"{args.split} maps", unit="map"):
        seed = world.map_seed(config, index, args.split)
        game_map = world.get_map(config, seed, cache=not args.no_cache)
        for name, value in game_map.fractions().items():
            totals[name] = totals.get(name, 0.0) + value / count
        if args.preview:
            world.preview_png(game_map, out / f"{args.split}_{index:05d}.png", args.zoom, args.downscale)
    elapsed = time.perf_counter() - start
    table = Table(title=f"{count} {args.split} maps of {config.name} ({config.MAP_SIZE}x{config.MAP_SIZE})")
    table.add_column("material")
    table.add_column("mean fraction", justify="right")
    for name, value in totals.items():
        table.add_row(name, f"{value:.3f}")
    console.print(table)
    console.print(f"cache: {world.cache_dir(config)}  ({elapsed:.2f} s)")
    if args.preview:
        console.print(f"previews: {out}/")
    return 0


def _cmd_maps_show(args: argparse.Namespace) -> int:
    from nmmo import world

    config = config_module.resolve(args.config)
    seed = world.map_seed(config, args.id, args.split)
    game_map = world.get_map(config, seed)
    stats = world.map_stats(game_map)
    size = f"{game_map.size}x{game_map.size}"
    table = Table(title=f"{args.split} map {args.id} of {config.name} (seed {seed}, {size})")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for name, value in stats["fractions"].items():
        table.add_row(f"fraction {name}", f"{value:.3f}")
    table.add_row("walkable reachable from spawns", f"{stats['reachable_fraction']:.3f}")
    table.add_row("spawns reach forest", str(stats["spawns_reach_forest"]))
    table.add_row("spawns reach water", str(stats["spawns_reach_water"]))
    console.print(table)
    if args.preview:
        path = world.preview_png(game_map, Path(args.preview), args.zoom, args.downscale)
        console.print(f"preview: {path}")
    return 0


# ---------------------------------------------------------------- config
def _cmd_config_list(args: argparse.Namespace) -> int:
    table = Table(title="canonical configs (nmmo.config.load(NAME))")
    table.add_column("name")
    table.add_column("description")
    for name, description in config_module.available().items():
        table.add_row(name, description)
    console.print(table)
    return 0


def _cmd_config_show(args: argparse.Namespace) -> int:
    print(config_module.resolve(args.name), end="")
    return 0


def _cmd_config_diff(args: argparse.Namespace) -> int:
    a, b = config_module.resolve(args.a), config_module.resolve(args.b)
    diff = a.diff(b)
    table = Table(title=f"{a.name} vs {b.name}: {len(diff)} keys differ")
    table.add_column("key")
    table.add_column(a.name, justify="right")
    table.add_column(b.name, justify="right")
    for key, (x, y) in diff.items():
        table.add_row(key, "-" if x is None else str(x), "-" if y is None else str(y))
    console.print(table)
    return 0


# ------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmmo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    maps = sub.add_parser("maps", help="generate, cache and inspect procedural maps")
    maps_sub = maps.add_subparsers(dest="maps_command", required=True)
    gen = maps_sub.add_parser("generate", help="generate a pool of maps into the cache")
    gen.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    gen.add_argument("--n", type=int, default=None, help="how many maps (default: the whole pool)")
    gen.add_argument("--start", type=int, default=0, help="first map index in the pool")
    gen.add_argument("--split", choices=["train", "eval"], default="train", help="training or held-out pool")
    gen.add_argument("--preview", action="store_true", help="write a PNG preview per map")
    gen.add_argument("--out", default=None, help="preview directory (default out/maps/CONFIG)")
    gen.add_argument("--no-cache", action="store_true", help="generate without reading or writing the cache")
    show = maps_sub.add_parser("show", help="print a map's material fractions and reachability")
    show.add_argument("id", type=int, help="map index in the pool")
    show.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    show.add_argument("--split", choices=["train", "eval"], default="train")
    show.add_argument("--preview", default=None, metavar="PNG", help="also write a PNG preview here")
    for p in (gen, show):
        p.add_argument("--zoom", type=int, default=0, help="pixels per tile (0: at least 256 px wide)")
        p.add_argument("--downscale", type=int, default=1, help="keep every k-th tile in previews")
    gen.set_defaults(func=_cmd_maps_generate)
    show.set_defaults(func=_cmd_maps_show)

    cfg = sub.add_parser("config", help="list, print and diff configs")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    cfg_sub.add_parser("list", help="the canonical task configs").set_defaults(func=_cmd_config_list)
    show_cfg = cfg_sub.add_parser("show", help="print a config as TOML")
    show_cfg.add_argument("name", help="config name, preset (Small, Medium, Large, Default) or TOML path")
    show_cfg.set_defaults(func=_cmd_config_show)
    diff = cfg_sub.add_parser("diff", help="keys that differ between two configs")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.set_defaults(func=_cmd_config_diff)

    _add_engine_commands(sub)
    return parser


def _add_engine_commands(sub: argparse._SubParsersAction) -> None:
    """Commands that drive the engine (`run`, `demo`) live in nmmo.runner; `eval` and `tournament`
    in evaluation.cli."""
    from evaluation import cli as evaluation_cli
    from nmmo import runner

    runner.add_commands(sub)
    evaluation_cli.add_commands(sub)


def check_args(args: argparse.Namespace) -> None:
    """Reject nonsense numbers and missing paths before any work starts (ValueError naming the flag)."""
    command = getattr(args, "command", None)
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    if command == "maps":
        if args.zoom < 0:
            raise ValueError(f"--zoom must be >= 0 (0: at least 256 px wide), got {args.zoom}")
        if args.downscale < 1:
            raise ValueError(f"--downscale must be >= 1, got {args.downscale}")
        if getattr(args, "n", None) is not None and args.n < 1:
            raise ValueError(f"--n must be >= 1, got {args.n}")
    if command in ("run", "demo") and args.ticks is not None and args.ticks < 1:
        raise ValueError(f"--ticks must be a positive int, got {args.ticks}")
    if command == "demo" and args.episodes < 1:
        raise ValueError(f"--episodes must be a positive int, got {args.episodes}")
    if command == "serve":
        low, high = SPEED_RANGE
        if not low <= args.speed <= high:  # also rejects nan
            raise ValueError(f"--speed must be in {low:g}..{high:g} ticks per second, got {args.speed:g}")
        if args.replay_dir is not None and not Path(args.replay_dir).is_dir():
            what = "is not a directory" if Path(args.replay_dir).exists() else "does not exist"
            raise ValueError(f"--replay-dir {args.replay_dir} {what}")
        if args.replay is not None and Path(args.replay).is_dir():
            raise ValueError(f"--replay {args.replay} is a directory (to serve every replay in it: --replay-dir)")


def error_line(err: BaseException) -> str:
    """One line for a failed command; an OSError names its path(s) (exc.filename)."""
    if isinstance(err, OSError) and err.filename is not None:
        paths = str(err.filename) if err.filename2 is None else f"{err.filename} -> {err.filename2}"
        return f"{paths}: {err.strerror or err}"
    return str(err)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_args(args)
        return int(args.func(args) or 0)
    except (ConfigError, ValueError, OSError) as err:
        # soft_wrap: an error message stays one line (greppable, copyable) whatever the terminal width;
        # a Text, not markup, so brackets in the message ([Errno 2], [keys], paths) survive
        line = Text.assemble(("error:", "bold red"), " ", error_line(err))
        console.print(line, highlight=False, soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
