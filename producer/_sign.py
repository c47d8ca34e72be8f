"""The sign stage: the pipeline's own signature over the archive, then a read-back.

The read-back re-reads the archive from disk, recomputes its digest and verifies
the signature with the public key the policy's keyring holds (not the private
key's own half), so a signature nobody downstream could verify is caught here.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from evidence_schemas import BuildRecord, SignatureRecord
from qualify_trust import Keyring, keyid_of, sign_artifact_digest, verify_artifact_digest

from ._hashing import file_sha256
from ._platform_signing import SigningOutcome


def sign_artifact(*, archive: Path, build: BuildRecord, signing: SigningOutcome, key: Ed25519PrivateKey,
                  keyring: Keyring, accepted_states: list[str]) -> SignatureRecord:
    digest = file_sha256(archive)
    signature = sign_artifact_digest(build.artifact.sha256, key)
    keyid = keyid_of(key.public_key())
    reread = file_sha256(archive)
    readback = reread == digest == build.artifact.sha256 and verify_artifact_digest(
        reread, signature, keyring, keyid
    )
    return SignatureRecord(
        method="ed25519-detached",
        artifact_sha256=build.artifact.sha256,
        keyid=keyid,
        signature=signature,
        readback_verified=readback,
        platform_signing_tool=signing.tool,
        platform_signing_state=signing.state,
        passed=readback and signing.state in accepted_states,
    )
