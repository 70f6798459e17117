"""The policy interface, two built-in policies and policy spec strings.

A policy is built as ``Policy(config)`` and acts for all the agents it controls at once (so it can
vectorize), in either of two forms, plus an optional ``reset(seed)``:

- the array form, ``act_arrays(batch) -> rows``: `batch` is a `nmmo.core.layout.ObsBatch` (each
  observation field stacked over the agents, ``batch.ids`` their ids) and `rows` an (n, 3) int
  array of (direction, style, target) rows, row i for agent ``batch.ids[i]`` (style and target -1:
  no attack). It is what every engine-side caller speaks (`act_rows`); `ArrayPolicy` gives such a
  policy the dict form too.
- the dict form, ``act(observations) -> actions``: PettingZoo's per-agent dicts, as `nmmo.Env.step`
  takes them; `act_rows` adapts it (the dicts are views into the batch).

A spec string
names one: ``random``, ``idle``, ``pkg.module:Class`` (the scripted bots are ``scripted:Forage``
and friends), ``path/to/file.py:Class``, ``path/to/folder:Class`` (a package folder: code beside its
weights), or ``SCHEME:ARGUMENT`` for a scheme that a package
registers in the ``nmmo.policies`` entry point group (pyproject.toml): a function taking the
argument and returning the policy class. The baselines register ``ckpt:PATH`` (a checkpoint from
`nmmo train`); the engine itself imports no client.

A spec read back from a file (a league, a results file) is data, not a command: `check_spec_from_file`
lets it through only when loading it runs no code the file can choose (`is_data_spec`) or when the
same spec was given on the command line this run.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import shlex
import sys
import types
from collections.abc import Collection
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from nmmo.config import Config
from nmmo.core.actions import NO_OP_ROW, action_rows, array_reply_rows, rows_to_actions
from nmmo.core.layout import ObsBatch, from_dicts


class Policy(Protocol):
    """The dict form (see the module notes)."""

    def __init__(self, config: Config) -> None: ...

    def act(self, observations: dict[int, dict]) -> dict[int, dict]: ...


class BatchPolicy(Protocol):
    """The array form (see the module notes)."""

    def __init__(self, config: Config) -> None: ...

    def act_arrays(self, batch: ObsBatch) -> np.ndarray: ...


class ArrayPolicy:
    """Base of policies written in the array form: `act` (the dict form) is derived from
    `act_arrays`, so they play wherever a dict policy does (`nmmo.Env.step`, user loops)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def act_arrays(self, batch: ObsBatch) -> np.ndarray:
        raise NotImplementedError

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        if not observations:
            return {}
        batch = from_dicts(observations, self.config)
        return rows_to_actions(batch.ids, np.asarray(self.act_arrays(batch)))


def act_rows(policy: Any, batch: ObsBatch) -> tuple[np.ndarray, np.ndarray, str | None]:
    """`policy`'s actions for `batch`, whichever form it speaks, as agent ids (n,), int64 rows
    (n, 3) and the first problem met reading them (None: all read). An array-form reply of the
    wrong shape or type is one problem and every row unreadable; a dict reply goes through
    `nmmo.core.actions.action_rows`, which keeps every key so the caller can count foreign agents."""
    if not callable(getattr(policy, "act_arrays", None)):
        return action_rows(policy.act(batch.to_dicts()))
    return batch.ids, *array_reply_rows(policy.act_arrays(batch), batch.n)


class Random:
    """Random valid actions drawn from the ActionTargets masks (a move, and an attack when any
    target is valid)."""

    def __init__(self, config: Config, seed: int | None = None) -> None:
        self.config = config
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        actions = {}
        for agent, ob in observations.items():
            masks = ob["ActionTargets"]
            moves = np.flatnonzero(masks["Move"]["Direction"])
            action: dict[str, Any] = {"Move": {"Direction": int(moves[self.rng.integers(len(moves))])}}
            targets = np.flatnonzero(masks["Attack"]["Target"][:-1])
            styles = np.flatnonzero(masks["Attack"]["Style"])
            if targets.size and styles.size:
                action["Attack"] = {"Style": int(styles[self.rng.integers(len(styles))]),
                                    "Target": int(targets[self.rng.integers(len(targets))])}
            actions[agent] = action
        return actions


class Idle(ArrayPolicy):
    """Does nothing (every agent stays): the baseline for starvation timing."""

    def act_arrays(self, batch: ObsBatch) -> np.ndarray:
        return np.tile(NO_OP_ROW, (batch.n, 1))

    def act(self, observations: dict[int, dict]) -> dict[int, dict]:
        return {}


BUILTIN = {"random": Random, "idle": Idle}


