"""The layering of docs/design.md §6, read from the source: the package table (docs/architecture.md) is the rule.

Every ``import`` and ``from ... import`` of every package mapped in
pyproject.toml is read with ``ast``, the deferred ones inside functions and the
``TYPE_CHECKING`` ones too, and each ``desktop_qualify.X`` import is resolved to
the folder pyproject.toml maps it from. The table in docs/architecture.md ("may import") must
name exactly what each package imports, project packages and third-party
libraries alike: an import the table does not allow fails, and so does an
allowance nothing uses, so the table and the code cannot drift. On top of it:
no loop between packages, the three stages apart, no shared layer above a
stage, no private module reached across packages, no import of the reference app.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.graphs import loops

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"]
STAGES = {"producer", "aggregate", "consumer"}
ROOT_PACKAGE = "desktop_qualify"
PREFIX = ROOT_PACKAGE + "."
# The reference app has a row in the table, but it is not a package of the pipeline: built and run, never imported.
APP_ROW = "reference_app/"
FOLDERS = sorted(path for name, path in PACKAGE_DIRS.items() if name != ROOT_PACKAGE)
ALL_FOLDERS = sorted(PACKAGE_DIRS.values())


def _imports(folder: str, root: Path = REPO, package_dirs: Mapping[str, str] = PACKAGE_DIRS) -> list[tuple[Path, str]]:
    """(file, imported module) for every import in a package folder, relative imports resolved.

    ``from X import Y`` is read as ``X.Y``: Y may be a module, and an attribute resolves to X's folder anyway.
    """
    found = []
    package = next((name for name, path in package_dirs.items() if path == folder), PREFIX + folder)
    for path in sorted((root / folder).rglob("*.py")):
        own = [*package.split("."), *path.relative_to(root / folder).parent.parts]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(path, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*own[: len(own) - node.level + 1], base]).strip(".")
                found += [(path, f"{base}.{alias.name}") for alias in node.names]
    return found


def _folder_of(module: str, package_dirs: Mapping[str, str] = PACKAGE_DIRS) -> str | None:
    """The folder a ``desktop_qualify`` module is read from (its longest mapped package), None outside the project."""
    if module != ROOT_PACKAGE and not module.startswith(PREFIX):
        return None
    owner = max((name for name in package_dirs if module == name or module.startswith(name + ".")), key=len)
    return package_dirs[owner]


def _third_party(module: str) -> str | None:
    """The top-level name of an import from neither the project nor the standard library, else None."""
    top = module.split(".", maxsplit=1)[0]
    if not top or top in {ROOT_PACKAGE, "__future__"} or top in sys.stdlib_module_names:
        return None
    return top


def _private_crossings(folder: str, root: Path = REPO, package_dirs: Mapping[str, str] = PACKAGE_DIRS) -> list[str]:
    crossings = []
    for path, module in _imports(folder, root, package_dirs):
        layer = _folder_of(module, package_dirs)
        if layer is None or layer == folder:
            continue
        owner = next(name for name, path in package_dirs.items() if path == layer)
        inner = module[len(owner):].split(".")
        if any(part.startswith("_") and not part.startswith("__") for part in inner):
            crossings.append(f"{path.relative_to(root)} imports {module}")
    return crossings


def actual_imports(root: Path = REPO, package_dirs: Mapping[str, str] = PACKAGE_DIRS) -> dict[str, set[str]]:
    """Each folder's imports of other folders (project) and of third-party libraries (top-level names)."""
    found: dict[str, set[str]] = {}
    for folder in sorted(package_dirs.values()):
        names: set[str] = set()
        for _, module in _imports(folder, root, package_dirs):
            layer = _folder_of(module, package_dirs)
            if layer is not None and layer != folder:
                names.add(layer)
            elif (library := _third_party(module)) is not None:
                names.add(library)
        found[folder] = names
    return found


def package_table(readme: str) -> dict[str, set[str]]:
    """The package table: each package named in the first column -> the names its "may import" allows.

    Only names in backticks count; the rest of a cell is commentary.
    """
    lines = readme.splitlines()
    header = next((i for i, line in enumerate(lines)
                   if re.fullmatch(r"\|\s*package\s*\|\s*does\s*\|\s*may import\s*\|", line.strip())), None)
    if header is None:
        raise AssertionError('docs/architecture.md has no "| package | does | may import |" table')
    table: dict[str, set[str]] = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            raise AssertionError(f"package table: a row without 3 cells: {line!r}")
        allowed = set(re.findall(r"`([^`]+)`", cells[2]))
        for package in re.findall(r"`([^`]+)`", cells[0]):
            if package in table:
                raise AssertionError(f"package table: {package} has two rows")
            table[package] = allowed
    return table


