"""Issue 35: the policy's "only signed" reaches the ``.pkg`` and ``.msi`` installers' own signature checks, what
they found is recorded in the install record, and the verifier refuses an install whose check did not pass where
the policy accepts only signed builds (``QE_INSTALLER_SIGNATURE_REFUSED``).

pkgutil and signtool cannot run on this host: the commands are recorded through an injected runner, exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from desktop_qualify.evidence_schemas import Code, InstallerSignature, PlatformPredicate
from desktop_qualify.producer import _pipeline
from desktop_qualify.producer.installers import _install
from desktop_qualify.producer.installers._install import install_expected
from desktop_qualify.producer.installers._installers import (
    ChecksSignature,
    SignatureRequirement,
    installers_for,
    signature_checked,
)
from desktop_qualify.producer.installers._tools import ToolResult
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify._expectations import Expectations
from desktop_qualify.qualify_verify._outcomes import assess_install, installer_signature_problems
from support.evidence_factory import make_keys, policy_text, predicate_data, write_artifact

SIGNTOOL = r"C:\Program Files (x86)\Windows Kits\10\bin\x64\signtool.exe"
THUMB = "ab" * 20
SIGNED_PKG = 'Package "x.pkg":\n   Status: signed by a developer certificate issued by Apple for distribution\n'


class Recorder:
    """A runner that records each command and answers as the tool would."""

    def __init__(self, answer: Any) -> None:
        self.commands: list[Sequence[str] | str] = []
        self._answer = answer

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.commands.append(command)
        code, said = self._answer(command)
        return ToolResult(code, said, stdout_truncated=False, output=said)


# --- what the job asks: the policy's accepted states and the job's signtool -------------------------------


@pytest.mark.parametrize(("accepted", "env", "expected"), [
    (["unsigned"], {}, SignatureRequirement(False, None, None)),
    (["unsigned", "signed"], {}, SignatureRequirement(False, None, None)),
    (["signed"], {}, SignatureRequirement(True, "signtool", None)),
    (["signed", "notarized"], {}, SignatureRequirement(True, "signtool", None)),
    (["signed"], {"QUALIFY_SIGNTOOL_PATH": SIGNTOOL, "QUALIFY_SIGNTOOL_CERT_SHA1": THUMB},
     SignatureRequirement(True, SIGNTOOL, THUMB)),
    # Not required, but the job names its certificate: checked and recorded, never refused.
    (["unsigned"], {"QUALIFY_SIGNTOOL_CERT_SHA1": THUMB}, SignatureRequirement(False, "signtool", THUMB)),
])
def test_the_requirement_comes_from_the_policy_and_the_jobs_signtool(accepted: list[str], env: dict[str, str],
                                                                     expected: SignatureRequirement) -> None:
    assert SignatureRequirement.of(accepted, env) == expected


def test_the_pipeline_asks_what_the_policy_accepts_for_its_platform() -> None:
    policy = SimpleNamespace(accepted_signing=lambda platform: frozenset({"signed"} if platform == "windows"
                                                                         else {"unsigned"}))
    env = {"QUALIFY_SIGNTOOL_PATH": SIGNTOOL, "QUALIFY_SIGNTOOL_CERT_SHA1": THUMB}
    windows = cast(Any, SimpleNamespace(policy=policy, platform="windows", env=env))
    macos = cast(Any, SimpleNamespace(policy=policy, platform="macos", env={}))
    assert _pipeline._signatures(windows) == SignatureRequirement(True, SIGNTOOL, THUMB)
    assert _pipeline._signatures(macos) == SignatureRequirement(False, None, None)


# --- the installers the pipeline builds: exact command lines --------------------------------------------


def test_a_required_msi_signature_is_verified_pinned_and_refuses_before_msiexec(tmp_path: Path) -> None:
    runner = Recorder(lambda command: (1, "SignTool Error: No signature found.\n") if isinstance(command, list)
                      else (0, ""))
    installers = installers_for(SignatureRequirement(True, SIGNTOOL, THUMB), runner, r"C:\Windows")
    copy, prefix = tmp_path / "Notes.msi", tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    with pytest.raises(Exception, match="the package's own signature is refused"):
        installers["msi"].install(copy, prefix)
    assert runner.commands == [[SIGNTOOL, "verify", "/pa", "/tw", "/sha1", THUMB, "/v", str(copy)]]


def test_an_msi_passes_signtool_then_is_installed(tmp_path: Path) -> None:
    runner = Recorder(lambda command: (0, "Successfully verified\n") if isinstance(command, list) else (0, ""))
    installers = installers_for(SignatureRequirement(True, SIGNTOOL, THUMB), runner, r"C:\Windows")
    copy, prefix = tmp_path / "Notes.msi", tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    installers["msi"].install(copy, prefix)
    assert runner.commands[0] == [SIGNTOOL, "verify", "/pa", "/tw", "/sha1", THUMB, "/v", str(copy)]
    assert isinstance(runner.commands[1], str)
    assert runner.commands[1].startswith(rf'"C:\Windows\System32\msiexec.exe" /a "{copy}" /qn TARGETDIR=')
    assert installers["msi"].checked() == InstallerSignature(  # type: ignore[attr-defined]
        tool="signtool", state="signed", detail="signtool verify /pa /tw passed")


def test_without_a_requirement_an_msi_is_not_checked_and_says_so(tmp_path: Path) -> None:
    runner = Recorder(lambda command: (0, ""))
    installers = installers_for(SignatureRequirement(), runner, r"C:\Windows")
    prefix = tmp_path / "install"
    prefix.mkdir()
    installers["msi"].install(tmp_path / "x.msi", prefix)
    assert len(runner.commands) == 1
    assert isinstance(runner.commands[0], str)  # msiexec only
    assert installers["msi"].checked() == InstallerSignature(  # type: ignore[attr-defined]
        tool="signtool", state="not-checked", detail="signtool is not configured")


def test_a_required_unsigned_pkg_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    runner = Recorder(lambda command: (1, "   Status: no signature\n"))
    installers = installers_for(SignatureRequirement(require_signed=True), runner)
    prefix = tmp_path / "install"
    prefix.mkdir()
    with pytest.raises(Exception, match="the package's own signature is refused"):
        installers["pkg"].install(tmp_path / "x.pkg", prefix)
    assert runner.commands == [["/usr/sbin/pkgutil", "--check-signature", str(tmp_path / "x.pkg")]]


def test_installers_are_fresh_for_each_install() -> None:
    first, second = installers_for(SignatureRequirement()), installers_for(SignatureRequirement())
    assert first["pkg"] is not second["pkg"]


# --- the install record carries what the check found -------------------------------------------------------


def _pkgutil(check: tuple[int, str]) -> Any:
    def answer(command: Sequence[str] | str) -> tuple[int, str]:
        if command[1] == "--check-signature":
            return check
        exe = Path(command[-1]) / "notes.pkg" / "Payload" / "Notes.app" / "Contents" / "MacOS" / "Notes"
        exe.parent.mkdir(parents=True)
        exe.write_bytes(b"\xcf\xfa\xed\xfe")
        return 0, ""
    return answer


def _install_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: tuple[int, str],
                 requirement: SignatureRequirement) -> Any:
    runner = Recorder(_pkgutil(check))
    monkeypatch.setattr(_install, "installers_for", lambda req: installers_for(req, runner))
    artifact = tmp_path / "Notes-1.0.pkg"
    artifact.write_bytes(b"xar!pkg bytes")
    return install_expected(archive=artifact, sha256=hashlib.sha256(artifact.read_bytes()).hexdigest(),
                            prefix=tmp_path / "work" / "install", kind="pkg",
                            executable="notes.pkg/Payload/Notes.app/Contents/MacOS/Notes", whose="the build's",
                            signatures=requirement)


def test_a_signed_pkg_installs_and_records_its_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _install_pkg(tmp_path, monkeypatch, (0, SIGNED_PKG), SignatureRequirement(require_signed=True))
    assert record.passed, record.failure
    assert record.package_signature == InstallerSignature(
        tool="pkgutil", state="signed", detail="signed by a developer certificate issued by Apple for distribution")


def test_a_refused_pkg_records_its_check_in_the_failed_record(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    record = _install_pkg(tmp_path, monkeypatch, (1, "   Status: no signature\n"),
                          SignatureRequirement(require_signed=True))
    assert not record.passed
    assert "the package's own signature is refused: no signature" in record.failure
    assert record.package_signature == InstallerSignature(tool="pkgutil", state="unsigned", detail="no signature")
    assert not (tmp_path / "work" / "install").exists()


def test_an_unsigned_pkg_under_a_policy_that_accepts_unsigned_installs_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _install_pkg(tmp_path, monkeypatch, (1, "Error: checksum did not verify\n"), SignatureRequirement())
    assert record.passed
    assert record.package_signature == InstallerSignature(tool="pkgutil", state="failed",
                                                          detail="no status (exit 1)")


def test_only_the_pkg_and_msi_installers_check_a_signature() -> None:
    installers = installers_for(SignatureRequirement(require_signed=True))
    checking = sorted(kind for kind, installer in installers.items() if isinstance(installer, ChecksSignature))
    assert checking == ["msi", "pkg"]
    assert signature_checked(installers["archive"]) is None
    assert signature_checked(installers["pkg"]) is None  # not run yet


def test_the_pipelines_install_stage_hands_the_requirement_to_the_installer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def install(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return SimpleNamespace(method="msi", file_count=1, passed=True)

    monkeypatch.setattr(_pipeline, "install", install)
    target = SimpleNamespace(kind="msi", executable="Notes/Notes.exe")
    app = SimpleNamespace(name="notes", build=SimpleNamespace(outputs={"windows": "*.msi"}),
                          install={"windows": target})
    policy = SimpleNamespace(file=SimpleNamespace(app=app), accepted_signing=lambda platform: frozenset({"signed"}))
    job = SimpleNamespace(policy=policy, platform="windows", env={"QUALIFY_SIGNTOOL_CERT_SHA1": THUMB},
                          install_prefix=tmp_path / "install", progress=_pipeline.Progress("test"),
                          record=lambda name, record: None)
    _pipeline._install(cast(Any, job), cast(Any, SimpleNamespace(archive=tmp_path / "a.msi", record=None)))
    assert seen["kind"] == "msi"
    assert seen["signatures"] == SignatureRequirement(True, "signtool", THUMB)


# --- the verifier -----------------------------------------------------------------------------------------


def _judged(tmp_path: Path, *, platform: str, kind: str, accepted: list[str],
            check: dict[str, str] | None, passed: bool = True) -> tuple[list[tuple[str, Code]], Any]:
    keys = make_keys(tmp_path / "keys")
    text = policy_text(keys, required=[platform], signing={platform: accepted})
    text = text.replace(f'{platform} = {{ kind = "archive"', f'{platform} = {{ kind = "{kind}"')
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    exp = Expectations.from_policy(load_policy(path))
    artifact = write_artifact(tmp_path / "artifacts", platform, "1" * 40)
    data = predicate_data(platform=platform, artifact=artifact, sha="1" * 40, run_id="local-1", attempt=1,
                          key=keys.pick("platform"), required_steps=("catalog-verified",))
    data["install"].update(method=kind, package_signature=check, passed=passed)
    predicate = PlatformPredicate.model_validate(data)
    return installer_signature_problems(predicate, exp), assess_install(predicate, exp)


@pytest.mark.parametrize(("platform", "kind", "check", "why"), [
    ("windows", "msi", {"tool": "signtool", "state": "failed", "detail": "SignTool Error"}, "found the package failed"),
    ("windows", "msi", {"tool": "signtool", "state": "not-checked", "detail": ""}, "found the package not-checked"),
    ("macos", "pkg", {"tool": "pkgutil", "state": "unsigned", "detail": "no signature"}, "found the package unsigned"),
    ("macos", "pkg", None, "records no pkgutil check"),
])
def test_the_verifier_refuses_a_failed_check_where_only_signed_is_accepted(
        tmp_path: Path, platform: str, kind: str, check: dict[str, str] | None, why: str) -> None:
    problems, outcome = _judged(tmp_path, platform=platform, kind=kind, accepted=["signed"], check=check)
    assert [code for _, code in problems] == [Code.INSTALLER_SIGNATURE_REFUSED]
    assert why in problems[0][0]
    # A record that says it passed with such a check contradicts itself as well.
    assert Code.INSTALLER_SIGNATURE_REFUSED in {p.code for p in outcome.problems}
    assert any("contradicts itself" in p.message for p in outcome.problems)


def test_the_verifier_accepts_a_signed_check_or_a_policy_that_accepts_unsigned(tmp_path: Path) -> None:
    signed = {"tool": "signtool", "state": "signed", "detail": "ok"}
    assert _judged(tmp_path / "a", platform="windows", kind="msi", accepted=["signed"], check=signed)[0] == []
    failed = {"tool": "signtool", "state": "failed", "detail": "SignTool Error"}
    assert _judged(tmp_path / "b", platform="windows", kind="msi", accepted=["unsigned", "signed"],
                   check=failed)[0] == []


def test_a_check_by_another_tool_than_the_kinds_contradicts_the_record(tmp_path: Path) -> None:
    problems, _ = _judged(tmp_path, platform="linux", kind="archive", accepted=["unsigned"],
                          check={"tool": "pkgutil", "state": "signed", "detail": "x"})
    assert [code for _, code in problems] == [Code.INSTALL_FAILED]
    assert "has none" in problems[0][0]
