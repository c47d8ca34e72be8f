"""Issue 35 item 1, the producer's side: its install stage grants the app's AppContainer capability read and
execute on the private prefix, once, as the app's own installer would (Chromium's installer does the same for
``chromeInstallFiles``). icacls cannot run here: the exact command line is held through an injected runner.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from desktop_qualify.producer import _pipeline, _update
from desktop_qualify.producer.installers import _grant
from desktop_qualify.producer.installers._install import install_expected
from desktop_qualify.producer.installers._tools import ToolResult

ICACLS = r"C:\Windows\System32\icacls.exe"


class Runner:
    """Records each command (and what the prefix held when it ran); answers with ``code``."""

    def __init__(self, code: int = 0) -> None:
        self.code, self.commands, self.seen = code, [], []  # type: ignore[var-annotated]

    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float, stdout_cap: int) -> ToolResult:
        self.commands.append((command, cwd))
        self.seen.append(sorted(p.name for p in Path(command[1]).rglob("*")))
        said = "" if self.code == 0 else "Access is denied."
        return ToolResult(self.code, said, stdout_truncated=False, output=said)


def test_the_capability_sid_is_derived_as_windows_does() -> None:
    # Chromium's published grants for its installer's two capabilities (device/vr/README.md).
    assert _grant.capability_sid("chromeInstallFiles") == (
        "S-1-15-3-1024-3424233489-972189580-2057154623-747635277-1604371224-316187997-3786583170-1043257646")
    assert _grant.capability_sid("lpacChromeInstallFiles") == (
        "S-1-15-3-1024-2302894289-466761758-1166120688-1039016420-2430351297-4240214049-4028510897-3317428798")
    assert _grant.capability_name("skillhost") == "skillhostInstallFiles"


def test_the_grant_is_read_and_execute_inherited_by_sid_through_system32s_icacls(tmp_path: Path) -> None:
    runner = Runner()
    grant = _grant.CapabilityGrant("skillhostInstallFiles", runner, system_root="C:\\Windows")
    grant(tmp_path / "install")
    assert runner.commands == [([ICACLS, str(tmp_path / "install"), "/grant",
                                 "*S-1-15-3-1024-572955721-240784588-1815088520-1806784465-1630863122-1527793873-"
                                 "4020719888-2386442809:(OI)(CI)RX", "/q"], tmp_path)]  # fmt: skip


def test_only_windows_grants_anything() -> None:
    assert isinstance(_grant.prefix_grant("windows", "skillhost"), _grant.CapabilityGrant)
    assert _grant.prefix_grant("linux", "skillhost") is None
    assert _grant.prefix_grant("macos", "skillhost") is None


def _zip(tmp_path: Path) -> tuple[Path, str]:
    artifact = tmp_path / "skillhost-1.0-windows.zip"
    with zipfile.ZipFile(artifact, "w") as archive:
        archive.writestr("skillhost/skillhost.exe", b"MZ")
        archive.writestr("skillhost/_internal/python311.dll", b"MZ")
    return artifact, hashlib.sha256(artifact.read_bytes()).hexdigest()


def _install(tmp_path: Path, runner: Runner) -> object:
    artifact, digest = _zip(tmp_path)
    return install_expected(archive=artifact, sha256=digest, prefix=tmp_path / "work" / "install", kind="archive",
                            executable="skillhost/skillhost.exe", whose="the build's",
                            grant=_grant.CapabilityGrant("skillhostInstallFiles", runner, system_root="C:\\Windows"))


def test_the_install_stage_grants_the_prefix_once_its_files_are_there(tmp_path: Path) -> None:
    runner = Runner()
    record = _install(tmp_path, runner)
    assert record.passed, record.failure  # type: ignore[attr-defined]
    [(command, _cwd)] = runner.commands
    assert command[1] == str(tmp_path / "work" / "install")  # the prefix, whole: inherited by every file
    assert runner.seen == [["_internal", "python311.dll", "skillhost", "skillhost.exe"]]


def test_a_refused_grant_fails_the_install_in_icacls_own_words(tmp_path: Path) -> None:
    record = _install(tmp_path, Runner(code=5))
    assert not record.passed  # type: ignore[attr-defined]
    assert "skillhostInstallFiles" in record.failure  # type: ignore[attr-defined]
    assert "Access is denied." in record.failure  # type: ignore[attr-defined]


@pytest.mark.parametrize("platform", ["windows", "linux"])
def test_the_pipelines_install_stage_asks_the_platform_for_its_grant(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    seen: dict[str, Any] = {}

    def install(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return SimpleNamespace(method="archive", file_count=1, passed=True)

    monkeypatch.setattr(_pipeline, "install", install)
    target = SimpleNamespace(kind="archive", executable="skillhost/skillhost.exe")
    app = SimpleNamespace(name="skillhost", build=SimpleNamespace(outputs={platform: "*.zip"}),
                          install={platform: target})
    policy = SimpleNamespace(file=SimpleNamespace(app=app), accepted_signing=lambda platform: frozenset())
    job = SimpleNamespace(policy=policy, platform=platform, env={}, install_prefix=tmp_path / "install",
                          progress=_pipeline.Progress("test"), record=lambda name, record: None)
    _pipeline._install(cast(Any, job), cast(Any, SimpleNamespace(archive=tmp_path / "a.zip", record=None)))
    if platform == "windows":
        assert seen["grant"].capability == "skillhostInstallFiles"  # named after the policy's app
    else:
        assert seen["grant"] is None


def test_the_update_journey_grants_each_of_its_installs(tmp_path: Path) -> None:
    runner = Runner()
    artifact, digest = _zip(tmp_path)
    rules = SimpleNamespace(installer="archive", executable="skillhost/skillhost.exe")
    plan = SimpleNamespace(rules=rules, grant=_grant.CapabilityGrant("skillhostInstallFiles", runner), signatures=None)
    journey = _update._Journey(cast(Any, plan), tmp_path / "update")
    assert journey.install(artifact, digest, "the build's").passed
    assert [command[1] for command, _cwd in runner.commands] == [str(tmp_path / "update" / "install")]
