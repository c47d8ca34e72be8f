"""Rebuild attestations beside the audited runs (``qualify audit --rebuild FILE...``).

Each attestation's signature is verified with the key it carries, and it is
shown beside the run whose commit, run id, attempt, platform and artifact
digest it names. The rebuilder's key is its own, not one the policy trusts: the
report names its key id and says so, and an attestation never changes a run's
decision. One that does not verify, or matches no audited run, is a note.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import AuditRun, QualificationError, RebuildSeen, read_bounded
from desktop_qualify.qualify_trust import verify_rebuild_attestation

_MAX_ATTESTATION = 256 * 1024


def _seen(path: Path) -> tuple[RebuildSeen, str, int]:
    statement, keyid = verify_rebuild_attestation(read_bounded(path, max_bytes=_MAX_ATTESTATION, what=str(path)),
                                                  what=str(path))
    p = statement.predicate
    return RebuildSeen(attestation=str(path)[:4000], rebuilder_keyid=keyid, platform=p.platform, commit=p.commit,
                       artifact_sha256=p.artifact.sha256, rebuilt_sha256=p.rebuilt_sha256, matches=p.matches,
                       first_difference=p.first_difference, rebuilt_at=p.rebuilt_at), p.run_id, p.attempt


def _belongs(run: AuditRun, seen: RebuildSeen, run_id: str, attempt: int) -> bool:
    d = run.decision
    return (d.candidate_sha == seen.commit and d.run_id == run_id and d.attempt == attempt
            and any(row.platform == seen.platform and row.sha256 == seen.artifact_sha256 for row in d.rows))


def attach_rebuilds(runs: list[AuditRun], files: list[Path]) -> tuple[list[AuditRun], list[str]]:
    """The runs with each verified attestation beside the run it names, and notes on those that were not."""
    notes: list[str] = []
    runs = list(runs)
    for path in files:
        try:
            seen, run_id, attempt = _seen(path)
        except QualificationError as exc:
            notes.append(f"rebuild attestation {path} refused: {exc.code.value}: {exc.message}"[:2000])
            continue
        index = next((i for i, run in enumerate(runs) if _belongs(run, seen, run_id, attempt)), None)
        if index is None:
            notes.append(f"rebuild attestation {path} names run {run_id}#{attempt} of {seen.commit[:12]} on "
                         f"{seen.platform}: no audited run with that artifact"[:2000])
            continue
        runs[index] = runs[index].model_copy(update={"rebuilds": [*runs[index].rebuilds, seen]})
    return runs, notes


def rebuild_line(seen: RebuildSeen) -> str:
    """One attestation in words (the same words in every format)."""
    outcome = ("the rebuilt bytes equal the qualified ones" if seen.matches else
               f"the rebuilt bytes differ ({seen.first_difference or 'no detail'})")
    return (f"rebuild attestation {seen.attestation} by key {seen.rebuilder_keyid[:16]} (the rebuilder's own key; "
            f"the policy does not vouch for it): {seen.platform} at {seen.commit[:12]} rebuilt {seen.rebuilt_at} "
            f"to sha256 {seen.rebuilt_sha256[:16]}: {outcome}")
