"""What "refused with a stable code" means, checked in one place for every target."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from desktop_qualify.evidence_schemas import Code, QualificationError

T = TypeVar("T")

# Codes each layer may refuse with; a code outside its layer's set means a
# check ran that should not have (or a refusal took the wrong path).
JSON_CODES = frozenset({Code.JSON_MALFORMED, Code.JSON_DUPLICATE_KEY, Code.JSON_NONFINITE, Code.JSON_INVALID_UTF8,
                        Code.JSON_TOO_DEEP, Code.EVIDENCE_TOO_LARGE})
ENVELOPE_CODES = JSON_CODES | {Code.SCHEMA_INVALID, Code.SIGNATURE_MISSING}
STATEMENT_CODES = JSON_CODES | {Code.SCHEMA_INVALID, Code.PREDICATE_TYPE_UNKNOWN}
TRUST_CODES = ENVELOPE_CODES | {Code.SIGNATURE_INVALID, Code.SIGNER_UNTRUSTED}

# A code as the commands print it: first on a line ("QE_X: ..." on stderr, "  QE_X [linux]: ..." in a verdict).
_CODE_TOKEN = re.compile(r"^\s*(QE_[A-Z0-9_]+)\b", re.MULTILINE)
_STABLE = frozenset(code.value for code in Code)
# A caught bug, however it is spelt: newer versions list QE_INTERNAL among the codes, but it is never a refusal.
INTERNAL = "QE_INTERNAL"


class PropertyViolationError(AssertionError):
    """A property does not hold; ``kind`` is stable across runs so that a known bug can be recognised."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def expect(condition: bool, kind: str, detail: str | Callable[[], str] = "") -> None:
    if not condition:
        raise PropertyViolationError(kind, detail() if callable(detail) else detail)


def refused_or_returned(target: str, call: Callable[[], T], allowed: Iterable[Code] | None = None,
                        ) -> tuple[T | None, QualificationError | None]:
    """Run ``call``: its result, or the QualificationError it raised after checking its code.

    Any other exception propagates untouched: that is the bug the properties
    look for, and the runner names it by where it was raised.
    """
    try:
        return call(), None
    except QualificationError as exc:
        error = exc
    expect(isinstance(error.code, Code), f"{target}:code-not-stable", f"{error.code!r} is not a Code member")
    expect(error.code.value != INTERNAL, f"{target}:internal-error", error.diagnostics()[:500])
    if allowed is not None:
        codes = frozenset(allowed)
        expect(error.code in codes, f"{target}:unexpected-code:{error.code.value}",
               lambda: f"{error.diagnostics()[:500]} (expected one of {sorted(c.value for c in codes)})")
    return None, error


def codes_in(text: str) -> list[str]:
    return _CODE_TOKEN.findall(text)


def expect_stable_codes(target: str, text: str) -> None:
    """Every code a command printed is a documented one (QE_INTERNAL, a caught bug, is checked before this)."""
    unknown = sorted({code for code in codes_in(text) if code not in _STABLE or code == INTERNAL})
    expect(not unknown, f"{target}:unstable-code-printed:{','.join(unknown)[:80]}", lambda: text[-2000:])
    expect("Traceback (most recent call last)" not in text, f"{target}:traceback-printed", lambda: text[-2000:])


def is_usage_code(code: str) -> bool:
    return QualificationError(Code(code), "").exit_status == 2


def flatten(value: Any) -> Iterable[Any]:
    """Every node of a JSON value, depth-first."""
    stack = [value]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
