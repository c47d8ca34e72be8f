"""The release gate's evidence read from GitHub's attestation API, by the candidate files' digests.

Workflow artifacts expire (90 days at most); the statements the aggregate job
stored as attestations (``qualify-github store-attestations``) do not. Reading
them back, GitHub's answers are a transport, never a verdict:

1. main's head is read first (the commit a release gate is about, unless
   ``--sha`` names one), and each candidate file's SHA-256 is taken here (and
   again, with its size, by the verification that follows);
2. every stored attestation of this pipeline's predicate types (platform,
   aggregate, and the SLSA provenance beside each platform statement) for those
   digests is listed (all pages; GitHub's 404 for a digest is "none stored"),
   each received bundle once;
3. each is verified under the policy (signature, transparency log, signer
   workflow for its role and platform); one that does not verify is no
   evidence, and is counted in the notes with its code: anyone who may write
   attestations to the repository may store one;
4. of the verified aggregates for that commit whose subjects are exactly the
   candidate digests, the one of the latest run and attempt (both bound by the
   signing certificate; the aggregation time is informational and orders
   nothing). There is no falling back to another when it fails;
5. the platform statements and provenance it binds (the SHA-256 of their
   signed bytes, and the platform statement's signer's key id): the verified
   ones, or, for one that was refused, the refused bundle itself, so that the
   verification names its real fault.

Exactly those bytes then go through the whole verification, as if read from an
evidence folder (the policy's statement size bound included); nothing decided
here is taken on trust there.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AGGREGATE_PREDICATE_TYPE,
    MAX_SIGSTORE_BUNDLE_BYTES,
    PLATFORM_PREDICATE_TYPE,
    SLSA_PROVENANCE_PREDICATE_TYPE,
    AggregateStatement,
    Code,
    JsonBounds,
    PlatformStatement,
    ProvenanceStatement,
    QualificationError,
    load_json,
    parse_statement,
    platform_file_name,
    provenance_file_name,
)
from desktop_qualify.qualify_github import GitHubClient, attestations_for
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import (
    GitHubIdentity,
    Role,
    StatementVerifier,
    VerifiedStatement,
    cross_check_claims,
    verifier_for,
)
from desktop_qualify.qualify_verify import (
    CandidateError,
    EvidenceFiles,
    Findings,
    Verdict,
    stable_sha256,
    verify_release,
)

MAIN = "main"
# A platform's provenance is signed by the platform's own signer: it is verified for the platform role.
_ROLES: dict[str, Role] = {PLATFORM_PREDICATE_TYPE: "platform", AGGREGATE_PREDICATE_TYPE: "aggregate",
                           SLSA_PROVENANCE_PREDICATE_TYPE: "platform"}
# How an aggregate names a platform statement: the SHA-256 of its signed bytes and its signer's key id.
Binding = tuple[str, str]


@dataclass(frozen=True)
class _Aggregate:
    data: bytes
    signed: VerifiedStatement
    statement: AggregateStatement

    def order(self) -> tuple[int, str, int, str]:
        """The latest run (GitHub's run ids grow), then attempt, then digest: certificate-bound and deterministic."""
        run = self.statement.predicate.run
        return len(run.run_id), run.run_id, run.attempt, self.signed.payload_sha256


@dataclass
class _Found:
    """What the listings held: the verified statements once each, and the refused ones by their payload's digest."""

    platforms: dict[Binding, bytes] = field(default_factory=dict)
    aggregates: dict[Binding, _Aggregate] = field(default_factory=dict)
    # Verified provenance by the SHA-256 of its signed bytes (what the aggregate binds).
    provenance: dict[str, bytes] = field(default_factory=dict)
    # Refused bundles by the SHA-256 of their (unverified) payload: an aggregate may bind one of them.
    refused_payloads: dict[str, bytes] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)
    received: set[str] = field(default_factory=set)
    other_types: int = 0

    def summary(self) -> str:
        refused = sum(self.refused.values())
        verified = len(self.platforms) + len(self.aggregates) + len(self.provenance)
        return (f"{len(self.received)} distinct bundles listed, {verified} verified"
                + (f", {refused} refused (" + ", ".join(f"{code} x{n}" for code, n in sorted(self.refused.items()))
                   + ")" if refused else "")
                + (f", {self.other_types} of other predicate types ignored" if self.other_types else ""))


