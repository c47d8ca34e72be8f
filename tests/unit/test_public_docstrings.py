"""Every name a package exports is documented (tools/check_docstrings.py, run by `nox -s lint` beside ruff's D1).

ruff's pydocstyle rules count everything in a private module as private; the packages export from private
modules, so the checker follows each name in ``__all__`` to its definition.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from tools.check_docstrings import Missing, undocumented  # noqa: E402

PYPROJECT = """
[tool.setuptools.package-dir]
"desktop_qualify.alpha" = "alpha"
"desktop_qualify.beta" = "beta"
"desktop_qualify.schemas" = "schemas"
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _project(tmp_path: Path, *, alpha_private: str) -> Path:
    return _write(tmp_path, {
        "pyproject.toml": PYPROJECT,
        "schemas/__init__.py": "",  # a package of data: nothing exported, nothing checked
        "alpha/__init__.py": '''
            """Alpha."""
            from typing import TYPE_CHECKING
            from desktop_qualify.beta import Shared
            from ._impl import LIMIT, Documented, helper
            __all__ = ["LIMIT", "Documented", "Shared", "helper", "lazy", "os_path"]
            if TYPE_CHECKING:
                from ._late import lazy
            from os import path as os_path
        ''',
        "alpha/_impl.py": alpha_private,
        "alpha/_late.py": '''
            def lazy() -> None:
                pass
        ''',
        "beta/__init__.py": '''
            """Beta."""
            from ._shared import Shared
            __all__ = ["Shared"]
        ''',
        "beta/_shared.py": '''
            class Shared:
                """Documented where it is defined, in another package."""
        ''',
    })


DOCUMENTED = '''
    LIMIT = 3  # a constant cannot carry a docstring: not checked

    class Documented:
        """A documented class."""

        def method(self) -> None:
            """A documented method."""

        def _private(self) -> None:
            pass

        def __repr__(self) -> str:
            return "Documented"

    def helper() -> None:
        """A documented function."""

    def _unexported() -> None:
        pass
'''


def test_the_projects_exported_names_are_all_documented() -> None:
    missing = undocumented(REPO)
    assert not missing, "\n".join(str(m) for m in missing)


def test_a_documented_project_passes(tmp_path: Path) -> None:
    root = _project(tmp_path, alpha_private=DOCUMENTED)
    assert undocumented(root) == [Missing(Path("alpha/_late.py"), 2, "lazy", "desktop_qualify.alpha")]


def test_undocumented_exports_are_named_where_they_are_defined(tmp_path: Path) -> None:
    undocumented_private = DOCUMENTED.replace('"""A documented method."""', "pass").replace(
        '"""A documented function."""', "pass")
    root = _project(tmp_path, alpha_private=undocumented_private)
    _write(root, {"beta/_shared.py": "class Shared:\n    pass\n"})
    found = [(str(m.path), m.name, m.package) for m in undocumented(root)]
    assert found == [
        ("alpha/_impl.py", "Documented.method", "desktop_qualify.alpha"),
        ("alpha/_impl.py", "helper", "desktop_qualify.alpha"),
        ("alpha/_late.py", "lazy", "desktop_qualify.alpha"),
        # Re-exported by alpha too; named once, by the first package that exports it.
        ("beta/_shared.py", "Shared", "desktop_qualify.alpha"),
    ]


def test_the_command_names_each_one_and_exits_1(tmp_path: Path) -> None:
    root = _project(tmp_path, alpha_private=DOCUMENTED)
    done = subprocess.run([sys.executable, str(REPO / "tools" / "check_docstrings.py"), str(root)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1
    assert done.stdout == "alpha/_late.py:2: lazy (exported by desktop_qualify.alpha) has no docstring\n"
    assert "1 exported definition(s) without a docstring" in done.stderr
    _write(root, {"alpha/_late.py": 'def lazy() -> None:\n    """Documented now."""\n'})
    again = subprocess.run([sys.executable, str(REPO / "tools" / "check_docstrings.py"), str(root)],
                           capture_output=True, text=True, check=False, timeout=60)
    assert (again.returncode, again.stdout) == (0, "")
