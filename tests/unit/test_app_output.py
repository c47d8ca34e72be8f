"""producer/_app_output.py: the app's probe and journey records are untrusted, bounded, strict (app contract v2)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import AppJourneyRecord, AppProbeRecord, Code, QualificationError
from desktop_qualify.producer._app_output import load_app_record, parse_app_record

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
LAYER = {"name": "seccomp", "applied": True, "detail": "filter mode 2"}
CHECK = {"name": "catalog-verified", "passed": True, "detail": "12 skills match"}


def _probe(**changes: Any) -> dict[str, Any]:
    return {"kind": "qualify-probe", "version": 2, "app_version": "0.1.0", "build_sha": SHA, "platform": "linux",
            "executable_sha256": "0" * 64, "checks": [CHECK], "isolation_layers": [LAYER], **changes}


def _journey(steps: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    step = {"id": "catalog-verified", "observed": "allow", "code": None, "errno": None, "detail": "ok"}
    return {"kind": "qualify-journey", "version": 2, "app_version": "0.1.0", "build_sha": SHA, "platform": "linux",
            "steps": [step] if steps is None else steps, "isolation_layers": [LAYER], **changes}


def _line(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def test_valid_records_parse() -> None:
    probe = parse_app_record(AppProbeRecord, b"  " + _line(_probe()) + b"\r\n", what="probe record")
    assert probe.build_sha == SHA
    assert [(c.name, c.passed) for c in probe.checks] == [("catalog-verified", True)]
    journey = parse_app_record(AppJourneyRecord, _line(_journey()), what="journey record")
    assert journey.steps[0].id == "catalog-verified"
    # Isolation layers are optional: an app without a sandbox of its own reports none.
    bare = {k: v for k, v in _probe().items() if k != "isolation_layers"}
    assert parse_app_record(AppProbeRecord, _line(bare), what="probe record").isolation_layers == []
    # Any code the evidence can hold parses; the policy's own pattern is applied when the journey is judged.
    other = _journey(steps=[{"id": "open-file", "observed": "reject", "code": "APP_DENIED", "errno": None,
                             "detail": ""}])
    assert parse_app_record(AppJourneyRecord, _line(other), what="journey record").steps[0].code == "APP_DENIED"


_STEP = _journey()["steps"][0]


@pytest.mark.parametrize(
    ("model", "data", "code"),
    [
        (AppProbeRecord, _line(_probe(extra="x")), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(build_sha=SHA.upper())), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(build_sha="abc")), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(executable_sha256="g" * 64)), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(checks=[{**CHECK, "passed": 1}])), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(checks=[{**CHECK, "name": "Catalog"}])), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(checks=[CHECK] * 33)), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line({k: v for k, v in _probe().items() if k != "checks"}), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(isolation_layers=[{**LAYER, "applied": "yes"}])), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(isolation_layers=[LAYER] * 17)), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(platform="beos")), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(kind="skillhost-probe")), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(version=1)), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(app_version="v" * 257)), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line([_probe()]), Code.SCHEMA_INVALID),
        (AppProbeRecord, _line(_probe(app_version="x" * 70_000)), Code.EVIDENCE_TOO_LARGE),
        (AppProbeRecord, _line(_probe()) + b" " * 70_000 + b"x", Code.EVIDENCE_TOO_LARGE),
        (AppProbeRecord, _line(_probe()) + _line(_probe()), Code.JSON_MALFORMED),
        (AppProbeRecord, b"Traceback (most recent call last):\n", Code.JSON_MALFORMED),
        (AppProbeRecord, b"", Code.JSON_MALFORMED),
        (AppProbeRecord, b'{"kind": "qualify-probe", "kind": "qualify-probe"}', Code.JSON_DUPLICATE_KEY),
        (AppProbeRecord, _line(_probe()).replace(b'"version": 2', b'"version": NaN'), Code.JSON_NONFINITE),
        (AppProbeRecord, b'{"app_version": "\xff"}', Code.JSON_INVALID_UTF8),
        (AppProbeRecord, _line({"a": [[[[[[[[[]]]]]]]]]}), Code.JSON_TOO_DEEP),
        (AppJourneyRecord, _line(_journey(steps=[{"id": "x"}])), Code.SCHEMA_INVALID),
        # The app never grades itself: a step carrying its own expectation or verdict is not a v2 step.
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "passed": True}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "expected": "allow"}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "observed": "skipped"}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "code": "lower_case"}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "errno": "eperm"}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[{**_STEP, "detail": "d" * 401}])), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(steps=[_STEP] * 257)), Code.SCHEMA_INVALID),
        (AppJourneyRecord, _line(_journey(passed=True)), Code.SCHEMA_INVALID),
    ],
    ids=["extra-field", "upper-sha", "short-sha", "bad-digest", "check-flag-as-int", "check-name-case",
         "too-many-checks", "no-checks", "layer-flag-as-text", "too-many-layers", "unknown-platform", "v1-kind",
         "v1-version", "long-string", "array", "oversize-string", "oversize-padding", "two-records", "traceback",
         "empty", "duplicate-key", "nan", "bad-utf8", "too-deep", "step-missing-fields", "step-self-graded",
         "step-expectation", "unknown-outcome", "lower-case-code", "lower-case-errno", "long-detail",
         "too-many-steps", "journey-self-graded"],
)
def test_bad_app_records_are_refused(model: Any, data: bytes, code: Code) -> None:
    with pytest.raises(QualificationError) as caught:
        parse_app_record(model, data, what="app record")
    assert caught.value.code is code
    assert len(caught.value.message) < 1000, "a hostile record is never echoed whole"


def test_the_record_file_is_read_bounded_and_never_through_a_link(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    record.write_bytes(_line(_probe()))
    assert load_app_record(AppProbeRecord, record, what="probe record").build_sha == SHA

    with pytest.raises(QualificationError) as caught:
        load_app_record(AppProbeRecord, tmp_path / "absent.json", what="probe record")
    assert caught.value.code is Code.EVIDENCE_MISSING

    big = tmp_path / "big.json"
    big.write_bytes(b" " * (64 * 1024 + 1))
    with pytest.raises(QualificationError) as caught:
        load_app_record(AppProbeRecord, big, what="probe record")
    assert caught.value.code is Code.EVIDENCE_TOO_LARGE

    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(QualificationError) as caught:
        load_app_record(AppProbeRecord, folder, what="probe record")
    assert caught.value.code is Code.EVIDENCE_UNEXPECTED


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and fifos")
def test_a_link_or_a_fifo_at_the_record_path_is_refused_without_blocking(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_bytes(_line(_probe()))
    link = tmp_path / "link.json"
    link.symlink_to(secret)
    with pytest.raises(QualificationError) as caught:
        load_app_record(AppProbeRecord, link, what="probe record")
    assert caught.value.code is Code.EVIDENCE_UNEXPECTED

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(QualificationError) as caught:  # opened non-blocking: no writer is ever waited for
        load_app_record(AppProbeRecord, fifo, what="probe record")
    assert caught.value.code is Code.EVIDENCE_UNEXPECTED
