"""qualify_verify/_run_checks.py, the candidate files: the exact finding (code, message, platform) the gate records
for each file it cannot hash (missing, not a regular file, a directory, above the policy's cap, unreadable, changed
while read), for a file whose digest or size differs from the evidence's, for a file no statement names (with and
without a statement that did not verify or was not found), and for an evidenced file not presented; and that one bad
file never stops the files after it from being judged. The aggregate: the exact finding when it is absent, unsigned,
unreadable, not an aggregate, or its claims differ from its certificate; each way its list of platform statements can
differ from the statements verified here (an entry no statement matches, a statement not listed, an entry twice,
at most three of each named), and when such a difference follows from a statement that did not verify or is absent
(and when it does not); its policy, subjects, required platforms, run, commit and producer identity; and the
provenance each entry binds. Across the platform statements: a missing platform named alone, or with the code of
the finding that explains it; statements of several commits, of another commit than the candidate, or built from
several source trees, each commit and digest named sorted to 12 hex digits; statements of several runs or attempts
named sorted; two signing certificates of different runs. Written for the mutants of the module that survived the
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
from desktop_qualify.evidence_schemas import AggregateStatement, Code, QualificationError, Reason
from desktop_qualify.qualify_trust import GitHubIdentity, SignerIdentity, VerifiedStatement
from desktop_qualify.qualify_verify import _run_checks
from desktop_qualify.qualify_verify._candidate import CandidateChangedError
from desktop_qualify.qualify_verify._findings import Findings
from desktop_qualify.qualify_verify._run_checks import (
    _hash_candidate,
    check_aggregate_binds_platforms,
    check_aggregate_binds_provenance,
    check_aggregate_identity,
    check_candidate_files,
    check_coverage,
    check_one_certified_run,
    check_one_commit,
    check_one_run,
    verify_aggregate,
)
from support.evidence_factory import make_evidence, platform_payload

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


# --- the aggregate: its list against the statements verified here -----------------------------------------------------

POLICY_SHA = _sha(b"the policy's bytes")
KEYID = _sha(b"the platform key")
ARTIFACT_NAMES = {"linux": "app-linux.tar.gz", "macos": "app-macos.dmg", "windows": "app-windows.zip"}
RUN: dict[str, Any] = {
    "mode": "local", "repository": "local/desktop-qualify", "workflow": ".github/workflows/qualify.yml",
    "ref": "refs/heads/main", "sha": "3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
    "run_id": "local-20260101T000000-0123abcd", "attempt": 1, "trigger": "local", "runner_environment": "local"}


def _run(**changes: Any) -> Any:
    """The run identity every statement of the chain carries; ``changes`` make it another's."""
    return SimpleNamespace(**{**RUN, **changes})


def _expectations(required: tuple[str, ...] = ("linux", "macos")) -> Any:
    """What the policy fixes, as the aggregate checks read it."""
    return SimpleNamespace(mode=RUN["mode"], repository=RUN["repository"], workflow=RUN["workflow"], ref=RUN["ref"],
                           allowed_triggers=frozenset({"local"}), runner_environment="local",
                           required_platforms=required, policy_sha256=POLICY_SHA)


def _verified(platform: str, statement: bytes) -> Any:
    """A platform statement verified here: the digest of its signed bytes, its signer, its artifact and run."""
    data = f"the {platform} build\n".encode()
    artifact = SimpleNamespace(name=ARTIFACT_NAMES[platform], sha256=_sha(data), size=len(data))
    return SimpleNamespace(
        platform=platform,
        signed=SimpleNamespace(payload_sha256=_sha(statement),
                               signer=SimpleNamespace(keyid=KEYID, name="local-platform")),
        statement=SimpleNamespace(predicate=SimpleNamespace(build=SimpleNamespace(artifact=artifact), run=_run())))


