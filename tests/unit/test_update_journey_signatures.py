"""Issue 35: the update journey's installs (the previous release, the candidate, the rollback) check a ``.pkg``'s or
an ``.msi``'s own signature under the same requirement as the install stage, so a policy that accepts only signed
builds refuses an unsigned package there too.

pkgutil and signtool cannot run on this host: the installers run through an injected runner that records each
command exactly; the app's state verbs and probe are stubs (a refused install leaves nothing to run).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    InstallerSignature,
    InstallRecord,
    LaunchProbeRecord,
    PreviousRelease,
    StateStep,
)
from desktop_qualify.producer import _pipeline, _update
from desktop_qualify.producer._update import UpdatePlan, run_update
from desktop_qualify.producer.installers import _install
from desktop_qualify.producer.installers._installers import SignatureRequirement, installers_for
from desktop_qualify.producer.installers._pkg import PKGUTIL
from desktop_qualify.producer.installers._tools import ToolResult
from desktop_qualify.producer.previous._previous import AuditedPrevious
from desktop_qualify.qualify_verify import UpdateRules, update_facts
from desktop_qualify.qualify_verify._update_outcome import rules_for

PREVIOUS, CANDIDATE = "1" * 40, "2" * 40
EXE = "notes.pkg/Payload/Notes.app/Contents/MacOS/Notes"
SIGNTOOL = r"C:\Program Files (x86)\Windows Kits\10\bin\x64\signtool.exe"
THUMB = "ab" * 20
SIGNED = 'Package "x.pkg":\n   Status: signed by a developer certificate issued by Apple for distribution\n'


class Pkgutil:
    """``pkgutil`` as an injected runner: ``--check-signature`` answers ``check``; ``--expand-full`` writes the
    executable. Every command is recorded."""

    def __init__(self, check: tuple[int, str]) -> None:
        self.check = check
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        argv = list(command)
        self.commands.append(argv)
        code, said = self.check if argv[1] == "--check-signature" else (0, "")
        if argv[1] == "--expand-full":
            exe = Path(argv[-1]) / EXE
            exe.parent.mkdir(parents=True)
            exe.write_bytes(b"\xcf\xfa\xed\xfe" + argv[2].encode())
        return ToolResult(code, said, stdout_truncated=False, output=said)


def _pkg(folder: Path, build: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"Notes-{build[:8]}.pkg"
    path.write_bytes(b"xar!" + build.encode())
    return path


def _plan(tmp_path: Path, requirement: SignatureRequirement | None) -> UpdatePlan:
    previous, candidate = _pkg(tmp_path / "previous", PREVIOUS), _pkg(tmp_path / "candidate", CANDIDATE)
    facts = PreviousRelease(bundle_sha256="b" * 64, sha=PREVIOUS, run_id="local-previous",
                            artifact=ArtifactRef(name=previous.name, size=previous.stat().st_size,
                                                 sha256=hashlib.sha256(previous.read_bytes()).hexdigest()),
                            policy_sha256="c" * 64, audit_decision="QUALIFIED")
    rules = UpdateRules(platform="macos", candidate_sha=CANDIDATE,
                        candidate_artifact_sha256=hashlib.sha256(candidate.read_bytes()).hexdigest(),
                        candidate_executable_sha256="d" * 64, installer="pkg", executable=EXE,
                        state_write=("{executable}", "state", "write"), state_check=("{executable}", "state", "check"),
                        downgrade="allow", downgrade_code=None, probe_command=("{executable}", "probe"),
                        display="none", probe_checks=(), layers=None, candidate_layers=(),
                        signed_only=requirement is not None and requirement.require_signed)

    def probe(prefix: Path, installed: InstallRecord, home: Path) -> LaunchProbeRecord:
        return LaunchProbeRecord(command=["probe"], display="none", exit_code=None, timed_out=False, duration_ms=0,
                                 report=None, build_sha_matches=False, executable_matches_install=False,
                                 stderr_excerpt="a stub: not run", passed=False)

    return UpdatePlan(previous=AuditedPrevious(facts, previous), candidate_archive=candidate, rules=rules,
                      plan_for=lambda argv, timeout: cast(Any, SimpleNamespace(argv=argv)), probe=probe,
                      state_timeout=30, signatures=requirement)


def _state_stub(*, prefix: Path, install: InstallRecord, verb: str, plan: Any, home: Path) -> StateStep:
    return StateStep(verb=verb, command=list(plan.argv), exit_code=None, timed_out=False, report=None,
                     stderr_excerpt="a stub: not run", passed=False)


def _journey(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: tuple[int, str],
             requirement: SignatureRequirement | None) -> tuple[Any, Pkgutil]:
    runner = Pkgutil(check)
    monkeypatch.setattr(_install, "installers_for", lambda req: installers_for(req, runner))
    monkeypatch.setattr(_update, "state_verb", _state_stub)
    return run_update(_plan(tmp_path, requirement), tmp_path / "work" / "update"), runner


def _installs(record: Any) -> list[InstallRecord]:
    return [record.previous_install, record.upgrade_install, record.rollback_install]


def test_an_unsigned_pkg_is_refused_at_every_install_of_the_journey_when_only_signed_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, runner = _journey(tmp_path, monkeypatch, (1, "   Status: no signature\n"),
                              SignatureRequirement(require_signed=True))
    unsigned = InstallerSignature(tool="pkgutil", state="unsigned", detail="no signature")
    for installed in _installs(record):
        assert not installed.passed
        assert installed.failure == "the package's own signature is refused: no signature"
        assert installed.package_signature == unsigned
    # Checked, never expanded: not a byte of an unsigned package was installed.
    work = tmp_path / "work" / "update"
    assert [argv[:2] for argv in runner.commands] == [[PKGUTIL, "--check-signature"]] * 3
    assert [Path(argv[2]).name.split("-", 2)[-1] for argv in runner.commands] == [
        "Notes-11111111.pkg", "Notes-22222222.pkg", "Notes-11111111.pkg"]
    assert not (work / "install").exists()
    assert {"previous-install", "upgrade-install", "rollback-install"} <= set(record.failed_steps)
    assert not record.passed


def test_a_signed_pkg_is_expanded_and_its_check_recorded_at_every_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, runner = _journey(tmp_path, monkeypatch, (0, SIGNED), SignatureRequirement(require_signed=True))
    signed = InstallerSignature(tool="pkgutil", state="signed",
                                detail="signed by a developer certificate issued by Apple for distribution")
    for installed in _installs(record):
        assert installed.failure is None
        assert installed.package_signature == signed
    assert [argv[1] for argv in runner.commands] == ["--check-signature", "--expand-full"] * 3


def test_without_the_requirement_the_journey_would_have_installed_the_unsigned_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the journey did before issue 35's fix (no requirement handed over): the check ran, but did not refuse."""
    record, runner = _journey(tmp_path, monkeypatch, (1, "   Status: no signature\n"), None)
    assert all(installed.failure is None for installed in _installs(record))
    assert [argv[1] for argv in runner.commands] == ["--check-signature", "--expand-full"] * 3


