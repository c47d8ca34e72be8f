"""Emit: the platform statement and its SLSA provenance, signed, written atomically.

Just before signing, the head of main is checked again and the artifact is
re-hashed: the subject must be the bytes on disk now, from the SHA still at
the head of main. The provenance is signed right after, by the same signer,
and names the platform statement by the SHA-256 of its signed bytes; its
builder id is read back from the platform statement's own signature.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    Code,
    DigestSet,
    PlatformPredicate,
    PlatformStatement,
    QualificationError,
    Subject,
    canonical_bytes,
    platform_file_name,
    provenance_file_name,
    provenance_statement,
)
from desktop_qualify.qualify_files import file_sha256, write_atomic
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import StatementSigner, StatementVerifier

from .source import SourceGate


@dataclass(frozen=True)
class Emitted:
    statement: Path
    provenance: Path


def policy_path_in_repository(policy: Policy) -> str:
    """The policy's path inside its checkout (``policies/local.toml``), or its file name outside one."""
    root = policy.repository_root()
    path = policy.path.resolve()
    if root is not None and path.is_relative_to(root.resolve()):
        return path.relative_to(root.resolve()).as_posix()
    return path.name


def _signed(signer: StatementSigner, payload: bytes, max_bytes: int, what: str) -> bytes:
    # Checked before signing: in GitHub mode a signature is published to the transparency log.
    # Base64 in the envelope grows the payload by 4/3; the rest of an envelope or bundle is small.
    if len(payload) * 4 // 3 + 16 * 1024 > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what} payload is {len(payload)} bytes, too large "
                                                          f"for the evidence limit of {max_bytes}")
    envelope = signer.sign_statement(payload)
    if len(envelope) > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"{what} is {len(envelope)} bytes, over {max_bytes}")
    return envelope


def emit(*, predicate: PlatformPredicate, archive: Path, gate: SourceGate, signer: StatementSigner,
         verifier: StatementVerifier, policy: Policy, evidence_dir: Path) -> Emitted:
    max_bytes = policy.file.limits.max_statement_bytes
    gate.recheck_head(predicate.source_gate.sha)
    if file_sha256(archive) != predicate.build.artifact.sha256:
        raise QualificationError(Code.ARTIFACT_DIGEST_MISMATCH, f"{archive.name} changed after it was built")
    statement = PlatformStatement(
        type_="https://in-toto.io/Statement/v1",
        subject=[Subject(name=archive.name, digest=DigestSet(sha256=predicate.build.artifact.sha256))],
        predicateType="https://desktop-qualify.invalid/evidence/platform-qualification/v2",
        predicate=predicate,
    )
    payload = canonical_bytes(statement)
    envelope = _signed(signer, payload, max_bytes, "statement")
    name = platform_file_name(predicate.platform, signer.file_suffix)
    # Who signed is what the signature proves (the verifier derives the builder id the same way).
    builder = verifier.verify_statement(envelope, role="platform", what=name).signer.builder_id
    provenance = provenance_statement(predicate, statement_name=name,
                                      statement_sha256=hashlib.sha256(payload).hexdigest(),
                                      policy_path=policy_path_in_repository(policy), policy_sha256=policy.sha256,
                                      builder_id=builder)
    provenance_envelope = _signed(signer, canonical_bytes(provenance), max_bytes, "provenance")
    target = evidence_dir / name
    write_atomic(target, envelope)
    provenance_target = evidence_dir / provenance_file_name(predicate.platform, signer.file_suffix)
    write_atomic(provenance_target, provenance_envelope)
    return Emitted(target, provenance_target)
