"""qualify_verify/_verifier.py, ``Verdict.rows``: the decision table has one row per required platform, in the
policy's order, whatever the rows before it held; a required platform whose statement is absent gets its row of
``missing`` cells and the platforms after it still get theirs. Written for the mutants of the module that survived
the verifier's tests (docs/mutation.md).

Also what a release engineer reads when evidence is short: an absent statement is named with every folder it was
looked for in (or "the evidence" when it came from memory); more than one aggregate statement is refused with the
count; the findings a caller gathered before (GitHub's store holding nothing for the candidate) are the list the
verdict reports, and what that root explains (each platform, the aggregate, each candidate file) follows from it;
absent statements are named one by one whenever the evidence holds any statement, aggregate or provenance of this
trust mode, and never when evidence of the other mode or an empty store already explains them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import Verdict, verify_platform_set, verify_release
from desktop_qualify.qualify_verify._evidence_dir import EvidenceFiles
from desktop_qualify.qualify_verify._findings import Findings
from support.evidence_factory import PlatformSpec, make_evidence

COLUMNS = ("gate", "build", "signature", "install", "probe", "journey", "candidate")


def test_an_absent_first_platform_keeps_the_rows_of_the_platforms_after_it(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    ev.platform_file("linux").unlink()
    verdict = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths)
    assert not verdict.qualified
    assert Code.EVIDENCE_MISSING in {r.code for r in verdict.reasons}
    rows = verdict.rows()
    assert [row.platform for row in rows] == ["linux", "windows"]
    linux, windows = rows
    assert (linux.artifact, linux.sha256) == (None, None)
    assert [getattr(linux, column) for column in COLUMNS] == ["missing"] * len(COLUMNS)
    windows_written = next(w for w in ev.platforms if w.spec.platform == "windows")
    assert windows_written.predicate is not None
    artifact = windows_written.predicate.build.artifact
    assert (windows.artifact, windows.sha256) == (artifact.name, artifact.sha256)
    assert [getattr(windows, column) for column in COLUMNS] == ["pass"] * len(COLUMNS)


def test_an_audit_of_an_absent_first_platform_keeps_every_row_and_no_candidate_cell(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "macos", "windows"])
    ev.platform_file("linux").unlink()
    verdict = verify_release(ev.policy, [ev.evidence_dir], None)
    rows = verdict.rows()
    assert [row.platform for row in rows] == ["linux", "macos", "windows"]
    assert [row.candidate for row in rows] == ["n/a", "n/a", "n/a"]
    assert [row.gate for row in rows] == ["missing", "pass", "pass"]


def _reasons(verdict: Verdict) -> list[tuple[Code, str, int | None, str]]:
    """Each reason as the report shows it: code, root or consequence, which root it follows, message."""
    return [(r.code, r.cause, r.follows, r.message) for r in verdict.reasons]


def _in_memory(directory: Path) -> EvidenceFiles:
    """A folder's statements as in-memory evidence (what the attestation API's fetch hands the verifier)."""
    aggregate = directory / "aggregate.dsse.json"
    return EvidenceFiles(platform={p.name: p.read_bytes() for p in sorted(directory.glob("platform-*"))},
                         provenance={p.name: p.read_bytes() for p in sorted(directory.glob("provenance-*"))},
                         aggregate=aggregate.read_bytes() if aggregate.exists() else None)


# -- _name_absent_statements: where an absent statement was looked for ------------------------------------------

def test_a_statement_absent_from_two_folders_names_both_folders_comma_separated(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "macos", "windows"])
    second = tmp_path / "second"
    second.mkdir()
    for name in ("platform-macos.dsse.json", "provenance-macos.dsse.json"):
        shutil.move(ev.evidence_dir / name, second / name)
    ev.platform_file("windows").unlink()
    verdict = verify_release(ev.policy, [ev.evidence_dir, second], ev.artifact_paths)
    assert not verdict.qualified
    root = verdict.reasons[0]
    assert (root.code, root.cause) == (Code.EVIDENCE_MISSING, "root")
    assert root.message == (f"platform-windows.dsse.json: the statement of required platform windows is absent "
                            f"from {ev.evidence_dir}, {second}")
    # Everything else that fails follows from that one absence.
    assert [r.follows for r in verdict.reasons[1:]] == [0] * (len(verdict.reasons) - 1)
    assert (verdict.blocked["windows"].code, verdict.blocked["windows"].message) == (root.code, root.message)


def test_a_statement_absent_from_in_memory_evidence_is_absent_from_the_evidence(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    ev.platform_file("windows").unlink()
    verdict = verify_release(ev.policy, [_in_memory(ev.evidence_dir)], ev.artifact_paths)
    assert not verdict.qualified
    assert verdict.reasons[0].code == Code.EVIDENCE_MISSING
    assert verdict.reasons[0].message == ("platform-windows.dsse.json: the statement of required platform windows "
                                          "is absent from the evidence")
    assert verdict.reasons[1].message == ("no verified statement for required platform windows "
                                          "(see QE_EVIDENCE_MISSING)")


# -- verify_release: one run has exactly one aggregate statement ----------------------------------------------

def test_one_aggregate_statement_qualifies(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"])
    verdict = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths)
    assert verdict.reasons == []
    assert verdict.qualified


@pytest.mark.parametrize("copies", [2, 3])
def test_more_than_one_aggregate_statement_is_refused_with_the_count(tmp_path: Path, copies: int) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"])
    assert ev.aggregate_path is not None
    folders = [ev.evidence_dir]
    for i in range(copies - 1):
        extra = tmp_path / f"extra{i}"
        extra.mkdir()
        shutil.copy(ev.aggregate_path, extra / "aggregate.dsse.json")
        folders.append(extra)
    verdict = verify_release(ev.policy, folders, ev.artifact_paths)
    assert not verdict.qualified
    assert _reasons(verdict) == [(Code.AGGREGATE_MISMATCH, "root", None,
                                  f"{copies} aggregate statements; one run has exactly one")]


# -- the caller's findings, and what explains every absent statement ------------------------------------------

def _nothing_stored() -> tuple[Findings, EvidenceFiles]:
    """What the attestation fetch hands over when GitHub's store holds nothing for the candidate files."""
    findings = Findings()
    files = EvidenceFiles()
    files.absence_cause = findings.add(Code.EVIDENCE_MISSING, "the attestation store holds no verified aggregate "
                                                             "qualification for exactly these candidate files")
    return findings, files


