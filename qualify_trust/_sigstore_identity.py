"""The GitHub workflow identity that a Fulcio certificate carries.

Identity comes from the signature, not from the payload (docs/design.md §3.1, §3.3):
every value here is read from the leaf certificate's Fulcio extensions
(https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md). The v2
extensions (.8 onwards) are DER UTF8Strings; they are decoded strictly, so a
value with trailing bytes or a non-minimal length is refused, not guessed at.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import ObjectIdentifier
from desktop_qualify.evidence_schemas import Code, QualificationError

from ._github_identity import GitHubIdentity, parse_run_invocation_uri

OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
OID_BUILD_SIGNER_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.9")
OID_BUILD_SIGNER_DIGEST = ObjectIdentifier("1.3.6.1.4.1.57264.1.10")
OID_RUNNER_ENVIRONMENT = ObjectIdentifier("1.3.6.1.4.1.57264.1.11")
OID_SOURCE_REPOSITORY_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
OID_SOURCE_REPOSITORY_DIGEST = ObjectIdentifier("1.3.6.1.4.1.57264.1.13")
OID_SOURCE_REPOSITORY_REF = ObjectIdentifier("1.3.6.1.4.1.57264.1.14")
OID_SOURCE_REPOSITORY_IDENTIFIER = ObjectIdentifier("1.3.6.1.4.1.57264.1.15")
OID_SOURCE_REPOSITORY_OWNER_IDENTIFIER = ObjectIdentifier("1.3.6.1.4.1.57264.1.17")
OID_BUILD_CONFIG_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.18")
OID_BUILD_CONFIG_DIGEST = ObjectIdentifier("1.3.6.1.4.1.57264.1.19")
OID_BUILD_TRIGGER = ObjectIdentifier("1.3.6.1.4.1.57264.1.20")
OID_RUN_INVOCATION_URI = ObjectIdentifier("1.3.6.1.4.1.57264.1.21")

_MAX_VALUE_CHARS = 1024
_UTF8_STRING_TAG = 0x0C


def _decode_utf8_string(der: bytes, name: str) -> str:
    """One DER UTF8String (X.690 section 8.23 with DER's minimal lengths), nothing after it."""
    bad = QualificationError(Code.WORKFLOW_IDENTITY_MISMATCH, f"certificate extension {name} is not a DER UTF8String")
    if len(der) < 2 or der[0] != _UTF8_STRING_TAG:
        raise bad
    length, offset = der[1], 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 2 or len(der) < 2 + count or der[2] == 0:
            raise bad
        length, offset = int.from_bytes(der[2 : 2 + count], "big"), 2 + count
        if length < 0x80:
            raise bad
    if offset + length != len(der) or length > _MAX_VALUE_CHARS * 4:
        raise bad
    try:
        text = der[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad from exc
    if not text or len(text) > _MAX_VALUE_CHARS:
        raise bad
    return text


def _optional_extension(extensions: x509.Extensions, oid: ObjectIdentifier, name: str, code: Code) -> str | None:
    try:
        extensions.get_extension_for_oid(oid)
    except x509.ExtensionNotFound:
        return None
    return _extension(extensions, oid, name, code)


def _extension(extensions: x509.Extensions, oid: ObjectIdentifier, name: str, code: Code) -> str:
    try:
        extension = extensions.get_extension_for_oid(oid)
    except x509.ExtensionNotFound as exc:
        raise QualificationError(code, f"certificate carries no {name} ({oid.dotted_string})") from exc
    value = extension.value
    if not isinstance(value, x509.UnrecognizedExtension):
        raise QualificationError(code, f"certificate extension {name} has an unexpected type")
    return _decode_utf8_string(value.value, name)


def _san_uri(extensions: x509.Extensions) -> str:
    try:
        san = extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound as exc:
        raise QualificationError(
            Code.WORKFLOW_IDENTITY_MISMATCH, "certificate has no subject alternative name"
        ) from exc
    uris = san.get_values_for_type(x509.UniformResourceIdentifier)
    # A GitHub workflow certificate names exactly one identity; several would be ambiguous.
    if len(uris) != 1 or len(list(san)) != 1:
        raise QualificationError(
            Code.WORKFLOW_IDENTITY_MISMATCH, "certificate's subject alternative name is not exactly one URI"
        )
    return uris[0]


def identity_from_certificate(certificate: x509.Certificate) -> GitHubIdentity:
    """Read the GitHub workflow identity from a Fulcio leaf certificate; anything missing is refused."""
    try:
        extensions = certificate.extensions
    except (ValueError, x509.DuplicateExtension) as exc:
        # cryptography refuses duplicate or malformed extensions when they are first read.
        raise QualificationError(
            Code.WORKFLOW_IDENTITY_MISMATCH, f"certificate extensions are malformed ({exc})"
        ) from exc
    # The issuer first: a certificate from another issuer is an untrusted signer, whatever else it says.
    issuer = _extension(extensions, OID_ISSUER_V2, "OIDC issuer (v2)", Code.SIGNER_UNTRUSTED)
    wim = Code.WORKFLOW_IDENTITY_MISMATCH
    run_uri = _extension(extensions, OID_RUN_INVOCATION_URI, "run invocation URI", wim)
    run_repository, run_id, attempt = parse_run_invocation_uri(run_uri)
    return GitHubIdentity(
        issuer=issuer,
        san_uri=_san_uri(extensions),
        build_signer_uri=_extension(extensions, OID_BUILD_SIGNER_URI, "build signer URI", wim),
        build_signer_digest=_extension(extensions, OID_BUILD_SIGNER_DIGEST, "build signer digest", wim),
        runner_environment=_extension(extensions, OID_RUNNER_ENVIRONMENT, "runner environment", wim),
        source_repository_uri=_extension(extensions, OID_SOURCE_REPOSITORY_URI, "source repository URI", wim),
        source_repository_digest=_extension(extensions, OID_SOURCE_REPOSITORY_DIGEST, "source repository digest", wim),
        source_repository_ref=_extension(extensions, OID_SOURCE_REPOSITORY_REF, "source repository ref", wim),
        build_config_uri=_extension(extensions, OID_BUILD_CONFIG_URI, "build config URI", wim),
        build_trigger=_extension(extensions, OID_BUILD_TRIGGER, "build trigger", wim),
        run_invocation_uri=run_uri,
        run_repository=run_repository,
        run_id=run_id,
        run_attempt=attempt,
        source_repository_identifier=_optional_extension(extensions, OID_SOURCE_REPOSITORY_IDENTIFIER,
                                                         "source repository identifier", wim),
        source_repository_owner_identifier=_optional_extension(extensions, OID_SOURCE_REPOSITORY_OWNER_IDENTIFIER,
                                                               "source repository owner identifier", wim),
        build_config_digest=_optional_extension(extensions, OID_BUILD_CONFIG_DIGEST, "build config digest", wim),
    )
