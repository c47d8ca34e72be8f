"""The producer's layering, read from its source (docs/architecture.md, "The producer's parts").

Every import of every module under ``producer/`` is read with ``ast``: the
deferred ones inside functions and the ``TYPE_CHECKING`` ones too, relative
imports resolved and ``desktop_qualify.producer.X`` read as ``producer.X``. A
*part* is one subpackage (``producer.installers``) or one top-level module
(``producer._pipeline``). The rules: a subpackage imports only subpackages of a
lower tier in ``TIERS`` (never one of its own tier, one above, or a top-level
module of the producer); no loop between parts nor between modules; nothing
outside a subpackage reaches into its private modules (its ``__init__`` is its
surface). The top-level modules sit above every subpackage: the loop rule holds
them. The same rules as the reference app's (tests/reference_app/test_layering.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from support.graphs import loops, part_graph, part_of

REPO = Path(__file__).resolve().parents[2]
ROOT = "producer"
NAMESPACE = "desktop_qualify."
# Lowest first: a subpackage may import those of the tiers before its own, never one of its own tier or after it.
TIERS: tuple[tuple[str, ...], ...] = (
    ("processes",),
    ("os_signing", "source", "confinement"),
    # An installer checks an installer's own signature the way the platform's signer does (signtool's verify).
    ("installers",),
    ("previous",),
)


def _modules(root: Path) -> dict[str, Path]:
    """Module name (``producer.installers._deb``; a package by its own name) -> file, for every module under root."""
    found = {}
    for path in sorted((root / ROOT).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(name: str, path: Path) -> Iterable[tuple[str, str | None]]:
    """(module, name) for each ``from module import name`` in module ``name``, (module, None) for ``import module``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name.removeprefix(NAMESPACE), None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], base]).strip(".")
            yield from ((base.removeprefix(NAMESPACE), alias.name) for alias in node.names)


def _owner(modules: Mapping[str, Path], module: str, name: str | None) -> str | None:
    """The producer's module an import loads: ``from X import Y`` is ``X.Y`` when a module, else ``X``.

    ``import a.b`` loads ``a.b`` (and its parents); a module that is not there (a file not yet written) is
    no edge of the graph rather than one to its package.
    """
    if name is not None and f"{module}.{name}" in modules:
        return f"{module}.{name}"
    if module in modules:
        return module
    if name is None:
        while module and module not in modules:
            module = module.rpartition(".")[0]
        return module or None
    return None


def module_graph(root: Path = REPO) -> tuple[dict[str, set[str]], set[str]]:
    """(module -> the producer's modules it imports, itself left out; the subpackages).

    A subpackage is every folder right below ``producer/`` that holds Python code, with an ``__init__`` or not:
    a folder without one is still a part to place.
    """
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for module, imported in _imported(name, path):
            owner = _owner(modules, module, imported)
            if owner is not None and owner != name:
                graph[name].add(owner)
    packages = {".".join(path.relative_to(root).parts[:2]) for path in modules.values()
                if len(path.relative_to(root).parts) > 2}
    return graph, packages




def _tier(part: str, packages: set[str]) -> int | None:
    """A part's tier: a subpackage's index in ``TIERS``, above them all for the root and a top-level module."""
    if part not in packages:
        return len(TIERS)
    return next((i for i, tier in enumerate(TIERS) if part.split(".")[1] in tier), None)


def upward_imports(graph: Mapping[str, set[str]], packages: set[str]) -> list[str]:
    """Each import of a part by a subpackage at or below its tier (or by one ``TIERS`` does not place)."""
    found = []
    for module, targets in sorted(graph.items()):
        own = part_of(module)
        if own not in packages:
            continue  # the root and the top-level modules: above every subpackage, held by the loop rule
        rank = _tier(own, packages)
        if rank is None:
            found.append(f"{own}: a subpackage TIERS does not place")
            continue
        for target in sorted(targets):
            other = part_of(target)
            other_rank = _tier(other, packages)
            if other != own and (other_rank is None or other_rank >= rank):
                what = "a top-level module" if other not in packages else "not below it"
                found.append(f"{module} imports {target}: {what} ({own})")
    return list(dict.fromkeys(found))


