"""A policy holding an integer longer than Python converts is invalid TOML to the loader, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy

REPO = Path(__file__).resolve().parents[2]


def test_an_integer_of_5000_digits_is_an_invalid_policy(tmp_path: Path) -> None:
    text = (REPO / "policies" / "local.toml").read_text(encoding="utf-8")
    path = tmp_path / "policy.toml"
    path.write_text(text.replace("max_statement_bytes = 1048576", "max_statement_bytes = " + "9" * 5000),
                    encoding="utf-8")
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    assert "invalid TOML" in caught.value.message
    assert len(caught.value.message) < 600
