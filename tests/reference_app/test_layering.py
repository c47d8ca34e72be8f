"""The reference app's layering, read from its source (reference_app/README.md, "Layout").

Every import of every module under ``reference_app/skillhost`` is read with
``ast``: the deferred ones inside functions (the OS sandbox's platform modules
are loaded that way) and the ``TYPE_CHECKING`` ones too. A *part* is one
subpackage (``skillhost.journey``) or one top-level module (``skillhost._cli``).
The rules: the subpackages import only the ones below them in ``ORDER``; no
loop between parts nor between modules; no part reaches into another
subpackage's private modules (its ``__init__`` is its surface); the OS
sandbox's platform modules never import their dispatcher; the worker loads
nothing of the app but itself and the OS sandbox, and no third-party library.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from support.graphs import loops, part_graph, part_of

APP_DIR = Path(__file__).resolve().parents[2] / "reference_app"
# Lowest first: each subpackage may import the ones before it, never one after it.
ORDER = ("os_sandbox", "worker", "packaging", "brokers", "host", "journey")
DISPATCHER = ("skillhost.os_sandbox", "skillhost.os_sandbox._dispatch")


def _modules(root: Path) -> dict[str, Path]:
    """Module name -> file for the ``skillhost`` package under ``root`` (bundled skills are data, not modules)."""
    found = {}
    for path in sorted((root / "skillhost").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "bundled_skills" in parts:
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(path: Path) -> Iterable[str]:
    """Every name an import of ``path`` reaches; ``from X import Y`` is ``X.Y`` (Y may be a module)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"{path}: a relative import (the app imports by absolute path)")


def module_graph(root: Path = APP_DIR) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> app modules it imports, module -> third-party top-level names it imports)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    libraries: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target in _imported(path):
            owner = target
            while owner and owner not in modules:
                owner = owner.rpartition(".")[0]
            top = target.split(".", maxsplit=1)[0]
            if owner:
                if owner != name:
                    graph[name].add(owner)
            elif top not in sys.stdlib_module_names and top != "__future__":
                libraries[name].add(top)
    return graph, libraries




def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """Each import of a subpackage by one at or below it in ``ORDER`` (or of one ``ORDER`` does not name)."""
    rank = {f"skillhost.{name}": i for i, name in enumerate(ORDER)}
    found = []
    for module, targets in sorted(graph.items()):
        own = part_of(module)
        if own == "skillhost" or own.count(".") != 1 or own.split(".")[1].startswith("_"):
            continue  # the root and the top-level modules: held by the loop rule only
        if own not in rank:
            found.append(f"{own}: a subpackage ORDER does not place")
            continue
        found += [f"{module} imports {target}, which is not below {own}" for target in sorted(targets)
                  if part_of(target) in rank and part_of(target) != own and rank[part_of(target)] > rank[own]]
    return found


def private_crossings(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports of a subpackage's private module from outside that subpackage (its ``__init__`` is the way in)."""
    return [f"{module} imports {target}" for module, targets in sorted(graph.items()) for target in sorted(targets)
            if target.count(".") == 2 and part_of(target) != part_of(module)
            and target.rpartition(".")[2].startswith("_")]


def dispatcher_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """The OS sandbox's platform modules that import their dispatcher (directly or through the package surface)."""
    return [f"{module} imports {target}" for module, targets in sorted(graph.items())
            if part_of(module) == "skillhost.os_sandbox" and module not in DISPATCHER
            for target in sorted(targets) if target in DISPATCHER]


def worker_reach(graph: Mapping[str, set[str]], libraries: Mapping[str, set[str]]) -> list[str]:
    """What the worker's code loads beyond itself and the OS sandbox: app modules, then third-party libraries."""
    allowed = {"skillhost.worker", "skillhost.os_sandbox"}
    seen, todo = set(), [m for m in graph if part_of(m) == "skillhost.worker"]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += graph[module]
    return sorted(m for m in seen if part_of(m) not in allowed) + sorted(
        f"{m} imports {lib}" for m in seen for lib in libraries.get(m, ()))


@pytest.fixture(scope="module")
def app() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    return module_graph()


def test_the_subpackages_are_the_ones_ordered(app):
    graph, _ = app
    subpackages = {part_of(m) for m in graph if m.count(".") == 1 and (APP_DIR / Path(*m.split("."))).is_dir()}
    assert subpackages == {f"skillhost.{name}" for name in ORDER}


def test_each_subpackage_imports_only_the_ones_below_it(app):
    graph, _ = app
    assert upward_imports(graph) == []


def test_no_import_loop_between_parts_of_the_app(app):
    graph, _ = app
    assert loops(part_graph(graph)) == []


def test_no_import_loop_between_modules_of_the_app(app):
    graph, _ = app
    assert loops(graph) == []


def test_no_part_reaches_into_another_subpackages_private_modules(app):
    graph, _ = app
    assert private_crossings(graph) == []


def test_the_platform_sandbox_modules_do_not_import_their_dispatcher(app):
    graph, _ = app
    platform_modules = [m for m in graph if part_of(m) == "skillhost.os_sandbox" and m not in DISPATCHER]
    assert len(platform_modules) >= 4, platform_modules
    assert dispatcher_imports(graph) == []


def test_the_worker_loads_only_itself_the_os_sandbox_and_the_standard_library(app):
    graph, libraries = app
    assert worker_reach(graph, libraries) == []


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for name, source in files.items():
        path = tmp_path / "skillhost" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return tmp_path


def test_the_rules_find_what_they_forbid(tmp_path):
    """A tree breaking every rule once: each check names its breach (a check that cannot fail holds nothing)."""
    root = _tree(tmp_path, {
        "__init__.py": "",
        "os_sandbox/__init__.py": "from skillhost.os_sandbox._dispatch import confine\n",
        "os_sandbox/_dispatch.py": "def confine():\n    from skillhost.os_sandbox._linux import apply\n",
        "os_sandbox/_linux.py": "from skillhost.os_sandbox._dispatch import confine\n",
        "worker/__init__.py": "import cryptography\nfrom skillhost.host import run\n",
        "host/__init__.py": "from skillhost.worker import main\nfrom skillhost.journey._run import go\n",
        "journey/__init__.py": "",
        "journey/_run.py": "from skillhost.host import run\n",
    })
    graph, libraries = module_graph(root)
    assert dispatcher_imports(graph) == ["skillhost.os_sandbox._linux imports skillhost.os_sandbox._dispatch"]
    assert sorted(loops(graph)) == [["skillhost.host", "skillhost.journey._run", "skillhost.worker"],
                                    ["skillhost.os_sandbox._dispatch", "skillhost.os_sandbox._linux"]]
    assert loops(part_graph(graph)) == [["skillhost.host", "skillhost.journey", "skillhost.worker"]]
    assert private_crossings(graph) == ["skillhost.host imports skillhost.journey._run"]
    assert upward_imports(graph) == [
        "skillhost.host imports skillhost.journey._run, which is not below skillhost.host",
        "skillhost.worker imports skillhost.host, which is not below skillhost.worker",
    ]
    assert worker_reach(graph, libraries) == [
        "skillhost.host", "skillhost.journey._run", "skillhost.worker imports cryptography"]


def test_a_relative_import_is_refused_rather_than_misread(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "host/__init__.py": "from . import _host\n"})
    with pytest.raises(AssertionError, match="relative import"):
        module_graph(root)
