"""Strict models, canonical JSON, and the committed JSON Schemas that must not drift from the models."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    Code,
    InstalledFile,
    JourneyStep,
    Observation,
    QualificationError,
    RunIdentity,
    canonical_bytes,
    parse_envelope,
    parse_statement,
    render_schemas,
    sha256_hex,
    validate_model,
)
from pydantic import ValidationError

REPO = Path(__file__).resolve().parents[2]
SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"


# -- schema drift ------------------------------------------------------------------------------------------


def test_committed_schemas_equal_the_models() -> None:
    """`qualify schemas --out schemas --check` semantics: same file set, same bytes."""
    committed = REPO / "schemas"
    assert committed.is_dir(), "schemas/ is missing: run 'qualify schemas --out schemas' and commit it"
    rendered = render_schemas()
    # __init__.py makes the folder the package its data ships in; every other file must be a rendered schema.
    on_disk = {p.name for p in committed.iterdir() if p.is_file() and p.name != "__init__.py"}
    assert on_disk == set(rendered), f"schemas/ lists {sorted(on_disk ^ set(rendered))} differently"
    stale = [name for name, data in rendered.items() if (committed / name).read_bytes() != data]
    assert not stale, f"schemas/ differs from the models: {stale}; run 'qualify schemas --out schemas'"


def test_schemas_check_command(tmp_path: Path, qualify: Any) -> None:
    out = tmp_path / "schemas"
    written = qualify(["schemas", "--out", str(out)])
    assert written.status == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(render_schemas())
    assert qualify(["schemas", "--out", str(out), "--check"]).status == 0
    assert qualify(["schemas", "--out", str(REPO / "schemas"), "--check"]).status == 0

    target = out / "platform-statement.schema.json"
    schema = json.loads(target.read_bytes())
    schema["title"] = "drifted"
    target.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
    drifted = qualify(["schemas", "--out", str(out), "--check"])
    assert drifted.status == 1
    assert "QE_SCHEMA_INVALID" in drifted.err
    assert "platform-statement.schema.json" in drifted.err

    shutil.rmtree(out)
    out.mkdir()
    assert qualify(["schemas", "--out", str(out), "--check"]).status == 1


def test_rendered_schemas_are_stable_json_with_ids() -> None:
    first, second = render_schemas(), render_schemas()
    assert first == second
    for name, data in first.items():
        schema = json.loads(data)
        assert schema["$id"].endswith(f"/{name}")
        assert data.endswith(b"\n")


def test_schemas_forbid_extra_fields() -> None:
    schema = json.loads(render_schemas()["build-record.schema.json"])
    assert schema["additionalProperties"] is False


# -- strict models -----------------------------------------------------------------------------------------


def _run(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"mode": "local", "repository": "local/x", "workflow": ".github/workflows/w.yml",
                            "ref": "refs/heads/main",
                            "sha": SHA, "run_id": "r1", "attempt": 1, "trigger": "local",
                            "runner_environment": "local"}
    base.update(changes)
    return base


def _invalid(model: Any, value: Any) -> None:
    with pytest.raises(QualificationError) as caught:
        validate_model(model, value, what="thing")
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message.startswith("thing: ")


def test_a_valid_record_validates() -> None:
    assert validate_model(RunIdentity, _run(), what="run").sha == SHA
    assert validate_model(RunIdentity, _run(sha="a" * 64), what="run").sha == "a" * 64  # SHA-256 object format


@pytest.mark.parametrize(
    "value",
    [
        _run(extra="x"),
        # Identity fields keep their shape in local mode too: no free text that could forge a report line.
        _run(run_id="r1\n## QUALIFIED"),
        _run(run_id="local run"),
        _run(repository="local/x\nQUALIFIED"),
        _run(workflow="w.yml"),
        _run(ref="main"),
        _run(trigger="push\u202e"),
        _run(runner_environment="local "),
        _run(attempt="1"),
        _run(attempt=True),
        _run(attempt=1.0),
        _run(attempt=-1),
        _run(sha=SHA.upper()),
        _run(sha=SHA[:39]),
        _run(sha=SHA + "0"),
        _run(sha=" " + SHA[1:]),
        _run(mode="remote"),
        _run(run_id=""),
        _run(run_id="x" * 257),
    ],
    ids=["extra-field", "run-id-newline-heading", "run-id-space", "repository-newline", "workflow-bare-name",
         "ref-bare-name", "trigger-format-char", "runner-trailing-space", "int-as-str", "bool-as-int", "float-as-int",
         "negative", "upper-sha", "short-sha",
         "41-hex", "space-in-sha", "unknown-literal", "empty-string", "too-long"],
)
def test_strict_models_refuse(value: dict[str, Any]) -> None:
    _invalid(RunIdentity, value)


def test_missing_field_is_refused() -> None:
    value = _run()
    del value["attempt"]
    _invalid(RunIdentity, value)


@pytest.mark.parametrize("path", ["../etc/passwd", "a/../../b", "a/..", "..", "/abs", "\\win", "a\\b", "a\x00b",
                                  "", "x" * 513])
def test_relpath_refuses(path: str) -> None:
    _invalid(InstalledFile, {"path": path, "size": 1, "sha256": "0" * 64})


@pytest.mark.parametrize("path", ["skillhost/skillhost", "a..b/c", "dir/.hidden", "a/b/c.txt", "x" * 512])
def test_relpath_accepts(path: str) -> None:
    assert validate_model(InstalledFile, {"path": path, "size": 1, "sha256": "0" * 64}, what="f").path == path


@pytest.mark.parametrize("name", ["../x.tar.gz", ".hidden", "a/b", "a\\b", "", "x" * 129, "é.zip"])
def test_file_name_refuses(name: str) -> None:
    _invalid(ArtifactRef, {"name": name, "size": 1, "sha256": "0" * 64})


@pytest.mark.parametrize("stamp", ["2026-01-01", "2026-01-01T00:00:00", "2026-01-01T00:00:00+00:00",
                                   "2026-01-01T00:00:00.1234567Z"])
def test_timestamps_are_utc_with_z(stamp: str) -> None:
    _invalid(Observation, {"source": "s", "value": "v", "observed_at": stamp})


def test_step_codes_and_ids() -> None:
    good = {"id": "step-1", "observed": "reject", "code": "CC_SKILL_TIMEOUT", "errno": None, "layer": None,
            "detail": "", "passed": True}
    assert validate_model(JourneyStep, good, what="s").id == "step-1"
    assert validate_model(JourneyStep, {**good, "errno": "EACCES"}, what="s").errno == "EACCES"
    _invalid(JourneyStep, {**good, "errno": "eacces"})
    _invalid(JourneyStep, {**good, "errno": "13"})
    # The refusing layer is a layer name, and the evidence always says (null for an ordinary step).
    assert validate_model(JourneyStep, {**good, "layer": "seccomp"}, what="s").layer == "seccomp"
    _invalid(JourneyStep, {**good, "layer": "Seccomp"})
    _invalid(JourneyStep, {**good, "layer": "x" * 33})
    _invalid(JourneyStep, {k: v for k, v in good.items() if k != "layer"})
    _invalid(JourneyStep, {**good, "id": "Step"})
    # Any upper-case code the evidence can hold; each policy narrows it with its own pattern.
    assert validate_model(JourneyStep, {**good, "code": "APP_DENIED"}, what="s").code == "APP_DENIED"
    _invalid(JourneyStep, {**good, "code": "app_denied"})
    _invalid(JourneyStep, {**good, "observed": "skipped"})
    _invalid(JourneyStep, {**good, "expected": "reject"})
    _invalid(JourneyStep, {**good, "detail": "d" * 401})


def test_models_are_frozen() -> None:
    run = validate_model(RunIdentity, _run(), what="run")
    with pytest.raises(ValidationError):
        run.sha = "0" * 40  # type: ignore[misc]


# -- canonical JSON and parsing entry points ---------------------------------------------------------------


def test_canonical_bytes_are_rfc8785() -> None:
    assert canonical_bytes({"b": 1, "a": [True, None, "é"], "c": 1.5}) == b'{"a":[true,null,"\xc3\xa9"],"b":1,"c":1.5}'
    run = validate_model(RunIdentity, _run(), what="run")
    assert canonical_bytes(run) == canonical_bytes(run.model_dump(mode="json"))
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_parse_statement_routes_by_predicate_type() -> None:
    with pytest.raises(QualificationError) as caught:
        parse_statement(b'{"_type": "https://in-toto.io/Statement/v1", "predicateType": 7}', what="s")
    assert caught.value.code is Code.PREDICATE_TYPE_UNKNOWN
    with pytest.raises(QualificationError) as caught:
        parse_statement(b"[]", what="s")
    assert caught.value.code is Code.SCHEMA_INVALID
    with pytest.raises(QualificationError) as caught:
        parse_statement(b'{"predicateType": "https://desktop-qualify.invalid/evidence/platform-qualification/v2"}',
                        what="s")
    assert caught.value.code is Code.SCHEMA_INVALID


def test_parse_envelope_bounds() -> None:
    good = {"payloadType": "application/vnd.in-toto+json", "payload": "e30=",
            "signatures": [{"keyid": "0" * 64, "sig": "AAAA"}]}
    assert parse_envelope(json.dumps(good).encode(), what="e").payload == "e30="
    for bad in ({**good, "signatures": [good["signatures"][0]] * 5}, {**good, "payload": "e30=\n"},
                {**good, "signatures": [{"keyid": "0" * 63, "sig": "AAAA"}]}, {**good, "extra": 1}):
        with pytest.raises(QualificationError) as caught:
            parse_envelope(json.dumps(bad).encode(), what="e")
        assert caught.value.code is Code.SCHEMA_INVALID


def test_every_predicate_type_is_one_versioned_name_under_the_one_prefix() -> None:
    from desktop_qualify.evidence_schemas import (
        AGGREGATE_PREDICATE_TYPE,
        PLATFORM_PREDICATE_TYPE,
        PREDICATE_PREFIX,
        AggregatePredicate,
        PlatformPredicate,
    )

    # The type's version and the predicate's own "version" field move together: one number names one shape.
    for predicate_type, model in ((PLATFORM_PREDICATE_TYPE, PlatformPredicate),
                                  (AGGREGATE_PREDICATE_TYPE, AggregatePredicate)):
        assert predicate_type.startswith(PREDICATE_PREFIX)
        match = re.fullmatch(r"[a-z]+-qualification/v([1-9][0-9]*)", predicate_type.removeprefix(PREDICATE_PREFIX))
        assert match is not None, predicate_type
        assert model.model_fields["version"].default == int(match.group(1))
