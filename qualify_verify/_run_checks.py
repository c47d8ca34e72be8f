"""Checks across statements: coverage, one commit, one run, the aggregate, the candidate files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AggregateStatement,
    Code,
    Platform,
    QualificationError,
    Reason,
    RunIdentity,
    parse_statement,
)
from desktop_qualify.qualify_trust import GitHubIdentity, StatementVerifier, VerifiedStatement, same_run

from ._candidate import CandidateChangedError, CandidateTooLargeError, stable_sha256
from ._expectations import Expectations
from ._findings import Findings
from ._platform_checks import VerifiedPlatform, check_claims_match_certificate
from ._provenance_checks import VerifiedProvenance


def check_coverage(platforms: list[VerifiedPlatform], exp: Expectations, findings: Findings,
                   blocked: Mapping[str, Reason] | None = None, absence_cause: Reason | None = None) -> None:
    """Each required platform exactly once, and no platform the policy does not name.

    A platform whose statement did not verify (``blocked``), or what explains every absent
    statement (``absence_cause``: evidence of the other trust mode, nothing stored for the
    candidate), explains a missing platform: it is recorded as that root's consequence.
    """
    blocked = blocked or {}
    seen: dict[str, int] = {}
    for vp in platforms:
        seen[vp.platform] = seen.get(vp.platform, 0) + 1
    for platform, count in seen.items():
        if platform not in exp.required_platforms:
            findings.add(Code.PLATFORM_UNKNOWN, f"evidence for {platform}, which the policy does not require")
        if count > 1:
            findings.add(Code.PLATFORM_DUPLICATE, f"{count} statements for {platform}")
    for platform in exp.required_platforms:
        if platform not in seen:
            cause = blocked.get(platform) or absence_cause
            findings.add(Code.PLATFORM_MISSING, f"no verified statement for required platform {platform}"
                         + ("" if cause is None else f" (see {cause.code.value})"), follows=cause)


def check_one_commit(platforms: list[VerifiedPlatform], candidate_sha: str | None, findings: Findings) -> str | None:
    """Every statement carries the same SHA, and it is the candidate's when one is named."""
    shas = {vp.statement.predicate.run.sha for vp in platforms}
    if len(shas) > 1:
        findings.add(Code.SHA_MISMATCH, f"platform statements name {len(shas)} different commits: "
                                        f"{', '.join(sorted(s[:12] for s in shas))}")
        return None
    sha = next(iter(shas), None)
    if candidate_sha is not None and sha is not None and sha != candidate_sha:
        findings.add(Code.SHA_MISMATCH, f"evidence is for {sha[:12]}, the candidate is {candidate_sha[:12]}")
    # One commit is one source tree: the app folder's digest cannot differ between platform jobs.
    sources = {vp.statement.predicate.build.source_digest for vp in platforms}
    if len(shas) == 1 and len(sources) > 1:
        findings.add(Code.SHA_MISMATCH, f"platform builds of one commit name {len(sources)} different source "
                                        f"digests: {', '.join(sorted(s[:12] for s in sources))}")
    return sha


@dataclass(frozen=True, order=True)
class RunRef:
    """One attempt of one workflow run: what every statement of a qualification must share."""

    run_id: str
    attempt: int

    def __str__(self) -> str:
        return f"{self.run_id}#{self.attempt}"


@dataclass(frozen=True)
class VerifiedAggregate:
    """The aggregate statement as parsed, and who signed its exact bytes."""

    statement: AggregateStatement
    signed: VerifiedStatement


def check_one_run(platforms: list[VerifiedPlatform], findings: Findings) -> RunRef | None:
    """All platform jobs of one run and one attempt: no borrowing from another run."""
    runs = {RunRef(vp.statement.predicate.run.run_id, vp.statement.predicate.run.attempt) for vp in platforms}
    if len(runs) > 1:
        findings.add(Code.RUN_MISMATCH, "platform statements come from different runs or attempts: "
                                        + ", ".join(str(r) for r in sorted(runs)))
        return None
    return next(iter(runs), None)


def verify_aggregate(data: bytes | None, verifier: StatementVerifier, findings: Findings,
                     absence_cause: Reason | None = None) -> VerifiedAggregate | None:
    name = f"aggregate{verifier.file_suffix}"
    if data is None:
        findings.add(Code.AGGREGATE_MISSING, f"no aggregate statement ({name})", follows=absence_cause)
        return None
    try:
        signed = verifier.verify_statement(data, role="aggregate", what=name)
        statement = parse_statement(signed.payload, what=name)
    except QualificationError as exc:
        findings.add_error(exc)
        return None
    if not isinstance(statement, AggregateStatement):
        findings.add(Code.PREDICATE_TYPE_UNKNOWN, f"{name}: not an aggregate qualification")
        return None
    check_claims_match_certificate(signed, statement.predicate.run, name, findings)
    return VerifiedAggregate(statement, signed)


