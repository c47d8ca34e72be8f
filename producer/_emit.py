"""Emit: the platform statement, signed, written atomically.

Just before signing, the head of main is checked again and the artifact is
re-hashed: the subject must be the bytes on disk now, from the SHA still at
the head of main.
"""

from __future__ import annotations

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
)
from desktop_qualify.qualify_files import file_sha256, write_atomic
from desktop_qualify.qualify_trust import StatementSigner

from ._gate import SourceGate


def emit(*, predicate: PlatformPredicate, archive: Path, gate: SourceGate, signer: StatementSigner,
         evidence_dir: Path, max_bytes: int) -> Path:
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
    # Checked before signing: in GitHub mode a signature is published to the transparency log.
    # Base64 in the envelope grows the payload by 4/3; the rest of an envelope or bundle is small.
    if len(payload) * 4 // 3 + 16 * 1024 > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"statement payload is {len(payload)} bytes, too large "
                                                          f"for the evidence limit of {max_bytes}")
    envelope = signer.sign_statement(payload)
    if len(envelope) > max_bytes:
        raise QualificationError(Code.EVIDENCE_TOO_LARGE, f"statement is {len(envelope)} bytes, over {max_bytes}")
    target = evidence_dir / platform_file_name(predicate.platform, signer.file_suffix)
    write_atomic(target, envelope)
    return target
