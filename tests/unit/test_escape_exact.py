"""consumer/_escape.py's output, byte for byte (the property tests hold that no markup starts; these, what is shown).

Mutants that survived the property tests changed what a reader sees (the joiner of flattened lines, the escaped
dot of ``www.``, the backtick and pipe of a code span) while still starting no markup.
"""

from __future__ import annotations

from desktop_qualify.consumer._escape import md_code, md_text, one_line


def test_lines_are_joined_by_one_space() -> None:
    assert one_line("a\nb\r\nc\u2028d") == "a b c d"


def test_www_and_punctuation_are_escaped_exactly() -> None:
    assert md_text("see WWW.example.org") == "see WWW\\.example.org"
    assert md_text("a|b:c") == "a\\|b\\:c"


def test_a_code_span_turns_a_backtick_into_a_quote_and_escapes_a_pipe() -> None:
    assert md_code("x`y|z\nw") == "`x'y\\|z w`"
