"""producer/processes/_process.run_bounded and the OS signers' exact command lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.os_signing._platform_signing import (
    CodesignSigner,
    NoPlatformSigner,
    SigntoolSigner,
    is_macho,
    platform_signer_from_env,
    signer_for,
)
from desktop_qualify.producer.processes._process import excerpt, minimal_environment, run_bounded

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


def _parent_of_a_sleeper(pid_file: Path) -> list[str]:
    """A child that starts a grandchild (its pid written to ``pid_file``), then both sleep for a minute."""
    return _py("import subprocess,sys,time; p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);"
               f"open({str(pid_file)!r},'w').write(str(p.pid)); time.sleep(60)")


def _assert_gone(pid_file: Path, why: str) -> None:
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), f"the worker the child started outlived the {why}"


def test_timeout_kills_the_child_and_its_session(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_bounded(_parent_of_a_sleeper(tmp_path / "grandchild.pid"), timeout=1.5, cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert result.timed_out
    assert result.exit_code is None
    _assert_gone(tmp_path / "grandchild.pid", "timeout")


def test_cancel_from_another_thread_kills_the_child_and_its_session(tmp_path: Path) -> None:
    """A second build on its own thread is ended so when the first fails: the switch kills the whole tree."""
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    started = time.monotonic()
    result = run_bounded(_parent_of_a_sleeper(tmp_path / "grandchild.pid"), timeout=60, cwd=tmp_path, cancel=cancel)
    assert time.monotonic() - started < 15
    assert result.cancelled
    assert not result.timed_out
    assert result.exit_code is None
    _assert_gone(tmp_path / "grandchild.pid", "cancel")


def test_a_cancel_switch_never_set_changes_nothing(tmp_path: Path) -> None:
    result = run_bounded(_py("import sys,time; time.sleep(0.3); sys.exit(4)"), timeout=30, cwd=tmp_path,
                         cancel=threading.Event())
    assert (result.exit_code, result.cancelled, result.timed_out) == (4, False, False)


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


def test_each_childs_time_is_logged_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Where a stage's time went (QUALIFY_LOGLEVEL=INFO; the bench splits the build command off the producer)."""
    with caplog.at_level("INFO", logger="desktop_qualify.producer.processes._process"):
        run_bounded([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=30, cwd=tmp_path)
    (record,) = [r for r in caplog.records if r.name == "desktop_qualify.producer.processes._process"]
    assert record.getMessage().startswith(f"child {sys.executable} -c import sys; sys.exit(3): ")
    # The bench reads the duration and the start (on the producer's monotonic clock) to tell overlapping builds.
    found = re.search(r": (\d+\.\d{3}) s, exit 3 \(started at t=(\d+\.\d{3}) s\)$", record.getMessage())
    assert found is not None, record.getMessage()
    assert 0 < float(found.group(1)) < 30
    assert abs(float(found.group(2)) - (time.monotonic() - float(found.group(1)))) < 30


def test_excerpt_keeps_the_tail_and_survives_bad_bytes() -> None:
    assert excerpt(b"abc\xffdef", 4) == "\ufffddef"
    assert excerpt(b"x" * 10, 3) == "xxx"


# -- OS code signing ---------------------------------------------------------------------------------------

THIN_LE64, THIN_BE64 = b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf"
THIN_LE32, THIN_BE32 = b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xce"
FAT, FAT64 = b"\xca\xfe\xba\xbe\x00\x00\x00\x02", b"\xca\xfe\xba\xbf\x00\x00\x00\x03"
JAVA_CLASS = b"\xca\xfe\xba\xbe\x00\x00\x00\x34"  # same magic as FAT; the class version (52) is no arch count


def _put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data + b"payload")


@pytest.fixture
def mac_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "dist" / "skillhost"
    _put(bundle / "skillhost", THIN_LE64)
    _put(bundle / "_internal" / "libpython3.11.dylib", THIN_LE64)
    _put(bundle / "_internal" / "Python.framework" / "Versions" / "3.11" / "Python", FAT64)
    _put(bundle / "_internal" / "lib-dynload" / "_ssl.cpython-311-darwin.so", FAT)
    _put(bundle / "_internal" / "lib-dynload" / "deep" / "be64.so", THIN_BE64)
    _put(bundle / "_internal" / "le32", THIN_LE32)
    _put(bundle / "_internal" / "be32", THIN_BE32)
    _put(bundle / "_internal" / "base_library.zip", b"PK\x03\x04")
    _put(bundle / "_internal" / "Tool.class", JAVA_CLASS)
    _put(bundle / "_internal" / "data.txt", b"hello")
    (bundle / "_internal" / "empty").write_bytes(b"")
    (bundle / "_internal" / "short").write_bytes(b"\xca\xfe")
    # Links are not signed again: the binary behind them is signed at its real path.
    (bundle / "_internal" / "libpython.dylib").symlink_to("libpython3.11.dylib")
    (bundle / "_internal" / "Python.framework" / "Versions" / "Current").symlink_to("3.11")
    return bundle


ID = "Developer ID Application: Example (TEAMID)"


