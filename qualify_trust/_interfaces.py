"""The two roles the trust layer plays for the stages, one small interface each.

A stage never asks which trust mode is in force: it signs with a
:class:`StatementSigner` and verifies with a :class:`StatementVerifier` that the
policy chose (local Ed25519 keyring, or Sigstore with a pinned trusted root).
Identity always comes out of the verifier, from the signature.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

from desktop_qualify.evidence_schemas import local_builder_id

from ._keyring import Role


@dataclass(frozen=True)
class SignerIdentity:
    """Who signed, as the signature (not the payload) proves it."""

    kind: Literal["ed25519", "sigstore"]
    # The keyring's key name, or the certificate's build signer URI.
    name: str
    # SHA-256 of the raw public key (ed25519) or of the leaf certificate DER (sigstore).
    keyid: str
    # The certificate's GitHub claims (sigstore only); see qualify_trust's sigstore module.
    claims: object | None = None

    @property
    def builder_id(self) -> str:
        """The SLSA builder this signer is: its signer workflow's URI (GitHub mode), or its key by key id (local)."""
        return self.name if self.kind == "sigstore" else local_builder_id(self.keyid)


@dataclass(frozen=True)
class VerifiedStatement:
    """A statement whose signature verified: the signed payload bytes and the signer's identity."""

    payload: bytes
    signer: SignerIdentity
    # SHA-256 of the evidence file's bytes as received (envelope or bundle); a transport may re-serialise them.
    envelope_sha256: str

    @property
    def payload_sha256(self) -> str:
        """SHA-256 of the signed statement bytes: what the aggregate binds, however the bundle travelled."""
        return hashlib.sha256(self.payload).hexdigest()


@dataclass(frozen=True)
class ArtifactSignature:
    """A signature over an artifact's digest: its method, the signer's key id, and the signature itself."""

    method: Literal["ed25519-detached", "sigstore-bundle"]
    keyid: str
    signature: str


class StatementSigner(ABC):
    """Signs statements and artifact digests for one role."""

    #: evidence files this signer writes end with this suffix
    file_suffix: str

    @abstractmethod
    def sign_statement(self, payload: bytes) -> bytes:
        """The evidence file's bytes for ``payload`` (exact bytes, RFC 8785 JSON)."""

    @abstractmethod
    def sign_artifact_digest(self, name: str, sha256_hex: str) -> ArtifactSignature:
        """A signature over the artifact ``name`` with digest ``sha256_hex``."""


class StatementVerifier(ABC):
    """Verifies evidence files and artifact signatures under a policy's trust root."""

    file_suffix: str

    @abstractmethod
    def verify_statement(self, data: bytes, *, role: Role, what: str) -> VerifiedStatement:
        """Raise QualificationError unless ``data`` is validly signed by an identity trusted for ``role``."""

    @abstractmethod
    def check_speaks_for(self, signer: SignerIdentity, platform: str) -> None:
        """Raise QualificationError unless ``signer`` (from ``verify_statement``) may sign for ``platform``.

        GitHub mode: each platform has a signer workflow of its own (policy
        ``[producer.signers]``), so a job cannot speak for another platform.
        """

    @abstractmethod
    def verify_artifact_signature(self, sha256_hex: str, signature: ArtifactSignature) -> SignerIdentity | None:
        """Who signed ``sha256_hex`` (read from the signature), or None when it does not verify under this root."""
