"""The layout the design card names holds in the code: stages apart, shared layers below them, privates private.

Read from the source with ``ast``: every ``import`` and ``from ... import`` of
every package mapped in pyproject.toml, the deferred ones inside functions too.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"]
STAGES = {"producer", "aggregate", "consumer"}
PREFIX = "desktop_qualify."


def _imports(folder: str, root: Path = REPO) -> list[tuple[Path, str]]:
    """(file, imported module) for every import in a package folder, relative imports resolved."""
    found = []
    package = next((name for name, path in PACKAGE_DIRS.items() if path == folder), PREFIX + folder)
    for path in sorted((root / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(path, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
                # `from package import _private` names a module too.
                found += [(path, f"{base}.{alias.name}") for alias in node.names] + [(path, base)]
    return found


def _layer(module: str) -> str | None:
    """The top-level folder of a desktop_qualify module, or None for anything else."""
    if not module.startswith(PREFIX):
        return None
    return module[len(PREFIX):].split(".", maxsplit=1)[0]


FOLDERS = sorted(path for name, path in PACKAGE_DIRS.items() if name != "desktop_qualify")


def _private_crossings(folder: str, root: Path = REPO) -> list[str]:
    crossings = []
    for path, module in _imports(folder, root):
        layer = _layer(module)
        if layer is None or layer == folder:
            continue
        inner = module[len(PREFIX) + len(layer):].lstrip(".").split(".")
        if any(part.startswith("_") for part in inner if part):
            crossings.append(f"{path.relative_to(root)} imports {module}")
    return crossings


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_package_imports_another_packages_private_module(folder: str) -> None:
    crossings = _private_crossings(folder)
    assert not crossings, crossings


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_the_three_stages_never_import_each_other(stage: str) -> None:
    crossings = [f"{path.relative_to(REPO)} imports {module}" for path, module in _imports(stage)
                 if _layer(module) in STAGES - {stage}]
    assert not crossings, crossings


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_pipeline_never_imports_the_reference_app(folder: str) -> None:
    assert not [module for _, module in _imports(folder) if module.split(".")[0] in {"skillhost", "reference_app"}]


def test_shared_layers_never_import_a_stage() -> None:
    shared = [folder for folder in FOLDERS if folder not in STAGES | {"qualify_cli"}]
    crossings = [f"{path.relative_to(REPO)} imports {module}" for folder in shared
                 for path, module in _imports(folder) if _layer(module) in STAGES]
    assert not crossings, crossings


def test_the_check_finds_a_private_import_in_every_spelling(tmp_path: Path) -> None:
    package = tmp_path / "intruder"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from desktop_qualify.qualify_trust._keys import keyid_of\n"
        "from desktop_qualify.producer import _build\n"
        "def later():\n    import desktop_qualify.qualify_archive._limits\n"
        "from . import _own\nfrom desktop_qualify.qualify_trust import verifier_for\n")
    assert sorted(_private_crossings("intruder", tmp_path)) == [
        "intruder/__init__.py imports desktop_qualify.producer._build",
        "intruder/__init__.py imports desktop_qualify.qualify_archive._limits",
        "intruder/__init__.py imports desktop_qualify.qualify_trust._keys",
        "intruder/__init__.py imports desktop_qualify.qualify_trust._keys.keyid_of",
    ]


def test_the_distributions_version_is_the_packages() -> None:
    """pyproject reads desktop_qualify.__version__; what pip installed says the same (one source of truth)."""
    from importlib.metadata import version

    import desktop_qualify

    assert version("desktop-qualify") == desktop_qualify.__version__
    assert "version" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dynamic"]
