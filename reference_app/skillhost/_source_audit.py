"""Static audit of an external handler's source, in the host, before any worker starts.

This parses (never compiles or runs) the verified snapshot. It is a first
filter, not the boundary: the worker repeats the import rule at run time and
runs without the removed builtins; and neither is an OS sandbox (README).
"""

from __future__ import annotations

import ast

from skillhost._errors import SkillError
from skillhost._worker import ALLOWED_HANDLER_IMPORTS

# Names that hand out the interpreter itself: builtins tables, frames, code objects, attribute reflection.
_FORBIDDEN_NAMES = frozenset(
    {
        "__import__",
        "__builtins__",
        "__loader__",
        "__spec__",
        "eval",
        "exec",
        "compile",
        "open",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "memoryview",
    }
)
MAX_SOURCE = 32 * 1024


def audit_external_source(source: str) -> None:
    """Raise ``CC_SKILL_IMPORT_DENIED`` / ``CC_SKILL_HANDLER_REJECTED`` / ``CC_SKILL_HANDLER_INVALID``."""
    if len(source) > MAX_SOURCE:
        raise SkillError("CC_SKILL_HANDLER_INVALID", "handler source too large")
    try:
        tree = ast.parse(source, filename="<external-skill>")
    except (SyntaxError, ValueError):
        raise SkillError("CC_SKILL_HANDLER_INVALID", "handler does not parse") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in ALLOWED_HANDLER_IMPORTS:
                    raise SkillError("CC_SKILL_IMPORT_DENIED", f"import {alias.name[:60]}")
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] not in ALLOWED_HANDLER_IMPORTS:
                raise SkillError("CC_SKILL_IMPORT_DENIED", f"import from {(node.module or '.')[:60]}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            # ().__class__.__base__.__subclasses__(), f.__globals__, ports._proto ...
            raise SkillError("CC_SKILL_HANDLER_REJECTED", f"private or dunder attribute .{node.attr[:40]}")
        elif isinstance(node, ast.Name) and (node.id in _FORBIDDEN_NAMES or node.id.startswith("__")):
            raise SkillError("CC_SKILL_HANDLER_REJECTED", f"forbidden name {node.id[:40]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__" in node.value:
            # "{0.__class__}".format(x) and string-built attribute names reach dunders without an Attribute node.
            raise SkillError("CC_SKILL_HANDLER_REJECTED", "dunder name inside a string constant")
