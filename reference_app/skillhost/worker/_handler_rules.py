"""Static rules for external handler source, shared by the host audit and the worker.

Standard library only (``ast``, ``string``): the worker imports this module, and
the worker must load no host module. ``check_source`` parses (never compiles or
runs) the source and returns the first violation as ``(code, message)``.

These rules are defence in depth, not a security boundary (README, "Known
boundaries"): they close the reflection paths we know of (frames reached
through generators and tracebacks, code objects, ``string.Formatter`` as a
``getattr`` stand-in, dunder and ``mro`` walks to ``__subclasses__``), and a
determined handler may still find one we do not know of.
"""

from __future__ import annotations

import ast
import string

# Handlers may import exactly these top-level modules (no dotted names: ``collections.abc``
# hands out ``sys``), and receive a view of each one's public functions, never the module.
ALLOWED_HANDLER_IMPORTS = frozenset(
    {"json", "math", "re", "datetime", "itertools", "functools", "collections", "string", "textwrap"}
)
# Names that hand out the interpreter itself: builtins tables, frames, code objects, reflection, getattr stand-ins.
FORBIDDEN_NAMES = frozenset(
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
        "dir",
        "type",
        "object",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "memoryview",
        "help",
        "exit",
        "quit",
        "Formatter",
        "update_wrapper",
        "wraps",
        "singledispatch",
        "singledispatchmethod",
    }
)
# Attribute names that reach frames, code objects, tracebacks, the MRO, or read attributes by a runtime string.
FORBIDDEN_ATTRS = frozenset(
    {
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "mro",
        "get_field",
        "format_map",
        "Formatter",
        "update_wrapper",
        "wraps",
        "singledispatch",
        "singledispatchmethod",
    }
)
# Generator, coroutine and async-generator frames and code, code-object fields, traceback links.
FORBIDDEN_ATTR_PREFIXES = ("_", "gi_", "cr_", "ag_", "co_", "tb_")
MAX_SOURCE = 32 * 1024

Violation = tuple[str, str]


def attr_forbidden(name: str) -> bool:
    return name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES)


def _template_violation(template: str) -> Violation | None:
    """A literal ``str.format`` template may not walk into a forbidden attribute (``{0.gi_frame}``)."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return ("CC_SKILL_HANDLER_REJECTED", "malformed format template")
    for _, field_name, spec, _ in fields:
        for part in (field_name or "").replace("[", ".").replace("]", ".").split(".")[1:]:
            if part and attr_forbidden(part):
                return ("CC_SKILL_HANDLER_REJECTED", f"format template reaches .{part[:40]}")
        if spec and "{" in spec:
            nested = _template_violation(spec)
            if nested:
                return nested
    return None


def _import_violation(node: ast.Import | ast.ImportFrom) -> Violation | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_HANDLER_IMPORTS:
                return ("CC_SKILL_IMPORT_DENIED", f"import {alias.name[:60]}")
        return None
    if node.level or (node.module or "") not in ALLOWED_HANDLER_IMPORTS:
        return ("CC_SKILL_IMPORT_DENIED", f"import from {(node.module or '.')[:60]}")
    for alias in node.names:
        if alias.name == "*" or alias.name in FORBIDDEN_NAMES or attr_forbidden(alias.name):
            return ("CC_SKILL_HANDLER_REJECTED", f"import of {alias.name[:40]} from {node.module}")
    return None


def _node_violation(node: ast.AST) -> Violation | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _import_violation(node)
    if isinstance(node, ast.Attribute):
        if attr_forbidden(node.attr):
            # ().__class__.__base__.__subclasses__(), gen.gi_frame.f_back.f_globals, ports._proto ...
            return ("CC_SKILL_HANDLER_REJECTED", f"forbidden attribute .{node.attr[:40]}")
        if node.attr == "format" and not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            # str.format / a template variable: the template is data the audit cannot see.
            return ("CC_SKILL_HANDLER_REJECTED", "str.format on a non-literal template")
        return None
    if isinstance(node, ast.Name):
        if node.id in FORBIDDEN_NAMES or node.id.startswith("__"):
            return ("CC_SKILL_HANDLER_REJECTED", f"forbidden name {node.id[:40]}")
        return None
    if isinstance(node, ast.MatchClass):
        # ``case C(gi_frame=f)`` reads attributes without an Attribute node.
        for attr in node.kwd_attrs:
            if attr_forbidden(attr):
                return ("CC_SKILL_HANDLER_REJECTED", f"forbidden attribute pattern {attr[:40]}")
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if "__" in node.value:
            # String-built attribute names reach dunders without an Attribute node.
            return ("CC_SKILL_HANDLER_REJECTED", "dunder name inside a string constant")
        if "{" in node.value:
            return _template_violation(node.value)
    return None


def check_source(source: str, filename: str = "<external-skill>") -> Violation | None:
    """Return the first rule the handler source breaks, or ``None``.

    ``filename`` is what the parse is reported under: the host passes its own, which its boundary trap knows
    for a parse (no code object), so that the trap can tell it from a compile of external code in the host.
    """
    if len(source) > MAX_SOURCE:
        return ("CC_SKILL_HANDLER_INVALID", "handler source too large")
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ("CC_SKILL_HANDLER_INVALID", "handler does not parse")
    for node in ast.walk(tree):
        found = _node_violation(node)
        if found:
            return found
    return None
