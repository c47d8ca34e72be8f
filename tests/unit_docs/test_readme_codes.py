"""The table of stable codes (docs/codes.md) is part of the contract: every code is documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code

README = Path(__file__).resolve().parents[2] / "README.md"
CODES = README.parent / "docs" / "codes.md"


@pytest.mark.parametrize("code", list(Code), ids=lambda c: c.value)
def test_every_code_is_in_the_table(code: Code) -> None:
    assert f"| `{code.value}` |" in CODES.read_text(encoding="utf-8")


def test_readme_gives_the_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "nox -s qualify" in text
    assert "nox -s tests" in text
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "nox -s tests" in ci