def test_the_pipelines_update_journey_hands_over_the_install_stages_requirement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, UpdatePlan] = {}

    def run(plan: UpdatePlan, work: Path) -> Any:
        seen["plan"] = plan
        return SimpleNamespace(failed_steps=[], passed=True)

    monkeypatch.setattr(_pipeline, "run_update", run)
    target = SimpleNamespace(kind="msi", executable="Notes/Notes.exe")
    app = SimpleNamespace(name="notes", build=SimpleNamespace(outputs={"windows": "*.msi"}),
                          install={"windows": target}, probe=SimpleNamespace(argv=["{executable}", "probe"],
                                                                             require=[]),
                          state=SimpleNamespace(write=["w"], check=["c"]))
    file = SimpleNamespace(app=app, update=SimpleNamespace(downgrade="refuse", downgrade_code="NEWER"),
                           limits=SimpleNamespace(probe_timeout_seconds=30))
    policy = SimpleNamespace(file=file, accepted_signing=lambda platform: frozenset({"signed"}),
                             display=lambda platform: "none", isolation_layers=lambda platform: None)
    job = SimpleNamespace(policy=policy, platform="windows",
                          env={"QUALIFY_SIGNTOOL_PATH": SIGNTOOL, "QUALIFY_SIGNTOOL_CERT_SHA1": THUMB},
                          work_dir=tmp_path, progress=_pipeline.Progress("test"), record=lambda name, record: None)
    built = SimpleNamespace(archive=tmp_path / "a.msi",
                            record=SimpleNamespace(artifact=SimpleNamespace(sha256="e" * 64)))
    _pipeline._update(cast(Any, job), cast(Any, SimpleNamespace()), built=cast(Any, built),
                      installed=cast(Any, SimpleNamespace(executable_sha256="f" * 64)),
                      probed=cast(Any, SimpleNamespace(report=None)), sha=CANDIDATE)
    assert seen["plan"].signatures == SignatureRequirement(True, SIGNTOOL, THUMB)
    assert seen["plan"].signatures == _pipeline._signatures(cast(Any, job))  # the install stage's, exactly
    assert seen["plan"].rules.signed_only is True  # and the verdict's rule holds the installs to it