#: Entry point group of policy spec schemes (``ckpt:PATH``, ...).
POLICY_GROUP = "nmmo.policies"


def policy_schemes() -> dict[str, Any]:
    """The registered spec schemes: {name: entry point}."""
    return {ep.name: ep for ep in entry_points(group=POLICY_GROUP)}


def spec_forms() -> str:
    """Every form a policy spec may take, for help texts."""
    schemes = ", ".join(f"{name}:..." for name in sorted(policy_schemes()))
    return ", ".join([*BUILTIN, "pkg.module:Class (e.g. scripted:Forage)", "path/to/file.py:Class",
                      "path/to/folder:Class"]) + (
        f", {schemes}" if schemes else "")


def display_names(specs: Collection[str]) -> dict[str, str]:
    """The one name each policy goes by in every table, line and leaderboard of a run (the arena's
    too), from the specs it plays: ``scripted:Forage`` -> ``Forage``, ``path/my_agent.py:Agent`` ->
    ``my_agent:Agent``, ``pkg.module:Agent`` -> ``module:Agent``, ``ckpt:out/run/checkpoint.pt`` ->
    ``ckpt:run/checkpoint``, anything else as given. Names that two specs would share stay the
    full specs, so a name always means one policy; `display_legend` says which spec a name is."""

    def name(spec: str) -> str:
        if spec.startswith("scripted:"):
            return spec.split(":", 1)[1]
        if spec.startswith("ckpt:"):
            path = Path(spec[5:])
            return f"ckpt:{path.parent.name + '/' if path.parent.name else ''}{path.stem}"
        where, sep, cls = spec.rpartition(":")
        if not sep or where in policy_schemes():
            return spec
        stem = Path(where).stem if where.endswith(".py") else where.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[-1]
        return f"{stem}:{cls}"

    names = {spec: name(spec) for spec in specs}
    taken = list(names.values())
    return {spec: text if taken.count(text) == 1 else spec for spec, text in names.items()}


def display_legend(specs: Collection[str]) -> str | None:
    """'name = spec' for each display name that is not its spec with an obvious prefix dropped
    (``scripted:``), for the line under a table; None when every name speaks for itself."""
    pairs = [f"{text} = {spec}" for spec, text in display_names(specs).items()
             if text != spec and not spec.startswith("scripted:")]
    return "policies: " + "; ".join(pairs) if pairs else None


#: Schemes whose loaders read weights only (``torch.load(weights_only=True)`` after `nmmo.io.torchzip`
#: sized the file, `baselines.checkpoint`, and the trainer recipes' `nmmo.integrations.sb3`,
#: `.torchrl`, `.pufferlib` and `.rllib_weights`).
DATA_SCHEMES = ("ckpt", "baseline", "sb3", "torchrl", "pufferlib", "rllib")
#: Schemes whose argument is a file path (a submission's worker reads that file and nothing beside it).
PATH_SCHEMES = ("ckpt", "sb3", "torchrl", "pufferlib", "rllib")
#: Shipped packages whose classes a file may name as ``PACKAGE:Class`` (the scripted bots).
SHIPPED_MODULES = ("scripted",)


def is_data_spec(spec: object) -> bool:
    """True when loading `spec` runs only code this install ships: a built-in, a shipped bot
    (``scripted:Name``) or weights (``ckpt:PATH``, ``baseline:NAME``). A ``file.py:Class`` or
    ``pkg.module:Class`` imports whatever the spec names, so a file that holds it could run code."""
    if not isinstance(spec, str):
        return False
    if spec in BUILTIN:
        return True
    scheme, sep, argument = spec.partition(":")
    if not sep:
        return False
    if scheme in SHIPPED_MODULES:
        return argument.isidentifier()  # not "scripted:evil.py:Class", which imports the file
    # a scheme nobody registered would fall through to importing a module of that name
    return scheme in DATA_SCHEMES and scheme in policy_schemes()


def check_spec_from_file(spec: object, allowed: Collection[str], where: str, flag: str) -> str:
    """`spec`, read from the file `where`, when it is data (`is_data_spec`) or was given on the
    command line this run (`allowed`); else a ValueError that says how to allow it (`flag`).
    Whoever can write a league or results file must not be able to make the next run import code."""
    if is_data_spec(spec) or (isinstance(spec, str) and spec in allowed):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"{where} names a policy spec that is not a string: {spec!r}")
    raise ValueError(f"{where} names the policy {spec!r}, which imports code (a .py file or a module); a file "
                     "is data, so it is refused. If you trust it, give it again on the command line, e.g. "
                     f"{flag} {shlex.quote(spec)}, to allow it this run (random, idle, scripted:NAME, "
                     "baseline:NAME and ckpt:PATH, read weights-only, are always allowed)")