def check_aggregate_binds_platforms(aggregate: AggregateStatement, platforms: list[VerifiedPlatform],
                                    exp: Expectations, findings: Findings,
                                    blocked: Mapping[str, Reason] | None = None) -> None:
    """The aggregate lists exactly the platform statements verified here: their signed bytes and signers.

    Entries for platforms whose statements did not verify (``blocked``) cannot match:
    when they alone make the difference, it is a consequence of those root causes.
    """
    blocked = blocked or {}
    pred = aggregate.predicate
    # Each entry must name the statement verified here by the digest of its signed bytes (the DSSE payload,
    # which survives a bundle's re-serialisation in transit), and the signer the signature proved.
    listed = {(e.platform, e.payload_sha256, e.artifact.name, e.artifact.sha256, e.artifact.size, e.signer_keyid,
               e.signer_identity) for e in pred.platforms}
    verified = {(vp.platform, vp.signed.payload_sha256, vp.statement.predicate.build.artifact.name,
                 vp.statement.predicate.build.artifact.sha256, vp.statement.predicate.build.artifact.size,
                 vp.signed.signer.keyid, vp.signed.signer.name) for vp in platforms}
    unexplained = {entry for entry in listed - verified if entry[0] not in blocked}
    cause = next(iter(blocked.values()), None) if not unexplained and verified <= listed else None
    if listed != verified or len(pred.platforms) != len(listed):
        entries = [f"it lists {e[0]}'s {e[2]} (statement sha256 {e[1][:16]}), which no statement here matches"
                   for e in sorted(listed - verified)[:3]]
        entries += [f"it does not list {e[0]}'s statement {e[1][:16]}" for e in sorted(verified - listed)[:3]]
        why = "" if cause is None else (f" (the statement for {', '.join(sorted(blocked))} "
                                        + ("is absent)" if cause.code == Code.EVIDENCE_MISSING else "did not verify)"))
        findings.add(Code.AGGREGATE_MISMATCH, "the aggregate does not list exactly the platform statements present"
                     + (": " + "; ".join(entries) if entries else "") + why, follows=cause)
    if pred.policy_sha256 != exp.policy_sha256:
        findings.add(Code.AGGREGATE_MISMATCH, f"the aggregate was made under another policy "
                                              f"(sha256 {pred.policy_sha256[:16]}, this one {exp.policy_sha256[:16]})")
    subjects = {(s.name, s.digest.sha256) for s in aggregate.subject}
    if subjects != {entry[2:4] for entry in listed} or len(aggregate.subject) != len(subjects):
        findings.add(Code.SUBJECT_MISMATCH, "the aggregate's subjects are not exactly the listed artifacts",
                     follows=cause)
    # Exactly the list the aggregate job writes: the policy's platforms, once each, in the fixed order.
    if tuple(pred.required_platforms) != exp.required_platforms:
        findings.add(Code.AGGREGATE_MISMATCH, "the aggregate was made for other required platforms "
                                              f"({', '.join(pred.required_platforms)})")
    check_aggregate_identity(pred.run, exp, findings)
    if platforms:
        run = platforms[0].statement.predicate.run
        if (pred.run.run_id, pred.run.attempt) != (run.run_id, run.attempt):
            findings.add(Code.RUN_MISMATCH, f"the aggregate is for run {pred.run.run_id}#{pred.run.attempt}, the "
                                            f"platforms for {run.run_id}#{run.attempt}")
        if pred.run.sha != run.sha:
            findings.add(Code.SHA_MISMATCH, f"the aggregate is for {pred.run.sha[:12]}, the platforms for "
                                            f"{run.sha[:12]}")
        if pred.run != run:
            findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, "the aggregate's run identity differs from the platforms'")


def check_aggregate_binds_provenance(aggregate: AggregateStatement, provenance: Mapping[Platform, VerifiedProvenance],
                                     findings: Findings) -> None:
    """Each listed platform's provenance is the one verified here, by the SHA-256 of its signed bytes.

    A platform whose provenance is absent or did not verify already has its reason; its entry is not
    compared again.
    """
    for entry in aggregate.predicate.platforms:
        verified = provenance.get(entry.platform)
        if verified is not None and entry.provenance_sha256 != verified.signed.payload_sha256:
            findings.add(Code.PROVENANCE_MISMATCH, f"the aggregate binds {entry.platform}'s provenance "
                                                   f"{entry.provenance_sha256[:16]}, the one here is "
                                                   f"{verified.signed.payload_sha256[:16]}", entry.platform)


