"""The release gate's evidence read from GitHub's attestation API, by the candidate files' digests.

Workflow artifacts expire (90 days at most); the statements the aggregate job
stored as attestations (``qualify-github store-attestations``) do not. Reading
them back, GitHub's answers are a transport, never a verdict:

1. each candidate file's SHA-256 is taken here (and again, with its size, by the
   verification that follows);
2. every stored attestation of this pipeline's two predicate types for those
   digests is listed (all pages);
3. each is verified under the policy (signature, transparency log, signer
   workflow for its role and platform); one that does not verify is no
   evidence, and is counted in the notes with its code: anyone who may write
   attestations to the repository may store one;
4. of the verified aggregates, those whose subjects are exactly the candidate
   digests (and whose commit is ``--sha``, when named); the newest by its
   signed aggregation time, then attempt, then digest, so the choice is
   deterministic. There is no falling back to an older one when it fails;
5. the platform statements it binds (the SHA-256 of their signed bytes and
   their signer's key id), found among the verified ones.

Exactly those bytes then go through the whole verification, as if read from an
evidence folder; nothing decided here is taken on trust there.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AGGREGATE_PREDICATE_TYPE,
    PLATFORM_PREDICATE_TYPE,
    AggregateStatement,
    Code,
    PlatformStatement,
    QualificationError,
    parse_statement,
    platform_file_name,
)
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_github import GitHubClient, attestations_for
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import Role, StatementVerifier, VerifiedStatement, verifier_for
from desktop_qualify.qualify_verify import EvidenceFiles, Findings, Verdict, verify_release

# How an aggregate names a platform statement: the SHA-256 of its signed bytes and its signer's key id.
Binding = tuple[str, str | None]


@dataclass(frozen=True)
class _Aggregate:
    data: bytes
    signed: VerifiedStatement
    statement: AggregateStatement

    def order(self) -> tuple[_dt.datetime, int, str]:
        """Newest signed aggregation time first, then attempt, then digest: a deterministic choice."""
        predicate = self.statement.predicate
        return _dt.datetime.fromisoformat(predicate.aggregated_at), predicate.run.attempt, self.signed.payload_sha256


@dataclass
class _Found:
    """The verified statements among the listed attestations, once each, and the codes of the refused ones."""

    platforms: dict[Binding, bytes] = field(default_factory=dict)
    aggregates: dict[Binding, _Aggregate] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)
    listed: int = 0

    def summary(self) -> str:
        refused = sum(self.refused.values())
        return (f"{self.listed} listed, {len(self.platforms) + len(self.aggregates)} verified"
                + (f", {refused} refused (" + ", ".join(f"{code} x{n}" for code, n in sorted(self.refused.items()))
                   + ")" if refused else ""))


@dataclass
class AttestedEvidence:
    """The statements chosen from the attestation store, ready to verify, and what the choice saw."""

    files: EvidenceFiles
    notes: list[str] = field(default_factory=list)


def _candidate_digests(artifacts: Sequence[Path]) -> list[str]:
    """Each readable candidate file's SHA-256; an unreadable one is left to the verification to name."""
    digests = set()
    for path in artifacts:
        try:
            digests.add(file_sha256(path))
        except OSError:
            continue
    return sorted(digests)


def _verify_one(data: bytes, verifier: StatementVerifier, predicate_type: str, what: str,
                found: _Found) -> None:
    role: Role = "aggregate" if predicate_type == AGGREGATE_PREDICATE_TYPE else "platform"
    signed = verifier.verify_statement(data, role=role, what=what)
    statement = parse_statement(signed.payload, what=what)
    if statement.predicateType != predicate_type:
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: listed as {predicate_type}, carries "
                                                              f"{statement.predicateType}")
    # One statement listed under each of its subjects' digests, or stored twice, is one statement.
    binding = (signed.payload_sha256, signed.signer.keyid)
    if isinstance(statement, PlatformStatement):
        verifier.check_speaks_for(signed.signer, statement.predicate.platform)
        found.platforms.setdefault(binding, data)
    elif isinstance(statement, AggregateStatement):
        found.aggregates.setdefault(binding, _Aggregate(data, signed, statement))


