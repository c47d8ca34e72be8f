"""consumer/_rebuilds.py, function by function: the exact notes and lines `qualify audit --rebuild` writes, which
run an attestation is attached to, and the cases the audit rows never reach (an OS-signed run with no digest to
compare with, an attestation matching no run, several attestations where one is refused, a path past the notes'
bounds). Written for the mutants of the module that survived every audit row (docs/mutation.md).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.consumer._rebuilds import (
    _MAX_ATTESTATION,
    RebuildTarget,
    _contradiction,
    _seen,
    _target,
    _verified,
    attach_rebuilds,
    rebuild_line,
    rebuild_targets,
)
from desktop_qualify.evidence_schemas import (
    IN_TOTO_STATEMENT_TYPE,
    REBUILD_PREDICATE_TYPE,
    ArtifactRef,
    AuditRun,
    DigestSet,
    QualificationError,
    RebuildPredicate,
    RebuildSeen,
    RebuildStatement,
    Subject,
    canonical_bytes,
)
from desktop_qualify.qualify_trust import public_key_text, sign_self_signed

CONTRADICTED = "QE_REBUILD_CLAIM_CONTRADICTED"
COMMIT = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
OTHER_COMMIT = "c" * 40
ARTIFACT = "a1" * 32
REBUILT = "b2" * 32
OTHER = "ee" * 32
KEYID = "d4" * 32
EVIDENCE = "evidence/run-1"


def _statement(public: str = "A" * 43 + "=", *, subjects: tuple[str, ...] = (ARTIFACT,), expected: str = ARTIFACT,
               rebuilt: str = ARTIFACT, matches: bool = True, first_difference: str | None = None,
               platform: str = "linux", run_id: str = "1234", attempt: int = 2) -> RebuildStatement:
    artifact = ArtifactRef(name="app-linux-x86_64.tar.gz", size=10, sha256=ARTIFACT)
    return RebuildStatement(
        type_=IN_TOTO_STATEMENT_TYPE,
        subject=[Subject(name=artifact.name, digest=DigestSet(sha256=s)) for s in subjects],
        predicateType=REBUILD_PREDICATE_TYPE,
        predicate=RebuildPredicate(
            commit=COMMIT, platform=platform, run_id=run_id, attempt=attempt, artifact=artifact,
            expected_sha256=expected, rebuilt_sha256=rebuilt, rebuilt_size=10, source_digest="f" * 64,
            matches=matches, first_difference=first_difference, tools={"python": "3"},
            rebuilt_at="2026-12-01T12:00:00Z", rebuilder_public_key=public))


def _signed(path: Path, **claims: Any) -> Path:
    """``path``: an attestation saying ``claims``, signed by a fresh rebuilder key that it carries."""
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(sign_self_signed(canonical_bytes(_statement(public_key_text(key), **claims)), key))
    return path


def _target_for(*, evidence: str = EVIDENCE, required: str | None = ARTIFACT, platform: str = "linux",
                run_id: str = "1234", attempt: int = 2) -> RebuildTarget:
    return RebuildTarget(evidence=evidence, commit=COMMIT, run_id=run_id, attempt=attempt, platform=platform,
                         artifact_sha256=ARTIFACT, required_sha256=required)


def _run(*, evidence: str = EVIDENCE, commit: str = COMMIT, run_id: str = "1234", attempt: int = 2,
         rows: tuple[tuple[str, str], ...] = (("linux", ARTIFACT),)) -> AuditRun:
    """An audited run as ``_target`` reads it: its evidence and its decision's commit, run, attempt and rows."""
    decision = SimpleNamespace(candidate_sha=commit, run_id=run_id, attempt=attempt,
                               rows=[SimpleNamespace(platform=p, sha256=s) for p, s in rows])
    return AuditRun.model_construct(evidence=evidence, decision=decision, rebuilds=[])


def _deep(tmp_path: Path, length: int) -> Path:
    """A folder under ``tmp_path`` whose path is longer than ``length`` characters (the notes' bound is 2,000)."""
    folder = tmp_path
    while len(str(folder)) <= length:
        folder = folder / ("d" * 200)
    return folder


