"""Dependencies point one way: the engine imports none of its clients, and the packages form no cycle.

Every import statement of every module is read (at module level or inside a function), so a
lazy import cannot slip an upward dependency in.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("nmmo", "scripted", "evaluation", "baselines", "client_server")


def imported_packages(path: Path) -> set[str]:
    """Top-level names of the project packages that a module imports anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {name.split(".")[0] for name in names} & set(PACKAGES)
    return found


def package_graph() -> dict[str, set[str]]:
    graph = {package: set() for package in PACKAGES}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            graph[package] |= imported_packages(path) - {package}
    return graph


def test_the_engine_imports_none_of_its_clients():
    offenders = {str(path.relative_to(ROOT)): sorted(imported_packages(path) - {"nmmo"})
                 for path in (ROOT / "nmmo").rglob("*.py") if imported_packages(path) - {"nmmo"}}
    assert offenders == {}


def test_the_packages_form_no_cycle():
    graph = package_graph()
    done: set[str] = set()

    def visit(package: str, path: tuple[str, ...]) -> None:
        assert package not in path, f"import cycle: {' -> '.join((*path, package))}"
        if package in done:
            return
        for dependency in sorted(graph[package]):
            visit(dependency, (*path, package))
        done.add(package)

    for package in PACKAGES:
        visit(package, ())
    assert graph["nmmo"] == set() and graph["scripted"] <= {"nmmo"}


def test_the_checker_sees_lazy_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from evaluation.tournament import run_tournament\n    import baselines.ppo\n")
    assert imported_packages(module) == {"evaluation", "baselines"}


