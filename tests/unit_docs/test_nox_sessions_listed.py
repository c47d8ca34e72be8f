"""`nox -l` prints noxfile.py's module docstring as its header: it names every session, one line each."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _sessions(tree: ast.Module) -> list[str]:
    """Every ``@nox.session``-decorated function's session name (its ``name=`` or the function's own name)."""
    names = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call is not None else decorator
            if ast.unparse(target) != "nox.session":
                continue
            given = [k.value for k in (call.keywords if call is not None else []) if k.arg == "name"]
            names.append(given[0].value if given and isinstance(given[0], ast.Constant) else node.name)
    return names


def test_the_nox_header_lists_every_session_once_with_one_line() -> None:
    tree = ast.parse((REPO / "noxfile.py").read_text(encoding="utf-8"))
    sessions = _sessions(tree)
    assert len(sessions) >= 11
    docstring = ast.get_docstring(tree) or ""
    listed = re.findall(r"^- ([\w-]+): \S", docstring, flags=re.MULTILINE)
    assert sorted(listed) == sorted(sessions), "noxfile.py's docstring lists a session per line: '- NAME: what'"
