"""``--set KEY=VALUE`` on every command that takes a config: a key changed for one run without a
TOML file, typed and checked exactly as a TOML file's ``[keys]`` are (`Config.set`: unknown keys
with "did you mean", types, ranges, then the rules that tie keys together).

A value is read as a TOML value (``HORIZON=256``, ``PLAYER_RESPAWN=false``, ``REWARD_SCALE=0.5``,
``TASKS="train"``); a bare word that is not one is a string (``TASKS=train``). The changed config
travels as a TOML file written for the run (`effective_config`), named like the config it
changes, so every part of a command (worker processes, Ray actors, results and checkpoints, which
record the config's TOML) sees the same config that a file would have given."""

from __future__ import annotations

import argparse
import atexit
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from nmmo import config as config_module
from nmmo.config import Config, ConfigError

#: The folder the run's changed configs are written to (made on first use, removed at exit).
_FOLDER: list[Path] = []


def add_set_flag(parser: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE``, repeatable."""
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="set",
                        help="change one config key for this run, checked as in a TOML file (repeatable): "
                             "--set HORIZON=256 --set PLAYER_RESPAWN=false")


def parse_value(raw: str) -> Any:
    """A TOML value, or the text itself when it is not one (a bare word is a string)."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def overridden(config: Config | str, pairs: list[str]) -> Config:
    """`config` (a Config, a name or a path) with each ``KEY=VALUE`` of `pairs` set and the whole
    validated; a ConfigError names the pair and what is wrong with it."""
    result = config_module.resolve(config) if isinstance(config, Config) else config_module.resolve(str(config))
    for pair in pairs:
        key, equals, raw = pair.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE (e.g. --set HORIZON=256)")
        try:
            result.set(key.strip(), parse_value(raw.strip()))
        except ConfigError as err:
            raise ConfigError(f"--set {pair}: {err}") from None
    try:
        return result.validate()
    except ConfigError as err:
        raise ConfigError(f"--set {' '.join(pairs)}: {err}") from None


def effective_config(config: Config | str, pairs: list[str]) -> str:
    """The path of a TOML file holding `config` changed by `pairs`, named after `config` (so tables
    and results still say which config it started from); it lasts until this process exits."""
    changed = overridden(config, pairs)
    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="nmmo-set-")))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    path = _FOLDER[0] / f"{changed.name}.toml"
    path.write_text(changed.to_toml(), encoding="utf-8")
    return str(path)


def apply_sets(args: argparse.Namespace, base: Config | str | None = None) -> None:
    """Replace ``args.config`` by the config ``--set`` asks for (nothing without ``--set``);
    `base`: the config they change, when the command settles it elsewhere (default ``args.config``)."""
    pairs = getattr(args, "set", None) or []
    if not pairs:
        return
    if getattr(args, "game", None):
        raise ConfigError("--set changes a config and --game plays a minigame's canonical one as it is: use "
                          f"--config {args.game} --set ... to change that config")
    args.config = effective_config(base if base is not None else args.config, pairs)
