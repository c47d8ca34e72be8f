"""The bounded loader: size before parsing, then UTF-8, depth, syntax, duplicate keys, NaN/Infinity."""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, JsonBounds, QualificationError, load_json, read_bounded


def _code(data: bytes, bounds: JsonBounds | None = None) -> Code:
    with pytest.raises(QualificationError) as caught:
        load_json(data, what="input", bounds=bounds)
    assert caught.value.message.startswith("input: "), "the message names the input"
    return caught.value.code


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b'{"a": 1, "a": 2}', Code.JSON_DUPLICATE_KEY),
        (b'{"outer": {"k": 1, "k": 1}}', Code.JSON_DUPLICATE_KEY),
        (b'[{"k": 1}, {"k": 1, "k": 1}]', Code.JSON_DUPLICATE_KEY),
        (b'{"n": NaN}', Code.JSON_NONFINITE),
        (b'{"n": Infinity}', Code.JSON_NONFINITE),
        (b'[-Infinity]', Code.JSON_NONFINITE),
        (b'{"s": "\xff"}', Code.JSON_INVALID_UTF8),
        (b'\xef\xbb', Code.JSON_INVALID_UTF8),
        (b'{"a": 1', Code.JSON_MALFORMED),
        (b'{"a": 1} {"b": 2}', Code.JSON_MALFORMED),
        (b"", Code.JSON_MALFORMED),
        (b"{'a': 1}", Code.JSON_MALFORMED),
        (b'{"a": 01}', Code.JSON_MALFORMED),
    ],
    ids=["dup", "dup-nested", "dup-in-list", "nan", "inf", "neg-inf", "bad-utf8", "cut-utf8", "cut", "two-docs",
         "empty", "single-quotes", "leading-zero"],
)
def test_each_defect_has_its_code(data: bytes, code: Code) -> None:
    assert _code(data) is code


def test_valid_json_is_returned() -> None:
    assert load_json(b'{"a": [1, 2.5, "x", null, true]}', what="input") == {"a": [1, 2.5, "x", None, True]}


def test_size_is_checked_before_anything_is_decoded() -> None:
    # Oversized and invalid UTF-8 and malformed: the size is what is reported.
    assert _code(b"\xff" * 101, JsonBounds(max_bytes=100)) is Code.EVIDENCE_TOO_LARGE
    assert load_json(b" " * 96 + b"[1]", what="input", bounds=JsonBounds(max_bytes=99)) == [1]
    assert _code(b" " * 97 + b"[1]", JsonBounds(max_bytes=99)) is Code.EVIDENCE_TOO_LARGE


def test_depth_limit_is_exact_and_ignores_brackets_in_strings() -> None:
    bounds = JsonBounds(max_depth=5)
    assert load_json(b"[[[[[]]]]]", what="input", bounds=bounds) == [[[[[]]]]]
    assert _code(b"[[[[[[]]]]]]", bounds) is Code.JSON_TOO_DEEP
    assert _code(b'{"a":{"b":{"c":{"d":{"e":{}}}}}}', bounds) is Code.JSON_TOO_DEEP
    # Brackets inside strings, escaped quotes included, do not count as nesting.
    assert load_json(b'["[[[[[[[[", "\\"[[[[[[[["]', what="input", bounds=bounds) == ["[[[[[[[[", '"[[[[[[[[']


def test_depth_is_checked_before_syntax() -> None:
    assert _code(b"[" * 100, JsonBounds(max_depth=24)) is Code.JSON_TOO_DEEP


def test_a_loosened_depth_bound_still_never_leaks_a_recursion_error() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    assert _code(deep, JsonBounds(max_bytes=10**6, max_depth=10**6)) is Code.JSON_MALFORMED


def test_a_hostile_key_is_not_echoed_whole() -> None:
    key = "k" * 5000
    with pytest.raises(QualificationError) as caught:
        load_json(f'{{"{key}": 1, "{key}": 2}}'.encode(), what="input")
    assert len(caught.value.message) < 200


def test_read_bounded(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, max_bytes=10) == b"x" * 10
    with pytest.raises(QualificationError) as caught:
        read_bounded(path, max_bytes=9)
    assert caught.value.code is Code.EVIDENCE_TOO_LARGE
    with pytest.raises(QualificationError) as caught:
        read_bounded(tmp_path / "absent.json", max_bytes=10)
    assert caught.value.code is Code.EVIDENCE_MISSING
    with pytest.raises(QualificationError) as caught:
        read_bounded(tmp_path, max_bytes=10)
    assert caught.value.code is Code.EVIDENCE_UNEXPECTED


@pytest.mark.parametrize(
    ("code", "status"),
    [(Code.JSON_MALFORMED, 1), (Code.SIGNER_UNTRUSTED, 1), (Code.POLICY_INVALID, 2), (Code.KEY_INVALID, 2),
     (Code.USAGE, 2), (Code.ENVIRONMENT, 2)],
)
def test_exit_status_and_diagnostics(code: Code, status: int) -> None:
    error = QualificationError(code, "what went wrong", hint="what to do")
    assert error.exit_status == status
    assert error.diagnostics() == f"{code.value}: what went wrong\n  hint: what to do"
    assert QualificationError(code, "m").diagnostics() == f"{code.value}: m"