# ------------------------------------------------------------ no cycle between nmmo's modules
def module_names(package_dir: Path) -> dict[str, Path]:
    """Every module of a package tree by its dotted name (a package's ``__init__`` is the package)."""
    names = {}
    for path in package_dir.rglob("*.py"):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _type_checking_only(tree: ast.AST) -> set[ast.AST]:
    """Import nodes under ``if TYPE_CHECKING:`` (never executed: annotations only)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skipped |= {inner for statement in node.body for inner in ast.walk(statement)}
    return skipped


def module_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that module `name` imports, anywhere in its body (functions too;
    ``from package import name`` counts the sub-module `name` when there is one, else the package)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
    return found - {name}


def module_cycles(package_dir: Path) -> list[list[str]]:
    """Every import cycle between the modules of a package tree, each as a path back to its start."""
    modules = module_names(package_dir)
    graph = {name: sorted(module_imports(name, path, modules)) for name, path in modules.items()}
    cycles, state = [], {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for dependency in graph[name]:
            if state.get(dependency) == "open":
                cycles.append([*path[path.index(dependency):], dependency])
            elif dependency not in state:
                visit(dependency, [*path, dependency])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return cycles


def test_nmmo_has_no_import_cycle():
    """No module of nmmo/ imports, directly or through others, one that imports it back (imports
    inside functions count; ``if TYPE_CHECKING:`` imports, never executed, do not)."""
    assert [" -> ".join(cycle) for cycle in module_cycles(ROOT / "nmmo")] == []


def test_no_other_package_has_an_import_cycle():
    """As for nmmo, so for the packages above it: baselines.policy and baselines.ppo imported each
    other (the trainer's `act` and `load_checkpoint`; one side inside a function) until `act` went to
    baselines.model and the policy read checkpoints through baselines.checkpoint."""
    cycles = {package: [" -> ".join(cycle) for cycle in module_cycles(ROOT / package)] for package in PACKAGES}
    assert {package: found for package, found in cycles.items() if found} == {}


def test_the_cycle_checker_sees_a_planted_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg import a\n")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
                                  "def g():\n    import pkg.a\n")
    assert module_cycles(package) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    assert module_cycles(package) == []


# ------------------------------------------------------------- nmmo's sub-packages in one order
#: nmmo's layers, lowest first: the sub-packages, the top-level modules and ``nmmo`` itself (its
#: ``__init__``, the public facade). A module imports from its own layer and those below it, never
#: from one above, so the layers form no cycle. Files only: io (atomic writes, bounded readers,
#: PNG); the data: config (keys, checks) over configs (the shipped TOML); the game: core (state,
#: systems, tick, observations); tasks and the games built on them; what a viewer shows: replays
#: (frames, replay files, overlays, animations); one world as an env: envs; many: engines; then
#: interfaces, integrations, the facade and the command line.
LAYERS = ("io", "console", "configs", "config", "core", "testing", "policy", "tasks", "games", "replays", "envs",
          "engines", "interfaces", "integrations", "nmmo", "cli", "__main__")


def layer_of(module: str) -> str:
    """The layer of an nmmo module: its sub-package, its own name at the top level, or ``nmmo``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layering_violations(package_dir: Path, layers: tuple[str, ...]) -> list[str]:
    """Every import (module level or inside a function) of a module from a layer above its own, and
    every module whose layer `layers` does not place."""
    modules = module_names(package_dir)
    rank = {layer: i for i, layer in enumerate(layers)}
    found = [f"{name}: its layer {layer_of(name)!r} is not in the declared order" for name in sorted(modules)
             if layer_of(name) not in rank]
    for name, path in sorted(modules.items()):
        for dependency in sorted(module_imports(name, path, modules)):
            if rank.get(layer_of(dependency), -1) > rank.get(layer_of(name), len(layers)):
                found.append(f"{name} imports {dependency} ({layer_of(name)} < {layer_of(dependency)})")
    return found


def test_nmmo_sub_packages_import_only_downward():
    """nmmo's sub-packages form the declared order (`LAYERS`), hence no cycle between them."""
    assert layering_violations(ROOT / "nmmo", LAYERS) == []


def test_the_order_checker_sees_a_planted_violation(tmp_path):
    package = tmp_path / "pkg"
    for sub in ("low", "high"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from pkg.high import b\n")
    (package / "high" / "b.py").write_text("from pkg.low.a import f\n")
    (package / "low" / "a.py").write_text("def f():\n    from pkg.high import b\n")
    assert layering_violations(package, ("low", "high", "pkg")) == ["pkg.low.a imports pkg.high.b (low < high)"]
    (package / "low" / "a.py").write_text("def f():\n    pass\n")
    assert layering_violations(package, ("low", "high", "pkg")) == []
    (package / "new.py").write_text("")
    assert layering_violations(package, ("low", "high", "pkg")) == [
        "pkg.new: its layer 'new' is not in the declared order"]


def test_the_sandbox_imports_nothing_of_the_tournament():
    """evaluation.sandbox (the worker process, its channel, namespaces and cgroups) sits below the
    tournament logic that uses it: none of its modules imports the rest of evaluation."""
    modules = module_names(ROOT / "evaluation")
    assert "evaluation.sandbox.host" in modules
    offenders = {name: sorted(dep for dep in module_imports(name, path, modules) if layer_of(dep) != "sandbox")
                 for name, path in modules.items() if layer_of(name) == "sandbox"}
    assert {name: deps for name, deps in offenders.items() if deps} == {}


# ----------------------------------------------------------------- one definition per rule
RULES = ROOT / "nmmo" / "core" / "rules.py"
#: Names that nmmo/core/rules.py defines; anywhere else they may be imported, never bound anew.
RULE_NAMES = {"DELTAS", "STEPS", "WALKABLE", "DIRECTION_DELTAS", "chebyshev", "reaches", "may_attack", "danger",
              "edge_danger", "danger_map", "enterable", "is_frozen", "freeze_left", "nobody_returns", "team_spirit",
              "ring_tiles", "min_spawn_distance", "window_offsets", "water_adjacent", "flat_neighbours"}
#: Rules on config keys alone, which the config checks need below nmmo.core: their one home, by name.
CONFIG_RULES = {ROOT / "nmmo" / "config" / "spawning.py": frozenset({"min_spawn_distance"})}
MOVE_DELTAS = {(-1, 0), (1, 0), (0, 1), (0, -1), (0, 0)}


def _constant_pair(node: ast.AST) -> tuple[int, int] | None:
    """(a, b) when `node` is a literal pair of ints such as ``[-1, 0]``, else None."""
    if not isinstance(node, (ast.List, ast.Tuple)) or len(node.elts) != 2:
        return None
    try:
        pair = tuple(ast.literal_eval(element) for element in node.elts)
    except ValueError:
        return None
    return pair if all(type(value) is int for value in pair) else None


def rule_copies(path: Path, own: frozenset[str] = frozenset()) -> list[str]:
    """What a module recomputes of nmmo/core/rules.py: a rule name bound at module level or as a
    function, a literal table of move deltas, a literal list of the walkable materials (`own`: the
    rule names whose home the module is)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    names = RULE_NAMES - own
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        found += [f"binds {t.id}" for t in targets if isinstance(t, ast.Name) and t.id in names]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            found.append(f"defines {node.name}()")
        elif isinstance(node, (ast.List, ast.Tuple)):
            pairs = [_constant_pair(element) for element in node.elts]
            if len(pairs) >= 4 and None not in pairs and set(pairs) <= MOVE_DELTAS:
                found.append(f"a move-delta table at line {node.lineno}")
            names = {element.attr for element in node.elts if isinstance(element, ast.Attribute)}
            if {"GRASS", "SCRUB", "FOREST"} <= names:
                found.append(f"a walkable-material list at line {node.lineno}")
            if _literal(node) == NO_OP_LITERAL:
                found.append(f"a no-op row literal at line {node.lineno} (nmmo.core.actions.NO_OP_ROW)")
    return found


#: The no-op action row (stay, no style, no target) as a literal: `nmmo.core.actions.NO_OP_ROW` is its one home.
NO_OP_LITERAL = (4, -1, -1)


def _literal(node: ast.AST) -> tuple | None:
    """The ints of a literal list or tuple of ints, else None."""
    try:
        values = tuple(ast.literal_eval(element) for element in node.elts)
    except ValueError:
        return None
    return values if all(type(value) is int for value in values) else None


def test_each_rule_has_one_definition_in_nmmo_rules():
    offenders = {}
    for package in (*PACKAGES, "benchmarks", "tests"):
        for path in (ROOT / package).rglob("*.py"):
            own = CONFIG_RULES.get(path, frozenset())
            found = rule_copies(path, own) if path not in (RULES, Path(__file__)) else []
            if package == "tests":  # tests build maps and tables by hand; only the no-op row has one home there too
                found = [item for item in found if item.startswith("a no-op row")]
            if found:
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, "import these from nmmo.core.rules instead of recomputing them"


def test_the_rule_checker_sees_copies(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import numpy as np\nfrom nmmo.core.enums import Material\n"
                      "WALKABLE = [Material.GRASS, Material.SCRUB, Material.FOREST]\n"
                      "def f():\n    return np.array([[-1, 0], [1, 0], [0, 1], [0, -1]])\n"
                      "def reaches(config):\n    return config.COMBAT_MELEE_REACH\n"
                      "IDLE = np.tile([4, -1, -1], (8, 1))\n")
    assert sorted(rule_copies(module)) == ["a move-delta table at line 5",
                                           "a no-op row literal at line 8 (nmmo.core.actions.NO_OP_ROW)",
                                           "a walkable-material list at line 3", "binds WALKABLE", "defines reaches()"]


# ------------------------------------------------------------------------ module size
LINE_LIMIT = 400
#: Engine modules whose size is data rather than logic (config.py: the declarations of every key).
DATA_MODULES = {"nmmo/config/keys.py"}


def test_engine_modules_stay_small():
    """A module past the limit has more than one concern: split it along its seams (as env.py's
    step accounting went to nmmo/envs/outcomes.py and its action parsing to nmmo/core/actions.py)."""
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in (ROOT / "nmmo").rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > LINE_LIMIT and name not in DATA_MODULES} == {}


# ------------------------------------------------------------------ no import hooks
def test_importing_nmmo_installs_no_import_hook_and_old_paths_are_gone():
    """The package was never released: modules that moved have one path, and `import nmmo` leaves
    `sys.meta_path` as it found it (no finder answering for old names)."""
    import subprocess
    import sys

    code = ("import sys; before = list(sys.meta_path); import nmmo, nmmo.integrations, nmmo.cli; "
            "assert sys.meta_path == before, sys.meta_path; import importlib.util as u; "
            "assert u.find_spec('nmmo.vector') is None and u.find_spec('nmmo.env') is None and "
            "u.find_spec('nmmo.io.replay') is None and u.find_spec('nmmo.envs.vector') is None")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