def _codesign(path: Path, *, entitlements: bool = False) -> list[str]:
    extra = ["--entitlements", "/ent.plist"] if entitlements else []
    return ["codesign", "--force", "--options", "runtime", "--timestamp", *extra, "--sign", ID, str(path)]


def test_codesign_signs_every_macho_deepest_first_then_the_executable(mac_bundle: Path) -> None:
    signer = CodesignSigner(ID, Path("/ent.plist"))
    exe = mac_bundle / "skillhost"
    internal = mac_bundle / "_internal"
    assert signer.tool == "codesign"
    assert signer.sign_commands(mac_bundle, exe) == [
        _codesign(internal / "Python.framework" / "Versions" / "3.11" / "Python"),
        _codesign(internal / "lib-dynload" / "deep" / "be64.so"),
        _codesign(internal / "lib-dynload" / "_ssl.cpython-311-darwin.so"),
        _codesign(internal / "be32"),
        _codesign(internal / "le32"),
        _codesign(internal / "libpython3.11.dylib"),
        _codesign(exe, entitlements=True),
    ]
    # Each loose Mach-O verified on its own (--deep follows only nested code a bundle declares), the executable last.
    assert signer.verify_commands(mac_bundle, exe) == [
        *(["codesign", "--verify", "--strict", "--verbose=2", argv[-1]] for argv in signer.sign_commands(mac_bundle,
                                                                                                        exe)[:-1]),
        ["codesign", "--verify", "--strict", "--deep", "--verbose=2", str(exe)]]


