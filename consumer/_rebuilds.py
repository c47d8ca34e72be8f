"""Rebuild attestations beside the audited runs (``qualify audit --rebuild FILE...``).

Each attestation's signature is verified with the key it carries, and it is
shown beside the run whose commit, run id, attempt, platform and artifact
digest it names, and whose artifact its subject is: an attestation about
other bytes is attached to no run. The rebuilder's key is its own, not one the
policy trusts: the report names its key id and says so, and an attestation
never changes a run's decision. One that does not verify, or matches no
audited run, is a note.

Its verdict is re-derived, never taken: the digest a rebuild must give comes
from the audited run's own verified build record (``required_digest``: the
unsigned output's for an OS-signed artifact, else the artifact's), and
``matches`` is the rebuilt digest compared with it. An attestation whose
``expected_sha256`` or ``matches`` says otherwise is shown as contradicted
(``QE_REBUILD_CLAIM_CONTRADICTED``), never as a reproduced build.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AuditRun,
    Code,
    PlatformPredicate,
    QualificationError,
    RebuildSeen,
    RebuildStatement,
    read_bounded,
)
from desktop_qualify.qualify_trust import verify_rebuild_attestation
from desktop_qualify.qualify_verify import Verdict

_MAX_ATTESTATION = 256 * 1024


@dataclass(frozen=True)
class RebuildTarget:
    """What one audited run's verified platform statement says a rebuild of its artifact must give."""

    # The audited folder or bundle, as the run's AuditRun names it.
    evidence: str
    commit: str
    run_id: str
    attempt: int
    platform: str
    artifact_sha256: str
    # None: an OS-signed artifact whose record carries no unsigned output digest (nothing to compare with).
    required_sha256: str | None


def required_digest(p: PlatformPredicate) -> str | None:
    """The digest a rebuild must give, from a verified build record: the unsigned artifact's, else the build's
    own output before OS signing (the reproduction's first digest); None when the record carries neither.

    ``qualify rebuild`` compares with it and ``audit --rebuild`` re-derives an attestation's match from it."""
    if p.signature.platform_signing_state == "unsigned":
        return p.build.artifact.sha256
    if p.build.reproduction is not None:
        return p.build.reproduction.first_sha256
    return None


def rebuild_targets(evidence: str, verdict: Verdict) -> list[RebuildTarget]:
    """One target per verified platform statement of the run audited from ``evidence``."""
    out = []
    for vp in verdict.platforms:
        p = vp.statement.predicate
        out.append(RebuildTarget(evidence=evidence[:4000], commit=p.run.sha, run_id=p.run.run_id,
                                 attempt=p.run.attempt, platform=p.platform, artifact_sha256=p.build.artifact.sha256,
                                 required_sha256=required_digest(p)))
    return out


def _verified(path: Path) -> tuple[RebuildStatement, str]:
    return verify_rebuild_attestation(read_bounded(path, max_bytes=_MAX_ATTESTATION, what=str(path)), what=str(path))


def _about_its_artifact(statement: RebuildStatement) -> bool:
    """Every subject is the artifact the predicate names: the attestation is about those bytes only."""
    return all(s.digest.sha256 == statement.predicate.artifact.sha256 for s in statement.subject)


def _target(run: AuditRun, statement: RebuildStatement, targets: list[RebuildTarget]) -> RebuildTarget | None:
    """The run's verified statement the attestation is about (commit, run, attempt, platform, artifact bytes)."""
    p = statement.predicate
    d = run.decision
    if not (d.candidate_sha == p.commit and d.run_id == p.run_id and d.attempt == p.attempt):
        return None
    if not any(row.platform == p.platform and row.sha256 == p.artifact.sha256 for row in d.rows):
        return None
    return next((t for t in targets if t.evidence == run.evidence and (t.commit, t.run_id, t.attempt, t.platform,
                 t.artifact_sha256) == (p.commit, p.run_id, p.attempt, p.platform, p.artifact.sha256)), None)