# _contradiction: the exact words of each claim the run's build record contradicts.

def test_an_expected_digest_with_no_required_one_is_contradicted_in_these_words() -> None:
    assert _contradiction(_statement(expected=OTHER), None, None) == (
        f"{CONTRADICTED}: the run's build record names no digest a rebuild must give (an OS-signed artifact "
        f"without its unsigned output's digest), yet the attestation claims {OTHER}")


def test_a_claimed_match_of_other_bytes_is_contradicted_in_these_words() -> None:
    statement = _statement(rebuilt=REBUILT, matches=True)
    assert _contradiction(statement, ARTIFACT, False) == (
        f"{CONTRADICTED}: it claims matches=true, the rebuilt digest {REBUILT} is not the required one")


def test_a_claimed_difference_of_the_same_bytes_is_contradicted_in_these_words() -> None:
    statement = _statement(matches=False)
    assert _contradiction(statement, ARTIFACT, True) == (
        f"{CONTRADICTED}: it claims matches=false, the rebuilt digest {ARTIFACT} is the required one")


def test_two_contradicted_claims_are_joined_by_a_semicolon() -> None:
    statement = _statement(expected=OTHER, matches=False)
    assert _contradiction(statement, ARTIFACT, True) == (
        f"{CONTRADICTED}: it claims a rebuild had to give {OTHER}, the run's build record says {ARTIFACT}; "
        f"it claims matches=false, the rebuilt digest {ARTIFACT} is the required one")


def test_claims_the_build_record_bears_out_are_no_contradiction() -> None:
    assert _contradiction(_statement(), ARTIFACT, True) is None


# _seen: what the audit shows, re-derived from the target.

def test_an_os_signed_run_without_a_required_digest_is_not_compared() -> None:
    seen = _seen(Path("a.dsse.json"), _statement(), KEYID, _target_for(required=None))
    assert (seen.required_sha256, seen.matches) == (None, None)
    assert seen.contradiction is not None
    assert "names no digest a rebuild must give" in seen.contradiction


def test_the_attestations_first_difference_is_shown() -> None:
    statement = _statement(rebuilt=REBUILT, matches=False, first_difference="main.py differs")
    seen = _seen(Path("a.dsse.json"), statement, KEYID, _target_for())
    assert (seen.matches, seen.first_difference, seen.contradiction) == (False, "main.py differs", None)


def test_a_path_past_the_attestation_fields_bound_is_cut_at_4000_characters() -> None:
    path = Path("x" * 4100)
    seen = _seen(path, _statement(), KEYID, _target_for())
    assert seen.attestation == "x" * 4000


# _target: every one of commit, run, attempt, the decision's row and the evidence must be the attestation's.

def test_an_attestation_is_attached_to_its_runs_target() -> None:
    target = _target_for()
    assert _target(_run(), _statement(), [target]) == target


@pytest.mark.parametrize("run", [_run(commit=OTHER_COMMIT), _run(run_id="99"), _run(attempt=1)],
                         ids=["other-commit", "other-run-id", "other-attempt"])
def test_a_run_with_another_commit_run_id_or_attempt_is_not_its_target(run: AuditRun) -> None:
    assert _target(run, _statement(), [_target_for()]) is None


def test_a_decision_with_the_platform_and_the_digest_only_in_different_rows_is_not_its_target() -> None:
    run = _run(rows=(("linux", OTHER), ("windows", ARTIFACT)))
    assert _target(run, _statement(), [_target_for()]) is None


def test_a_target_from_other_evidence_is_not_its_target() -> None:
    assert _target(_run(), _statement(), [_target_for(evidence="evidence/run-2")]) is None


def test_a_run_with_no_target_gives_none() -> None:
    assert _target(_run(), _statement(), []) is None


# _verified: the label of a refusal is the attestation's path.

def test_an_attestation_that_is_not_an_envelope_is_refused_under_its_path(tmp_path: Path) -> None:
    path = tmp_path / "garbage.dsse.json"
    path.write_bytes(b"not json")
    with pytest.raises(QualificationError) as caught:
        _verified(path)
    assert caught.value.message.startswith(f"{path}: ")