def private_crossings(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports of a subpackage's private module from outside that subpackage (its ``__init__`` is the way in)."""
    return [f"{module} imports {target}" for module, targets in sorted(graph.items()) for target in sorted(targets)
            if target.count(".") == 2 and part_of(target) != part_of(module)
            and target.rpartition(".")[2].startswith("_")]


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[str, set[str]], set[str]]:
    return module_graph()


@pytest.fixture(scope="module")
def producer(parsed) -> dict[str, set[str]]:
    return parsed[0]


def test_the_subpackages_are_the_ones_placed_in_tiers(parsed):
    _, packages = parsed
    assert packages == {f"{ROOT}.{name}" for tier in TIERS for name in tier}


def test_each_subpackage_imports_only_lower_tiers_and_no_top_level_module(parsed):
    graph, packages = parsed
    assert upward_imports(graph, packages) == []


def test_no_import_loop_between_parts_of_the_producer(producer):
    assert loops(part_graph(producer)) == []


def test_no_import_loop_between_modules_of_the_producer(producer):
    assert loops(producer) == []


def test_no_part_reaches_into_another_subpackages_private_modules(producer):
    assert private_crossings(producer) == []


def test_the_graph_reads_relative_absolute_and_deferred_imports(producer):
    """A graph that missed imports would pass every rule: a few known edges of each form must be in it."""
    assert "producer.processes" in producer["producer.installers._tools"]  # from ..processes import ...
    assert "producer.previous" in producer["producer._pipeline"]  # deferred, inside a function
    assert "producer.source._gate" in producer["producer.source._gate_github"]
    assert "producer._build_run" in producer["producer._reproduce"]
    assert "producer._build" not in producer["producer._reproduce"]


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for name, source in files.items():
        path = tmp_path / ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return tmp_path


def test_the_rules_find_what_they_forbid(tmp_path):
    """A tree breaking every rule once: each check names its breach (a check that cannot fail holds nothing)."""
    root = _tree(tmp_path, {
        "__init__.py": "from ._cli import main\n",
        "_cli.py": "from .source import gate\n",
        "_build.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._reproduce import Second\n",
        "_reproduce.py": "from desktop_qualify.producer._build import BuildRun\n",
        "processes/__init__.py": "def run():\n    from desktop_qualify.producer.installers import install\n",
        "installers/__init__.py": "from ._install import install\n",
        "installers/_install.py": "from ..source._gate import gate\nfrom .. import _cli\n",
        "source/__init__.py": "from ._gate import gate\n",
        "source/_gate.py": "from ..processes import run\n",
        # One of its own tier: confinement and source are both tier 2.
        "confinement/__init__.py": "from ..source import gate\n",
        "stray/_loose.py": "",
    })
    graph, packages = module_graph(root)
    assert packages == {"producer.processes", "producer.installers", "producer.source", "producer.confinement",
                        "producer.stray"}
    assert sorted(loops(graph)) == [
        ["producer._build", "producer._reproduce"],
        ["producer._cli", "producer.installers", "producer.installers._install", "producer.processes",
         "producer.source", "producer.source._gate"],
    ]
    assert sorted(loops(part_graph(graph))) == [
        ["producer._build", "producer._reproduce"],
        ["producer._cli", "producer.installers", "producer.processes", "producer.source"],
    ]
    assert private_crossings(graph) == ["producer.installers._install imports producer.source._gate"]
    assert upward_imports(graph, packages) == [
        "producer.confinement imports producer.source: not below it (producer.confinement)",
        "producer.installers._install imports producer._cli: a top-level module (producer.installers)",
        "producer.processes imports producer.installers: not below it (producer.processes)",
        "producer.stray: a subpackage TIERS does not place",
    ]
