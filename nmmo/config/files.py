"""Config files: the canonical configs shipped in ``nmmo/configs/`` (by name) and TOML files (by
path), TOML text (how configs travel to workers and into results), and `resolve`, which takes any of
them or a Config."""

from __future__ import annotations

import difflib
import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from nmmo.config.checks import ConfigError
from nmmo.config.keys import _MIXINS, _NAMED_CLASSES, _PRESETS, _SYSTEM_PREFIXES, Config, Default


def _task_dir() -> Path:
    return Path(str(resources.files("nmmo.configs")))


def available() -> dict[str, str]:
    """Canonical task names shipped with the package, mapped to their one-line descriptions."""
    out = {}
    for path in sorted(_task_dir().glob("*.toml")):
        with path.open("rb") as f:
            out[path.stem] = tomllib.load(f).get("description", "")
    return out


def load(name_or_path: str | os.PathLike[str]) -> Config:
    """Load a task config by canonical name (``"small_maps"``) or by path to a TOML file.

    The file names a ``preset`` (Small, Medium, Large or Config), the ``systems`` it enables and a
    ``[keys]`` table of overrides; every key is checked as by `Config.set`.
    """
    path = Path(name_or_path)
    if path.suffix != ".toml" and os.sep not in str(name_or_path):
        candidate = _task_dir() / f"{name_or_path}.toml"
        if not candidate.is_file() and str(name_or_path) in _NAMED_CLASSES:
            raise ConfigError(f"{str(name_or_path)!r} is a preset, not a task file: use "
                              f"nmmo.config.resolve({str(name_or_path)!r}) (or the class itself)")
        if not candidate.is_file():
            names = list(available())
            candidates = names + list(_NAMED_CLASSES)
            close = difflib.get_close_matches(str(name_or_path), candidates, n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise ConfigError(
                f"no canonical config named {str(name_or_path)!r}.{hint} Available: {', '.join(names)}"
            )
        path = candidate
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        with path.open("rb") as f:
            spec = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {str(path)!r} is not valid TOML: {err}") from err
    return from_spec(spec, name=path.stem, source=str(path))


def from_toml(text: str, name: str = "custom") -> Config:
    """A config from TOML text (`Config.to_toml()` output or a task file's content): how configs
    travel to worker processes and into result files and checkpoints, since a config class built
    from a TOML file cannot be pickled."""
    try:
        spec = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"<{name} TOML> is not valid TOML: {err}") from None
    return from_spec(spec, name=name, source=f"<{name} TOML>")


def from_spec(spec: dict[str, Any], name: str = "custom", source: str = "<dict>") -> Config:
    """Build a config from a parsed task spec (the TOML file's content as a dict)."""
    allowed = {"description", "preset", "systems", "keys"}
    extra = set(spec) - allowed
    if extra:
        raise ConfigError(f"{source}: unknown top-level entries {sorted(extra)}; allowed: {sorted(allowed)}")
    preset_name = spec.get("preset", "Config")
    if preset_name not in _PRESETS:
        raise ConfigError(f"{source}: unknown preset {preset_name!r}; choose one of {list(_PRESETS)}")
    systems = spec.get("systems", [])
    if not isinstance(systems, list) or any(s not in _MIXINS for s in systems):
        raise ConfigError(f"{source}: systems must be a list drawn from {list(_MIXINS)}, got {systems!r}")
    bases = (_PRESETS[preset_name], *(_MIXINS[s] for s in _SYSTEM_PREFIXES if s in systems))
    cls = type(name, bases, {"__doc__": spec.get("description", "")})
    config = cls()
    keys = spec.get("keys", {})
    if not isinstance(keys, dict):
        raise ConfigError(f"{source}: [keys] must be a table of KEY = value")
    try:
        config.update(keys)
        config.validate()
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None
    config.description = spec.get("description", "")
    return config


def resolve(config: Config | str | os.PathLike[str] | None) -> Config:
    """Accept a Config instance, a canonical name or a path; None gives `Default`."""
    if config is None:
        return Default()
    if isinstance(config, Config):
        return config
    if isinstance(config, type) and issubclass(config, Config):
        return config()
    if isinstance(config, str) and config in _NAMED_CLASSES:
        return _NAMED_CLASSES[config]()
    if isinstance(config, (str, os.PathLike)):
        return load(config)
    raise ConfigError(f"expected a Config, a config name or a path, got {config!r}")
