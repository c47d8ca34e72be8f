"""Fulcio and CT-log stand-ins for the test Sigstore instance.

`TestFulcio` holds a root and an intermediate CA (created at run time, never
committed) and issues Fulcio-shaped leaf certificates: empty subject, critical
URI SAN, KeyUsage digitalSignature, EKU codeSigning, the 1.3.6.1.4.1.57264.1.*
claims and exactly one embedded precertificate SCT from a `TestCTLog`.

The SCT follows RFC 6962 section 3.2: the log signs the precertificate's
TBSCertificate with the poison extension removed, and the final certificate
carries the SCT list in the poison's place. That TBS is the TBS of the same
certificate built without either extension; sigstore-python re-derives it from
the final certificate with `Certificate.tbs_precertificate_bytes`, and
`TestFulcio.issue` checks that both agree before it returns.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "FULCIO_OID_PREFIX",
    "TestCTLog",
    "TestFulcio",
    "der_utf8_string",
    "spki_der",
    "spki_sha256",
]

FULCIO_OID_PREFIX = "1.3.6.1.4.1.57264.1."
# Fulcio's deprecated v1 claims (.1 to .6) hold the raw string bytes; every
# later claim is a DER UTF8String (Fulcio docs/oid-info.md).
_LAST_RAW_FULCIO_ARC = 6
_SCT_LIST_OID = x509.ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
# RFC 5246 section 7.4.1.4.1 codes: sha256(4), ecdsa(3).
_TLS_HASH_SHA256 = 4
_TLS_SIG_ECDSA = 3
_PRECERT_ENTRY = 1


def _der_tlv(tag: int, content: bytes) -> bytes:
    size = len(content)
    if size < 0x80:
        return bytes([tag, size]) + content
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + content


def der_utf8_string(value: str) -> bytes:
    """DER UTF8String, the encoding of Fulcio's v2 claims (.8 onwards)."""
    return _der_tlv(0x0C, value.encode("utf-8"))


def spki_der(key: ec.EllipticCurvePublicKey) -> bytes:
    """DER SubjectPublicKeyInfo, the input of every RFC 6962 key id."""
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def spki_sha256(key: ec.EllipticCurvePublicKey) -> bytes:
    """RFC 6962 log id / issuer key hash: SHA-256 of the DER SubjectPublicKeyInfo."""
    return hashlib.sha256(spki_der(key)).digest()


def _fulcio_extension(oid: str, value: str) -> x509.UnrecognizedExtension:
    if not oid.startswith(FULCIO_OID_PREFIX) or not oid[len(FULCIO_OID_PREFIX) :].isdigit():
        raise ValueError(f"{oid!r} is not a Fulcio claim OID ({FULCIO_OID_PREFIX}N)")
    arc = int(oid[len(FULCIO_OID_PREFIX) :])
    raw = value.encode("utf-8") if arc <= _LAST_RAW_FULCIO_ARC else der_utf8_string(value)
    return x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), raw)