def _fetch_verified(client: GitHubClient, repository: str, digests: list[str], verifier: StatementVerifier,
                    ) -> _Found:
    """Every stored statement of this pipeline's types for ``digests`` that verifies under the policy."""
    found = _Found()
    for digest in digests:
        for predicate_type in (PLATFORM_PREDICATE_TYPE, AGGREGATE_PREDICATE_TYPE):
            for data in attestations_for(client, repository, digest, predicate_type=predicate_type):
                found.listed += 1
                try:
                    _verify_one(data, verifier, predicate_type, f"attestation for sha256:{digest[:12]}", found)
                except QualificationError as exc:
                    found.refused[exc.code.value] += 1
    return found


def _aggregates_for(found: _Found, digests: list[str], sha: str | None) -> list[_Aggregate]:
    """The verified aggregates for exactly these candidate files (and commit), newest first."""
    wanted = set(digests)
    chosen = [a for a in found.aggregates.values()
              if {s.digest.sha256 for s in a.statement.subject} == wanted
              and (sha is None or a.statement.predicate.run.sha == sha)]
    return sorted(chosen, key=_Aggregate.order, reverse=True)


def attested_evidence(policy: Policy, artifacts: Sequence[Path], client: GitHubClient, findings: Findings, *,
                      sha: str | None = None) -> AttestedEvidence:
    """The one qualification GitHub's attestation store holds for ``artifacts``, as evidence files to verify.

    When it holds none, the root cause goes into ``findings`` and the files are
    empty: every absent statement the verification then finds follows from it.
    """
    repository = policy.file.producer.repository
    verifier = verifier_for(policy, candidate_sha=sha)
    digests = _candidate_digests(artifacts)
    found = _fetch_verified(client, repository, digests, verifier)
    files = EvidenceFiles()
    notes = [f"evidence from GitHub's attestation API ({repository}), by the digests of {len(digests)} candidate "
             f"file(s): {found.summary()}"]
    aggregates = _aggregates_for(found, digests, sha)
    if not aggregates:
        files.absence_cause = findings.add(
            Code.EVIDENCE_MISSING, f"GitHub's attestation store of {repository} holds no verified aggregate "
                                   f"qualification for exactly these {len(digests)} candidate file(s)"
                                   + (f" at {sha[:12]}" if sha else "") + f" ({found.summary()})")
        return AttestedEvidence(files, notes)
    chosen = aggregates[0]
    predicate = chosen.statement.predicate
    notes.append(f"chose the aggregate of run {predicate.run.run_id}#{predicate.run.attempt} at "
                 f"{predicate.run.sha[:12]} (aggregated {predicate.aggregated_at}, statement sha256 "
                 f"{chosen.signed.payload_sha256[:16]})"
                 + (f"; {len(aggregates) - 1} other verified aggregate(s) for these files not used"
                    if len(aggregates) > 1 else ""))
    files.aggregate = chosen.data
    for entry in predicate.platforms:
        data = found.platforms.get((entry.payload_sha256, entry.signer_keyid))
        if data is not None:
            files.platform[platform_file_name(entry.platform, verifier.file_suffix)] = data
    missing = len(predicate.platforms) - len(files.platform)
    if missing:
        notes.append(f"{missing} platform statement(s) the aggregate binds are not among the verified attestations")
    return AttestedEvidence(files, notes)


def verify_attested(policy: Policy, artifacts: list[Path], sha: str | None,
                    env: Mapping[str, str]) -> tuple[Verdict, list[str]]:
    """The release gate on the statements GitHub's attestation API holds for the candidate files, and its notes."""
    if policy.sigstore is None:
        raise QualificationError(Code.USAGE, "--from-attestations reads Sigstore bundles stored on GitHub: it needs "
                                             "a GitHub-mode policy; local evidence is checked as a folder (--evidence)")
    if not artifacts:
        raise QualificationError(Code.USAGE, "--from-attestations finds the statements by the candidate files' "
                                             "digests: name each candidate file with --artifact")
    findings = Findings()
    with GitHubClient.from_env(env) as client:
        attested = attested_evidence(policy, artifacts, client, findings, sha=sha)
    return verify_release(policy, [attested.files], artifacts, candidate_sha=sha, findings=findings), attested.notes