def test_the_verdicts_rule_refuses_an_update_install_that_recorded_no_check_or_not_signed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record that says its installs passed is not taken on its word: ``update_facts`` (the verifier's rule, and
    the producer's verdict) re-reads each install's own signature check under the policy's "only signed"."""
    requirement = SignatureRequirement(require_signed=True)
    record, _ = _journey(tmp_path, monkeypatch, (0, SIGNED), requirement)
    rules = _plan(tmp_path / "again", requirement).rules
    # The stubbed state verbs and probe fail their steps; the installs' own problems are what is read here.
    assert not [why for why in update_facts(record, rules).problems if "signature" in why]
    unchecked = record.model_copy(update={"upgrade_install": record.upgrade_install.model_copy(
        update={"package_signature": None})})
    problems = dict(update_facts(unchecked, rules).step_problems)
    assert ("the policy accepts only signed builds for macos, and the pkg install records no pkgutil check of the "
            "package's own signature") in problems["upgrade-install"]
    unsigned = InstallerSignature(tool="pkgutil", state="unsigned", detail="no signature")
    previous = record.model_copy(update={"previous_install": record.previous_install.model_copy(
        update={"package_signature": unsigned})})
    assert dict(update_facts(previous, rules).step_problems)["previous-install"] == (
        "the policy accepts only signed builds for macos; pkgutil found the package unsigned: no signature",)
    assert "previous-install" not in update_facts(record, rules).failed
    # Where the policy accepts unsigned builds the same record passes those steps.
    lenient = dataclasses.replace(rules, signed_only=False)
    assert not [why for why in update_facts(unchecked, lenient).problems if "signature" in why]
    wrong_tool = record.model_copy(update={"rollback_install": record.rollback_install.model_copy(
        update={"package_signature": InstallerSignature(tool="signtool", state="signed", detail="x")})})
    assert ("the install records a signtool signature check; a pkg install has a pkgutil one"
            in dict(update_facts(wrong_tool, lenient).step_problems)["rollback-install"])


def test_the_verifiers_rules_take_only_signed_from_the_policy() -> None:
    def rules(accepted: frozenset[str]) -> UpdateRules | None:
        exp = SimpleNamespace(install_for=lambda platform: SimpleNamespace(kind="pkg", executable=EXE),
                              update=SimpleNamespace(state_write=("w",), state_check=("c",), downgrade="allow",
                                                     downgrade_code=None),
                              probe_command=("probe",), display_for=lambda platform: "none", probe_checks=(),
                              layers_for=lambda platform: None, accepted_signing=lambda platform: accepted)
        p = SimpleNamespace(platform="macos", source_gate=SimpleNamespace(sha=CANDIDATE),
                            build=SimpleNamespace(artifact=SimpleNamespace(sha256="a" * 64)),
                            install=SimpleNamespace(executable_sha256="b" * 64),
                            launch_probe=SimpleNamespace(report=None))
        return rules_for(cast(Any, p), cast(Any, exp))

    assert rules(frozenset({"signed", "notarized"})).signed_only is True  # type: ignore[union-attr]
    assert rules(frozenset({"signed", "unsigned"})).signed_only is False  # type: ignore[union-attr]