def test_nothing_stored_for_the_candidate_is_the_one_root_of_every_refusal(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    findings, files = _nothing_stored()
    verdict = verify_release(ev.policy, [files], ev.artifact_paths, findings=findings)
    assert verdict.findings is findings
    assert not verdict.qualified
    linux, windows = (path.name for path in ev.artifact_paths)
    unmatched = "cannot be matched, since the statement that may name it was not found (see QE_EVIDENCE_MISSING)"
    assert _reasons(verdict) == [
        (Code.EVIDENCE_MISSING, "root", None,
         "the attestation store holds no verified aggregate qualification for exactly these candidate files"),
        (Code.PLATFORM_MISSING, "consequence", 0,
         "no verified statement for required platform linux (see QE_EVIDENCE_MISSING)"),
        (Code.PLATFORM_MISSING, "consequence", 0,
         "no verified statement for required platform windows (see QE_EVIDENCE_MISSING)"),
        (Code.AGGREGATE_MISSING, "consequence", 0, "no aggregate statement (aggregate.dsse.json)"),
        (Code.ARTIFACT_DIGEST_MISMATCH, "consequence", 0, f"{linux}: {unmatched}"),
        (Code.ARTIFACT_DIGEST_MISMATCH, "consequence", 0, f"{windows}: {unmatched}"),
    ]
    assert verdict.blocked == {}
    rows = verdict.rows()
    assert [row.gate for row in rows] == ["n/a", "n/a"]


def test_the_platform_set_check_records_into_the_callers_findings(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"])
    findings, files = _nothing_stored()
    verdict = verify_platform_set(ev.policy, [files], findings=findings)
    assert verdict.findings is findings
    assert [(r.code, r.cause) for r in findings.reasons] == [(Code.EVIDENCE_MISSING, "root"),
                                                              (Code.PLATFORM_MISSING, "consequence")]


def test_the_release_check_records_into_the_callers_findings(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"])
    findings = Findings()
    earlier = findings.add(Code.EVIDENCE_UNEXPECTED, "a note the gathering of the evidence recorded")
    verdict = verify_release(ev.policy, [ev.evidence_dir], ev.artifact_paths, findings=findings)
    assert verdict.findings is findings
    assert findings.reasons == [earlier]
    assert not verdict.qualified


# -- verify_platform_set: when absent statements are named one by one -----------------------------------------

def test_other_mode_evidence_beside_own_mode_evidence_explains_the_absent_platform(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    other = tmp_path / "other-mode"
    other.mkdir()
    for stem in ("platform-windows", "provenance-windows"):
        shutil.move(ev.evidence_dir / f"{stem}.dsse.json", other / f"{stem}.sigstore.json")
    verdict = verify_platform_set(ev.policy, [ev.evidence_dir, other])
    assert "windows" not in verdict.blocked
    assert _reasons(verdict) == [
        (Code.MODE_MISMATCH, "root", None,
         f"{other}: GitHub (Sigstore)-mode evidence (*.sigstore.json) checked under a local (Ed25519)-mode policy "
         "(*.dsse.json); check it with a policy of its own trust mode"),
        (Code.PLATFORM_MISSING, "consequence", 0,
         "no verified statement for required platform windows (see QE_MODE_MISMATCH)"),
    ]


def _absent(platform: str, where: Path) -> str:
    return f"platform-{platform}.dsse.json: the statement of required platform {platform} is absent from {where}"


def test_a_folder_holding_only_the_aggregate_names_every_absent_statement(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    for path in [*ev.evidence_dir.glob("platform-*"), *ev.evidence_dir.glob("provenance-*")]:
        path.unlink()
    verdict = verify_platform_set(ev.policy, [ev.evidence_dir])
    assert _reasons(verdict) == [
        (Code.EVIDENCE_MISSING, "root", None, _absent("linux", ev.evidence_dir)),
        (Code.PLATFORM_MISSING, "consequence", 0,
         "no verified statement for required platform linux (see QE_EVIDENCE_MISSING)"),
        (Code.EVIDENCE_MISSING, "root", None, _absent("windows", ev.evidence_dir)),
        (Code.PLATFORM_MISSING, "consequence", 2,
         "no verified statement for required platform windows (see QE_EVIDENCE_MISSING)"),
    ]


def test_a_folder_holding_only_provenance_names_every_absent_statement(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=["linux", "windows"])
    for path in ev.evidence_dir.glob("platform-*"):
        path.unlink()
    assert ev.aggregate_path is not None
    ev.aggregate_path.unlink()
    verdict = verify_platform_set(ev.policy, [ev.evidence_dir])
    assert [(code, message) for code, cause, _, message in _reasons(verdict) if cause == "root"] == [
        (Code.EVIDENCE_MISSING, f"{ev.evidence_dir}: no evidence files"),
        (Code.EVIDENCE_MISSING, _absent("linux", ev.evidence_dir)),
        (Code.EVIDENCE_MISSING, _absent("windows", ev.evidence_dir)),
    ]


def test_statements_without_aggregate_or_provenance_name_the_absent_one(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path, platforms=[PlatformSpec("linux", provenance=False),
                                            PlatformSpec("windows", provenance=False)], aggregate=False)
    ev.platform_file("windows").unlink()
    verdict = verify_platform_set(ev.policy, [ev.evidence_dir])
    assert [p.platform for p in verdict.platforms] == ["linux"]
    assert _reasons(verdict) == [
        (Code.EVIDENCE_MISSING, "root", None, _absent("windows", ev.evidence_dir)),
        (Code.PLATFORM_MISSING, "consequence", 0,
         "no verified statement for required platform windows (see QE_EVIDENCE_MISSING)"),
        (Code.PROVENANCE_MISSING, "root", None,
         "provenance-linux.dsse.json: the SLSA provenance of platform-linux.dsse.json is absent"),
    ]
