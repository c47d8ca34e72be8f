"""Every name a package exports has a docstring: its classes, functions, public methods (standard library only).

ruff's pydocstyle rules (D1) hold public modules and the public names in them, and count everything in a
private module (``_records.py``) as private. The packages keep their code in private modules and export it
through ``__all__``, so this check follows each exported name from ``__init__.py`` to the class or function
that defines it and requires a docstring there, and on each of that class's public methods. Constants and
type aliases cannot carry a docstring of their own and are not checked.

Usage: ``python tools/check_docstrings.py [ROOT]``; exit 1 naming each undocumented definition.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

NAMESPACE = "desktop_qualify"
Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Missing:
    """One exported definition without a docstring, and the package that exports it."""

    path: Path
    line: int
    name: str
    package: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} (exported by {self.package}) has no docstring"


def package_folders(root: Path) -> dict[str, Path]:
    """``desktop_qualify.<name>`` -> its folder, from pyproject's package map (the packages the wheel installs)."""
    with (root / "pyproject.toml").open("rb") as handle:
        mapping: dict[str, str] = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    return {package: root / folder for package, folder in mapping.items() if (root / folder / "__init__.py").is_file()}


def _exported(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, ast.List | ast.Tuple)):
            return [item.value for item in node.value.elts
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return []


class _Resolver:
    """Follows a name through ``from ... import`` statements to the module that defines it."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self._folders = folders
        self._trees: dict[Path, ast.Module] = {}

    def tree(self, path: Path) -> ast.Module:
        if path not in self._trees:
            self._trees[path] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        return self._trees[path]

    def _module_file(self, importer: Path, node: ast.ImportFrom) -> Path | None:
        """The file an import reads: relative to ``importer``, or a project package by its absolute name."""
        if node.level:
            base = importer.parent
            for _ in range(node.level - 1):
                base = base.parent
            parts = node.module.split(".") if node.module else []
        else:
            names = (node.module or "").split(".")
            if names[0] != NAMESPACE or len(names) < 2 or f"{NAMESPACE}.{names[1]}" not in self._folders:
                return None  # a third-party or standard-library name: not ours to document
            base, parts = self._folders[f"{NAMESPACE}.{names[1]}"], names[2:]
        target = base.joinpath(*parts)
        for candidate in (target.with_suffix(".py"), target / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def definition(self, path: Path, name: str, seen: frozenset[tuple[Path, str]] = frozenset()) -> \
            tuple[Path, ast.stmt] | None:
        """Where ``name`` is defined, following imports from ``path``; None for a name from outside the project."""
        if (path, name) in seen:
            return None
        seen = seen | {(path, name)}
        tree = self.tree(path)
        for node in tree.body:
            if isinstance(node, Definition) and node.name == name:
                return path, node
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return path, node
        # An import anywhere in the module: a re-export may sit under ``if TYPE_CHECKING:`` beside a lazy export.
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self._module_file(path, node)
                        return None if source is None else self.definition(source, alias.name, seen)
        return None


def _public_methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in cls.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.name.startswith("_")]


def undocumented(root: Path) -> list[Missing]:
    """Every exported class or function, and public method of an exported class, that has no docstring."""
    folders = package_folders(root)
    resolver = _Resolver(folders)
    missing: dict[tuple[Path, int], Missing] = {}
    for package, folder in sorted(folders.items()):
        init = folder / "__init__.py"
        for name in _exported(resolver.tree(init)):
            found = resolver.definition(init, name)
            if found is None or not isinstance(found[1], Definition):
                continue
            path, node = found
            where = path.relative_to(root)
            checked: list[tuple[str, Definition]] = [(name, node)]
            if isinstance(node, ast.ClassDef):
                checked += [(f"{name}.{method.name}", method) for method in _public_methods(node)]
            for label, definition in checked:
                if ast.get_docstring(definition) is None:
                    missing.setdefault((where, definition.lineno), Missing(where, definition.lineno, label, package))
    return sorted(missing.values(), key=lambda m: (str(m.path), m.line))


def main(argv: list[str] | None = None) -> int:
    """Print each undocumented exported definition; 0 when there is none, 1 otherwise."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    found = undocumented(root)
    for missing in found:
        print(missing)
    if found:
        print(f"{len(found)} exported definition(s) without a docstring", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
