"""Static audit of an external handler's source, in the host, before any worker starts.

This parses (never compiles or runs) the verified snapshot with the rules in
``_handler_rules``. It is a first filter, not the boundary: the worker applies
the same rules again before compiling, runs the handler with an allow-listed
set of builtins and module views instead of modules; and none of this is an OS
sandbox (README, "Known boundaries").
"""

from __future__ import annotations

from skillhost._errors import SkillError
from skillhost.packaging._boundary_trap import PARSE_FILENAME
from skillhost.worker import MAX_SOURCE, check_source

__all__ = ["MAX_SOURCE", "audit_external_source"]


def audit_external_source(source: str) -> None:
    """Raise ``CC_SKILL_IMPORT_DENIED`` / ``CC_SKILL_HANDLER_REJECTED`` / ``CC_SKILL_HANDLER_INVALID``."""
    found = check_source(source, PARSE_FILENAME)
    if found is not None:
        raise SkillError(*found)
