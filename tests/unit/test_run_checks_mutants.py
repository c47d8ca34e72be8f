"""qualify_verify/_run_checks.py, the candidate files: the exact finding (code, message, platform) the gate records
for each file it cannot hash (missing, not a regular file, a directory, above the policy's cap, unreadable, changed
while read), for a file whose digest or size differs from the evidence's, for a file no statement names (with and
without a statement that did not verify or was not found), and for an evidenced file not presented; and that one bad
file never stops the files after it from being judged. Written for the mutants of the module that survived the
verifier's other tests (docs/mutation.md).
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, Reason
from desktop_qualify.qualify_verify import _run_checks
from desktop_qualify.qualify_verify._candidate import CandidateChangedError
from desktop_qualify.qualify_verify._findings import Findings
from desktop_qualify.qualify_verify._run_checks import _hash_candidate, check_candidate_files

CAP = 1 << 20
LINUX_BYTES = b"the linux build\n"
MACOS_BYTES = b"the macos build, a little longer\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _platform(platform: str, name: str, data: bytes, *, sha256: str | None = None, size: int | None = None) -> Any:
    """A verified platform statement's fields the candidate check reads: the platform and its artifact."""
    artifact = SimpleNamespace(name=name, sha256=_sha(data) if sha256 is None else sha256,
                               size=len(data) if size is None else size)
    return SimpleNamespace(platform=platform,
                           statement=SimpleNamespace(predicate=SimpleNamespace(build=SimpleNamespace(artifact=artifact))))


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def _found(findings: Findings) -> list[tuple[str, str, str | None, str, int | None]]:
    return [(r.code.value, r.message, r.platform, r.cause, r.follows) for r in findings.reasons]


def _one(findings: Findings) -> tuple[str, str, str | None]:
    assert len(findings.reasons) == 1, findings.reasons
    reason = findings.reasons[0]
    return reason.code.value, reason.message, reason.platform


# --- _hash_candidate: the finding for each file that cannot be hashed ------------------------------------------------


def test_a_missing_candidate_is_artifact_missing_naming_the_argument(tmp_path: Path) -> None:
    missing = tmp_path / "app-linux.tar.gz"
    findings = Findings()
    assert _hash_candidate(missing, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_MISSING.value, f"--artifact {missing}: missing (no such file)", None)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_candidate_keeps_the_not_regular_code_and_message(tmp_path: Path) -> None:
    fifo = tmp_path / "app-linux.tar.gz"
    os.mkfifo(fifo)
    findings = Findings()
    assert _hash_candidate(fifo, CAP, findings) is None
    assert _one(findings) == (Code.INPUT_NOT_REGULAR.value,
                              f"--artifact {fifo}: a FIFO, not a regular file; only regular files are read", None)


def test_a_directory_candidate_is_artifact_missing_cannot_read(tmp_path: Path) -> None:
    folder = tmp_path / "app-linux.tar.gz"
    folder.mkdir()
    findings = Findings()
    assert _hash_candidate(folder, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_MISSING.value,
                              f"{folder}: cannot read candidate file (--artifact {folder}: is a directory, not a file)",
                              None)


def test_a_candidate_at_the_cap_is_hashed_and_one_byte_over_is_too_large(tmp_path: Path) -> None:
    path = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    findings = Findings()
    assert _hash_candidate(path, len(LINUX_BYTES), findings) == (_sha(LINUX_BYTES), len(LINUX_BYTES))
    assert findings.ok
    assert _hash_candidate(path, len(LINUX_BYTES) - 1, findings) is None
    assert _one(findings) == (
        Code.ARTIFACT_TOO_LARGE.value,
        f"--artifact {path}: {len(LINUX_BYTES)} bytes, above the policy's [limits] max_candidate_bytes "
        f"({len(LINUX_BYTES) - 1})", None)


def _raising(exc: BaseException) -> Any:
    def stable_sha256(path: Path, max_bytes: int) -> tuple[str, int]:
        raise exc
    return stable_sha256