def _entry(vp: Any, **changes: Any) -> Any:
    """The aggregate's entry for ``vp`` as the aggregate job writes it; ``changes`` spoil it."""
    artifact = vp.statement.predicate.build.artifact
    fields = {"platform": vp.platform, "payload_sha256": vp.signed.payload_sha256,
              "artifact": SimpleNamespace(name=artifact.name, sha256=artifact.sha256, size=artifact.size),
              "signer_keyid": vp.signed.signer.keyid, "signer_identity": vp.signed.signer.name,
              "provenance_sha256": _sha(b"provenance of " + vp.signed.payload_sha256.encode())}
    return SimpleNamespace(**{**fields, **changes})


def _aggregate(entries: list[Any], *, subjects: list[tuple[str, str]] | None = None,
               required: tuple[str, ...] = ("linux", "macos"), policy_sha256: str = POLICY_SHA,
               run: Any = None) -> Any:
    """An aggregate over ``entries``; its subjects are their artifacts unless told otherwise."""
    if subjects is None:
        subjects = [(e.artifact.name, e.artifact.sha256) for e in entries]
    return SimpleNamespace(
        subject=[SimpleNamespace(name=name, digest=SimpleNamespace(sha256=digest)) for name, digest in subjects],
        predicate=SimpleNamespace(platforms=entries, policy_sha256=policy_sha256, required_platforms=list(required),
                                  run=_run() if run is None else run))


MISMATCH = "the aggregate does not list exactly the platform statements present"


def _lists(vp: Any) -> str:
    return (f"it lists {vp.platform}'s {ARTIFACT_NAMES[vp.platform]} "
            f"(statement sha256 {vp.signed.payload_sha256[:16]}), which no statement here matches")


def test_an_aggregate_listing_exactly_the_verified_statements_has_no_finding() -> None:
    linux, macos = _verified("linux", b"linux statement"), _verified("macos", b"macos statement")
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(linux), _entry(macos)]), [linux, macos], _expectations(),
                                    findings)
    assert findings.ok


def test_an_entry_for_another_statement_names_the_listed_entry_and_the_unlisted_statement() -> None:
    linux, macos = _verified("linux", b"linux statement"), _verified("macos", b"macos statement")
    other = _verified("linux", b"another linux statement")
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(other), _entry(macos)]), [linux, macos], _expectations(),
                                    findings)
    assert _found(findings) == [(
        Code.AGGREGATE_MISMATCH.value,
        f"{MISMATCH}: it lists linux's app-linux.tar.gz (statement sha256 {other.signed.payload_sha256[:16]}), which "
        f"no statement here matches; it does not list linux's statement {linux.signed.payload_sha256[:16]}",
        None, "root", None)]


def test_at_most_three_unlisted_statements_are_named_the_first_by_platform_and_digest() -> None:
    # Two evidence folders can hold more statements than the aggregate (three at most) lists.
    platforms = [_verified("linux", b"linux statement"), _verified("linux", b"linux statement, second folder"),
                 _verified("macos", b"macos statement"), _verified("macos", b"macos statement, second folder"),
                 _verified("windows", b"windows statement")]
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(platforms[0])]), platforms, _expectations(), findings)
    unlisted = sorted((vp.platform, vp.signed.payload_sha256) for vp in platforms[1:])
    assert [p for p, _ in unlisted] == ["linux", "macos", "macos", "windows"]
    assert _found(findings) == [(
        Code.AGGREGATE_MISMATCH.value,
        f"{MISMATCH}: " + "; ".join(f"it does not list {p}'s statement {d[:16]}" for p, d in unlisted[:3]),
        None, "root", None)]


def test_an_entry_listed_twice_is_a_mismatch_with_nothing_to_name() -> None:
    linux = _verified("linux", b"linux statement")
    artifact = linux.statement.predicate.build.artifact
    findings = Findings()
    aggregate = _aggregate([_entry(linux), _entry(linux)], subjects=[(artifact.name, artifact.sha256)])
    check_aggregate_binds_platforms(aggregate, [linux], _expectations(), findings)
    assert _found(findings) == [(Code.AGGREGATE_MISMATCH.value, MISMATCH, None, "root", None)]


