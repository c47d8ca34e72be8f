"""Confinement of app-controlled code: the evidence models, the policy's [confinement], the verifier's check.

Each verifier case edits a real signed local statement (re-signed, re-bound) and names the code it must get;
the rule is qualify_verify/_confinement_checks.py's docstring (docs/verifier.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from desktop_qualify.evidence_schemas import (
    APP_STAGES,
    CONFINEMENT_LAYERS,
    CONFINEMENT_LAYERS_BY_PLATFORM,
    MECHANISM_OF_PLATFORM,
    Code,
    OsSigning,
    PlatformPredicate,
    QualificationError,
    SignatureRecord,
    StageConfinement,
    UnsignedRun,
    os_signing_of,
    predicate_from_run,
    render_schemas,
    unsigned_run_file_name,
)
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify import Expectations, required_layers, stages_that_ran, verify_release
from pydantic import ValidationError
from support.confinement import LAYERS, confined, entry, require_confinement
from support.evidence_factory import PlatformSpec, PredicateEdit, make_evidence

REPO = Path(__file__).resolve().parents[2]
LOCAL = (REPO / "policies" / "local.toml").read_text(encoding="utf-8")
PRODUCER_STAGE = REPO / "producer" / "confinement" / "_stage.py"


# -- the evidence models -------------------------------------------------------------------------------------


def _entry(**changes: Any) -> dict[str, Any]:
    return {**entry("linux", "journey"), **changes}


def test_a_passing_entry_validates() -> None:
    record = StageConfinement.model_validate(_entry())
    assert record.network is False
    assert "network-namespace" in record.layers


@pytest.mark.parametrize(("changes", "why"), [
    ({"layers": ["pid-namespace", "pid-namespace"]}, "each layer is listed once"),
    ({"layers": ["user-namespace"] * 17}, "at most 16"),
    ({"layers": ["seccomp"]}, "literal"),
    ({"stage": "install"}, "literal"),
    ({"mechanism": "docker"}, "literal"),
    ({"network": "no"}, "boolean"),
    ({"detail": "d" * 2001}, "at most 2000"),
    ({"extra": 1}, "extra"),
], ids=["duplicate-layer", "too-many-layers", "unknown-layer", "unknown-stage", "unknown-mechanism",
        "loose-network", "detail-over-bound", "extra-field"])
def test_an_entry_is_refused(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=re.compile(why, re.IGNORECASE)):
        StageConfinement.model_validate(_entry(**changes))


def test_the_detail_may_reach_its_bound() -> None:
    assert StageConfinement.model_validate(_entry(detail="d" * 2000)).detail == "d" * 2000


def test_the_vocabulary_is_the_producers() -> None:
    """The producer's adapters report the names evidence_schemas defines (producer/confinement/_stage.py)."""
    assert APP_STAGES == ("build", "build-reproduction", "build-tools", "probe", "journey", "update")
    assert dict(MECHANISM_OF_PLATFORM) == {"linux": "bubblewrap", "macos": "sandbox-exec", "windows": "job-object"}
    if PRODUCER_STAGE.exists():  # the producer's module is another engineer's work in progress
        text = PRODUCER_STAGE.read_text(encoding="utf-8")
        for platform, name in (("linux", "LINUX_LAYERS"), ("macos", "MACOS_LAYERS"), ("windows", "WINDOWS_LAYERS")):
            if f"{name} = (" in text:
                found = re.search(rf"{name} = \(([^)]*)\)", text)
                assert found is not None
                assert tuple(re.findall(r'"([a-z-]+)"', found.group(1))) == CONFINEMENT_LAYERS_BY_PLATFORM[platform]
    union = tuple(dict.fromkeys(layer for layers in CONFINEMENT_LAYERS_BY_PLATFORM.values() for layer in layers))
    assert union == CONFINEMENT_LAYERS


def _predicate(tmp_path: Path, edit: PredicateEdit | None = None) -> PlatformPredicate:
    ev = make_evidence(tmp_path, platforms=[PlatformSpec("linux", edit=edit)])
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    return predicate


def test_the_predicate_holds_at_most_64_runs(tmp_path: Path) -> None:
    data = _predicate(tmp_path).model_dump(mode="json")
    data["confinement"] = [entry("linux", "build")] * 64
    assert len(PlatformPredicate.model_validate(data).confinement or []) == 64
    data["confinement"] = [entry("linux", "build")] * 65
    with pytest.raises(ValidationError, match="at most 64"):
        PlatformPredicate.model_validate(data)


