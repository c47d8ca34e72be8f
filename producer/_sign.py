"""The sign stage: the pipeline's own signature over the archive, then a read-back.

The read-back re-reads the archive from disk, recomputes its digest and verifies
the signature with the policy's verifier (the keyring's public key, or the
pinned Sigstore root and the producer identity), not with the signer's own
state, so a signature nobody downstream could verify is caught here.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import BuildRecord, SignatureRecord
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_trust import StatementSigner, StatementVerifier

from .os_signing import SigningOutcome


def sign_artifact(*, archive: Path, build: BuildRecord, signing: SigningOutcome, signer: StatementSigner,
                  verifier: StatementVerifier, accepted_states: list[str]) -> SignatureRecord:
    signature = signer.sign_artifact_digest(build.artifact.name, build.artifact.sha256)
    reread = file_sha256(archive)
    readback = reread == build.artifact.sha256 and verifier.verify_artifact_signature(reread, signature) is not None
    return SignatureRecord(
        method=signature.method,
        artifact_sha256=build.artifact.sha256,
        keyid=signature.keyid,
        signature=signature.signature,
        readback_verified=readback,
        platform_signing_tool=signing.tool,
        platform_signing_state=signing.state,
        passed=readback and signing.state in accepted_states,
        notarization=signing.notarization,
    )
