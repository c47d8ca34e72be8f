"""The harness itself: a property test is only as good as its mutations, its TOML writer and its detectors."""

from __future__ import annotations

import base64
import tomllib

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError

from .baselines import policy_files
from .cli import CliRun, expect_cli_contract
from .mutations import apply_byte_ops, apply_json_ops
from .oracle import PropertyViolationError, refused_or_returned
from .runner import signature_of
from .toml_text import to_toml


def test_byte_operations_wrap_around_the_input() -> None:
    assert apply_byte_ops(b"abc", [["flip", 4, 0x20]]) == b"aBc"
    assert apply_byte_ops(b"abc", [["truncate", 2]]) == b"ab"
    assert apply_byte_ops(b"abc", [["insert", 3, base64.b64encode(b"!").decode()]]) == b"abc!"
    assert apply_byte_ops(b"abc", [["delete", 1, 5]]) == b"a"
    assert apply_byte_ops(b"", [["flip", 0, 1], ["delete", 0, 1]]) == b""


def test_json_operations_apply_in_place_and_skip_missing_paths() -> None:
    document = {"a": {"passed": True}, "b": [1]}
    assert apply_json_ops(document, [["set", ["a", "passed"], False], ["dup", ["b"]], ["add", [], "c", None]])
    assert document == {"a": {"passed": False}, "b": [1, 1], "c": None}
    assert not apply_json_ops(document, [["delete", ["zz", 0]], ["set", ["b", 9], 0], ["dup", ["a"]]])


def test_toml_writer_round_trips_the_committed_policies() -> None:
    for data in policy_files():
        document = tomllib.loads(data.decode())
        assert tomllib.loads(to_toml(document)) == document


def test_a_caught_bug_in_the_cli_is_a_violation_named_by_where_it_was_raised() -> None:
    err = ('Traceback (most recent call last):\n  File "/nowhere/x.py", line 3, in body\n'
           "ValueError: boom\nQE_INTERNAL: unexpected ValueError: boom (set QUALIFY_DEBUG=1 for details)\n")
    with pytest.raises(PropertyViolationError) as caught:
        expect_cli_contract("t", CliRun(2, "", err))
    assert caught.value.kind == "t:internal-error:ValueError"


def test_an_undocumented_code_or_an_exit_status_outside_0_to_2_is_a_violation() -> None:
    with pytest.raises(PropertyViolationError, match="unstable-code-printed:QE_MADE_UP"):
        expect_cli_contract("t", CliRun(1, "  QE_MADE_UP [linux]: no\n", ""))
    with pytest.raises(PropertyViolationError, match="exit-status-3"):
        expect_cli_contract("t", CliRun(3, "", "QE_USAGE: x\n"))


def test_refusals_are_checked_against_the_layer_codes() -> None:
    def refuse() -> None:
        raise QualificationError(Code.SCHEMA_INVALID, "shape")

    assert refused_or_returned("t", refuse, {Code.SCHEMA_INVALID})[1] is not None
    with pytest.raises(PropertyViolationError, match="unexpected-code:QE_SCHEMA_INVALID"):
        refused_or_returned("t", refuse, {Code.JSON_MALFORMED})


def test_a_signature_names_the_violation_or_the_raising_function() -> None:
    assert signature_of(PropertyViolationError("x:y", "detail")) == "violation:x:y"
    with pytest.raises(ValueError, match="invalid literal") as caught:
        int("not a number")
    assert signature_of(caught.value).startswith("ValueError@")
