"""The protobuf-specs TrustedRoot document naming the test instance's CAs and keys.

Format: `application/vnd.dev.sigstore.trustedroot+json;version=0.1`
(sigstore/protobuf-specs `dev.sigstore.trustroot.v1.TrustedRoot`, proto3 JSON).
Components are passed in explicitly so that a test can pin a root that names
another instance's CT log or Rekor key and prove the verifier refuses it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import rfc8785
from cryptography.hazmat.primitives import serialization

from .sigstore_instance_log import TestRekor
from .sigstore_instance_x509 import TestCTLog, TestFulcio, spki_der

__all__ = ["CLIENT_TRUST_CONFIG_MEDIA_TYPE", "TRUSTED_ROOT_MEDIA_TYPE", "client_trust_config_json", "trusted_root_json"]

TRUSTED_ROOT_MEDIA_TYPE = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
CLIENT_TRUST_CONFIG_MEDIA_TYPE = "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json"
_SIGNING_CONFIG_MEDIA_TYPE = "application/vnd.dev.sigstore.signingconfig.v0.2+json"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _log_instance(base_url: str, key_der: bytes, log_id: bytes, valid_from: datetime) -> dict[str, object]:
    return {
        "baseUrl": base_url,
        "hashAlgorithm": "SHA2_256",
        "publicKey": {
            "rawBytes": _b64(key_der),
            "keyDetails": "PKIX_ECDSA_P256_SHA_256",
            "validFor": {"start": _rfc3339(valid_from)},
        },
        "logId": {"keyId": _b64(log_id)},
    }


def _authority(fulcio: TestFulcio) -> dict[str, object]:
    return {
        "subject": {"organization": "sigstore test instance", "commonName": "fulcio"},
        "uri": fulcio.url,
        "certChain": {
            "certificates": [{"rawBytes": _b64(c.public_bytes(serialization.Encoding.DER))} for c in fulcio.chain]
        },
        "validFor": {"start": _rfc3339(fulcio.valid_from), "end": _rfc3339(fulcio.valid_until)},
    }


def trusted_root_json(
    *, fulcios: Sequence[TestFulcio], ct_logs: Sequence[TestCTLog], rekors: Sequence[TestRekor]
) -> bytes:
    """Canonical (RFC 8785) TrustedRoot JSON naming exactly the given components."""
    document: dict[str, Any] = {
        "mediaType": TRUSTED_ROOT_MEDIA_TYPE,
        "tlogs": [_log_instance(r.base_url, spki_der(r.public_key), r.log_id, r.valid_from) for r in rekors],
        "certificateAuthorities": [_authority(f) for f in fulcios],
        "ctlogs": [
            _log_instance("https://ctfe.test.invalid", spki_der(c.public_key), c.log_id, c.valid_from) for c in ct_logs
        ],
        "timestampAuthorities": [],
    }
    return rfc8785.dumps(document)


def client_trust_config_json(trusted_root: bytes, *, fulcio_url: str, rekor_url: str, valid_from: datetime) -> bytes:
    """A ClientTrustConfig (what `sigstore verify --trust-config` reads) around `trusted_root`.

    The signing config is required by the format but only used to sign; its
    URLs are the instance's unresolvable `.invalid` names.
    """

    def service(url: str) -> dict[str, Any]:
        return {
            "url": url,
            "majorApiVersion": 1,
            "validFor": {"start": _rfc3339(valid_from)},
            "operator": "sigstore test instance",
        }

    document: dict[str, Any] = {
        "mediaType": CLIENT_TRUST_CONFIG_MEDIA_TYPE,
        "trustedRoot": json.loads(trusted_root),
        "signingConfig": {
            "mediaType": _SIGNING_CONFIG_MEDIA_TYPE,
            "caUrls": [service(fulcio_url)],
            "oidcUrls": [],
            "rekorTlogUrls": [service(rekor_url)],
            "rekorTlogConfig": {"selector": "ANY"},
            "tsaUrls": [],
            "tsaConfig": {"selector": "ANY"},
        },
    }
    return rfc8785.dumps(document)