def table_problems(actual: Mapping[str, set[str]], table: Mapping[str, set[str]]) -> list[str]:
    """Where the table and the code disagree, both ways, as sentences to act on."""
    problems = [f"{package}: a row in the package table (docs/architecture.md), but no package of pyproject.toml"
                for package in sorted(set(table) - set(actual) - {APP_ROW})]
    for folder, names in sorted(actual.items()):
        if folder not in table:
            problems.append(f"{folder}: no row in the package table (docs/architecture.md)")
            continue
        problems += [f"{folder} imports {name}, which its row does not allow" for name in sorted(names - table[folder])]
        problems += [f"{folder}: its row allows {name}, which it does not import (drop it)"
                     for name in sorted(table[folder] - names)]
    return problems


def test_every_import_between_packages_is_the_one_the_readme_table_allows() -> None:
    table = package_table((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    problems = table_problems(actual_imports(), table)
    assert not problems, "\n".join(problems)


def test_no_loop_between_packages() -> None:
    actual = actual_imports()
    graph = {folder: names & set(actual) for folder, names in actual.items()}
    assert loops(graph) == []


def test_the_table_check_finds_an_undeclared_import_and_a_stale_allowance(tmp_path: Path) -> None:
    for folder, source in {"low": "import pydantic\n", "high": "from desktop_qualify.low import thing\n",
                           "core": ""}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text(source)
    dirs = {ROOT_PACKAGE: "core", **{PREFIX + name: name for name in ("low", "high")}}
    readme = ("| package | does | may import |\n|---|---|---|\n"
              "| `low` | x | `rfc8785` and `pydantic` |\n| `high` | x | nothing |\n| `gone` | x | — |\n")
    assert table_problems(actual_imports(tmp_path, dirs), package_table(readme)) == [
        "gone: a row in the package table (docs/architecture.md), but no package of pyproject.toml",
        "core: no row in the package table (docs/architecture.md)",
        "high imports low, which its row does not allow",
        "low: its row allows rfc8785, which it does not import (drop it)",
    ]


def test_the_loop_check_finds_every_loop() -> None:
    assert loops({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert loops({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_imports_resolve_to_their_folders() -> None:
    assert _folder_of("desktop_qualify.evidence_schemas._bounded.load_json") == "evidence_schemas"
    assert _folder_of("desktop_qualify.__version__") == ROOT_PACKAGE
    assert _folder_of("desktop_qualify.qualify_errors.Code") == "qualify_errors"
    assert _folder_of("pydantic.main") is None
    assert _third_party("github.Auth") == "github"
    assert _third_party("os.path") is None


@pytest.mark.parametrize("folder", ALL_FOLDERS)
def test_no_package_imports_another_packages_private_module(folder: str) -> None:
    crossings = _private_crossings(folder)
    assert not crossings, crossings


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_the_three_stages_never_import_each_other(stage: str) -> None:
    crossings = [f"{path.relative_to(REPO)} imports {module}" for path, module in _imports(stage)
                 if _folder_of(module) in STAGES - {stage}]
    assert not crossings, crossings


@pytest.mark.parametrize("folder", ALL_FOLDERS)
def test_the_pipeline_never_imports_the_reference_app(folder: str) -> None:
    assert not [module for _, module in _imports(folder) if module.split(".")[0] in {"skillhost", "reference_app"}]


def test_shared_layers_never_import_a_stage() -> None:
    shared = [folder for folder in ALL_FOLDERS if folder not in STAGES | {"qualify_cli"}]
    crossings = [f"{path.relative_to(REPO)} imports {module}" for folder in shared
                 for path, module in _imports(folder) if _folder_of(module) in STAGES]
    assert not crossings, crossings


def test_the_check_finds_a_private_import_in_every_spelling(tmp_path: Path) -> None:
    package = tmp_path / "intruder"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from desktop_qualify.qualify_trust._keys import keyid_of\n"
        "from desktop_qualify.producer import _build\n"
        "def later():\n    import desktop_qualify.qualify_archive._limits\n"
        "from . import _own\nfrom desktop_qualify.qualify_trust import verifier_for\n"
        "from desktop_qualify import __version__\n")
    dirs = {**PACKAGE_DIRS, PREFIX + "intruder": "intruder"}
    assert sorted(_private_crossings("intruder", tmp_path, dirs)) == [
        "intruder/__init__.py imports desktop_qualify.producer._build",
        "intruder/__init__.py imports desktop_qualify.qualify_archive._limits",
        "intruder/__init__.py imports desktop_qualify.qualify_trust._keys.keyid_of",
    ]


def test_the_distributions_version_is_the_packages() -> None:
    """pyproject reads desktop_qualify.__version__; what pip installed says the same (one source of truth)."""
    from importlib.metadata import version

    import desktop_qualify

    assert version("desktop-qualify") == desktop_qualify.__version__
    assert "version" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dynamic"]
