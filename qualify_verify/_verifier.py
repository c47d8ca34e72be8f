"""Whole-evidence verification: the state machine the aggregate and the consumer share.

Load order (each step only sees what the previous one verified):
  policy -> keyring -> evidence files (bounded) -> each platform statement
  (signature, payload, identity, commit, outcomes) -> each platform's SLSA
  provenance (signer, every field against its platform statement) -> coverage
  -> one commit -> one run -> aggregate (signature, binding to the platform statements)
  -> candidate files.

A statement that fails to verify, and evidence of the other trust mode, are
root causes; what they leave undone (a platform uncovered, an aggregate entry
unmatched, a candidate file unnamed) is recorded as their consequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AggregateStatement,
    Cell,
    Code,
    DecisionRow,
    Platform,
    Reason,
    platform_file_name,
)
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import StatementVerifier, VerifiedStatement, verifier_for

from ._columns import COLUMN_CODES
from ._evidence_dir import EvidenceFiles, bounded, platform_of, read_evidence_dir
from ._expectations import Expectations
from ._findings import Findings
from ._platform_checks import VerifiedPlatform, verify_platform
from ._provenance_checks import VerifiedProvenance, verify_all_provenance
from ._run_checks import (
    RunRef,
    check_aggregate_binds_platforms,
    check_aggregate_binds_provenance,
    check_candidate_files,
    check_coverage,
    check_one_certified_run,
    check_one_commit,
    check_one_run,
    verify_aggregate,
)


@dataclass
class Verdict:
    """The outcome of verifying one run: what verified, and every reason found."""

    expectations: Expectations
    verifier: StatementVerifier
    platforms: list[VerifiedPlatform] = field(default_factory=list)
    # Each platform's SLSA provenance that verified against its platform statement, by platform.
    provenance: dict[Platform, VerifiedProvenance] = field(default_factory=dict)
    aggregate: AggregateStatement | None = None
    sha: str | None = None
    run: RunRef | None = None
    findings: Findings = field(default_factory=Findings)
    aggregate_files: list[bytes] = field(default_factory=list)
    aggregate_signed: VerifiedStatement | None = None
    # Root causes later checks follow from: each platform whose statement did not verify, and what explains
    # every absent statement (a folder of the other trust mode's evidence, nothing stored for the candidate).
    blocked: dict[str, Reason] = field(default_factory=dict)
    absence_cause: Reason | None = None
    # Whether candidate files were presented and checked (the auditor's check has none).
    candidates_checked: bool = False
    # Each candidate file hashed, by name, with the digest of the bytes the gate read.
    candidate_digests: list[tuple[str, str]] = field(default_factory=list)

    @property
    def qualified(self) -> bool:
        """Whether the run qualifies: at least one platform verified and no reason was found."""
        return self.findings.ok and bool(self.platforms)

    @property
    def reasons(self) -> list[Reason]:
        """The reasons found, each root cause followed by its consequences."""
        return self.findings.reasons

    def rows(self) -> list[DecisionRow]:
        """The decision table, cell by cell from the findings: the verdict and the table cannot disagree."""
        rows = []
        by_platform = {vp.platform: vp for vp in self.platforms}
        for platform in self.expectations.required_platforms:
            vp = by_platform.get(platform)
            if vp is None:
                # A statement that is there but did not verify was never reached beyond its signature.
                blocker = self.blocked.get(platform)
                reached = blocker is not None and blocker.code != Code.EVIDENCE_MISSING
                absent: Cell = "n/a" if reached or self.absence_cause else "missing"
                cells: dict[str, Cell] = dict.fromkeys(COLUMN_CODES, absent)
                if not self.candidates_checked:
                    cells["candidate"] = "n/a"  # an audit presents no candidate files: never "missing"
                rows.append(DecisionRow(platform=platform, artifact=None, sha256=None, **cells))
                continue
            failing = {r.code for r in self.reasons if r.platform == platform}
            cells = {column: "fail" if failing & codes else "pass" for column, codes in COLUMN_CODES.items()}
            if not self.candidates_checked:
                cells["candidate"] = "n/a"
            artifact = vp.statement.predicate.build.artifact
            rows.append(DecisionRow(platform=platform, artifact=artifact.name, sha256=artifact.sha256,
                                    **cells))
        return rows


# An evidence folder on disk, or statements already in memory (fetched from GitHub's attestation API), named
# as a folder would name them; either way every byte is verified here.
EvidenceSource = Path | EvidenceFiles


def _name_absent_statements(verdict: Verdict, present: set[str], evidence: Sequence[EvidenceSource]) -> None:
    """A required platform with no statement at all, in evidence that holds others: one root cause, named.

    What follows from it (the platform missing, an aggregate entry with no statement, a candidate file no
    statement names) is recorded under it, not as causes of their own.
    """
    where = ", ".join(str(source) for source in evidence if isinstance(source, Path)) or "the evidence"
    for platform in verdict.expectations.required_platforms:
        if platform not in present:
            name = platform_file_name(platform, verdict.verifier.file_suffix)
            verdict.blocked[platform] = verdict.findings.add(
                Code.EVIDENCE_MISSING, f"{name}: the statement of required platform {platform} is absent from "
                                       f"{where}")


def verify_platform_set(policy: Policy, evidence: Sequence[EvidenceSource], *, candidate_sha: str | None = None,
                        findings: Findings | None = None) -> Verdict:
    """Every platform statement, coverage, one commit, one run (the aggregate job's view).

    ``findings`` holds what was found while gathering in-memory evidence, so that its root causes and what
    follows from them are one list.
    """
    verifier = verifier_for(policy, candidate_sha=candidate_sha)
    verdict = Verdict(Expectations.from_policy(policy), verifier=verifier, findings=findings or Findings())
    findings = verdict.findings
    present: set[str] = set()
    provenance: dict[str, bytes] = {}
    for source in evidence:
        max_bytes = verdict.expectations.max_statement_bytes
        files = bounded(source, max_bytes, findings) if isinstance(source, EvidenceFiles) else read_evidence_dir(
            source, suffix=verifier.file_suffix, max_bytes=max_bytes, findings=findings)
        verdict.absence_cause = verdict.absence_cause or files.absence_cause
        if files.aggregate is not None:
            verdict.aggregate_files.append(files.aggregate)
        present.update(platform_of(name) or name for name in files.platform)
        for name, data in files.provenance.items():
            provenance.setdefault(name, data)
        for name, data in sorted(files.platform.items()):
            vp = verify_platform(name, data, verdict.expectations, verifier, findings)
            if isinstance(vp, Reason):
                verdict.blocked.setdefault(platform_of(name) or name, vp)
            else:
                verdict.platforms.append(vp)
    if verdict.absence_cause is None and (present or verdict.aggregate_files or provenance):
        _name_absent_statements(verdict, present, evidence)
    verdict.provenance = verify_all_provenance(verdict.platforms, provenance, verdict.expectations, verifier,
                                               findings, blocked=verdict.blocked)
    check_coverage(verdict.platforms, verdict.expectations, findings, verdict.blocked, verdict.absence_cause)
    verdict.sha = check_one_commit(verdict.platforms, candidate_sha, findings)
    verdict.run = check_one_run(verdict.platforms, findings)
    return verdict


def verify_release(policy: Policy, evidence: Sequence[EvidenceSource], artifacts: list[Path] | None, *,
                   candidate_sha: str | None = None, findings: Findings | None = None) -> Verdict:
    """The consumer's full check: the platform set, the aggregate over it, the candidate files.

    Nothing here asks whether the SHA is still the head of main, so the same
    checks serve the release gate and the auditor's historical check.
    """
    verdict = verify_platform_set(policy, evidence, candidate_sha=candidate_sha, findings=findings)
    if len(verdict.aggregate_files) > 1:
        verdict.findings.add(Code.AGGREGATE_MISMATCH, f"{len(verdict.aggregate_files)} aggregate statements; "
                                                      "one run has exactly one")
    first = verdict.aggregate_files[0] if verdict.aggregate_files else None
    aggregate = verify_aggregate(first, verdict.verifier, verdict.findings, verdict.absence_cause)
    signed = [vp.signed for vp in verdict.platforms]
    if aggregate is not None:
        verdict.aggregate, verdict.aggregate_signed = aggregate.statement, aggregate.signed
        signed.append(aggregate.signed)
        check_aggregate_binds_platforms(aggregate.statement, verdict.platforms, verdict.expectations,
                                        verdict.findings, verdict.blocked)
        check_aggregate_binds_provenance(aggregate.statement, verdict.provenance, verdict.findings)
    check_one_certified_run(signed, verdict.findings)
    # The auditor checks a historical bundle whose files may be long gone: None skips this step.
    if artifacts is not None:
        verdict.candidates_checked = True
        verdict.candidate_digests = check_candidate_files(
            artifacts, verdict.platforms, verdict.findings, verdict.blocked, verdict.absence_cause,
            max_bytes=verdict.expectations.max_candidate_bytes)
    return verdict
