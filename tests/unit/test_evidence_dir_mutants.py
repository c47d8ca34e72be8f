"""qualify_verify/_evidence_dir.py, function by function: which files of an evidence folder are read and as what,
the exact refusals of everything else (stray files, links, folders, the other trust mode's statements, a folder
past 64 entries, a statement past the size bound), the one root cause a folder of the other mode gives, and the
size bound held on statements already in memory. Written for the mutants of the module that survived the
verifier's tests (docs/mutation.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, Reason
from desktop_qualify.qualify_verify._evidence_dir import (
    EvidenceFiles,
    _keep,
    _statement_suffix,
    bounded,
    check_evidence_mode,
    platform_of,
    read_evidence_dir,
)
from desktop_qualify.qualify_verify._findings import Findings

LOCAL = ".dsse.json"
GITHUB = ".sigstore.json"
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")


def _found(findings: Findings) -> list[tuple[Code, str]]:
    """Every reason found, in order, as (code, message); each also checked to be a root cause."""
    assert all(r.cause == "root" and r.platform is None for r in findings.reasons)
    return [(r.code, r.message) for r in findings.reasons]


def _folder(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir()
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


def _read(folder: Path, *, suffix: str = LOCAL, max_bytes: int = 100,
          findings: Findings | None = None) -> tuple[EvidenceFiles, list[tuple[Code, str]]]:
    findings = Findings() if findings is None else findings
    files = read_evidence_dir(folder, suffix=suffix, max_bytes=max_bytes, findings=findings)
    return files, _found(findings)


# --- platform_of and _statement_suffix -------------------------------------------------------------------------


def test_platform_of_names_the_platform_a_statement_file_claims() -> None:
    assert platform_of("platform-linux.dsse.json") == "linux"
    assert platform_of("platform-macos.sigstore.json") == "macos"
    assert platform_of("platform-" + "a" * 16 + ".dsse.json") == "a" * 16


def test_platform_of_is_none_for_any_other_name() -> None:
    assert platform_of("provenance-linux.dsse.json") is None
    assert platform_of("aggregate.dsse.json") is None
    assert platform_of("platform-" + "a" * 17 + ".dsse.json") is None
    assert platform_of("platform-Linux.dsse.json") is None
    assert platform_of("xplatform-linux.dsse.json") is None


def test_statement_suffix_is_the_trust_mode_of_either_modes_statement() -> None:
    assert _statement_suffix("platform-linux.dsse.json") == LOCAL
    assert _statement_suffix("provenance-linux.dsse.json") == LOCAL
    assert _statement_suffix("aggregate.dsse.json") == LOCAL
    assert _statement_suffix("platform-linux.sigstore.json") == GITHUB
    assert _statement_suffix("provenance-windows.sigstore.json") == GITHUB
    assert _statement_suffix("aggregate.sigstore.json") == GITHUB


def test_statement_suffix_is_none_for_a_name_of_neither_mode() -> None:
    assert _statement_suffix("notes.txt") is None
    assert _statement_suffix("platform-linux.json") is None
    assert _statement_suffix("aggregate.json") is None


# --- check_evidence_mode ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("names", "policy_suffix", "evidence", "policy"), [
    # only GitHub statements under a local policy (other files beside them)
    (["aggregate.sigstore.json", "notes.txt", "platform-linux.sigstore.json"], LOCAL,
     "GitHub (Sigstore)-mode evidence (*.sigstore.json)", "a local (Ed25519)-mode policy (*.dsse.json)"),
    # only local statements under a GitHub policy
    (["platform-linux.dsse.json"], GITHUB,
     "local (Ed25519)-mode evidence (*.dsse.json)", "a GitHub (Sigstore)-mode policy (*.sigstore.json)"),
    # a policy of neither mode is named by its suffix, and the first foreign mode found is named
    (["platform-linux.sigstore.json", "platform-linux.dsse.json"], ".other.json",
     "local (Ed25519)-mode evidence (*.dsse.json)", "a .other.json-mode policy (*.other.json)"),
])
def test_a_folder_of_only_another_modes_statements_is_one_mode_mismatch(
        tmp_path: Path, names: list[str], policy_suffix: str, evidence: str, policy: str) -> None:
    findings = Findings()
    reason = check_evidence_mode(tmp_path, names, policy_suffix, findings)
    message = f"{tmp_path}: {evidence} checked under {policy}; check it with a policy of its own trust mode"
    assert reason == Reason(code=Code.MODE_MISMATCH, message=message)
    assert _found(findings) == [(Code.MODE_MISMATCH, message)]


def test_a_folder_holding_any_statement_of_the_policys_mode_is_no_mode_mismatch(tmp_path: Path) -> None:
    findings = Findings()
    names = ["aggregate.sigstore.json", "platform-linux.dsse.json", "platform-mac.sigstore.json"]
    assert check_evidence_mode(tmp_path, names, LOCAL, findings) is None
    assert check_evidence_mode(tmp_path, ["platform-linux.dsse.json"], LOCAL, findings) is None
    assert findings.ok


def test_a_folder_of_no_statements_at_all_is_no_mode_mismatch(tmp_path: Path) -> None:
    findings = Findings()
    assert check_evidence_mode(tmp_path, ["notes.txt", "platform-linux.json"], LOCAL, findings) is None
    assert check_evidence_mode(tmp_path, [], GITHUB, findings) is None
    assert findings.ok


# --- _keep -----------------------------------------------------------------------------------------------------


def test_keep_files_each_statement_under_what_its_name_says() -> None:
    files = EvidenceFiles()
    _keep(files, "aggregate.dsse.json", b"agg", LOCAL)
    _keep(files, "provenance-linux.dsse.json", b"prov", LOCAL)
    _keep(files, "platform-linux.dsse.json", b"plat", LOCAL)
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"plat"}, aggregate=b"agg",
                                  provenance={"provenance-linux.dsse.json": b"prov"})


def test_keep_files_the_other_modes_aggregate_name_as_a_platform_statement() -> None:
    files = EvidenceFiles()
    _keep(files, "aggregate.sigstore.json", b"agg", LOCAL)
    assert files == EvidenceFiles(platform={"aggregate.sigstore.json": b"agg"})


# --- read_evidence_dir: the folder itself ----------------------------------------------------------------------


def test_a_missing_evidence_folder_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(QualificationError) as caught:
        read_evidence_dir(missing, suffix=LOCAL, max_bytes=100, findings=Findings())
    assert caught.value.code == Code.USAGE
    assert caught.value.message == f"--evidence {missing}: missing (no such folder)"


def test_an_evidence_path_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "aggregate.dsse.json"
    path.write_bytes(b"{}")
    with pytest.raises(QualificationError) as caught:
        read_evidence_dir(path, suffix=LOCAL, max_bytes=100, findings=Findings())
    assert caught.value.code == Code.USAGE
    assert caught.value.message == f"--evidence {path}: not a folder"


def test_a_folder_of_every_statement_kind_is_read_whole_with_no_finding(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"aggregate.dsse.json": b"A", "platform-linux.dsse.json": b"L",
                                       "platform-macos.dsse.json": b"M", "provenance-linux.dsse.json": b"P"})
    files, found = _read(folder)
    assert found == []
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"L", "platform-macos.dsse.json": b"M"},
                                  aggregate=b"A", provenance={"provenance-linux.dsse.json": b"P"})


def test_an_empty_folder_has_no_evidence_files(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {})
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_MISSING, f"{folder}: no evidence files")]
    assert files == EvidenceFiles()


def test_a_folder_of_only_provenance_has_no_evidence_files(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"provenance-linux.dsse.json": b"P"})
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_MISSING, f"{folder}: no evidence files")]
    assert files.provenance == {"provenance-linux.dsse.json": b"P"}


def test_an_aggregate_alone_or_a_platform_statement_alone_is_evidence(tmp_path: Path) -> None:
    files, found = _read(_folder(tmp_path / "a", {"aggregate.dsse.json": b"A"}))
    assert found == []
    assert files == EvidenceFiles(aggregate=b"A")
    files, found = _read(_folder(tmp_path / "b", {"platform-linux.dsse.json": b"L"}))
    assert found == []
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"L"})


def test_an_empty_aggregate_file_is_evidence(tmp_path: Path) -> None:
    files, found = _read(_folder(tmp_path / "ev", {"aggregate.dsse.json": b""}))
    assert found == []
    assert files == EvidenceFiles(aggregate=b"")


def test_no_evidence_is_not_added_when_an_earlier_finding_explains_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"notes.txt": b"x"})
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_UNEXPECTED, "notes.txt: not an evidence file name")]
    assert files == EvidenceFiles()


def test_no_evidence_is_not_added_when_the_caller_already_found_something(tmp_path: Path) -> None:
    findings = Findings()
    findings.add(Code.USAGE, "earlier")
    _read(_folder(tmp_path / "ev", {}), findings=findings)
    assert _found(findings) == [(Code.USAGE, "earlier")]


# --- read_evidence_dir: what is refused ------------------------------------------------------------------------


def test_stray_files_are_each_refused_in_name_order_and_the_statements_still_read(tmp_path: Path) -> None:
    strays = [f"note-{c}.txt" for c in "qwertyuiopasdfghjklzxcvbnm"]
    folder = _folder(tmp_path / "ev", {**dict.fromkeys(strays, b"x"), "platform-linux.dsse.json": b"L",
                                       "zz.txt": b"x"})
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_UNEXPECTED, f"{n}: not an evidence file name") for n in [*sorted(strays), "zz.txt"]]
    assert files.platform == {"platform-linux.dsse.json": b"L"}


def test_a_subfolder_is_not_a_regular_file_and_what_follows_is_still_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"platform-linux.dsse.json": b"L"})
    (folder / "aggregate.dsse.json").mkdir()
    (folder / "notes").mkdir()
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_UNEXPECTED, "aggregate.dsse.json: not a regular file"),
                     (Code.EVIDENCE_UNEXPECTED, "notes: not a regular file")]
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"L"})


@POSIX_ONLY
def test_a_link_to_a_statement_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.dsse.json"
    outside.write_bytes(b"O")
    folder = _folder(tmp_path / "ev", {"platform-macos.dsse.json": b"M"})
    (folder / "aggregate.dsse.json").symlink_to(outside)
    (folder / "platform-linux.dsse.json").symlink_to(tmp_path / "gone")
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_UNEXPECTED, "aggregate.dsse.json: not a regular file"),
                     (Code.EVIDENCE_UNEXPECTED, "platform-linux.dsse.json: not a regular file")]
    assert files == EvidenceFiles(platform={"platform-macos.dsse.json": b"M"})


def test_a_statement_of_the_other_mode_among_this_modes_is_named_as_such(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"aggregate.sigstore.json": b"G", "platform-linux.dsse.json": b"L",
                                       "provenance-linux.sigstore.json": b"G"})
    files, found = _read(folder)
    assert found == [
        (Code.EVIDENCE_UNEXPECTED, "aggregate.sigstore.json: a GitHub (Sigstore)-mode statement among "
                                   "local (Ed25519)-mode evidence"),
        (Code.EVIDENCE_UNEXPECTED, "provenance-linux.sigstore.json: a GitHub (Sigstore)-mode statement among "
                                   "local (Ed25519)-mode evidence")]
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"L"})
    assert files.absence_cause is None


def test_a_local_statement_among_github_evidence_is_named_as_such(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"aggregate.sigstore.json": b"G", "platform-linux.dsse.json": b"L"})
    files, found = _read(folder, suffix=GITHUB)
    assert found == [(Code.EVIDENCE_UNEXPECTED, "platform-linux.dsse.json: a local (Ed25519)-mode statement among "
                                                "GitHub (Sigstore)-mode evidence")]
    assert files == EvidenceFiles(aggregate=b"G")


def test_a_folder_of_only_the_other_mode_is_one_root_cause_and_only_strays_besides(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"aggregate.sigstore.json": b"G", "notes.txt": b"x",
                                       "platform-linux.sigstore.json": b"G", "zz.txt": b"x"})
    files, found = _read(folder)
    mismatch = (f"{folder}: GitHub (Sigstore)-mode evidence (*.sigstore.json) checked under a local (Ed25519)-mode "
                "policy (*.dsse.json); check it with a policy of its own trust mode")
    assert found == [(Code.MODE_MISMATCH, mismatch),
                     (Code.EVIDENCE_UNEXPECTED, "notes.txt: not an evidence file name"),
                     (Code.EVIDENCE_UNEXPECTED, "zz.txt: not an evidence file name")]
    assert files == EvidenceFiles(absence_cause=Reason(code=Code.MODE_MISMATCH, message=mismatch))


def test_a_statement_past_the_size_bound_is_refused_by_name_and_the_rest_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", {"aggregate.dsse.json": b"A" * 11, "platform-linux.dsse.json": b"L" * 10,
                                       "platform-macos.dsse.json": b"M" * 11, "provenance-linux.dsse.json": b"P"})
    files, found = _read(folder, max_bytes=10)
    assert found == [(Code.EVIDENCE_TOO_LARGE, "aggregate.dsse.json: larger than the limit of 10 bytes"),
                     (Code.EVIDENCE_TOO_LARGE, "platform-macos.dsse.json: larger than the limit of 10 bytes")]
    assert files == EvidenceFiles(platform={"platform-linux.dsse.json": b"L" * 10},
                                  provenance={"provenance-linux.dsse.json": b"P"})


# --- read_evidence_dir: the 64-entry cap -----------------------------------------------------------------------


def test_a_folder_of_64_entries_is_read_whole(tmp_path: Path) -> None:
    names = [f"platform-p{i:02d}.dsse.json" for i in range(63)] + ["provenance-p00.dsse.json"]
    folder = _folder(tmp_path / "ev", dict.fromkeys(names, b"x"))
    files, found = _read(folder)
    assert found == []
    assert files == EvidenceFiles(platform=dict.fromkeys(names[:63], b"x"),
                                  provenance={"provenance-p00.dsse.json": b"x"})


def test_a_folder_of_65_entries_is_refused_and_only_the_first_64_by_name_are_read(tmp_path: Path) -> None:
    names = [f"platform-p{i:02d}.dsse.json" for i in range(64)] + ["provenance-p00.dsse.json"]
    folder = _folder(tmp_path / "ev", dict.fromkeys(names, b"x"))
    files, found = _read(folder)
    assert found == [(Code.EVIDENCE_UNEXPECTED, f"{folder}: 65 entries; at most 64 are read")]
    assert files == EvidenceFiles(platform=dict.fromkeys(names[:64], b"x"))


def test_the_mode_is_judged_on_the_64_entries_read(tmp_path: Path) -> None:
    # 64 GitHub statements first by name, then one local: only the 64 read are judged, so the folder is of the
    # other mode as a whole, and the 65th entry is never looked at.
    names = [f"platform-p{i:02d}.sigstore.json" for i in range(64)] + ["provenance-p00.dsse.json"]
    folder = _folder(tmp_path / "ev", dict.fromkeys(names, b"x"))
    files, found = _read(folder)
    mismatch = (f"{folder}: GitHub (Sigstore)-mode evidence (*.sigstore.json) checked under a local (Ed25519)-mode "
                "policy (*.dsse.json); check it with a policy of its own trust mode")
    assert found == [(Code.MODE_MISMATCH, mismatch),
                     (Code.EVIDENCE_UNEXPECTED, f"{folder}: 65 entries; at most 64 are read")]
    assert files == EvidenceFiles(absence_cause=Reason(code=Code.MODE_MISMATCH, message=mismatch))


# --- bounded ---------------------------------------------------------------------------------------------------


def test_bounded_keeps_statements_at_the_bound_and_carries_the_absence_cause() -> None:
    cause = Reason(code=Code.MODE_MISMATCH, message="no qualification for the candidate files")
    files = EvidenceFiles(platform={"platform-linux.sigstore.json": b"L" * 10}, aggregate=b"A" * 10,
                          provenance={"provenance-linux.sigstore.json": b"P" * 10}, absence_cause=cause)
    findings = Findings()
    kept = bounded(files, 10, findings)
    assert findings.ok
    assert kept == files
    assert kept is not files


def test_bounded_drops_each_statement_past_the_bound_by_name() -> None:
    files = EvidenceFiles(platform={"platform-linux.sigstore.json": b"L" * 11, "platform-macos.sigstore.json": b"M"},
                          aggregate=b"A" * 12,
                          provenance={"provenance-linux.sigstore.json": b"P" * 13,
                                      "provenance-macos.sigstore.json": b"Q"})
    findings = Findings()
    kept = bounded(files, 10, findings)
    assert kept == EvidenceFiles(platform={"platform-macos.sigstore.json": b"M"},
                                 provenance={"provenance-macos.sigstore.json": b"Q"})
    more = "bytes, more than the policy's max_statement_bytes (10)"
    assert _found(findings) == [(Code.EVIDENCE_TOO_LARGE, f"platform-linux.sigstore.json: 11 {more}"),
                                (Code.EVIDENCE_TOO_LARGE, f"aggregate: 12 {more}"),
                                (Code.EVIDENCE_TOO_LARGE, f"provenance-linux.sigstore.json: 13 {more}")]


def test_bounded_with_no_aggregate_has_none_and_finds_nothing() -> None:
    findings = Findings()
    kept = bounded(EvidenceFiles(platform={"platform-linux.sigstore.json": b"L"}), 0, findings)
    assert kept.aggregate is None
    assert kept.platform == {}
    assert _found(findings) == [(Code.EVIDENCE_TOO_LARGE, "platform-linux.sigstore.json: 1 bytes, more than the "
                                                          "policy's max_statement_bytes (0)")]
