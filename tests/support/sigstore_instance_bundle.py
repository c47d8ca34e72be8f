"""Rekor v1 entry bodies and Sigstore bundle v0.3 documents.

sigstore-python 4.5.1 matches a Rekor v1 entry against the bundle like this
(`sigstore.verify.verifier`): for DSSE, a `dsse`/0.0.1 body whose payloadHash
is SHA-256 of the payload (hex) and whose signatures equal
[{signature: base64(sig), verifier: base64(PEM certificate)}]; the
envelopeHash is not checkable by clients and is informational. For a message
signature, a `hashedrekord`/0.0.1 body equal to the one it rebuilds from the
certificate, the signature and the input digest. Bodies are RFC 8785
canonical, as Rekor stores them; the Merkle leaf is over these exact bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import serialization

__all__ = [
    "BUNDLE_MEDIA_TYPE",
    "bundle_json",
    "dsse_entry_body",
    "dsse_envelope",
    "dsse_pae",
    "hashedrekord_entry_body",
]

BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _pem_b64(cert: x509.Certificate) -> str:
    return _b64(cert.public_bytes(serialization.Encoding.PEM))


def dsse_pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: the bytes the signature covers."""
    encoded_type = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(encoded_type), encoded_type, len(payload), payload)


def dsse_envelope(payload_type: str, payload: bytes, signature: bytes) -> dict[str, Any]:
    """The DSSE envelope in protobuf JSON (`dev.sigstore.bundle.v1` uses the same field names)."""
    return {"payload": _b64(payload), "payloadType": payload_type, "signatures": [{"sig": _b64(signature)}]}


def dsse_entry_body(envelope: Mapping[str, Any], payload: bytes, signature: bytes, cert: x509.Certificate) -> bytes:
    return rfc8785.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {
                    "algorithm": "sha256",
                    "value": hashlib.sha256(rfc8785.dumps(dict(envelope))).hexdigest(),
                },
                "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()},
                "signatures": [{"signature": _b64(signature), "verifier": _pem_b64(cert)}],
            },
        }
    )


def hashedrekord_entry_body(digest: bytes, signature: bytes, cert: x509.Certificate) -> bytes:
    return rfc8785.dumps(
        {
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
                "signature": {"content": _b64(signature), "publicKey": {"content": _pem_b64(cert)}},
            },
        }
    )


def bundle_json(cert: x509.Certificate, tlog_entry: Mapping[str, Any], content: Mapping[str, Any]) -> bytes:
    """A v0.3 bundle: leaf certificate only, one tlog entry, and `content`
    (`{"dsseEnvelope": ...}` or `{"messageSignature": ...}`)."""
    document = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [tlog_entry],
        },
        **content,
    }
    return json.dumps(document, separators=(",", ":")).encode("utf-8")