def test_an_unreadable_candidate_names_the_operating_systems_reason(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "app-linux.tar.gz"
    monkeypatch.setattr(_run_checks, "stable_sha256",
                        _raising(OSError(errno.EACCES, "Permission denied", str(path))))
    findings = Findings()
    assert _hash_candidate(path, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_MISSING.value, f"{path}: cannot read candidate file (Permission denied)",
                              None)


def test_an_unreadable_candidate_without_a_reason_names_the_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "app-linux.tar.gz"
    monkeypatch.setattr(_run_checks, "stable_sha256", _raising(OSError("device gone")))
    findings = Findings()
    assert _hash_candidate(path, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_MISSING.value, f"{path}: cannot read candidate file (device gone)", None)


def test_a_qualification_error_of_another_kind_is_artifact_missing_with_its_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "app-linux.tar.gz"
    monkeypatch.setattr(_run_checks, "stable_sha256",
                        _raising(QualificationError(Code.ENVIRONMENT, "cannot read (I/O error)")))
    findings = Findings()
    assert _hash_candidate(path, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_MISSING.value,
                              f"{path}: cannot read candidate file (cannot read (I/O error))", None)


def test_a_candidate_that_changed_while_hashed_is_a_digest_mismatch_by_file_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "app-linux.tar.gz"
    monkeypatch.setattr(_run_checks, "stable_sha256",
                        _raising(CandidateChangedError("the path names another file than the one hashed")))
    findings = Findings()
    assert _hash_candidate(path, CAP, findings) is None
    assert _one(findings) == (Code.ARTIFACT_DIGEST_MISMATCH.value,
                              "app-linux.tar.gz: the path names another file than the one hashed", None)


# --- check_candidate_files: matching each file to the evidence -------------------------------------------------------


def test_matching_files_are_judged_in_order_with_no_finding(tmp_path: Path) -> None:
    linux = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    macos = _write(tmp_path, "app-macos.dmg", MACOS_BYTES)
    platforms = [_platform("linux", linux.name, LINUX_BYTES), _platform("macos", macos.name, MACOS_BYTES)]
    findings = Findings()
    judged = check_candidate_files([linux, macos], platforms, findings, max_bytes=CAP)
    assert judged == [(linux.name, _sha(LINUX_BYTES)), (macos.name, _sha(MACOS_BYTES))]
    assert findings.ok


def test_a_file_that_cannot_be_hashed_does_not_stop_the_next_one(tmp_path: Path) -> None:
    missing = tmp_path / "app-macos.dmg"
    linux = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    platforms = [_platform("linux", linux.name, LINUX_BYTES)]
    findings = Findings()
    judged = check_candidate_files([missing, linux], platforms, findings, max_bytes=CAP)
    assert judged == [(linux.name, _sha(LINUX_BYTES))]
    assert _found(findings) == [
        (Code.ARTIFACT_MISSING.value, f"--artifact {missing}: missing (no such file)", None, "root", None)]


def test_a_renamed_file_is_matched_to_its_platform_by_digest(tmp_path: Path) -> None:
    renamed = _write(tmp_path, "renamed.tar.gz", LINUX_BYTES)
    platforms = [_platform("macos", "app-macos.dmg", MACOS_BYTES),
                 _platform("linux", "app-linux.tar.gz", LINUX_BYTES)]
    findings = Findings()
    judged = check_candidate_files([renamed], platforms, findings, max_bytes=CAP)
    assert judged == [(renamed.name, _sha(LINUX_BYTES))]
    # Only the macOS file is missing: the renamed file stood for the Linux artifact.
    assert _found(findings) == [(Code.ARTIFACT_MISSING.value,
                                 "candidate file app-macos.dmg was not presented (--artifact)", "macos", "root", None)]


def test_a_file_under_an_evidenced_name_with_other_bytes_is_a_digest_mismatch_for_its_platform(tmp_path: Path) -> None:
    other = b"not the linux build at all\n"
    linux = _write(tmp_path, "app-linux.tar.gz", other)
    platforms = [_platform("linux", linux.name, LINUX_BYTES)]
    findings = Findings()
    judged = check_candidate_files([linux], platforms, findings, max_bytes=CAP)
    assert judged == [(linux.name, _sha(other))]
    assert _found(findings) == [(
        Code.ARTIFACT_DIGEST_MISMATCH.value,
        f"app-linux.tar.gz: sha256 {_sha(other)[:16]} differs from the evidence's {_sha(LINUX_BYTES)[:16]}",
        "linux", "root", None)]


def test_a_file_with_the_evidenced_digest_but_another_size_is_a_size_mismatch_for_its_platform(tmp_path: Path) -> None:
    linux = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    platforms = [_platform("linux", linux.name, LINUX_BYTES, size=len(LINUX_BYTES) + 1)]
    findings = Findings()
    check_candidate_files([linux], platforms, findings, max_bytes=CAP)
    assert _found(findings) == [(
        Code.ARTIFACT_DIGEST_MISMATCH.value,
        f"app-linux.tar.gz: {len(LINUX_BYTES)} bytes, the evidence says {len(LINUX_BYTES) + 1}",
        "linux", "root", None)]


def test_an_evidenced_file_not_presented_is_artifact_missing_for_its_platform(tmp_path: Path) -> None:
    linux = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    platforms = [_platform("linux", linux.name, LINUX_BYTES), _platform("macos", "app-macos.dmg", MACOS_BYTES)]
    findings = Findings()
    check_candidate_files([linux], platforms, findings, max_bytes=CAP)
    assert _found(findings) == [(Code.ARTIFACT_MISSING.value,
                                 "candidate file app-macos.dmg was not presented (--artifact)", "macos", "root", None)]


def test_a_file_no_statement_names_is_a_root_digest_mismatch_and_the_next_file_is_still_judged(tmp_path: Path) -> None:
    stray_bytes = b"something else\n"
    stray = _write(tmp_path, "stray.bin", stray_bytes)
    linux = _write(tmp_path, "app-linux.tar.gz", LINUX_BYTES)
    platforms = [_platform("linux", linux.name, LINUX_BYTES)]
    findings = Findings()
    judged = check_candidate_files([stray, linux], platforms, findings, max_bytes=CAP)
    assert judged == [(stray.name, _sha(stray_bytes)), (linux.name, _sha(LINUX_BYTES))]
    assert _found(findings) == [(
        Code.ARTIFACT_DIGEST_MISMATCH.value,
        f"stray.bin: sha256 {_sha(stray_bytes)[:16]} is not an artifact in the evidence",
        None, "root", None)]


def _root(findings: Findings, code: Code, message: str) -> Reason:
    return findings.add(code, message, "macos")


def test_a_file_unmatched_while_a_statement_did_not_verify_follows_that_statement(tmp_path: Path) -> None:
    stray = _write(tmp_path, "app-macos.dmg", MACOS_BYTES)
    findings = Findings()
    blocked = {"macos": _root(findings, Code.SIGNATURE_INVALID, "macos.json: bad signature")}
    check_candidate_files([stray], [], findings, blocked, max_bytes=CAP)
    assert _found(findings) == [
        (Code.SIGNATURE_INVALID.value, "macos.json: bad signature", "macos", "root", None),
        (Code.ARTIFACT_DIGEST_MISMATCH.value,
         "app-macos.dmg: cannot be matched, since the statement that may name it did not verify",
         None, "consequence", 0)]


def test_a_file_unmatched_while_a_statement_is_absent_says_it_was_not_found(tmp_path: Path) -> None:
    stray = _write(tmp_path, "app-macos.dmg", MACOS_BYTES)
    findings = Findings()
    blocked = {"macos": _root(findings, Code.EVIDENCE_MISSING, "macos.json: file not found")}
    check_candidate_files([stray], [], findings, blocked, max_bytes=CAP)
    assert _found(findings)[1] == (
        Code.ARTIFACT_DIGEST_MISMATCH.value,
        f"app-macos.dmg: cannot be matched, since the statement that may name it was not found "
        f"(see {Code.EVIDENCE_MISSING.value})", None, "consequence", 0)


def test_a_file_unmatched_when_no_evidence_was_found_follows_the_absence(tmp_path: Path) -> None:
    stray = _write(tmp_path, "app-macos.dmg", MACOS_BYTES)
    findings = Findings()
    absent = _root(findings, Code.BUNDLE_INVALID, "no evidence stored for the candidate")
    check_candidate_files([stray], [], findings, None, absent, max_bytes=CAP)
    assert _found(findings)[1] == (
        Code.ARTIFACT_DIGEST_MISMATCH.value,
        f"app-macos.dmg: cannot be matched, since the statement that may name it was not found "
        f"(see {Code.BUNDLE_INVALID.value})", None, "consequence", 0)