@pytest.mark.parametrize(("code", "said"), [(Code.SIGNATURE_INVALID, "did not verify"),
                                            (Code.EVIDENCE_MISSING, "is absent")], ids=["unverified", "absent"])
def test_an_entry_for_a_statement_that_did_not_verify_follows_that_statement(code: Code, said: str) -> None:
    linux, macos = _verified("linux", b"linux statement"), _verified("macos", b"macos statement")
    findings = Findings()
    blocked = {"macos": findings.add(code, "platform-macos.dsse.json: the root cause", "macos")}
    check_aggregate_binds_platforms(_aggregate([_entry(linux), _entry(macos)]), [linux], _expectations(), findings,
                                    blocked)
    assert _found(findings) == [
        (code.value, "platform-macos.dsse.json: the root cause", "macos", "root", None),
        (Code.AGGREGATE_MISMATCH.value, f"{MISMATCH}: {_lists(macos)} (the statement for macos {said})",
         None, "consequence", 0)]


def test_entries_for_two_blocked_statements_name_both_and_follow_the_first() -> None:
    linux, macos, windows = (_verified(p, f"{p} statement".encode()) for p in ("linux", "macos", "windows"))
    findings = Findings()
    blocked = {"macos": findings.add(Code.SIGNATURE_INVALID, "platform-macos.dsse.json: bad signature", "macos"),
               "windows": findings.add(Code.EVIDENCE_MISSING, "platform-windows.dsse.json: absent", "windows")}
    check_aggregate_binds_platforms(_aggregate([_entry(linux), _entry(macos), _entry(windows)]), [linux],
                                    _expectations(), findings, blocked)
    assert _found(findings) == [
        (Code.SIGNATURE_INVALID.value, "platform-macos.dsse.json: bad signature", "macos", "root", None),
        (Code.AGGREGATE_MISMATCH.value,
         f"{MISMATCH}: {_lists(macos)}; {_lists(windows)} (the statement for macos, windows did not verify)",
         None, "consequence", 0),
        (Code.EVIDENCE_MISSING.value, "platform-windows.dsse.json: absent", "windows", "root", None)]


def test_an_entry_no_blocked_statement_explains_is_a_root_cause_even_beside_a_blocked_one() -> None:
    linux, macos = _verified("linux", b"linux statement"), _verified("macos", b"macos statement")
    findings = Findings()
    # Windows did not verify, but the unmatched entry is macOS's: nothing explains it.
    blocked = {"windows": findings.add(Code.SIGNATURE_INVALID, "platform-windows.dsse.json: bad signature",
                                       "windows")}
    check_aggregate_binds_platforms(_aggregate([_entry(linux), _entry(macos)]), [linux], _expectations(), findings,
                                    blocked)
    assert _found(findings) == [
        (Code.SIGNATURE_INVALID.value, "platform-windows.dsse.json: bad signature", "windows", "root", None),
        (Code.AGGREGATE_MISMATCH.value, f"{MISMATCH}: {_lists(macos)}", None, "root", None)]


def test_subjects_unlike_the_listed_artifacts_follow_a_blocked_statement_when_the_list_is_exact() -> None:
    linux = _verified("linux", b"linux statement")
    artifact = linux.statement.predicate.build.artifact
    findings = Findings()
    blocked = {"macos": findings.add(Code.EVIDENCE_MISSING, "platform-macos.dsse.json: absent", "macos")}
    aggregate = _aggregate([_entry(linux)], subjects=[(artifact.name, artifact.sha256),
                                                      ("app-macos.dmg", _sha(b"the macos build\n"))])
    check_aggregate_binds_platforms(aggregate, [linux], _expectations(), findings, blocked)
    assert _found(findings) == [
        (Code.EVIDENCE_MISSING.value, "platform-macos.dsse.json: absent", "macos", "root", None),
        (Code.SUBJECT_MISMATCH.value, "the aggregate's subjects are not exactly the listed artifacts",
         None, "consequence", 0)]


