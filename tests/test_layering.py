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
