"""The `nmmo` command line: one tool, its commands found where they live.

The engine's own commands are here: `maps` and `config`; `run` is `nmmo.cli.runner`'s. It and the others come
from the packages above the engine through the ``nmmo.commands`` entry point group, declared in
pyproject.toml (`evaluation`: eval, tournament, experiment, demo; `baselines`: train;
`client_server`: serve), so the engine imports none of its clients and a third-party package can
add commands the same way: an entry point naming ``add_commands(subparsers)``. A command sets
``func`` (and optionally ``check``, run before any work) with ``set_defaults``; `add_command`
gives it the shared help format (every flag's help shows its default).

Shared helpers for every command: `console`, `error_line`, `cli_command`, `Parser` (`nmmo.cli.parser`:
flags never abbreviated; `nmmo.cli.outputs`: the output folder rule; `nmmo.cli.tables`: tables that fit),
`check_port`, `add_ray_flags` / `ray_options`, `add_game_flags` / `game_config` (``--game NAME``: a
minigame's canonical config) (progress displays: `nmmo.console`).
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nmmo import config as config_module
from nmmo.cli.outputs import check_output
from nmmo.cli.overrides import add_set_flag, apply_sets, overridden
from nmmo.cli.parser import Parser
from nmmo.cli.tables import print_table
from nmmo.config import ConfigError
from nmmo.config.checks import GAME_NAMES

# paths and commands stay on one line, for copy and paste; no markup: user text (paths, names, error
# messages) is printed as typed, brackets included
console = Console(soft_wrap=True, markup=False)
#: Entry point group of the commands other packages add.
COMMANDS_GROUP = "nmmo.commands"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every flag's help ends with its default; descriptions keep their line breaks."""


def add_command(subparsers: argparse._SubParsersAction, name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:  # noqa: A002
    """A sub-command with the shared help format (its docstring-like `help` is also its description)."""
    kwargs.setdefault("description", help)
    return subparsers.add_parser(name, help=help, formatter_class=HelpFormatter, **kwargs)


def command_group(subparsers: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:  # noqa: A002
    """The sub-commands of group `name` (`nmmo experiment ...`), made by the first package that adds
    one, found by the others."""
    parser = subparsers.choices.get(name)
    if parser is None:
        parser = add_command(subparsers, name, help)
        parser.set_defaults(group_commands=parser.add_subparsers(dest=f"{name}_command", required=True))
    return parser.get_default("group_commands")


def cli_command() -> str:
    """How the user's shell reaches this CLI: ``nmmo`` when that is on PATH, else the script beside
    this interpreter (``.venv/bin/nmmo`` inside a checkout), else ``python -m nmmo``."""
    script = Path(sys.executable).parent / "nmmo"
    found = shutil.which("nmmo")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        return "nmmo"
    if script.exists():
        relative = os.path.relpath(script)
        return relative if not relative.startswith("..") else str(script)
    return f"{sys.executable} -m nmmo"


def check_port(host: str, port: int) -> None:
    """Refuse a busy port before any work starts (ValueError saying how to pick another)."""
    if not 0 < port < 65536:
        raise ValueError(f"--port must be in 1..65535, got {port}")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, errno.EACCES):
                raise ValueError(f"port {port} on {host} is busy (another server?): pick another with --port N "
                                 "(make demo PORT=N)") from None
            raise ValueError(f"cannot serve on {host}:{port}: {err.strerror or err}") from None


def add_ray_flags(parser: argparse.ArgumentParser) -> None:
    """`--ray` / `--ray-address ADDR`: the same command on Ray actors, locally or on a cluster."""
    parser.add_argument("--ray", action="store_true",
                        help="run the workers as Ray actors (a local Ray with this machine's cores)")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="run the workers on this Ray cluster (implies --ray), e.g. ray://head:10001 or auto")


def ray_options(args: argparse.Namespace) -> dict:
    """The backend keyword arguments the Ray flags ask for."""
    use_ray = args.ray or args.ray_address is not None
    return {"backend": "ray" if use_ray else "process", "ray_address": args.ray_address}