def test_an_aggregate_made_under_another_policy_names_both_digests() -> None:
    linux = _verified("linux", b"linux statement")
    other = _sha(b"another policy's bytes")
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(linux)], policy_sha256=other), [linux], _expectations(),
                                    findings)
    assert _found(findings) == [(
        Code.AGGREGATE_MISMATCH.value,
        f"the aggregate was made under another policy (sha256 {other[:16]}, this one {POLICY_SHA[:16]})",
        None, "root", None)]


def test_an_aggregate_for_the_required_platforms_in_another_order_names_its_list() -> None:
    linux = _verified("linux", b"linux statement")
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(linux)], required=("macos", "linux")), [linux],
                                    _expectations(), findings)
    assert _found(findings) == [(Code.AGGREGATE_MISMATCH.value,
                                 "the aggregate was made for other required platforms (macos, linux)",
                                 None, "root", None)]


def test_an_aggregate_for_another_commit_names_both_commits() -> None:
    linux = _verified("linux", b"linux statement")
    other = "0123456789abcdef0123456789abcdef01234567"
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(linux)], run=_run(sha=other)), [linux], _expectations(),
                                    findings)
    assert _found(findings) == [
        (Code.SHA_MISMATCH.value, f"the aggregate is for {other[:12]}, the platforms for {RUN['sha'][:12]}",
         None, "root", None),
        (Code.WORKFLOW_IDENTITY_MISMATCH.value, "the aggregate's run identity differs from the platforms'",
         None, "root", None)]


def test_an_aggregate_of_another_attempt_names_both_runs() -> None:
    linux = _verified("linux", b"linux statement")
    findings = Findings()
    check_aggregate_binds_platforms(_aggregate([_entry(linux)], run=_run(attempt=2)), [linux], _expectations(),
                                    findings)
    assert _found(findings) == [
        (Code.RUN_MISMATCH.value, f"the aggregate is for run {RUN['run_id']}#2, the platforms for {RUN['run_id']}#1",
         None, "root", None),
        (Code.WORKFLOW_IDENTITY_MISMATCH.value, "the aggregate's run identity differs from the platforms'",
         None, "root", None)]


# --- the aggregate's producer identity ----------------------------------------------------------------------------


WHO = f"{RUN['repository']}:{RUN['workflow']}"


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("mode", "github", (Code.WORKFLOW_IDENTITY_MISMATCH,
                        f"the aggregate was made by github:{WHO}, the policy fixes {WHO}")),
    ("repository", "someone/else", (Code.WORKFLOW_IDENTITY_MISMATCH,
                                    f"the aggregate was made by local:someone/else:{RUN['workflow']}, the policy fixes "
                                    f"{WHO}")),
    ("workflow", ".github/workflows/other.yml", (Code.WORKFLOW_IDENTITY_MISMATCH,
                                                 f"the aggregate was made by local:{RUN['repository']}:"
                                                 f".github/workflows/other.yml, the policy fixes {WHO}")),
    ("trigger", "push", (Code.WORKFLOW_IDENTITY_MISMATCH, "the aggregate's trigger 'push' on 'local' is not allowed")),
    ("runner_environment", "github-hosted", (Code.WORKFLOW_IDENTITY_MISMATCH,
                                             "the aggregate's trigger 'local' on 'github-hosted' is not allowed")),
    ("ref", "refs/heads/dev", (Code.REF_NOT_MAIN, "the aggregate's run ref is 'refs/heads/dev', not refs/heads/main")),
], ids=["mode", "repository", "workflow", "trigger", "runner", "ref"])
def test_each_producer_field_of_the_aggregate_alone_is_refused(field: str, value: str,
                                                               expected: tuple[Code, str]) -> None:
    findings = Findings()
    check_aggregate_identity(_run(**{field: value}), _expectations(), findings)
    assert _found(findings) == [(expected[0].value, expected[1], None, "root", None)]


def test_the_policys_producer_passes_the_aggregate_identity() -> None:
    findings = Findings()
    check_aggregate_identity(_run(), _expectations(), findings)
    assert findings.ok