def test_evidence_made_before_confinement_reads_as_none(tmp_path: Path) -> None:
    data = _predicate(tmp_path).model_dump(mode="json")
    del data["confinement"]
    predicate = PlatformPredicate.model_validate(data)
    assert predicate.confinement is None
    assert predicate.version == 2


def _unsigned_run(predicate: PlatformPredicate) -> UnsignedRun:
    data = predicate.model_dump(mode="json", exclude={"signature", "version"})
    data["os_signing"] = os_signing_of(predicate.signature).model_dump(mode="json")
    data["confinement"] = [entry("linux", stage) for stage in ("build", "probe", "journey")]
    return UnsignedRun.model_validate({"kind": "unsigned-run", "version": 1, **data})


def test_the_signing_job_builds_the_predicate_from_the_run_and_its_signature(tmp_path: Path) -> None:
    predicate = _predicate(tmp_path)
    run = _unsigned_run(predicate)
    made = predicate_from_run(run, predicate.signature, predicate.produced_at)
    assert made.signature == predicate.signature
    assert made.confinement == run.confinement
    assert made.model_dump(exclude={"confinement"}) == predicate.model_dump(exclude={"confinement"})
    assert unsigned_run_file_name("linux") == "platform-linux.run.json"
    assert "unsigned-run.schema.json" in render_schemas()


def test_the_signing_job_refuses_a_signature_of_other_bytes_or_another_os_signing(tmp_path: Path) -> None:
    predicate = _predicate(tmp_path)
    run = _unsigned_run(predicate)
    other: SignatureRecord = predicate.signature.model_copy(update={"artifact_sha256": "0" * 64})
    with pytest.raises(QualificationError) as caught:
        predicate_from_run(run, other, predicate.produced_at)
    assert caught.value.code is Code.UNSIGNED_RUN_INVALID
    assert caught.value.exit_status == 1
    signed = predicate.signature.model_copy(update={"platform_signing_state": "signed"})
    with pytest.raises(QualificationError) as caught:
        predicate_from_run(run, signed, predicate.produced_at)
    assert caught.value.code is Code.UNSIGNED_RUN_INVALID


def test_an_unsigned_run_is_strict(tmp_path: Path) -> None:
    data = _unsigned_run(_predicate(tmp_path)).model_dump(mode="json")
    for spoil in ({"kind": "platform"}, {"version": 2}, {"signature": {}}, {"confinement": [_entry()] * 65}):
        with pytest.raises(ValidationError):
            UnsignedRun.model_validate({**data, **spoil})
    assert OsSigning.model_validate({"tool": "none", "state": "unsigned"}).notarization is None


@pytest.mark.parametrize(("code", "status"), [(Code.STAGE_UNCONFINED, 1), (Code.APP_STAGE_TAMPERED, 1),
                                              (Code.UNSIGNED_RUN_INVALID, 1), (Code.CONFINEMENT_UNAVAILABLE, 2)])
def test_the_new_codes_exit_status(code: Code, status: int) -> None:
    assert QualificationError(code, "m").exit_status == status


# -- the policy's [confinement] ------------------------------------------------------------------------------


def _with_confinement(section: str) -> str:
    start, end = LOCAL.index("[confinement]"), LOCAL.index("[signing]")
    return LOCAL[:start] + section + "\n\n" + LOCAL[end:]


def _load(tmp_path: Path, section: str) -> Any:
    path = tmp_path / "policy.toml"
    path.write_text(_with_confinement(section), encoding="utf-8")
    return load_policy(path)


@pytest.mark.parametrize(("section", "message"), [
    ('[confinement]\nlinux = ["user-namespace", "seccomp"]', "'seccomp', which is no confinement layer"),
    ('[confinement]\nlinux = ["sandbox-profile"]', "'sandbox-profile', which is not a linux layer"),
    ('[confinement]\nmacos = ["network-namespace"]', "'network-namespace', which is not a macos layer"),
    ('[confinement]\nwindows = ["private-home", "private-home"]', "windows lists private-home more than once"),
    ('[confinement]\nlinux = ["private-tmp"]\nnetwork = ["build", "build"]', "network lists build more than once"),
    ('[confinement]\nlinux = ["private-tmp"]\nnetwork = ["install"]', "network"),
    ('[confinement]\nlinux = []', "linux"),
    ('[confinement]\nlinux = ["private-tmp"]\nfreebsd = ["jail"]', "freebsd"),
    ('[confinement]\nlinux = "private-tmp"', "linux"),
], ids=["unknown-layer", "other-platforms-layer", "linux-layer-on-macos", "duplicate-layer",
        "duplicate-network-stage", "unknown-stage", "empty-list", "unknown-key", "not-a-list"])
