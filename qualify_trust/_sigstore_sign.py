"""Keyless signing of a statement with the job's GitHub Actions OIDC identity.

Signing needs the network (Fulcio, Rekor, the TUF-distributed signing
config); verification never does. Only GitHub's ambient credential is used:
another ambient identity (a cloud metadata server, say) would produce a
certificate that no release policy trusts, so it is refused before any
request is made.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from desktop_qualify.evidence_schemas import Code, QualificationError
from sigstore import dsse
from sigstore.errors import Error as SigstoreError
from sigstore.hashes import Hashed
from sigstore.models import Bundle, ClientTrustConfig
from sigstore.oidc import ExpiredIdentity, IdentityToken, detect_credential
from sigstore.sign import Signer, SigningContext
from sigstore_models.common.v1 import HashAlgorithm

from ._sigstore_expected import GITHUB_ISSUER

_SHA256_HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)
_HINT = "run inside GitHub Actions with 'permissions: id-token: write' on the job"


def _github_token() -> IdentityToken:
    # The request URL is only present when the job may mint an OIDC token.
    if os.environ.get("GITHUB_ACTIONS") != "true" or not os.environ.get("ACTIONS_ID_TOKEN_REQUEST_URL"):
        raise QualificationError(Code.ENVIRONMENT, "no GitHub Actions OIDC credential in this environment", hint=_HINT)
    try:
        raw = detect_credential()
        if raw is None:
            raise QualificationError(Code.ENVIRONMENT, "GitHub Actions returned no OIDC credential", hint=_HINT)
        token = IdentityToken(raw)
    except SigstoreError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"OIDC credential unusable: {str(exc)[:300]}", hint=_HINT) from exc
    if token.issuer != GITHUB_ISSUER:
        raise QualificationError(Code.ENVIRONMENT, f"OIDC credential from {token.issuer!r}, not GitHub Actions")
    return token


def _sign(sign: Callable[[Signer], Bundle]) -> bytes:
    token = _github_token()
    try:
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(token, cache=False) as signer:
            bundle = sign(signer)
    except (SigstoreError, ExpiredIdentity) as exc:
        raise QualificationError(
            Code.ENVIRONMENT,
            f"Sigstore signing failed: {str(exc).strip()[:300]}",
            hint="Fulcio, Rekor or the timestamp authority refused the request or was unreachable",
        ) from exc
    return bundle.to_json().encode("utf-8")


def sign_dsse_statement(payload: bytes) -> bytes:
    """A Sigstore bundle (v0.3 JSON) holding ``payload`` (an in-toto statement) in a DSSE envelope.

    The payload bytes are signed as given, never re-serialised.
    """
    try:
        statement = dsse.Statement(payload)
    except SigstoreError as exc:
        raise QualificationError(Code.SCHEMA_INVALID, f"payload is not an in-toto statement: {str(exc)[:300]}") from exc
    return _sign(lambda signer: signer.sign_dsse(statement))


def sign_artifact_bundle(sha256_hex: str) -> bytes:
    """A message-signature (hashedrekord) bundle over an artifact's SHA-256, for ``verify_artifact_bundle``."""
    if _SHA256_HEX.fullmatch(sha256_hex) is None:
        raise QualificationError(Code.USAGE, f"artifact digest {sha256_hex[:80]!r} is not 64 lowercase hex digits")
    hashed = Hashed(algorithm=HashAlgorithm.SHA2_256, digest=bytes.fromhex(sha256_hex))
    return _sign(lambda signer: signer.sign_artifact(hashed))