# --- the provenance each entry binds ------------------------------------------------------------------------------


def test_an_entry_binding_other_provenance_is_a_mismatch_for_its_platform_naming_both_digests() -> None:
    linux, macos = _verified("linux", b"linux statement"), _verified("macos", b"macos statement")
    entries = [_entry(linux), _entry(macos)]
    here = _sha(b"the macos provenance verified here")
    provenance: Any = {"linux": SimpleNamespace(signed=SimpleNamespace(payload_sha256=entries[0].provenance_sha256)),
                       "macos": SimpleNamespace(signed=SimpleNamespace(payload_sha256=here))}
    findings = Findings()
    check_aggregate_binds_provenance(_aggregate(entries), provenance, findings)
    assert _found(findings) == [(
        Code.PROVENANCE_MISMATCH.value,
        f"the aggregate binds macos's provenance {entries[1].provenance_sha256[:16]}, the one here is {here[:16]}",
        "macos", "root", None)]


def test_an_entry_whose_provenance_did_not_verify_is_not_compared_again() -> None:
    linux = _verified("linux", b"linux statement")
    findings = Findings()
    check_aggregate_binds_provenance(_aggregate([_entry(linux)]), {}, findings)
    assert findings.ok


# --- verify_aggregate: the aggregate statement itself -------------------------------------------------------------


class _Verifier:
    """Hands back ``payload`` as signed (by a certificate with ``claims`` when given), or refuses every file."""

    file_suffix = ".dsse.json"

    def __init__(self, payload: bytes, *, claims: object | None = None, refuse: bool = False) -> None:
        self.payload, self.claims, self.refuse = payload, claims, refuse
        self.asked: list[tuple[bytes, str, str]] = []

    def verify_statement(self, data: bytes, *, role: str, what: str) -> VerifiedStatement:
        self.asked.append((data, role, what))
        if self.refuse:
            raise QualificationError(Code.SIGNATURE_INVALID, f"{what}: no trusted key signed it")
        kind = "ed25519" if self.claims is None else "sigstore"
        return VerifiedStatement(self.payload, SignerIdentity(kind, "local-aggregate", KEYID, self.claims), _sha(data))


ENVELOPE = b'{"the": "aggregate envelope"}'


def test_no_aggregate_is_aggregate_missing_by_its_file_name() -> None:
    findings = Findings()
    assert verify_aggregate(None, _Verifier(b""), findings) is None
    assert _found(findings) == [(Code.AGGREGATE_MISSING.value, "no aggregate statement (aggregate.dsse.json)",
                                 None, "root", None)]


def test_no_aggregate_follows_what_explains_every_absent_statement() -> None:
    findings = Findings()
    absent = findings.add(Code.BUNDLE_INVALID, "no evidence stored for the candidate")
    assert verify_aggregate(None, _Verifier(b""), findings, absent) is None
    assert _found(findings)[1] == (Code.AGGREGATE_MISSING.value, "no aggregate statement (aggregate.dsse.json)",
                                   None, "consequence", 0)


def test_an_aggregate_that_does_not_verify_is_asked_for_as_the_aggregate_and_keeps_its_finding() -> None:
    verifier = _Verifier(b"", refuse=True)
    findings = Findings()
    assert verify_aggregate(ENVELOPE, verifier, findings) is None
    assert verifier.asked == [(ENVELOPE, "aggregate", "aggregate.dsse.json")]
    assert _found(findings) == [(Code.SIGNATURE_INVALID.value, "aggregate.dsse.json: no trusted key signed it",
                                 None, "root", None)]


def test_signed_bytes_that_are_not_utf8_are_refused_by_the_aggregates_name() -> None:
    findings = Findings()
    assert verify_aggregate(ENVELOPE, _Verifier(b"\xff{}"), findings) is None
    assert _found(findings) == [(Code.JSON_INVALID_UTF8.value, "aggregate.dsse.json: not valid UTF-8 at byte 0",
                                 None, "root", None)]