def test_an_attestation_past_the_size_limit_is_refused_under_its_path(tmp_path: Path) -> None:
    path = tmp_path / "large.dsse.json"
    path.write_bytes(b" " * (_MAX_ATTESTATION + 1))
    with pytest.raises(QualificationError) as caught:
        _verified(path)
    assert caught.value.message == f"{path}: larger than the limit of {_MAX_ATTESTATION} bytes"


# attach_rebuilds: the notes, word for word, and every file read whatever the one before it was.

def test_a_refused_attestation_does_not_stop_the_next_one(tmp_path: Path) -> None:
    refused = tmp_path / "refused.dsse.json"
    refused.write_bytes(b" " * (_MAX_ATTESTATION + 1))
    good = _signed(tmp_path / "good.dsse.json")
    runs, notes = attach_rebuilds([_run()], [refused, good], [_target_for()])
    assert notes == [f"rebuild attestation {refused} refused: QE_EVIDENCE_TOO_LARGE: {refused}: larger than the "
                     f"limit of {_MAX_ATTESTATION} bytes"]
    assert [seen.attestation for seen in runs[0].rebuilds] == [str(good)]


def test_an_attestation_about_other_bytes_is_noted_with_every_subject_and_the_next_one_read(tmp_path: Path) -> None:
    other = _signed(tmp_path / "other.dsse.json", subjects=(ARTIFACT, OTHER))
    good = _signed(tmp_path / "good.dsse.json")
    runs, notes = attach_rebuilds([_run()], [other, good], [_target_for()])
    assert notes == [f"rebuild attestation {other} is about other bytes (subject sha256 {ARTIFACT[:16]}, "
                     f"{OTHER[:16]}) than the artifact it names ({ARTIFACT[:16]}): attached to no run"]
    assert [seen.attestation for seen in runs[0].rebuilds] == [str(good)]


def test_an_attestation_matching_no_run_is_noted_and_the_next_one_read(tmp_path: Path) -> None:
    stray = _signed(tmp_path / "stray.dsse.json", run_id="99")
    good = _signed(tmp_path / "good.dsse.json")
    runs, notes = attach_rebuilds([_run()], [stray, good], [_target_for()])
    assert notes == [f"rebuild attestation {stray} names run 99#2 of {COMMIT[:12]} on linux: no audited run with "
                     f"that artifact"]
    assert [seen.attestation for seen in runs[0].rebuilds] == [str(good)]


def test_a_contradicted_attestation_is_attached_and_noted_in_these_words(tmp_path: Path) -> None:
    liar = _signed(tmp_path / "liar.dsse.json", rebuilt=REBUILT, matches=True)
    runs, notes = attach_rebuilds([_run()], [liar], [_target_for()])
    (seen,) = runs[0].rebuilds
    assert notes == [f"rebuild attestation {liar} contradicts run 1234#2 of {COMMIT[:12]} on linux: "
                     f"{seen.contradiction}"]
    assert seen.contradiction == (f"{CONTRADICTED}: it claims matches=true, the rebuilt digest {REBUILT} is not "
                                  f"the required one")


def test_a_refusal_note_is_cut_at_2000_characters(tmp_path: Path) -> None:
    missing = _deep(tmp_path, 2100) / "missing.dsse.json"
    _, notes = attach_rebuilds([_run()], [missing], [_target_for()])
    (note,) = notes
    assert note.startswith(f"rebuild attestation {str(missing)[:1900]}")
    assert len(note) == 2000


def test_an_other_bytes_note_is_cut_at_2000_characters(tmp_path: Path) -> None:
    other = _signed(_deep(tmp_path, 2100) / "other.dsse.json", subjects=(OTHER,))
    _, notes = attach_rebuilds([_run()], [other], [_target_for()])
    (note,) = notes
    assert note == f"rebuild attestation {other} is about other bytes"[:2000]
    assert len(note) == 2000


