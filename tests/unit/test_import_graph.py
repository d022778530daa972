"""The package's import graph: no module imports itself through others (a cycle makes the import
order decide what is defined, and the two modules one idea), and the DAGs and the plugin reach
reconciliation through its front door only."""

from __future__ import annotations

import ast
from pathlib import Path

import boardstream
from boardstream import reconcile

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(boardstream.__file__).parent


def module_imports(tree: ast.Module, modules: set[str]) -> set[str]:
    """The package's modules a module's top level imports, ``if TYPE_CHECKING:`` blocks too:
    a cycle kept only for the type checker is a cycle all the same."""
    found: set[str] = set()
    nodes = [*tree.body]
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If):
            nodes.extend(node.body)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def graph(files: dict[str, Path]) -> dict[str, set[str]]:
    names = set(files)
    return {
        name: module_imports(ast.parse(path.read_text()), names) - {name}
        for name, path in files.items()
    }


def package_files() -> dict[str, Path]:
    files = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    assert cycles(graph(package_files())) == []


def test_a_cycle_kept_for_the_type_checker_is_found(tmp_path: Path) -> None:
    """The broken variant: checks imports baseline's Records, baseline imports checks' inputs
    behind ``if TYPE_CHECKING`` (as the two did before the rooms)."""
    (tmp_path / "checks.py").write_text("from pkg.baseline import Records\n")
    (tmp_path / "baseline.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from pkg.checks import CheckInputs\n"
    )
    files = {f"pkg.{path.stem}": path for path in tmp_path.glob("*.py")}
    assert cycles(graph(files)) == [["pkg.baseline", "pkg.checks"]]


def test_dags_and_the_plugin_reach_reconciliation_through_its_front_door() -> None:
    """`from boardstream.reconcile import NAME` for a name of its front door, nothing deeper."""
    deeper = []
    for path in [*(ROOT / "dags").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "boardstream.reconcile."
            ):
                deeper.append(f"{path.relative_to(ROOT)}: {node.module}")
            elif isinstance(node, ast.ImportFrom) and node.module == "boardstream.reconcile":
                deeper.extend(
                    f"{path.relative_to(ROOT)}: {alias.name}"
                    for alias in node.names
                    if alias.name not in reconcile._FRONT_DOOR
                )
    assert deeper == []