def test_a_platform_statement_signed_as_the_aggregate_is_not_an_aggregate(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"])
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    findings = Findings()
    assert verify_aggregate(ENVELOPE, _Verifier(platform_payload(predicate)), findings) is None
    assert _found(findings) == [(Code.PREDICATE_TYPE_UNKNOWN.value,
                                 "aggregate.dsse.json: not an aggregate qualification", None, "root", None)]


def test_a_signed_aggregate_is_returned_with_its_signer(tmp_path: Path) -> None:
    payload = make_evidence(tmp_path, platforms=["linux"]).aggregate_payload()
    findings = Findings()
    result = verify_aggregate(ENVELOPE, _Verifier(payload), findings)
    assert result is not None
    assert result.statement == AggregateStatement.model_validate_json(payload)
    assert result.signed.payload == payload
    assert result.signed.signer.name == "local-aggregate"
    assert findings.ok


def _github_claims(run_id: str, attempt: int = 1) -> GitHubIdentity:
    """The claims of a GitHub job's signing certificate: this repository's workflow on main, run ``run_id``."""
    uri = "https://github.com/local/desktop-qualify"
    workflow = f"{uri}/.github/workflows/qualify.yml@refs/heads/main"
    return GitHubIdentity(
        issuer="https://token.actions.githubusercontent.com", san_uri=workflow,
        build_signer_uri=workflow, build_signer_digest=RUN["sha"],
        runner_environment="github-hosted", source_repository_uri=uri, source_repository_digest=RUN["sha"],
        source_repository_ref="refs/heads/main", build_config_uri=workflow,
        build_trigger="push", run_invocation_uri=f"{uri}/actions/runs/{run_id}/attempts/{attempt}",
        run_repository="local/desktop-qualify", run_id=run_id, run_attempt=attempt)


def test_certificate_claims_unlike_the_aggregates_run_are_named_by_the_aggregates_file(tmp_path: Path) -> None:
    payload = make_evidence(tmp_path, platforms=["linux"]).aggregate_payload()
    findings = Findings()
    result = verify_aggregate(ENVELOPE, _Verifier(payload, claims=_github_claims("42")), findings)
    assert result is not None
    assert _found(findings) == [(Code.WORKFLOW_IDENTITY_MISMATCH.value,
                                 "aggregate.dsse.json: predicate claims 'local' mode but carries a Sigstore signature",
                                 None, "root", None)]


# --- across the platform statements: coverage, one commit, one run, one certified run ----------------------------


def _statement(platform: str, *, sha: str = RUN["sha"], source_digest: str = "5" * 64, run_id: str = RUN["run_id"],
               attempt: int = 1) -> Any:
    """A verified platform statement's fields the checks across statements read: its run and source digest."""
    run = _run(sha=sha, run_id=run_id, attempt=attempt)
    build = SimpleNamespace(source_digest=source_digest)
    return SimpleNamespace(platform=platform, statement=SimpleNamespace(predicate=SimpleNamespace(run=run,
                                                                                                  build=build)))


def test_a_missing_platform_nothing_explains_is_named_alone_as_a_root_cause() -> None:
    findings = Findings()
    check_coverage([_statement("linux")], _expectations(), findings)
    assert _found(findings) == [(Code.PLATFORM_MISSING.value, "no verified statement for required platform macos",
                                 None, "root", None)]


def test_a_missing_platform_whose_statement_did_not_verify_names_that_code_and_follows_it() -> None:
    findings = Findings()
    blocked = {"macos": findings.add(Code.SIGNATURE_INVALID, "platform-macos.dsse.json: bad signature", "macos")}
    check_coverage([_statement("linux")], _expectations(), findings, blocked)
    assert _found(findings) == [
        (Code.SIGNATURE_INVALID.value, "platform-macos.dsse.json: bad signature", "macos", "root", None),
        (Code.PLATFORM_MISSING.value,
         f"no verified statement for required platform macos (see {Code.SIGNATURE_INVALID.value})",
         None, "consequence", 0)]


SHAS = ("c0ffee00000000000000000000000000000000aa", "0123456789abcdef0123456789abcdef01234567",
        "3b18e512dba79e4c8300dd08aeb37f8e728b8dad")


def test_statements_of_three_commits_are_named_sorted_to_12_hex_digits_and_yield_no_commit() -> None:
    findings = Findings()
    platforms = [_statement(p, sha=sha) for p, sha in zip(("linux", "macos", "windows"), SHAS, strict=True)]
    assert check_one_commit(platforms, None, findings) is None
    assert _found(findings) == [(Code.SHA_MISMATCH.value,
                                 "platform statements name 3 different commits: "
                                 "0123456789ab, 3b18e512dba7, c0ffee000000", None, "root", None)]


def test_evidence_for_another_commit_than_the_candidate_names_both_to_12_hex_digits() -> None:
    findings = Findings()
    platforms = [_statement("linux", sha=SHAS[0]), _statement("macos", sha=SHAS[0])]
    assert check_one_commit(platforms, SHAS[1], findings) == SHAS[0]
    assert _found(findings) == [(Code.SHA_MISMATCH.value, "evidence is for c0ffee000000, the candidate is 0123456789ab",
                                 None, "root", None)]


def test_the_candidates_own_commit_passes_the_one_commit_check() -> None:
    findings = Findings()
    assert check_one_commit([_statement("linux"), _statement("macos")], RUN["sha"], findings) == RUN["sha"]
    assert findings.ok


def test_builds_of_one_commit_from_three_source_trees_name_each_digest_sorted_to_12_hex_digits() -> None:
    findings = Findings()
    digests = ("f" * 64, "1" * 64, "a" * 64)
    platforms = [_statement(p, source_digest=d) for p, d in zip(("linux", "macos", "windows"), digests, strict=True)]
    assert check_one_commit(platforms, RUN["sha"], findings) == RUN["sha"]
    assert _found(findings) == [(Code.SHA_MISMATCH.value,
                                 "platform builds of one commit name 3 different source digests: "
                                 f"{'1' * 12}, {'a' * 12}, {'f' * 12}", None, "root", None)]


def test_statements_of_three_runs_or_attempts_are_named_sorted_and_yield_no_run() -> None:
    findings = Findings()
    platforms = [_statement("linux", run_id="9", attempt=1), _statement("macos", run_id="10", attempt=2),
                 _statement("windows", run_id="9", attempt=2)]
    assert check_one_run(platforms, findings) is None
    assert _found(findings) == [(Code.RUN_MISMATCH.value,
                                 "platform statements come from different runs or attempts: 10#2, 9#1, 9#2",
                                 None, "root", None)]


def test_statements_of_one_run_and_attempt_yield_that_run() -> None:
    findings = Findings()
    run = check_one_run([_statement("linux"), _statement("macos")], findings)
    assert run is not None
    assert str(run) == f"{RUN['run_id']}#1"
    assert findings.ok


def _certified(run_id: str, attempt: int = 1) -> VerifiedStatement:
    """A statement signed by a GitHub job's certificate of run ``run_id``, attempt ``attempt``."""
    claims = _github_claims(run_id, attempt)
    return VerifiedStatement(b"{}", SignerIdentity("sigstore", claims.san_uri, KEYID, claims), _sha(run_id.encode()))


def test_two_certificates_of_different_runs_are_a_run_mismatch_naming_both_invocations() -> None:
    uri = "https://github.com/local/desktop-qualify/actions/runs"
    findings = Findings()
    check_one_certified_run([_certified("41"), _certified("42")], findings)
    assert _found(findings) == [(Code.RUN_MISMATCH.value,
                                 f"evidence from two runs: '{uri}/41/attempts/1' and '{uri}/42/attempts/1'",
                                 None, "root", None)]


def test_certificates_of_one_run_and_attempt_pass() -> None:
    findings = Findings()
    check_one_certified_run([_certified("42"), _certified("42"), _certified("42")], findings)
    assert findings.ok