def test_a_no_run_note_is_cut_at_2000_characters(tmp_path: Path) -> None:
    stray = _signed(_deep(tmp_path, 2100) / "stray.dsse.json", run_id="99")
    _, notes = attach_rebuilds([_run()], [stray], [_target_for()])
    (note,) = notes
    assert note == f"rebuild attestation {stray} names run"[:2000]
    assert len(note) == 2000


def test_a_contradiction_note_is_cut_at_2000_characters(tmp_path: Path) -> None:
    liar = _signed(_deep(tmp_path, 2100) / "liar.dsse.json", rebuilt=REBUILT, matches=True)
    runs, notes = attach_rebuilds([_run()], [liar], [_target_for()])
    (note,) = notes
    assert note == f"rebuild attestation {liar} contradicts run"[:2000]
    assert len(note) == 2000
    assert runs[0].rebuilds[0].contradiction is not None


# rebuild_line: one line per outcome, word for word.

def _line_of(**fields: Any) -> str:
    seen = RebuildSeen(**{
        "attestation": "a.dsse.json", "rebuilder_keyid": KEYID, "platform": "linux", "commit": COMMIT,
        "artifact_sha256": ARTIFACT, "rebuilt_sha256": ARTIFACT, "required_sha256": ARTIFACT, "matches": True,
        "claimed_expected_sha256": ARTIFACT, "claimed_matches": True, "contradiction": None,
        "first_difference": None, "rebuilt_at": "2026-12-01T12:00:00Z", **fields})
    return rebuild_line(seen)


HEAD = (f"rebuild attestation a.dsse.json by key {KEYID[:16]} (the rebuilder's own key; the policy does not vouch "
        f"for it): linux at {COMMIT[:12]} rebuilt 2026-12-01T12:00:00Z to sha256 ")

LINES: list[tuple[str, dict[str, Any], str]] = [
    ("equal", {}, f"{HEAD}{ARTIFACT[:16]}: the rebuilt bytes equal the qualified ones"),
    ("not-compared", {"required_sha256": None, "matches": None},
     f"{HEAD}{ARTIFACT[:16]}: not compared: the run's build record names no digest a rebuild must give"),
    ("differ", {"rebuilt_sha256": REBUILT, "matches": False, "claimed_matches": False,
                "first_difference": "main.py differs"},
     f"{HEAD}{REBUILT[:16]}: the rebuilt bytes differ (main.py differs)"),
    ("differ-no-detail", {"rebuilt_sha256": REBUILT, "matches": False, "claimed_matches": False},
     f"{HEAD}{REBUILT[:16]}: the rebuilt bytes differ (no detail)"),
    ("contradicted", {"rebuilt_sha256": REBUILT, "matches": False, "contradiction": f"{CONTRADICTED}: why"},
     f"{HEAD}{REBUILT[:16]}: its claim is contradicted by the run's build record ({CONTRADICTED}: why)"),
]


@pytest.mark.parametrize(("row", "fields", "line"), LINES, ids=[row[0] for row in LINES])
def test_each_outcome_has_its_line(row: str, fields: dict[str, Any], line: str) -> None:
    assert _line_of(**fields) == line


# rebuild_targets: one target per verified platform statement, its evidence cut as the audited run's is.

def test_a_target_names_the_evidence_cut_at_4000_characters_as_the_audited_run_does() -> None:
    predicate = SimpleNamespace(
        run=SimpleNamespace(sha=COMMIT, run_id="1234", attempt=2), platform="linux",
        build=SimpleNamespace(artifact=SimpleNamespace(sha256=ARTIFACT), reproduction=None),
        signature=SimpleNamespace(platform_signing_state="unsigned"))
    verdict = SimpleNamespace(platforms=[SimpleNamespace(statement=SimpleNamespace(predicate=predicate))])
    (target,) = rebuild_targets("e" * 4100, verdict)  # type: ignore[arg-type]
    assert target == RebuildTarget(evidence="e" * 4000, commit=COMMIT, run_id="1234", attempt=2, platform="linux",
                                   artifact_sha256=ARTIFACT, required_sha256=ARTIFACT)