@dataclass
class AttestedEvidence:
    """The statements chosen from the attestation store, ready to verify, and what the choice saw."""

    files: EvidenceFiles
    notes: list[str] = field(default_factory=list)


def _candidate_digests(artifacts: Sequence[Path], max_bytes: int) -> list[str]:
    """Each readable candidate file's SHA-256; an unreadable, irregular or too large one is left to the
    verification to name."""
    digests = set()
    for path in artifacts:
        try:
            digests.add(stable_sha256(path, max_bytes)[0])
        except (OSError, QualificationError, CandidateError):
            continue
    return sorted(digests)


# Unverified bytes are parsed under load_json's bounds: no larger than a Sigstore bundle may be (the payload is
# inside one), and no deeper than any evidence (a payload of 100,000 '[' is not ours, never a QE_INTERNAL).
# The statement's own size bound is the policy's, checked when the chosen statements are verified.
_BUNDLE_BOUNDS = JsonBounds(MAX_SIGSTORE_BUNDLE_BYTES)


def _unverified_payload(data: bytes) -> bytes | None:
    """The DSSE payload a bundle carries, before anything verified it: only to route it and to match a binding."""
    try:
        document = load_json(data, what="attestation", bounds=_BUNDLE_BOUNDS)
        envelope = document.get("dsseEnvelope") if isinstance(document, dict) else None
        payload = envelope.get("payload") if isinstance(envelope, dict) else None
        return base64.b64decode(payload, validate=True) if isinstance(payload, str) else None
    except (QualificationError, ValueError, binascii.Error):
        return None


def _claimed_type(payload: bytes) -> str | None:
    try:
        document = load_json(payload, what="attestation payload", bounds=_BUNDLE_BOUNDS)
    except QualificationError:
        return None
    claimed = document.get("predicateType") if isinstance(document, dict) else None
    return claimed if isinstance(claimed, str) else None


def _cross_check_claims_of(signed: VerifiedStatement, statement: AggregateStatement, what: str) -> None:
    """The aggregate's run claims equal its certificate's (GitHub mode), or it is refused before any choice."""
    claims = signed.signer.claims
    if isinstance(claims, GitHubIdentity):
        try:
            cross_check_claims(claims, statement.predicate.run)
        except QualificationError as exc:
            raise QualificationError(exc.code, f"{what}: {exc.message}") from exc


def _verify_one(data: bytes, role: Role, verifier: StatementVerifier, what: str, found: _Found) -> None:
    signed = verifier.verify_statement(data, role=role, what=what)
    statement = parse_statement(signed.payload, what=what)
    binding = (signed.payload_sha256, signed.signer.keyid)
    if isinstance(statement, PlatformStatement) and role == "platform":
        verifier.check_speaks_for(signed.signer, statement.predicate.platform)
        found.platforms.setdefault(binding, data)
    elif isinstance(statement, ProvenanceStatement) and role == "platform":
        # Which platform it may speak for is the signer's to prove; what it says is checked in the verification.
        verifier.check_speaks_for(signed.signer, statement.predicate.buildDefinition.externalParameters.platform)
        found.provenance.setdefault(signed.payload_sha256, data)
    elif isinstance(statement, AggregateStatement) and role == "aggregate":
        # Chosen later by its run and attempt: kept only once the certificate has confirmed those claims.
        _cross_check_claims_of(signed, statement, what)
        found.aggregates.setdefault(binding, _Aggregate(data, signed, statement))
    else:
        raise QualificationError(Code.PREDICATE_TYPE_UNKNOWN, f"{what}: not the {role} statement it claims to be")


