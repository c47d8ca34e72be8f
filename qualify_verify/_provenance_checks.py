"""The SLSA provenance beside each platform statement, checked against it (docs/design.md §5.1, step 7).

Every field of a platform's provenance is a fact the verified platform statement
or the provenance's own signature holds (``evidence_schemas.provenance_statement``).
So, in this order:

1. it is present, for every verified platform statement (``QE_PROVENANCE_MISSING``);
2. its signature verifies, by a signer trusted for the platform role that may speak
   for this platform (the trust layer's codes);
3. its signer is the platform statement's: the same key (local), or the same signer
   workflow with certificate claims of the same run (GitHub mode);
4. it is SLSA Provenance v1, and equal, field by field, to the provenance built again
   here from the platform statement (subject, workflow, ref, commit, run and attempt,
   platform, architecture, the statement's digest), the policy's digest and the
   signer's builder id. Only the policy's path is the producer's word
   (``_informational``): an auditor may hold the same policy at another path.

Anything short of that is ``QE_PROVENANCE_MISMATCH`` (or the trust layer's code), and
the provenance is not one the aggregate may bind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from desktop_qualify.evidence_schemas import (
    Code,
    Platform,
    ProvenanceStatement,
    QualificationError,
    Reason,
    parse_statement,
    platform_file_name,
    provenance_file_name,
    provenance_platform,
    provenance_statement,
)
from desktop_qualify.qualify_trust import GitHubIdentity, StatementVerifier, VerifiedStatement, cross_check_claims

from ._expectations import Expectations
from ._findings import Findings
from ._informational import is_informational
from ._platform_checks import VerifiedPlatform


@dataclass(frozen=True)
class VerifiedProvenance:
    """A platform's SLSA provenance that verified: its file name, the parsed statement and its signature."""

    file_name: str
    statement: ProvenanceStatement
    signed: VerifiedStatement


def _leaves(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if isinstance(value, dict):
        return {leaf: v for key, item in value.items() for leaf, v in _leaves(item, (*path, str(key))).items()}
    if isinstance(value, list):
        found = {leaf: v for i, item in enumerate(value) for leaf, v in _leaves(item, (*path, str(i))).items()}
        return found or {path: []}
    return {path: value}


def differing_fields(expected: ProvenanceStatement, got: ProvenanceStatement) -> list[str]:
    """The dotted paths where ``got`` differs from ``expected``, informational leaves aside."""
    want = _leaves(expected.model_dump(mode="json", by_alias=True))
    have = _leaves(got.model_dump(mode="json", by_alias=True))
    return [".".join(path) for path in sorted(want.keys() | have.keys())
            if want.get(path) != have.get(path) and not is_informational("provenance", path)]


def check_same_signer(vp: VerifiedPlatform, signed: VerifiedStatement) -> str | None:
    """Why the provenance's signer is not the platform statement's, or None when it is."""
    ours, theirs = signed.signer, vp.signed.signer
    if ours.kind != theirs.kind:
        return f"signed in {ours.kind} mode, the platform statement in {theirs.kind} mode"
    if ours.kind == "ed25519":
        if ours.keyid != theirs.keyid:
            return f"signed by key {ours.name!r} ({ours.keyid[:16]}), the platform statement by " \
                   f"{theirs.name!r} ({theirs.keyid[:16]})"
        return None
    # Keyless: each signature has a certificate of its own; the signer workflow and the run must be the same.
    if ours.name != theirs.name:
        return f"signed by {ours.name!r}, the platform statement by {theirs.name!r}"
    if isinstance(ours.claims, GitHubIdentity):
        try:
            cross_check_claims(ours.claims, vp.statement.predicate.run)
        except QualificationError as exc:
            return exc.message
    return None


def verify_provenance(vp: VerifiedPlatform, files: Mapping[str, bytes], exp: Expectations,
                      verifier: StatementVerifier, findings: Findings) -> VerifiedProvenance | None:
    """Checks 1-4 for the provenance of one verified platform statement; None when it does not hold."""
    platform = vp.platform
    name = provenance_file_name(platform, verifier.file_suffix)
    data = files.get(name)
    if data is None:
        findings.add(Code.PROVENANCE_MISSING, f"{name}: the SLSA provenance of {vp.file_name} is absent", platform)
        return None
    try:
        signed = verifier.verify_statement(data, role="platform", what=name)
        statement = parse_statement(signed.payload, what=name)
        verifier.check_speaks_for(signed.signer, platform)
    except QualificationError as exc:
        message = exc.message if exc.message.startswith(name) else f"{name}: {exc.message}"
        findings.add(exc.code, message, platform)
        return None
    if not isinstance(statement, ProvenanceStatement):
        findings.add(Code.PROVENANCE_MISMATCH, f"{name}: carries {statement.predicateType}, not SLSA provenance v1",
                     platform)
        return None
    other_signer = check_same_signer(vp, signed)
    if other_signer is not None:
        findings.add(Code.PROVENANCE_MISMATCH, f"{name}: {other_signer}", platform)
        return None
    try:
        expected = provenance_statement(
            vp.statement.predicate, statement_name=platform_file_name(platform, verifier.file_suffix),
            statement_sha256=vp.signed.payload_sha256,
            policy_path=statement.predicate.buildDefinition.externalParameters.policy.path,
            policy_sha256=exp.policy_sha256, builder_id=signed.signer.builder_id)
    except ValueError:
        # The platform statement's facts make no valid provenance (a pydantic ValidationError, a ValueError; its
        # own checks name why): none can match.
        findings.add(Code.PROVENANCE_MISMATCH, f"{name}: {vp.file_name} has no valid SLSA provenance", platform)
        return None
    differing = differing_fields(expected, statement)
    if differing:
        shown = ", ".join(differing[:4]) + (f" (+{len(differing) - 4} more)" if len(differing) > 4 else "")
        findings.add(Code.PROVENANCE_MISMATCH, f"{name}: not the provenance of {vp.file_name} under this policy "
                                               f"and signer: {shown} differ", platform)
        return None
    return VerifiedProvenance(name, statement, signed)


def verify_all_provenance(platforms: list[VerifiedPlatform], files: Mapping[str, bytes], exp: Expectations,
                          verifier: StatementVerifier, findings: Findings, *,
                          blocked: Mapping[str, Reason]) -> dict[Platform, VerifiedProvenance]:
    """Each verified platform's provenance, by platform; a provenance with no platform statement is a stray."""
    verified: dict[Platform, VerifiedProvenance] = {}
    for vp in platforms:
        checked = verify_provenance(vp, files, exp, verifier, findings)
        if checked is not None:
            verified.setdefault(vp.platform, checked)
    covered = {vp.platform for vp in platforms}
    for name in sorted(files):
        platform = provenance_platform(name)
        if platform in covered:
            continue
        if platform in blocked:
            continue  # its platform statement's own root cause explains it
        findings.add(Code.EVIDENCE_UNEXPECTED, f"{name}: provenance for {platform}, which has no platform statement")
    return verified