def load_policy_class(spec: str) -> type:
    """Resolve a policy spec string to a class; errors say which part of the spec failed."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    scheme, sep, argument = spec.partition(":")
    schemes = policy_schemes() if sep else {}
    if scheme in schemes:
        try:
            loader = schemes[scheme].load()
        except ImportError as err:
            raise ValueError(f"{scheme}: policies need a package that is not installed: {err}") from None
        return loader(argument)
    if ":" not in spec:
        raise ValueError(f"policy spec {spec!r} is not one of {sorted(BUILTIN)} and has no ':Class' part "
                         "(use pkg.module:Class or path/to/file.py:Class)")
    cls = import_spec(spec, "policy")
    if not callable(getattr(cls, "act", None)) and not callable(getattr(cls, "act_arrays", None)):
        raise ValueError(f"{spec!r} has no act(observations) or act_arrays(batch) method")
    return cls


def syntax_error_line(err: SyntaxError, path: str) -> str:
    """A syntax error in the user's file as one line: the file, the line, what Python expected, and
    the offending code (not the importer's frames)."""
    code = (err.text or "").strip()
    return f"{path}:{err.lineno}: syntax error: {err.msg}" + (f": {code}" if code else "")


def names_a_path(where: str) -> bool:
    """Whether the part of a spec before its ``:Name`` is a file or folder path (``x.py``, anything
    with a '/'), not a dotted module name: the one rule every reader of specs uses."""
    return where.endswith(".py") or "/" in where


def _import_path(path: Path, where: str, what: str) -> Any:
    """The module of a ``file.py`` or of a folder (its ``__init__.py``, with the folder as the
    package's path, so that its relative imports find the files beside it)."""
    where_hash = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]  # two folders "agent" stay two
    name = f"nmmo_{what.replace(' ', '_')}_{path.stem if path.suffix == '.py' else path.name}_{where_hash}"
    if path.suffix == ".py":
        if not path.is_file():
            raise ValueError(f"{what} file {where!r} does not exist")
        module_spec = importlib.util.spec_from_file_location(name, path)
    else:
        if not path.is_dir():
            raise ValueError(f"{what} folder {where!r} does not exist (a path names a file.py or a folder)")
        if not (path / "__init__.py").is_file():
            raise ValueError(f"{what} folder {where!r} has no __init__.py: a folder is loaded as a package, whose "
                             "__init__.py defines or imports the class")
        module_spec = importlib.util.spec_from_file_location(name, path / "__init__.py",
                                                             submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # a package's relative imports look it up there
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as err:
        sys.modules.pop(name, None)
        raise ValueError(syntax_error_line(err, err.filename or where)) from None
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_spec(spec: str, what: str = "object") -> Any:
    """The object a ``pkg.module:Name``, ``path/to/file.py:Name`` or ``path/to/folder:Name`` string
    names (a folder is a package: its ``__init__.py`` defines or imports Name, and its other files,
    weights and configs, lie beside it); errors name the part that failed (`what` says what was
    being loaded: "policy", "env class", ...)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"{what} spec {spec!r} needs the form pkg.module:Name, path/to/file.py:Name or "
                         "path/to/folder:Name")
    where, name = spec.rsplit(":", 1)
    if names_a_path(where):
        module = _import_path(Path(where), where, what)
    else:
        try:
            module = importlib.import_module(where)
        except SyntaxError as err:
            raise ValueError(syntax_error_line(err, err.filename or where)) from None
        except ImportError as err:
            raise ValueError(f"cannot import {what} module {where!r}: {err}") from err
    found = getattr(module, name, None)
    if found is None:
        raise ValueError(f"{where!r} defines no {name!r}{_did_you_mean(module, where, name)}")
    if isinstance(found, types.ModuleType):  # scripted:forage is the module scripted.forage, not its bot
        raise ValueError(f"{spec!r} names the module {found.__name__}, not a {what} class"
                         f"{_did_you_mean(module, where, name)}")
    return found


def _did_you_mean(module: Any, where: str, name: str) -> str:
    """'; did you mean WHERE:Class?' for the classes of `module` whose names are close to `name`,
    case aside (``forage`` finds ``Forage``); '' when none is."""
    public = {n.lower(): n for n in dir(module) if not n.startswith("_") and isinstance(getattr(module, n), type)}
    close = [public[c] for c in difflib.get_close_matches(name.lower(), list(public), n=3, cutoff=0.6)]
    return f"; did you mean {', '.join(f'{where}:{c}' for c in close)}?" if close else ""