def _consider(data: bytes, digest: str, verifier: StatementVerifier, found: _Found) -> None:
    """One listed bundle: once, routed by the type it claims, verified for the role that type names."""
    received = hashlib.sha256(data).hexdigest()
    if received in found.received:
        return  # the same stored bundle, listed again under another digest or predicate type
    found.received.add(received)
    payload = _unverified_payload(data)
    role = _ROLES.get(_claimed_type(payload) or "") if payload is not None else None
    if role is None:
        # GitHub's predicate_type filter is GitHub's answer too: what is not ours is no evidence, nor a fault.
        found.other_types += 1
        return
    try:
        _verify_one(data, role, verifier, f"attestation for sha256:{digest[:12]}", found)
    except QualificationError as exc:
        found.refused[exc.code.value] += 1
        if payload is not None:
            found.refused_payloads.setdefault(hashlib.sha256(payload).hexdigest(), data)


def _fetch_verified(client: GitHubClient, repository: str, digests: list[str], verifier: StatementVerifier,
                    ) -> _Found:
    """Every stored statement of this pipeline's types for ``digests``, verified under the policy."""
    found = _Found()
    for digest in digests:
        for predicate_type in _ROLES:
            for data in attestations_for(client, repository, digest, predicate_type=predicate_type):
                _consider(data, digest, verifier, found)
    return found


def _aggregates_for(found: _Found, digests: list[str], commit: str) -> list[_Aggregate]:
    """The verified aggregates of ``commit`` for exactly these candidate files, latest run first."""
    wanted = set(digests)
    chosen = [a for a in found.aggregates.values()
              if {s.digest.sha256 for s in a.statement.subject} == wanted and a.statement.predicate.run.sha == commit]
    return sorted(chosen, key=_Aggregate.order, reverse=True)


def attested_evidence(policy: Policy, artifacts: Sequence[Path], client: GitHubClient, findings: Findings, *,
                      sha: str | None = None) -> AttestedEvidence:
    """The one qualification GitHub's attestation store holds for ``artifacts``, as evidence files to verify.

    When it holds none, the root cause goes into ``findings`` and the files are
    empty: every absent statement the verification then finds follows from it.
    """
    repository = policy.file.producer.repository
    # Read first: it names the commit to look for when --sha does not, and a repository this token cannot see
    # fails here (exit 2), not as "nothing stored" (the attestation listing answers 404 for both).
    head = client.head_sha(repository, MAIN)
    commit, which = (sha, "--sha") if sha else (head, f"{MAIN}'s head")
    verifier = verifier_for(policy, candidate_sha=sha)
    digests = _candidate_digests(artifacts, policy.file.limits.max_candidate_bytes)
    found = _fetch_verified(client, repository, digests, verifier)
    files = EvidenceFiles()
    notes = [f"evidence from GitHub's attestation API ({repository}), by the digests of {len(digests)} candidate "
             f"file(s): {found.summary()}"]
    aggregates = _aggregates_for(found, digests, commit)
    if not aggregates:
        files.absence_cause = findings.add(
            Code.EVIDENCE_MISSING, f"GitHub's attestation store of {repository} holds no verified aggregate "
                                   f"qualification of {commit[:12]} ({which}) for exactly these {len(digests)} "
                                   f"candidate file(s) ({found.summary()})")
        return AttestedEvidence(files, notes)
    chosen = aggregates[0]
    predicate = chosen.statement.predicate
    notes.append(f"chose the aggregate of run {predicate.run.run_id}#{predicate.run.attempt} at "
                 f"{predicate.run.sha[:12]} ({which}), statement sha256 {chosen.signed.payload_sha256[:16]}"
                 + (f"; {len(aggregates) - 1} other verified aggregate(s) of earlier runs or attempts not used"
                    if len(aggregates) > 1 else ""))
    files.aggregate = chosen.data
    unmatched = 0
    for entry in predicate.platforms:
        data = found.platforms.get((entry.payload_sha256, entry.signer_keyid)) \
            or found.refused_payloads.get(entry.payload_sha256)
        if data is None:
            unmatched += 1
            continue
        files.platform.setdefault(platform_file_name(entry.platform, verifier.file_suffix), data)
    for entry in predicate.platforms:
        data = found.provenance.get(entry.provenance_sha256) or found.refused_payloads.get(entry.provenance_sha256)
        if data is None:
            unmatched += 1
            continue
        files.provenance.setdefault(provenance_file_name(entry.platform, verifier.file_suffix), data)
    if unmatched:
        notes.append(f"{unmatched} platform statement(s) or provenance the aggregate binds are not among the "
                     "listed attestations")
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