class TestCTLog:
    """A certificate-transparency log key that signs precertificate SCTs."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, *, valid_from: datetime) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.valid_from = valid_from

    @property
    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._key.public_key()

    @property
    def log_id(self) -> bytes:
        return spki_sha256(self.public_key)

    def sct_list_extension(
        self, tbs: bytes, issuer: x509.Certificate, timestamp: datetime
    ) -> x509.UnrecognizedExtension:
        """The embedded-SCT extension for the precertificate TBS `tbs`, as a CT log returns it."""
        issuer_key = issuer.public_key()
        if not isinstance(issuer_key, ec.EllipticCurvePublicKey):
            raise TypeError("the test CA uses EC keys only")
        millis = int(timestamp.timestamp()) * 1000
        # RFC 6962 section 3.2 digitally-signed struct: version v1(0),
        # signature_type certificate_timestamp(0), timestamp, entry_type
        # precert_entry(1), issuer_key_hash, TBSCertificate<1..2^24-1>, no extensions.
        signed = (
            struct.pack("!BBQH", 0, 0, millis, _PRECERT_ENTRY)
            + spki_sha256(issuer_key)
            + len(tbs).to_bytes(3, "big")
            + tbs
            + struct.pack("!H", 0)
        )
        signature = self._key.sign(signed, ec.ECDSA(hashes.SHA256()))
        sct = (
            struct.pack("!B", 0)
            + self.log_id
            + struct.pack("!QH", millis, 0)
            + struct.pack("!BBH", _TLS_HASH_SHA256, _TLS_SIG_ECDSA, len(signature))
            + signature
        )
        sct_list = struct.pack("!HH", len(sct) + 2, len(sct)) + sct
        # extnValue holds the DER OCTET STRING that wraps the TLS-encoded list
        # (RFC 6962 section 3.3).
        return x509.UnrecognizedExtension(_SCT_LIST_OID, _der_tlv(0x04, sct_list))


def _ca_certificate(
    *,
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    path_length: int,
    valid_from: datetime,
    valid_until: datetime,
) -> x509.Certificate:
    # Extensions as the webpki CA profile that sigstore-python's chain builder
    # applies requires them: critical BasicConstraints and KeyUsage, SKI, AKI.
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=path_length), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
        .sign(issuer_key, hashes.SHA384())
    )


class TestFulcio:
    """A two-level test CA standing in for Fulcio."""

    __test__ = False  # a helper, not a pytest test class

    def __init__(self, *, name: str, valid_from: datetime, valid_until: datetime) -> None:
        self.url = f"https://fulcio.{name}.invalid"
        self.valid_from = valid_from
        self.valid_until = valid_until
        root_key = ec.generate_private_key(ec.SECP384R1())
        self._key = ec.generate_private_key(ec.SECP384R1())
        org = x509.NameAttribute(NameOID.ORGANIZATION_NAME, name)
        root_name = x509.Name([org, x509.NameAttribute(NameOID.COMMON_NAME, f"{name} root")])
        self.root = _ca_certificate(
            subject=root_name,
            key=root_key,
            issuer=root_name,
            issuer_key=root_key,
            path_length=1,
            valid_from=valid_from,
            valid_until=valid_until,
        )
        self.intermediate = _ca_certificate(
            subject=x509.Name([org, x509.NameAttribute(NameOID.COMMON_NAME, f"{name} intermediate")]),
            key=self._key,
            issuer=root_name,
            issuer_key=root_key,
            path_length=0,
            valid_from=valid_from,
            valid_until=valid_until,
        )

    @property
    def chain(self) -> list[x509.Certificate]:
        """Issuer first, root last: the order the trusted root's certChain uses."""
        return [self.intermediate, self.root]

    def issue(
        self,
        *,
        san_uri: str,
        extensions: Mapping[str, str],
        not_before: datetime,
        lifetime: timedelta,
        ct_log: TestCTLog,
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A leaf certificate for a fresh P-256 key, with one embedded SCT."""
        leaf_key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.intermediate.subject)
            .public_key(leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_before + lifetime)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(leaf_key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            # An empty subject makes the SAN critical (RFC 5280 section 4.2.1.6).
            .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(san_uri)]), critical=True)
        )
        for oid, value in extensions.items():
            builder = builder.add_extension(_fulcio_extension(oid, value), critical=False)
        precert_tbs = builder.sign(self._key, hashes.SHA384()).tbs_certificate_bytes
        sct = ct_log.sct_list_extension(precert_tbs, self.intermediate, not_before)
        leaf = builder.add_extension(sct, critical=False).sign(self._key, hashes.SHA384())
        if leaf.tbs_precertificate_bytes != precert_tbs:
            # The SCT would sign bytes the verifier never reconstructs.
            raise RuntimeError("final certificate does not match the precertificate the SCT covers")
        return leaf, leaf_key