def _contradiction(statement: RebuildStatement, required: str | None, matches: bool | None) -> str | None:
    p = statement.predicate
    problems = []
    if required is None:
        problems.append("the run's build record names no digest a rebuild must give (an OS-signed artifact "
                        f"without its unsigned output's digest), yet the attestation claims {p.expected_sha256}")
    elif p.expected_sha256 != required:
        problems.append(f"it claims a rebuild had to give {p.expected_sha256}, the run's build record says "
                        f"{required}")
    if matches is not None and p.matches != matches:
        problems.append(f"it claims matches={str(p.matches).lower()}, the rebuilt digest {p.rebuilt_sha256} "
                        f"{'is' if matches else 'is not'} the required one")
    if not problems:
        return None
    return f"{Code.REBUILD_CLAIM_CONTRADICTED.value}: {'; '.join(problems)}"[:2000]


def _seen(path: Path, statement: RebuildStatement, keyid: str, target: RebuildTarget) -> RebuildSeen:
    p = statement.predicate
    required = target.required_sha256
    matches = None if required is None else p.rebuilt_sha256 == required
    return RebuildSeen(attestation=str(path)[:4000], rebuilder_keyid=keyid, platform=p.platform, commit=p.commit,
                       artifact_sha256=p.artifact.sha256, rebuilt_sha256=p.rebuilt_sha256, required_sha256=required,
                       matches=matches, claimed_expected_sha256=p.expected_sha256, claimed_matches=p.matches,
                       contradiction=_contradiction(statement, required, matches),
                       first_difference=p.first_difference, rebuilt_at=p.rebuilt_at)


def attach_rebuilds(runs: list[AuditRun], files: list[Path],
                    targets: list[RebuildTarget] | None = None) -> tuple[list[AuditRun], list[str]]:
    """The runs with each verified attestation beside the run it names, and notes on those that were not.

    ``targets``: what each run's verified statements say a rebuild must give (``rebuild_targets``); an
    attestation is attached only to a run with such a statement for its artifact.
    """
    notes: list[str] = []
    targets = targets or []
    runs = list(runs)
    for path in files:
        try:
            statement, keyid = _verified(path)
        except QualificationError as exc:
            notes.append(f"rebuild attestation {path} refused: {exc.code.value}: {exc.message}"[:2000])
            continue
        p = statement.predicate
        if not _about_its_artifact(statement):
            subjects = ", ".join(s.digest.sha256[:16] for s in statement.subject)
            notes.append(f"rebuild attestation {path} is about other bytes (subject sha256 {subjects}) than the "
                         f"artifact it names ({p.artifact.sha256[:16]}): attached to no run"[:2000])
            continue
        found = next(((i, t) for i, run in enumerate(runs) if (t := _target(run, statement, targets)) is not None),
                     None)
        if found is None:
            notes.append(f"rebuild attestation {path} names run {p.run_id}#{p.attempt} of {p.commit[:12]} on "
                         f"{p.platform}: no audited run with that artifact"[:2000])
            continue
        index, target = found
        seen = _seen(path, statement, keyid, target)
        if seen.contradiction is not None:
            notes.append(f"rebuild attestation {path} contradicts run {p.run_id}#{p.attempt} of {p.commit[:12]} "
                         f"on {p.platform}: {seen.contradiction}"[:2000])
        runs[index] = runs[index].model_copy(update={"rebuilds": [*runs[index].rebuilds, seen]})
    return runs, notes


def rebuild_line(seen: RebuildSeen) -> str:
    """One attestation in words (the same words in every format)."""
    if seen.contradiction is not None:
        outcome = f"its claim is contradicted by the run's build record ({seen.contradiction})"
    elif seen.matches is None:
        outcome = "not compared: the run's build record names no digest a rebuild must give"
    elif seen.matches:
        outcome = "the rebuilt bytes equal the qualified ones"
    else:
        outcome = f"the rebuilt bytes differ ({seen.first_difference or 'no detail'})"
    return (f"rebuild attestation {seen.attestation} by key {seen.rebuilder_keyid[:16]} (the rebuilder's own key; "
            f"the policy does not vouch for it): {seen.platform} at {seen.commit[:12]} rebuilt {seen.rebuilt_at} "
            f"to sha256 {seen.rebuilt_sha256[:16]}: {outcome}")
