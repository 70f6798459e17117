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


# ----------------------------------------------------------------- one definition per rule
RULES = ROOT / "nmmo" / "rules.py"
#: Names that nmmo/rules.py defines; anywhere else they may be imported, never bound anew.
RULE_NAMES = {"DELTAS", "STEPS", "WALKABLE", "DIRECTION_DELTAS", "chebyshev", "reaches", "may_attack", "danger",
              "edge_danger", "danger_map", "enterable", "is_frozen", "freeze_left", "nobody_returns", "team_spirit"}
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


def rule_copies(path: Path) -> list[str]:
    """What a module recomputes of nmmo/rules.py: a rule name bound at module level or as a
    function, a literal table of move deltas, a literal list of the walkable materials."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        found += [f"binds {t.id}" for t in targets if isinstance(t, ast.Name) and t.id in RULE_NAMES]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in RULE_NAMES:
            found.append(f"defines {node.name}()")
        elif isinstance(node, (ast.List, ast.Tuple)):
            pairs = [_constant_pair(element) for element in node.elts]
            if len(pairs) >= 4 and None not in pairs and set(pairs) <= MOVE_DELTAS:
                found.append(f"a move-delta table at line {node.lineno}")
            names = {element.attr for element in node.elts if isinstance(element, ast.Attribute)}
            if {"GRASS", "SCRUB", "FOREST"} <= names:
                found.append(f"a walkable-material list at line {node.lineno}")
    return found


def test_each_rule_has_one_definition_in_nmmo_rules():
    offenders = {}
    for package in (*PACKAGES, "benchmarks"):
        for path in (ROOT / package).rglob("*.py"):
            if path != RULES and (found := rule_copies(path)):
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, "import these from nmmo.rules instead of recomputing them"


def test_the_rule_checker_sees_copies(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import numpy as np\nfrom nmmo.enums import Material\n"
                      "WALKABLE = [Material.GRASS, Material.SCRUB, Material.FOREST]\n"
                      "def f():\n    return np.array([[-1, 0], [1, 0], [0, 1], [0, -1]])\n"
                      "def reaches(config):\n    return config.COMBAT_MELEE_REACH\n")
    assert sorted(rule_copies(module)) == ["a move-delta table at line 5", "a walkable-material list at line 3",
                                           "binds WALKABLE", "defines reaches()"]


# ------------------------------------------------------------------------ module size
LINE_LIMIT = 400
#: Engine modules whose size is data rather than logic (config.py: the declarations of every key).
DATA_MODULES = {"nmmo/config.py"}


def test_engine_modules_stay_small():
    """A module past the limit has more than one concern: split it along its seams (as env.py's
    step accounting went to nmmo/outcomes.py and its action parsing to nmmo/actions.py)."""
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in (ROOT / "nmmo").rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > LINE_LIMIT and name not in DATA_MODULES} == {}