def add_game_flags(parser: argparse.ArgumentParser, default_config: str, config_help: str, game_help: str = "") -> None:
    """`--config` (absent from the namespace unless given) and `--game NAME`, a minigame: its canonical
    config (`game_help` says what else it sets); a command reads the config through `game_config`."""
    parser.add_argument("--config", default=argparse.SUPPRESS,
                        help=f"{config_help} (default: {default_config}; with --game NAME: NAME)")
    parser.add_argument("--game", choices=GAME_NAMES, default=None, metavar="NAME",
                        help=f"play a minigame ({', '.join(GAME_NAMES)}): its canonical config, as --config NAME"
                             + game_help)
    parser.set_defaults(default_config=default_config)
    add_set_flag(parser)


def game_config(config: str | None, game: str | None, default: str) -> str:
    """The config a command runs: ``--game``'s (the game's canonical config), else ``--config``, else
    `default`. A game that is not one, or a ``--config`` naming another config than ``--game``, is a
    ValueError that says so (listing the games)."""
    if not game:
        return default if config is None else config
    if game not in GAME_NAMES:
        raise ValueError(f"--game {game!r} is not a minigame; choose one of {', '.join(GAME_NAMES)}")
    if config is not None and config != game:
        raise ValueError(f"--game {game} plays the canonical config {game!r}, but --config {config!r} was given "
                         f"too: give one of them (--game NAME means --config NAME)")
    return game


def settle_config(args: argparse.Namespace) -> None:
    """Set ``args.config`` from ``--config`` / ``--game`` (`add_game_flags`; `game_config`)."""
    args.config = game_config(getattr(args, "config", None), args.game, args.default_config)


# ------------------------------------------------------------------ maps
def _cmd_maps_generate(args: argparse.Namespace) -> int:
    from nmmo import console as console_module
    from nmmo.core import world

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
    bar = console_module.progress(total=count, desc=f"{args.split} maps", unit="map")
    for index in range(args.start, args.start + count):
        seed = world.map_seed(config, index, args.split)
        game_map = world.get_map(config, seed, cache=not args.no_cache)
        for name, value in game_map.fractions().items():
            totals[name] = totals.get(name, 0.0) + value / count
        if args.preview:
            world.preview_png(game_map, out / f"{args.split}_{index:05d}.png", args.zoom, args.downscale)
        bar.update()
    bar.close()
    elapsed = time.perf_counter() - start
    table = Table(title=f"{count} {args.split} maps of {config.name} ({config.MAP_SIZE}x{config.MAP_SIZE})")
    table.add_column("material")
    table.add_column("mean fraction", justify="right")
    for name, value in totals.items():
        table.add_row(name, f"{value:.3f}")
    print_table(console, table)
    console.print(f"cache: {world.cache_dir(config)}  ({elapsed:.2f} s)")
    if args.preview:
        console.print(f"previews: {out}/")
    return 0


def _cmd_maps_show(args: argparse.Namespace) -> int:
    from nmmo.core import world

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
    print_table(console, table)
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
    print_table(console, table)
    return 0


def _cmd_config_show(args: argparse.Namespace) -> int:
    print(overridden(args.name, args.set) if args.set else config_module.resolve(args.name), end="")
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
    print_table(console, table)
    return 0


# ------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="nmmo", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    maps = add_command(sub, "maps", "generate, cache and inspect procedural maps")
    maps_sub = maps.add_subparsers(dest="maps_command", required=True)
    gen = add_command(maps_sub, "generate", "generate a pool of maps into the cache")
    gen.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    add_set_flag(gen)
    gen.add_argument("--n", type=int, default=None, help="how many maps (default: the whole pool)")
    gen.add_argument("--start", type=int, default=0, help="first map index in the pool")
    gen.add_argument("--split", choices=["train", "eval"], default="train", help="training or held-out pool")
    gen.add_argument("--preview", action="store_true", help="write a PNG preview per map")
    gen.add_argument("--out", default=None, help="preview directory (default out/maps/CONFIG)")
    gen.add_argument("--no-cache", action="store_true", help="generate without reading or writing the cache")
    show = add_command(maps_sub, "show", "print a map's material fractions and reachability")
    show.add_argument("id", type=int, help="map index in the pool")
    show.add_argument("--config", default="small_maps", help="config name, preset or TOML path")
    add_set_flag(show)
    show.add_argument("--split", choices=["train", "eval"], default="train", help="training or held-out pool")
    show.add_argument("--preview", default=None, metavar="PNG", help="also write a PNG preview here")
    for p in (gen, show):
        p.add_argument("--zoom", type=int, default=0, help="pixels per tile (0: at least 256 px wide)")
        p.add_argument("--downscale", type=int, default=1, help="keep every k-th tile in previews")
        p.set_defaults(check=_check_maps)
    gen.set_defaults(func=_cmd_maps_generate)
    show.set_defaults(func=_cmd_maps_show)

    cfg = add_command(sub, "config", "list, print and diff configs")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    add_command(cfg_sub, "list", "the canonical task configs").set_defaults(func=_cmd_config_list)
    show_cfg = add_command(cfg_sub, "show", "print a config as TOML")
    show_cfg.add_argument("name", help="config name, preset (Small, Medium, Large, Default) or TOML path")
    add_set_flag(show_cfg)
    show_cfg.set_defaults(func=_cmd_config_show)
    diff = add_command(cfg_sub, "diff", "keys that differ between two configs")
    diff.add_argument("a", help="config name, preset or TOML path")
    diff.add_argument("b", help="config name, preset or TOML path")
    diff.set_defaults(func=_cmd_config_diff)

    for plugin in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
        plugin.load()(sub)
    return parser