def test_the_loader_refuses(section: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(_with_confinement(section), encoding="utf-8")
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    assert caught.value.exit_status == 2
    assert message in caught.value.message


def test_the_committed_policies_require_confinement() -> None:
    for name in ("local.toml", "local-update.toml", "release.toml"):
        policy = load_policy(REPO / "policies" / name)
        assert policy.confinement_layers("linux") == tuple(LAYERS["linux"])
        assert policy.stage_has_network("build")
        assert not any(policy.stage_has_network(stage) for stage in APP_STAGES if stage != "build")
    release = load_policy(REPO / "policies" / "release.toml")
    assert release.confinement_layers("macos") == tuple(LAYERS["macos"])
    assert release.confinement_layers("windows") == tuple(LAYERS["windows"])
    example = load_policy(REPO / "examples" / "qt-notes" / "policy.toml")
    assert example.confinement_layers("linux") == tuple(LAYERS["linux"])


def test_network_namespace_applies_only_to_stages_without_the_network(tmp_path: Path) -> None:
    policy = _load(tmp_path, '[confinement]\nlinux = ["network-namespace", "private-tmp"]\nnetwork = ["build", '
                             '"build-tools"]')
    exp = Expectations.from_policy(policy)
    assert required_layers("build", ("network-namespace", "private-tmp"), exp) == ("private-tmp",)
    assert required_layers("build-tools", ("network-namespace", "private-tmp"), exp) == ("private-tmp",)
    assert required_layers("journey", ("network-namespace", "private-tmp"), exp) == ("network-namespace",
                                                                                     "private-tmp")
    assert policy.confinement_layers("macos") is None


def test_without_the_section_nothing_is_required_and_the_build_keeps_the_network(tmp_path: Path) -> None:
    policy = _load(tmp_path, "")
    assert policy.file.confinement is None
    assert [policy.confinement_layers(p) for p in ("linux", "macos", "windows")] == [None, None, None]
    assert policy.stage_has_network("build")
    assert not policy.stage_has_network("journey")
    defaults = _load(tmp_path, '[confinement]\nwindows = ["job-object"]')
    assert defaults.stage_has_network("build")
    assert defaults.confinement_layers("linux") is None


def test_stages_that_ran_are_derived_from_the_predicate_and_the_policy(tmp_path: Path) -> None:
    predicate = _predicate(tmp_path)
    exp = Expectations.from_policy(load_policy(REPO / "policies" / "local.toml"))
    assert exp.build_tools == ("pyinstaller",)
    assert stages_that_ran(predicate, exp) == ("build", "build-tools", "probe", "journey")


# -- the verifier's check ------------------------------------------------------------------------------------


def _drop_stage(stage: str) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        pred["confinement"] = [e for e in pred["confinement"] if e["stage"] != stage]
    return apply


def _stage(stage: str, **changes: Any) -> PredicateEdit:
    def apply(pred: dict[str, Any]) -> None:
        for e in pred["confinement"]:
            if e["stage"] == stage:
                for key, value in changes.items():
                    e[key] = value(e[key]) if callable(value) else value
    return apply


def _without(layer: str) -> Callable[[list[str]], list[str]]:
    return lambda layers: [name for name in layers if name != layer]


def _add_entry(platform: str, stage: str) -> PredicateEdit:
    return lambda pred: pred["confinement"].append(entry(platform, stage))


def _unconfined(pred: dict[str, Any]) -> None:
    pred["confinement"] = None


def _reproduced(pred: dict[str, Any]) -> None:
    digest = pred["build"]["artifact"]["sha256"]
    pred["build"]["reproduction"] = {
        "first_sha256": digest, "second_sha256": digest, "second_size": 1, "reproduced": True, "duration_ms": 1,
        "variations": [{"name": "umask", "first": "0022", "second": "0002"}]}


_TOOLS = 'tools = { pyinstaller = ["{python}", "-m", "PyInstaller", "--version"] }\n\n[app.build.outputs]'


class Case(NamedTuple):
    """A verifier case: the platform, the predicate edit (after a passing record is made), an edit of the policy's
    text, the code (None: it qualifies), a fragment of the reason."""

    id: str
    platform: str
    edit: PredicateEdit | None
    policy_edit: Callable[[str], str] | None
    code: Code | None
    fragment: str


CASES = [Case(*case) for case in [
    ("passing-record", "linux", None, None, None, ""),
    ("passing-record-macos", "macos", None, None, None, ""),
    ("passing-record-windows", "windows", None, None, None, ""),
    ("missing-record", "linux", _unconfined, None, Code.STAGE_UNCONFINED, "no confinement recorded"),
    ("missing-stage", "linux", _drop_stage("journey"), None, Code.STAGE_UNCONFINED,
     "stage journey ran with no confinement recorded"),
    ("missing-build-stage", "windows", _drop_stage("build"), None, Code.STAGE_UNCONFINED,
     "stage build ran with no confinement recorded"),
    ("missing-reproduction-stage", "linux", _reproduced, None, Code.STAGE_UNCONFINED,
     "stage build-reproduction ran with no confinement recorded"),
    ("missing-build-tools-stage", "linux", None, lambda text: text.replace("[app.build.outputs]", _TOOLS, 1),
     Code.STAGE_UNCONFINED, "stage build-tools ran with no confinement recorded"),
    ("stage-that-did-not-run", "linux", _add_entry("linux", "update"), None, Code.STAGE_UNCONFINED,
     "stage update did not run"),
    ("fewer-layers", "linux", _stage("probe", layers=_without("pid-namespace")), None, Code.STAGE_UNCONFINED,
     "ran without pid-namespace"),
    ("fewer-layers-macos", "macos", _stage("journey", layers=_without("separate-account")), None,
     Code.STAGE_UNCONFINED, "ran without separate-account"),
    ("build-without-a-required-layer", "linux", _stage("build", layers=_without("private-home")), None,
     Code.STAGE_UNCONFINED, "ran without private-home"),
    ("wrong-mechanism", "linux", _stage("journey", mechanism="none"), None, Code.STAGE_UNCONFINED,
     "confined by none, not bubblewrap"),
    ("other-platforms-mechanism", "windows", _stage("probe", mechanism="sandbox-exec"), None,
     Code.STAGE_UNCONFINED, "confined by sandbox-exec, not job-object"),
    ("other-platforms-layer", "macos", _stage("probe", layers=lambda layers: [*layers, "low-integrity"]), None,
     Code.STAGE_UNCONFINED, "reports low-integrity, not macos layers"),
    ("network-where-not-given", "linux", _stage("journey", network=True, layers=_without("network-namespace")),
     None, Code.STAGE_UNCONFINED, "kept the network, which the policy does not give stage journey"),
    ("network-where-not-given-macos", "macos", _stage("probe", network=True), None, Code.STAGE_UNCONFINED,
     "kept the network"),
    # A job object and a restricted token cannot take the network away: a Windows stage keeps it and says so,
    # and the policy's network rule has no layer to hold it to there (docs/boundaries.md).
    ("network-kept-on-windows", "windows", _stage("probe", network=True), None, None, ""),
    ("network-false-without-network-namespace", "linux", _stage("build", network=False), None,
     Code.STAGE_UNCONFINED, "says network=false without network-namespace"),
    ("network-true-with-network-namespace", "linux",
     _stage("build", layers=lambda layers: [*layers, "network-namespace"]), None, Code.STAGE_UNCONFINED,
     "says network=true with network-namespace"),
    # Less network than the policy allows is no fault: a build confined away from the network passes.
    ("build-without-the-network", "linux",
     _stage("build", network=False, layers=lambda layers: [*layers, "network-namespace"]), None, None, ""),
    ("build-without-the-network-macos", "macos", _stage("build", network=False), None, None, ""),
    # A platform the policy requires nothing of is not checked.
    ("platform-not-required", "linux", _unconfined,
     lambda text: text.replace('\nlinux = ["user-namespace"', '\n# linux = ["user-namespace"', 1), None, ""),
]]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_verifier_holds_each_stage_to_the_policy(case: Case, tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=[PlatformSpec(case.platform, edit=confined(case.edit))])
    require_confinement(ev)
    if case.policy_edit is not None:
        ev.policy_path.write_text(case.policy_edit(ev.policy_path.read_text(encoding="utf-8")), encoding="utf-8")
        ev.rebind_provenance()
        ev.write_aggregate()
    verdict = verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths)
    reasons = [(r.code, r.message) for r in verdict.reasons]
    if case.code is None:
        assert verdict.qualified, reasons
        return
    assert {c for c, _ in reasons} == {case.code}, reasons
    assert any(case.fragment in message for _, message in reasons), reasons
    assert all(r.platform == case.platform for r in verdict.reasons)


def test_the_reason_names_the_statement_and_the_entry(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=[PlatformSpec("linux", edit=confined(_stage("probe", mechanism="none")))])
    require_confinement(ev)
    verdict = verify_release(load_policy(ev.policy_path), [ev.evidence_dir], ev.artifact_paths)
    assert [r.message for r in verdict.reasons] == [
        "platform-linux.dsse.json: confinement[1] (probe): confined by none, not bubblewrap (linux's)"]
    assert json.dumps([r.code.value for r in verdict.reasons]) == '["QE_STAGE_UNCONFINED"]'
