"""Certificates shaped like Fulcio's GitHub Actions leaves, signed by a throwaway test CA.

They test the identity checks, not the chain: the chain is sigstore-python's
job and is exercised with real bundles.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ISSUER = "https://token.actions.githubusercontent.com"
REPO = "desktop-qualify/desktop-qualify"
WORKFLOW = ".github/workflows/qualify.yml"
SHA = "0123456789abcdef0123456789abcdef01234567"
RUN_ID = "9876543210"

_KEY = ec.generate_private_key(ec.SECP256R1())


def der_utf8(text: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) < 0x80:
        return bytes([0x0C, len(raw)]) + raw
    length = len(raw).to_bytes((len(raw).bit_length() + 7) // 8, "big")
    return bytes([0x0C, 0x80 | len(length)]) + length + raw


@dataclass(frozen=True)
class Claims:
    """The values Fulcio would write, defaulting to the release policy's producer run."""

    issuer: str = ISSUER
    repository: str = REPO
    workflow: str = WORKFLOW
    ref: str = "refs/heads/main"
    sha: str = SHA
    trigger: str = "push"
    runner: str = "github-hosted"
    run_id: str = RUN_ID
    attempt: int = 1
    # The reusable workflow the job ran (Fulcio's .9/.10/SAN); None: a top-level job, .9 = .18.
    signer: str | None = None
    # Explicit overrides for single URIs, to build inconsistent certificates.
    overrides: dict[str, str] = field(default_factory=dict)
    san_uris: tuple[str, ...] | None = None
    raw_extensions: dict[str, bytes] = field(default_factory=dict)
    omit: frozenset[str] = frozenset()

    def with_(self, **changes: object) -> Claims:
        return replace(self, **changes)  # type: ignore[arg-type]

    def values(self) -> dict[str, str]:
        workflow_uri = f"https://github.com/{self.repository}/{self.workflow}@{self.ref}"
        signer_uri = f"https://github.com/{self.repository}/{self.signer or self.workflow}@{self.ref}"
        values = {
            "8": self.issuer,
            "9": signer_uri,
            "10": self.sha,
            "11": self.runner,
            "12": f"https://github.com/{self.repository}",
            "13": self.sha,
            "14": self.ref,
            "18": workflow_uri,
            "19": self.sha,
            "20": self.trigger,
            "21": f"https://github.com/{self.repository}/actions/runs/{self.run_id}/attempts/{self.attempt}",
        }
        values.update(self.overrides)
        return values


def make_certificate(claims: Claims | None = None) -> x509.Certificate:
    claims = claims or Claims()
    values = claims.values()
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "qualify test CA")])
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(name)
        .public_key(_KEY.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(minutes=10))
    )
    sans = claims.san_uris if claims.san_uris is not None else (values["9"],)
    if sans:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri) for uri in sans]), critical=True
        )
    for arc, value in values.items():
        if arc in claims.omit:
            continue
        der = claims.raw_extensions.get(arc, der_utf8(value))
        oid = x509.ObjectIdentifier(f"1.3.6.1.4.1.57264.1.{arc}")
        builder = builder.add_extension(x509.UnrecognizedExtension(oid, der), critical=False)
    return builder.sign(_KEY, hashes.SHA256())
