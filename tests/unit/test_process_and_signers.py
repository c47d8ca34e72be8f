"""producer/_process.run_bounded and the OS signers' exact command lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evidence_schemas import Code, QualificationError
from producer._platform_signing import CodesignSigner, NoPlatformSigner, SigntoolSigner, signer_for
from producer._process import excerpt, minimal_environment, run_bounded

PY = sys.executable


def _py(code: str, *args: str) -> list[str]:
    return [PY, "-c", code, *args]


def test_a_normal_run(tmp_path: Path) -> None:
    result = run_bounded(_py("import os,sys; print(os.getcwd()); sys.stderr.write('e'); sys.exit(3)"),
                         timeout=30, cwd=tmp_path)
    assert result.exit_code == 3
    assert not result.timed_out
    assert result.stdout.strip() == str(tmp_path).encode()
    assert result.stderr == b"e"
    assert not result.stdout_truncated


def test_timeout_kills_the_child_and_its_session(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = ("import subprocess,sys,time; p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);"
            f"open({str(pid_file)!r},'w').write(str(p.pid)); time.sleep(60)")
    started = time.monotonic()
    result = run_bounded(_py(code), timeout=1.5, cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert result.timed_out
    assert result.exit_code is None
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), "the worker the child started outlived the timeout"


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        return "\nState:\tZ" not in status.read_text()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_output_beyond_the_cap_is_drained_and_dropped(tmp_path: Path) -> None:
    # 4 MiB is far beyond a pipe buffer: the child would block forever if the excess were not read.
    code = "import sys; sys.stdout.write('o'*4194304); sys.stderr.write('e'*4194304)"
    result = run_bounded(_py(code), timeout=30, cwd=tmp_path, stdout_cap=1000, stderr_cap=10)
    assert result.exit_code == 0
    assert not result.timed_out
    assert result.stdout == b"o" * 1000
    assert result.stdout_truncated
    assert result.stderr == b"e" * 10


def test_output_at_the_cap_is_not_truncated(tmp_path: Path) -> None:
    result = run_bounded(_py("import sys; sys.stdout.write('o'*1000)"), timeout=30, cwd=tmp_path, stdout_cap=1000)
    assert result.stdout == b"o" * 1000
    assert not result.stdout_truncated


def test_no_shell_and_no_stdin(tmp_path: Path) -> None:
    hostile = ["$HOME", "a; touch pwned", "`id`", "|", "&&"]
    result = run_bounded(_py("import sys,json; print(json.dumps(sys.argv[1:])); print(repr(sys.stdin.read()))",
                             *hostile), timeout=30, cwd=tmp_path)
    lines = result.stdout.decode().splitlines()
    import json

    assert json.loads(lines[0]) == hostile
    assert lines[1] == "''"
    assert not (tmp_path / "pwned").exists()


def test_minimal_environment_carries_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    env = minimal_environment(tmp_path)
    assert "GITHUB_TOKEN" not in env
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
    result = run_bounded(_py("import os; print(sorted(os.environ))"), timeout=30, cwd=tmp_path, env=env)
    assert b"GITHUB_TOKEN" not in result.stdout


def test_excerpt_keeps_the_tail_and_survives_bad_bytes() -> None:
    assert excerpt(b"abc\xffdef", 4) == "\ufffddef"
    assert excerpt(b"x" * 10, 3) == "xxx"


# -- OS code signing ---------------------------------------------------------------------------------------

EXE = Path("/bundle/skillhost")


def test_codesign_command_lines() -> None:
    signer = CodesignSigner("Developer ID Application: Example (TEAMID)", Path("/ent.plist"))
    assert signer.tool == "codesign"
    assert signer.sign_commands(EXE) == [[
        "codesign", "--force", "--options", "runtime", "--timestamp", "--entitlements", "/ent.plist", "--sign",
        "Developer ID Application: Example (TEAMID)", "/bundle/skillhost"]]
    assert signer.verify_commands(EXE) == [["codesign", "--verify", "--strict", "--verbose=2", "/bundle/skillhost"]]


def test_signtool_command_lines() -> None:
    signer = SigntoolSigner("a" * 40, "http://timestamp.example")
    assert signer.tool == "signtool"
    assert signer.sign_commands(EXE) == [[
        "signtool", "sign", "/sha1", "a" * 40, "/fd", "SHA256", "/tr", "http://timestamp.example", "/td", "SHA256",
        str(EXE)]]
    assert signer.verify_commands(EXE) == [["signtool", "verify", "/pa", "/v", str(EXE)]]


@pytest.mark.parametrize(
    ("platform", "identity", "entitlements", "timestamp", "kind"),
    [
        ("macos", "id", Path("/e.plist"), None, CodesignSigner),
        ("macos", "id", None, None, NoPlatformSigner),
        ("macos", None, Path("/e.plist"), None, NoPlatformSigner),
        ("windows", "a" * 40, None, "http://ts", SigntoolSigner),
        ("windows", "a" * 40, None, None, NoPlatformSigner),
        ("windows", None, None, "http://ts", NoPlatformSigner),
        ("linux", "id", Path("/e.plist"), "http://ts", NoPlatformSigner),
    ],
)
def test_signer_for(platform: str, identity: str | None, entitlements: Path | None, timestamp: str | None,
                    kind: type) -> None:
    assert type(signer_for(platform, identity=identity, entitlements=entitlements, timestamp_url=timestamp)) is kind


class _Recorder:
    def __init__(self, codes: list[int] | Exception) -> None:
        self.codes = codes
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.calls.append((argv, kwargs))
        if isinstance(self.codes, Exception):
            raise self.codes
        return subprocess.CompletedProcess(argv, self.codes.pop(0), b"", b"")


def test_sign_runs_sign_then_verify_without_a_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([0, 0])
    monkeypatch.setattr(subprocess, "run", recorder)
    signer = CodesignSigner("id", Path("/e.plist"))
    outcome = signer.sign(EXE)
    assert (outcome.tool, outcome.state) == ("codesign", "signed")
    assert [argv for argv, _ in recorder.calls] == [*signer.sign_commands(EXE), *signer.verify_commands(EXE)]
    assert all(kwargs.get("shell") is False and kwargs.get("timeout") for _, kwargs in recorder.calls)


def test_a_failed_verify_is_a_failed_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", _Recorder([0, 1]))
    assert SigntoolSigner("a" * 40, "http://ts").sign(EXE).state == "failed"


def test_a_missing_tool_is_a_build_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", _Recorder(FileNotFoundError("codesign")))
    with pytest.raises(QualificationError) as caught:
        CodesignSigner("id", Path("/e.plist")).sign(EXE)
    assert caught.value.code is Code.BUILD_FAILED


def test_no_signer_runs_nothing_and_says_unsigned(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([])
    monkeypatch.setattr(subprocess, "run", recorder)
    outcome = NoPlatformSigner().sign(EXE)
    assert (outcome.tool, outcome.state) == ("none", "unsigned")
    assert recorder.calls == []