def check_aggregate_identity(run: RunIdentity, exp: Expectations, findings: Findings) -> None:
    """The aggregate's own run identity is the policy's producer, like every platform statement's."""
    if run.mode != exp.mode or run.repository != exp.repository or run.workflow != exp.workflow:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"the aggregate was made by {run.mode}:{run.repository}:"
                                                      f"{run.workflow}, the policy fixes {exp.repository}:"
                                                      f"{exp.workflow}")
    if run.trigger not in exp.allowed_triggers or run.runner_environment != exp.runner_environment:
        findings.add(Code.WORKFLOW_IDENTITY_MISMATCH, f"the aggregate's trigger {run.trigger!r} on "
                                                      f"{run.runner_environment!r} is not allowed")
    if run.ref != exp.ref:
        findings.add(Code.REF_NOT_MAIN, f"the aggregate's run ref is {run.ref!r}, not {exp.ref}")


def check_one_certified_run(signed: list[VerifiedStatement], findings: Findings) -> None:
    """GitHub mode: the run id and attempt in every signing certificate (OID .21) are one run."""
    identities = [s.signer.claims for s in signed if isinstance(s.signer.claims, GitHubIdentity)]
    if len(identities) < 2:
        return
    try:
        same_run(identities)
    except QualificationError as exc:
        findings.add(exc.code, exc.message)


def _hash_candidate(path: Path, max_bytes: int, findings: Findings) -> tuple[str, int] | None:
    """The candidate's digest and size, or None with the finding that says why it has none."""
    try:
        return stable_sha256(path, max_bytes)
    except QualificationError as exc:
        if exc.code == Code.EVIDENCE_MISSING:
            findings.add(Code.ARTIFACT_MISSING, f"--artifact {path}: missing (no such file)")
        elif exc.code == Code.INPUT_NOT_REGULAR:
            findings.add(exc.code, exc.message)
        else:
            findings.add(Code.ARTIFACT_MISSING, f"{path}: cannot read candidate file ({exc.message})")
    except CandidateTooLargeError as exc:
        findings.add(Code.ARTIFACT_TOO_LARGE, f"--artifact {path}: {exc}")
    except OSError as exc:
        findings.add(Code.ARTIFACT_MISSING, f"{path}: cannot read candidate file ({exc.strerror or exc})")
    except CandidateChangedError as exc:
        findings.add(Code.ARTIFACT_DIGEST_MISMATCH, f"{path.name}: {exc}")
    return None


def check_candidate_files(artifacts: list[Path], platforms: list[VerifiedPlatform], findings: Findings,
                          blocked: Mapping[str, Reason] | None = None, absence_cause: Reason | None = None, *,
                          max_bytes: int) -> list[tuple[str, str]]:
    """Each candidate file's SHA-256 and size equal the evidence's; every evidenced artifact is presented.

    Returns each presented file's name and the digest of the bytes hashed here (a file that could not be
    hashed is left out): what the gate judged, for anyone who reports on it (the VSA).

    Each file is hashed once, through one open handle that must not change while
    it is read, so the decision speaks of exactly the bytes that were hashed. A
    file no verified statement names, while some statement did not verify, is a
    consequence of that statement's root cause, not a fault of the file's; so is
    one that no statement could name because none was found (``absence_cause``).
    """
    cause = next(iter((blocked or {}).values()), None) or absence_cause
    expected = {vp.statement.predicate.build.artifact.name: vp for vp in platforms}
    presented: set[str] = set()
    judged: list[tuple[str, str]] = []
    for path in artifacts:
        hashed = _hash_candidate(path, max_bytes, findings)
        if hashed is None:
            continue
        digest, size = hashed
        judged.append((path.name, digest))
        vp = expected.get(path.name)
        if vp is None:
            by_digest = [v for v in platforms if v.statement.predicate.build.artifact.sha256 == digest]
            if not by_digest:
                findings.add(Code.ARTIFACT_DIGEST_MISMATCH,
                             f"{path.name}: sha256 {digest[:16]} is not an artifact in the evidence" if cause is None
                             else f"{path.name}: cannot be matched, since the statement that may name it "
                                  + ("did not verify" if cause is not absence_cause
                                     and cause.code != Code.EVIDENCE_MISSING
                                     else f"was not found (see {cause.code.value})"), follows=cause)
                continue
            vp = by_digest[0]
        artifact = vp.statement.predicate.build.artifact
        presented.add(artifact.name)
        if digest != artifact.sha256:
            findings.add(Code.ARTIFACT_DIGEST_MISMATCH,
                         f"{path.name}: sha256 {digest[:16]} differs from the evidence's {artifact.sha256[:16]}",
                         vp.platform)
        elif size != artifact.size:
            findings.add(Code.ARTIFACT_DIGEST_MISMATCH,
                         f"{path.name}: {size} bytes, the evidence says {artifact.size}", vp.platform)
    for name, vp in expected.items():
        if name not in presented:
            findings.add(Code.ARTIFACT_MISSING, f"candidate file {name} was not presented (--artifact)", vp.platform)
    return judged