def _check_maps(args: argparse.Namespace) -> None:
    if args.zoom < 0:
        raise ValueError(f"--zoom must be >= 0 (0: at least 256 px wide), got {args.zoom}")
    if args.downscale < 1:
        raise ValueError(f"--downscale must be >= 1, got {args.downscale}")
    if getattr(args, "n", None) is not None and args.n < 1:
        raise ValueError(f"--n must be >= 1, got {args.n}")


def check_args(args: argparse.Namespace) -> None:
    """Reject nonsense numbers and missing paths before any work starts (ValueError naming the flag):
    the checks every command shares, then the command's own (``check``)."""
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    ticks = getattr(args, "ticks", None)
    if ticks is not None and ticks < 1:
        raise ValueError(f"--ticks must be a positive int, got {ticks}")
    episodes = getattr(args, "episodes", None)
    if episodes is not None and episodes < 1:
        raise ValueError(f"--episodes must be a positive int, got {episodes}")
    if getattr(args, "default_config", None) is not None:  # a command with --config / --game
        settle_config(args)
    if "config" in vars(args):  # --set KEY=VALUE: the config changed for this run
        apply_sets(args)
    if getattr(args, "check", None) is not None:
        args.check(args)
    check_output(args)  # last: the command's own check may settle where its output goes


def error_line(err: BaseException) -> str:
    """One line for a failed command; an OSError names its path(s) (exc.filename)."""
    if isinstance(err, OSError) and err.filename is not None:
        paths = str(err.filename) if err.filename2 is None else f"{err.filename} -> {err.filename2}"
        return f"{paths}: {err.strerror or err}"
    return str(err)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs (workers ended, work kept)."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


def resume_command(argv: list[str]) -> str:
    """The command line that continues this run: the same arguments and ``--resume``."""
    words = [w for w in argv if w != "--no-resume"]
    if "--resume" not in words:
        words.append("--resume")
    return f"{cli_command()} {shlex.join(words)}"


def interrupted_line(args: argparse.Namespace, argv: list[str]) -> str:
    """What an interrupted command kept and how to continue it: the command's own `interrupted`
    note (``set_defaults(interrupted=f)``, ``f(args, resume_command) -> str``) or a plain one."""
    note = getattr(args, "interrupted", None)
    if note is None:
        return "stopped; this command keeps nothing to resume (run it again)"
    return note(args, resume_command(argv))


def main(argv: list[str] | None = None) -> int:
    """Run one command. Ctrl-C and SIGTERM stop it cleanly: one line says what was kept and how to
    resume, and the exit status is 130 (SIGINT) or 143 (SIGTERM)."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(words)
    previous = signal.signal(signal.SIGTERM, _terminate) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        check_args(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt as err:
        code = 143 if isinstance(err, Terminated) else 130
        line = Text.assemble(("interrupted:", "bold yellow"), " ", interrupted_line(args, words))
        console.print(line, highlight=False, soft_wrap=True)
        return code
    except (ConfigError, ValueError, OSError) as err:
        # soft_wrap: an error message stays one line (greppable, copyable) whatever the terminal width;
        # a Text, not markup, so brackets in the message ([Errno 2], [keys], paths) survive
        line = Text.assemble(("error:", "bold red"), " ", error_line(err))
        console.print(line, highlight=False, soft_wrap=True)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
