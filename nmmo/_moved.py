"""Old import paths of modules that moved into nmmo's sub-packages: each still imports, for one
release, as the very module at its new path (the same object, so patching either patches both),
with a DeprecationWarning that names the new path.

A finder on `sys.meta_path` (installed when this module is imported, first thing in
``nmmo/__init__``) answers for the old names only; nothing is imported until an old path is asked
for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: Old module path -> new module path (a moved package's sub-modules follow it).
MOVED = {
    "nmmo.runner": "nmmo.cli.runner",
    "nmmo.enums": "nmmo.core.enums",
    "nmmo.state": "nmmo.core.state",
    "nmmo.rules": "nmmo.core.rules",
    "nmmo.noise": "nmmo.core.noise",
    "nmmo.world": "nmmo.core.world",
    "nmmo.draws": "nmmo.core.draws",
    "nmmo.realm": "nmmo.core.realm",
    "nmmo.metrics": "nmmo.core.metrics",
    "nmmo.obs": "nmmo.core.obs",
    "nmmo.actions": "nmmo.core.actions",
    "nmmo.layout": "nmmo.core.layout",
    "nmmo.systems": "nmmo.core.systems",
    "nmmo.env": "nmmo.envs.env",
    "nmmo.outcomes": "nmmo.envs.outcomes",
    "nmmo.spaces": "nmmo.envs.spaces",
    "nmmo.global_state": "nmmo.envs.global_state",
    "nmmo.overlays": "nmmo.envs.overlays",
    "nmmo.landscape": "nmmo.envs.landscape",
    "nmmo.vector": "nmmo.envs.vector",
    "nmmo.fused": "nmmo.envs.fused",
    "nmmo.distributed": "nmmo.envs.distributed",
    "nmmo.process": "nmmo.envs.process",
    "nmmo.files": "nmmo.io.files",
    "nmmo.npz": "nmmo.io.npz",
    "nmmo.png": "nmmo.io.png",
    "nmmo.replay": "nmmo.io.replay",
}


def new_path(name: str) -> str | None:
    """The new path of an old module name (or of a sub-module of a moved package), else None."""
    if name in MOVED:
        return MOVED[name]
    for old, new in MOVED.items():
        if name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        target_name = new_path(fullname)
        if target_name is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=False)

    def create_module(self, spec):
        target_name = new_path(spec.name)
        warnings.warn(f"{spec.name} moved to {target_name}; the old path is deprecated and goes away in the next "
                      "release", DeprecationWarning, stacklevel=3)
        module = importlib.import_module(target_name)
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module) -> None:
        """The module is the new path's, already executed."""


def install() -> None:
    """Put the finder on `sys.meta_path` (once)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())


install()
