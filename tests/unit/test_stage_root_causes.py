"""One fault reads as one root cause (issue 33): a failed install is the root, the probe and journey that could not
run on it are its consequences (still listed, still refusing), and no message says a command "exited None"."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import _platform_checks
from desktop_qualify.qualify_verify._findings import Findings
from desktop_qualify.qualify_verify._outcomes import Problem, StageOutcome, assess_install, exited


def _stages(*stages: tuple[str, list[tuple[Code, str]]]) -> list[StageOutcome]:
    return [StageOutcome(name, tuple(Problem(code, message) for code, message in problems))
            for name, problems in stages]


def _reasons(monkeypatch: pytest.MonkeyPatch, stages: list[StageOutcome]) -> list[Any]:
    monkeypatch.setattr(_platform_checks, "stage_outcomes", lambda vp, exp, verifier, findings: stages)
    monkeypatch.setattr(_platform_checks, "check_source_gate_identity", lambda vp, exp, findings: None)
    findings = Findings()
    vp = SimpleNamespace(file_name="platform-linux.dsse.json", platform="linux")
    _platform_checks.check_outcomes(cast(Any, vp), cast(Any, None), cast(Any, None), findings)
    return findings.reasons


def test_the_stages_after_a_failed_one_are_its_consequences(monkeypatch: pytest.MonkeyPatch) -> None:
    reasons = _reasons(monkeypatch, _stages(
        ("source gate", []),
        ("install", [(Code.INSTALL_FAILED, "install failed: archive member headers run past 65536 bytes")]),
        ("launch probe", [(Code.PROBE_FAILED, "the launch probe did not exit on its own (not run, or stopped)"),
                          (Code.PROBE_FAILED, "the launched app gave no report")]),
        ("journey", [(Code.JOURNEY_INCOMPLETE, "the journey did not exit on its own (not run, or stopped)")])))
    assert [(r.code, r.cause) for r in reasons] == [
        (Code.INSTALL_FAILED, "root"), (Code.PROBE_FAILED, "consequence"), (Code.PROBE_FAILED, "consequence"),
        (Code.JOURNEY_INCOMPLETE, "consequence")]
    assert {r.follows for r in reasons[1:]} == {0}
    assert reasons[0].message == ("platform-linux.dsse.json: install failed: archive member headers run past "
                                  "65536 bytes")


def test_every_problem_of_the_first_failing_stage_stays_a_root_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    reasons = _reasons(monkeypatch, _stages(
        ("build", [(Code.BUILD_FAILED, "the build exited 2"), (Code.ARTIFACT_DIGEST_MISMATCH, "other bytes")]),
        ("install", [(Code.INSTALL_FAILED, "install failed: x")])))
    # Listed root by root, each followed by what it explains.
    assert [(r.code, r.cause) for r in reasons] == [(Code.BUILD_FAILED, "root"), (Code.INSTALL_FAILED, "consequence"),
                                                   (Code.ARTIFACT_DIGEST_MISMATCH, "root")]


def test_a_run_with_no_failing_stage_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _reasons(monkeypatch, _stages(("install", []), ("launch probe", []))) == []


def _install_predicate(**changes: object) -> Any:
    install: dict[str, object] = {
        "failure": "install failed early", "artifact_sha256": "a" * 64, "method": "archive", "executable": "app/app",
        "file_count": 0, "total_bytes": 0, "executable_sha256": "0" * 64, "manifest_sha256": "0" * 64,
        "package_signature": None, "passed": False}
    install.update(changes)
    return SimpleNamespace(install=SimpleNamespace(**install), platform="linux",
                           build=SimpleNamespace(artifact=SimpleNamespace(sha256="a" * 64)))


def _exp() -> Any:
    return SimpleNamespace(install_for=lambda platform: SimpleNamespace(kind="archive", executable="app/app"),
                           accepted_signing=lambda platform: frozenset({"unsigned"}))


def test_an_install_that_says_it_failed_is_one_problem_not_three() -> None:
    outcome = assess_install(_install_predicate(), _exp())
    assert [p.message for p in outcome.problems] == ["install failed: install failed early"]


def test_an_install_that_claims_success_with_nothing_installed_is_still_refused_twice() -> None:
    outcome = assess_install(_install_predicate(failure=None, passed=True), _exp())
    assert [p.message for p in outcome.problems] == [
        "no files installed", "the install recorded no digest of what it installed",
        "the install record contradicts itself: passed is True, its facts give False"]


def test_no_message_says_a_command_exited_none() -> None:
    assert exited(3) == "exited 3"
    assert exited(0) == "exited 0"
    assert exited(None) == "did not exit on its own (not run, or stopped)"
