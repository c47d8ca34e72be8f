"""producer/_app_output.py: the app's probe and journey lines are untrusted, bounded, strict."""

from __future__ import annotations

import json
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer._app_output import AppJourney, AppProbe, parse_app_output

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
LAYER = {"name": "seccomp", "applied": True, "detail": "filter mode 2"}


def _probe(**changes: Any) -> dict[str, Any]:
    return {"kind": "skillhost-probe", "version": 1, "app_version": "0.1.0", "build_sha": SHA,
            "built_at": "2026-01-01T00:00:00Z", "platform": "linux", "frozen": True, "executable_sha256": "0" * 64,
            "worker_entry_resolvable": True, "catalog_verified": True, "isolation_available": True,
            "isolation_layers": [LAYER], **changes}


def _journey(steps: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    step = {"id": "catalog-verified", "expected": "allow", "expected_code": None, "observed": "allow",
            "observed_code": None, "passed": True, "detail": "ok", "errno": None}
    return {"kind": "skillhost-journey", "version": 1, "app_version": "0.1.0", "build_sha": SHA, "platform": "linux",
            "host_pid": 7, "duration_ms": 5, "passed": True, "steps": [step] if steps is None else steps,
            "isolation_layers": [LAYER], **changes}


def _line(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


def test_valid_lines_parse() -> None:
    probe = parse_app_output(AppProbe, b"  " + _line(_probe()) + b"\r\n", what="probe output")
    assert probe.build_sha == SHA
    assert probe.isolation_available
    journey = parse_app_output(AppJourney, _line(_journey()), what="journey output")
    assert [s.id for s in journey.steps] == ["catalog-verified"]


@pytest.mark.parametrize(
    ("model", "data", "code"),
    [
        (AppProbe, _line(_probe(extra="x")), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(build_sha=SHA.upper())), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(build_sha="abc")), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(executable_sha256="g" * 64)), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(isolation_available=1)), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(isolation_layers=[{**LAYER, "applied": "yes"}])), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(isolation_layers=[{**LAYER, "name": "Seccomp"}])), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(isolation_layers=[LAYER] * 17)), Code.SCHEMA_INVALID),
        (AppProbe, _line({k: v for k, v in _probe().items() if k != "isolation_layers"}), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(platform="beos")), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(kind="skillhost-journey")), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(app_version="v" * 257)), Code.SCHEMA_INVALID),
        (AppProbe, _line([_probe()]), Code.SCHEMA_INVALID),
        (AppProbe, _line(_probe(app_version="x" * 70_000)), Code.EVIDENCE_TOO_LARGE),
        (AppProbe, _line(_probe()) + b" " * 70_000 + b"x", Code.EVIDENCE_TOO_LARGE),
        (AppProbe, _line(_probe()) + _line(_probe()), Code.JSON_MALFORMED),
        (AppProbe, b"Traceback (most recent call last):\n", Code.JSON_MALFORMED),
        (AppProbe, b"", Code.JSON_MALFORMED),
        (AppProbe, b'{"kind": "skillhost-probe", "kind": "skillhost-probe"}', Code.JSON_DUPLICATE_KEY),
        (AppProbe, _line(_probe()).replace(b'"version": 1', b'"version": NaN'), Code.JSON_NONFINITE),
        (AppProbe, b'{"app_version": "\xff"}', Code.JSON_INVALID_UTF8),
        (AppProbe, _line({"a": [[[[[[[[[]]]]]]]]]}), Code.JSON_TOO_DEEP),
        (AppJourney, _line(_journey(steps=[{"id": "x"}])), Code.SCHEMA_INVALID),
        (AppJourney, _line(_journey(host_pid=-1)), Code.SCHEMA_INVALID),
        (AppJourney, _line(_journey(steps=[{**_journey()["steps"][0], "observed_code": "QE_X"}])),
         Code.SCHEMA_INVALID),
        (AppJourney, _line(_journey(steps=[{**_journey()["steps"][0], "detail": "d" * 401}])), Code.SCHEMA_INVALID),
        (AppJourney, _line(_journey(steps=[_journey()["steps"][0]] * 257)), Code.SCHEMA_INVALID),
    ],
    ids=["extra-field", "upper-sha", "short-sha", "bad-digest", "int-as-bool", "layer-flag-as-text",
         "layer-name-case", "too-many-layers", "no-layers", "unknown-platform", "other-kind",
         "long-string", "array", "oversize-string", "oversize-padding", "two-lines", "traceback", "empty",
         "duplicate-key", "nan", "bad-utf8", "too-deep", "step-missing-fields", "negative-pid", "non-skill-code",
         "long-detail", "too-many-steps"],
)
def test_bad_app_output_is_refused(model: Any, data: bytes, code: Code) -> None:
    with pytest.raises(QualificationError) as caught:
        parse_app_output(model, data, what="app output")
    assert caught.value.code is code
    assert len(caught.value.message) < 1000, "a hostile line is never echoed whole"