def test_codesign_always_signs_the_executable_last_even_when_not_detected(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    _put(bundle / "app", b"#!/bin/sh\n")
    _put(bundle / "z" / "lib.dylib", THIN_LE64)
    commands = CodesignSigner("id", Path("/e.plist")).sign_commands(bundle, bundle / "app")
    assert [argv[-1] for argv in commands] == [str(bundle / "z" / "lib.dylib"), str(bundle / "app")]
    assert ["--entitlements" in argv for argv in commands] == [False, True]


@pytest.mark.parametrize(("head", "expected"), [
    (THIN_LE64, True), (THIN_BE64, True), (THIN_LE32, True), (THIN_BE32, True), (FAT, True), (FAT64, True),
    (JAVA_CLASS, False), (b"\xca\xfe\xba\xbe", False), (b"\x7fELF", False), (b"MZ", False), (b"", False),
])
def test_macho_detection_by_magic(head: bytes, expected: bool, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(head)
    assert is_macho(tmp_path / "f") is expected


@pytest.fixture
def windows_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "dist" / "skillhost"
    for name in ["skillhost.exe", "_internal/python311.dll", "_internal/VCRUNTIME140.DLL",
                 "_internal/lib/_ssl.pyd", "_internal/lib/sub/helper.exe", "_internal/base_library.zip",
                 "_internal/readme.txt", "_internal/notes.exe.txt"]:
        _put(bundle / name, b"MZ")
    return bundle


def test_signtool_signs_and_verifies_every_pe_file(windows_bundle: Path) -> None:
    signer = SigntoolSigner("a" * 40, "http://timestamp.example")
    exe = windows_bundle / "skillhost.exe"
    internal = windows_bundle / "_internal"
    order = [internal / "lib" / "sub" / "helper.exe", internal / "lib" / "_ssl.pyd", internal / "VCRUNTIME140.DLL",
             internal / "python311.dll", exe]
    assert signer.tool == "signtool"
    assert signer.sign_commands(windows_bundle, exe) == [
        ["signtool", "sign", "/sha1", "a" * 40, "/fd", "SHA256", "/tr", "http://timestamp.example", "/td", "SHA256",
         str(path)] for path in order]
    # Pinned to the certificate signed with, and a warning (/tw) on a signature without a timestamp.
    assert signer.verify_commands(windows_bundle, exe) == [
        ["signtool", "verify", "/pa", "/tw", "/sha1", "a" * 40, "/v", str(path)] for path in order]


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


@pytest.mark.parametrize(("platform", "env", "kind"), [
    ("macos", {"QUALIFY_CODESIGN_IDENTITY": "id", "QUALIFY_CODESIGN_ENTITLEMENTS": "/e.plist"}, CodesignSigner),
    ("macos", {"QUALIFY_CODESIGN_IDENTITY": "id"}, NoPlatformSigner),
    ("windows", {"QUALIFY_SIGNTOOL_CERT_SHA1": "a" * 40, "QUALIFY_SIGNTOOL_TIMESTAMP_URL": "http://ts"},
     SigntoolSigner),
    ("windows", {"QUALIFY_SIGNTOOL_CERT_SHA1": "a" * 40}, NoPlatformSigner),
    ("linux", {"QUALIFY_CODESIGN_IDENTITY": "id", "QUALIFY_CODESIGN_ENTITLEMENTS": "/e.plist"}, NoPlatformSigner),
    ("macos", {}, NoPlatformSigner),
])
def test_platform_signer_from_env(platform: str, env: dict[str, str], kind: type) -> None:
    assert type(platform_signer_from_env(platform, env)) is kind


class _Recorder:
    def __init__(self, codes: list[int] | Exception) -> None:
        self.codes = codes
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.calls.append((argv, kwargs))
        if isinstance(self.codes, Exception):
            raise self.codes
        # `codesign -dvv` answers as for a Developer ID signature with the hardened runtime and a timestamp.
        said = (b"CodeDirectory v=20500 size=1 flags=0x10000(runtime) hashes=1+0 location=embedded\n"
                b"Timestamp=Jan 1, 2024 at 10:00:00 AM\nTeamIdentifier=TEAMID\n") if argv[1:2] == ["-dvv"] else b""
        return subprocess.CompletedProcess(argv, self.codes.pop(0), said, b"")


def test_sign_runs_every_sign_then_the_verify_without_a_shell(mac_bundle: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([0] * 21)
    monkeypatch.setattr(subprocess, "run", recorder)
    signer = CodesignSigner("id", Path("/e.plist"))
    exe = mac_bundle / "skillhost"
    signs = signer.sign_commands(mac_bundle, exe)
    expected = [*signs, *signer.verify_commands(mac_bundle, exe), *(["codesign", "-dvv", a[-1]] for a in signs)]
    outcome = signer.sign(mac_bundle, exe)
    assert (outcome.tool, outcome.state) == ("codesign", "signed")
    assert [argv for argv, _ in recorder.calls] == expected
    assert len(expected) == 21
    assert all(kwargs.get("shell") is False and kwargs.get("timeout") for _, kwargs in recorder.calls)


def test_a_failed_verify_is_a_failed_state(windows_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([0] * 5 + [0, 0, 1, 0, 0])
    monkeypatch.setattr(subprocess, "run", recorder)
    outcome = SigntoolSigner("a" * 40, "http://ts").sign(windows_bundle, windows_bundle / "skillhost.exe")
    assert outcome.state == "failed"
    assert len(recorder.calls) == 8, "signing stops at the first failure"


def test_a_failed_nested_signature_is_a_failed_state(mac_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([0, 1])
    monkeypatch.setattr(subprocess, "run", recorder)
    assert CodesignSigner("id", Path("/e.plist")).sign(mac_bundle, mac_bundle / "skillhost").state == "failed"
    assert len(recorder.calls) == 2


def test_a_missing_tool_is_a_build_failure(mac_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess, "run", _Recorder(FileNotFoundError("codesign")))
    with pytest.raises(QualificationError) as caught:
        CodesignSigner("id", Path("/e.plist")).sign(mac_bundle, mac_bundle / "skillhost")
    assert caught.value.code is Code.BUILD_FAILED


@pytest.mark.parametrize("where", ["outside", "missing", "link"])
def test_the_executable_must_be_a_file_inside_the_bundle(where: str, mac_bundle: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([])
    monkeypatch.setattr(subprocess, "run", recorder)
    (tmp_path / "outside").write_bytes(THIN_LE64)
    target = {"outside": tmp_path / "outside", "missing": mac_bundle / "nope",
              "link": mac_bundle / "_internal" / "libpython.dylib"}[where]
    with pytest.raises(QualificationError) as caught:
        CodesignSigner("id", Path("/e.plist")).sign(mac_bundle, target)
    assert caught.value.code is Code.BUILD_FAILED
    assert recorder.calls == []


def test_no_signer_runs_nothing_and_says_unsigned(mac_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder([])
    monkeypatch.setattr(subprocess, "run", recorder)
    outcome = NoPlatformSigner().sign(mac_bundle, mac_bundle / "skillhost")
    assert (outcome.tool, outcome.state) == ("none", "unsigned")
    assert recorder.calls == []


def test_signtool_path_comes_from_the_job_environment(tmp_path: Path) -> None:
    from desktop_qualify.producer.os_signing._platform_signing import SigntoolSigner, platform_signer_from_env

    bundle = tmp_path / "skillhost"
    bundle.mkdir()
    exe = bundle / "skillhost.exe"
    exe.write_bytes(b"MZ")
    sdk = r"C:\Program Files (x86)\Windows Kits\10\bin\x64\signtool.exe"
    signer = platform_signer_from_env("windows", {"QUALIFY_SIGNTOOL_CERT_SHA1": "ab" * 20,
                                                  "QUALIFY_SIGNTOOL_TIMESTAMP_URL": "http://ts.example.invalid",
                                                  "QUALIFY_SIGNTOOL_PATH": sdk})
    assert isinstance(signer, SigntoolSigner)
    assert [argv[:2] for argv in signer.sign_commands(bundle, exe)] == [[sdk, "sign"]]
    assert [argv[:2] for argv in signer.verify_commands(bundle, exe)] == [[sdk, "verify"]]
    # Without a timestamp authority there is no Windows signing at all: the bundle stays unsigned.
    unsigned = platform_signer_from_env("windows", {"QUALIFY_SIGNTOOL_CERT_SHA1": "ab" * 20})
    assert unsigned.sign(bundle, exe).state == "unsigned"
