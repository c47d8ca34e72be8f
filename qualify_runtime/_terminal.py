"""Text for a terminal or a CI log, from evidence that may be hostile.

Evidence strings (reasons quoting a record, app output excerpts, file names)
reach the screen. A control character in them could move the cursor, rewrite
an earlier line (a forged "QUALIFIED"), or set the window title; so every
control and format character except the newline and the tab is shown as its
escape (``\\x1b``, ``\\u202e``) instead of being sent.
"""

from __future__ import annotations

import unicodedata

_KEPT = frozenset("\n\t")


def _shown(char: str) -> str:
    if char in _KEPT or unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp"):
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control, format and separator character escaped, newlines and tabs kept."""
    return "".join(map(_shown, text))


def _field_char(char: str) -> str:
    if unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp"):
        return char
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_field(text: object) -> str:
    """One evidence field on one line: newlines and tabs escaped too, so a field can never start a line of its own."""
    return "".join(map(_field_char, str(text)))
