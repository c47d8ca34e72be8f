"""A throwaway Sigstore instance, so offline tests can verify bundles they issued.

`TestSigstoreInstance` creates at run time (no committed private keys) a
Fulcio stand-in (root + intermediate CA), a CT log key, a Rekor v1 log key and
a `trusted_root.json` naming them. It issues Sigstore bundle v0.3 documents
that sigstore-python 4.5.1's public `Verifier(trusted_root=...)` accepts:

- DSSE content with a `dsse`/0.0.1 tlog entry (`issue_dsse_bundle`), checked by
  `Verifier.verify_dsse`;
- a message signature with a `hashedrekord`/0.0.1 entry
  (`issue_message_bundle`), checked by `Verifier.verify_artifact`.

Time: the only verified time source is the Rekor v1 integrated time, made
trustworthy by the entry's signed entry timestamp; it must fall inside the
leaf certificate's validity window, and the CA chain must be valid then.

Usage::

    instance = TestSigstoreInstance(tmp_path)
    ident = GitHubIdentity(sha=...)
    raw = instance.issue_dsse_bundle(statement, extensions=ident.extensions, san_uri=ident.san_uri)
    Verifier(trusted_root=instance.trusted_root()).verify_dsse(Bundle.from_json(raw), policy)
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from sigstore.models import ClientTrustConfig, TrustedRoot

from .sigstore_instance_bundle import (
    bundle_json,
    dsse_entry_body,
    dsse_envelope,
    dsse_pae,
    hashedrekord_entry_body,
)
from .sigstore_instance_github import GITHUB_ISSUER, GitHubIdentity
from .sigstore_instance_log import TestRekor
from .sigstore_instance_root import TRUSTED_ROOT_MEDIA_TYPE, client_trust_config_json, trusted_root_json
from .sigstore_instance_x509 import TestCTLog, TestFulcio

__all__ = [
    "GITHUB_ISSUER",
    "IN_TOTO_PAYLOAD_TYPE",
    "TRUSTED_ROOT_MEDIA_TYPE",
    "GitHubIdentity",
    "TestCTLog",
    "TestFulcio",
    "TestRekor",
    "TestSigstoreInstance",
]

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
_FULCIO_LIFETIME = timedelta(minutes=10)  # Fulcio's leaf lifetime
_LOG_DELAY = timedelta(seconds=2)  # signing -> Rekor integration


def _now() -> datetime:
    # Whole seconds: certificate times and integratedTime have no fraction, and
    # the SCT timestamp must survive the millisecond round trip exactly.
    return datetime.now(UTC).replace(microsecond=0)


def _aware(moment: datetime) -> datetime:
    # A naive datetime would be read as local time by .timestamp() but as UTC
    # by the certificate builder: refuse the ambiguity.
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; pass an aware (UTC) datetime")
    return moment.replace(microsecond=0)


class TestSigstoreInstance:
    """Fulcio, CT log and Rekor stand-ins plus the trusted root naming them."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(
        self,
        directory: Path,
        *,
        name: str = "sigstore-test",
        valid_from: datetime | None = None,
        valid_for: timedelta = timedelta(days=30),
    ) -> None:
        """Create keys and CAs valid from `valid_from` (default: a day ago) for
        `valid_for`; write `directory/trusted_root.json` and, for the sigstore
        CLI's `--trust-config`, `directory/client_trust_config.json`."""
        start = _aware(valid_from) if valid_from is not None else _now() - timedelta(days=1)
        self.fulcio = TestFulcio(name=name, valid_from=start, valid_until=start + valid_for)
        self.ct_log = TestCTLog(valid_from=start)
        self.rekor = TestRekor(hostname=f"rekor.{name}.invalid", valid_from=start)
        directory.mkdir(parents=True, exist_ok=True)
        self.trusted_root_path = directory / "trusted_root.json"
        self.trusted_root_path.write_bytes(self.trusted_root_json())
        self.client_trust_config_path = directory / "client_trust_config.json"
        self.client_trust_config_path.write_bytes(
            client_trust_config_json(
                self.trusted_root_path.read_bytes(),
                fulcio_url=self.fulcio.url,
                rekor_url=self.rekor.base_url,
                valid_from=start,
            )
        )

    def trusted_root_json(
        self,
        *,
        fulcios: Sequence[TestFulcio] | None = None,
        ct_logs: Sequence[TestCTLog] | None = None,
        rekors: Sequence[TestRekor] | None = None,
    ) -> bytes:
        """The TrustedRoot document; each component list defaults to this instance's own."""
        return trusted_root_json(
            fulcios=[self.fulcio] if fulcios is None else fulcios,
            ct_logs=[self.ct_log] if ct_logs is None else ct_logs,
            rekors=[self.rekor] if rekors is None else rekors,
        )

    @property
    def trusted_root_sha256(self) -> str:
        """Hex digest of the written trusted root, for a policy's pin."""
        return hashlib.sha256(self.trusted_root_path.read_bytes()).hexdigest()

    def trusted_root(self) -> TrustedRoot:
        """The written trusted root, loaded through sigstore's public API."""
        return TrustedRoot.from_file(str(self.trusted_root_path))

    def client_trust_config(self) -> ClientTrustConfig:
        """The written client trust config, loaded through sigstore's public API."""
        return ClientTrustConfig.from_json(self.client_trust_config_path.read_text(encoding="utf-8"))

    def _leaf(
        self, san_uri: str, extensions: Mapping[str, str], issued_at: datetime | None, lifetime: timedelta
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey, datetime]:
        not_before = _aware(issued_at) if issued_at is not None else _now() - timedelta(minutes=1)
        cert, key = self.fulcio.issue(
            san_uri=san_uri, extensions=extensions, not_before=not_before, lifetime=lifetime, ct_log=self.ct_log
        )
        return cert, key, not_before

    def issue_dsse_bundle(
        self,
        payload: bytes,
        payload_type: str = IN_TOTO_PAYLOAD_TYPE,
        *,
        extensions: Mapping[str, str],
        san_uri: str,
        issued_at: datetime | None = None,
        integrated_at: datetime | None = None,
        cert_lifetime: timedelta = _FULCIO_LIFETIME,
    ) -> bytes:
        """Sign `payload` in a DSSE envelope; return the v0.3 bundle JSON.

        `extensions` maps dotted Fulcio claim OIDs (1.3.6.1.4.1.57264.1.N) to
        values. `issued_at` is the leaf's notBefore (default: a minute ago);
        `integrated_at` the Rekor integration time (default: two seconds
        later). Put either outside the validity windows to test expiry.
        """
        cert, key, not_before = self._leaf(san_uri, extensions, issued_at, cert_lifetime)
        signature = key.sign(dsse_pae(payload_type, payload), ec.ECDSA(hashes.SHA256()))
        envelope = dsse_envelope(payload_type, payload, signature)
        body = dsse_entry_body(envelope, payload, signature, cert)
        entry = self.rekor.append(body, kind="dsse", integrated_time=self._integrated(not_before, integrated_at))
        return bundle_json(cert, entry, {"dsseEnvelope": envelope})

    def issue_message_bundle(
        self,
        artifact: bytes,
        *,
        extensions: Mapping[str, str],
        san_uri: str,
        issued_at: datetime | None = None,
        integrated_at: datetime | None = None,
        cert_lifetime: timedelta = _FULCIO_LIFETIME,
    ) -> bytes:
        """Sign `artifact`'s SHA-256 (hashedrekord); return the v0.3 bundle JSON."""
        cert, key, not_before = self._leaf(san_uri, extensions, issued_at, cert_lifetime)
        signature = key.sign(artifact, ec.ECDSA(hashes.SHA256()))
        digest = hashlib.sha256(artifact).digest()
        body = hashedrekord_entry_body(digest, signature, cert)
        entry = self.rekor.append(
            body, kind="hashedrekord", integrated_time=self._integrated(not_before, integrated_at)
        )
        content = {
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": _b64(digest)},
                "signature": _b64(signature),
            }
        }
        return bundle_json(cert, entry, content)

    @staticmethod
    def _integrated(not_before: datetime, integrated_at: datetime | None) -> int:
        return int((_aware(integrated_at) if integrated_at is not None else not_before + _LOG_DELAY).timestamp())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
