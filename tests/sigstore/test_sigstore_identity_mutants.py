"""Reading a Fulcio certificate's workflow identity: each refusal's code and the words that name the field, and the
strict DER UTF8String decoding at its exact bounds.

``qualify_trust._sigstore_identity`` reads every identity value from the leaf certificate's Fulcio extensions. A
missing extension is refused naming the field and its OID (the issuer as an untrusted signer, every other field as
a workflow identity mismatch); a present optional extension is decoded as strictly as a required one; a value that
is not one minimal DER UTF8String of 1 to 1024 characters (at most 4096 bytes) is refused naming the field; the
subject alternative name must be exactly one URI and nothing else; duplicated extensions are refused with a coded
error, not a crash. Written for the mutants of ``qualify_trust._sigstore_identity`` that survived the suite
(docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtensionOID
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust._sigstore_identity import (
    _decode_utf8_string,
    _extension,
    _optional_extension,
    _san_uri,
    identity_from_certificate,
)
from fulcio_certs import REPO, RUN_ID, SHA, Claims, der_utf8, make_certificate

WIM = Code.WORKFLOW_IDENTITY_MISMATCH
ARC = "1.3.6.1.4.1.57264.1."

# Every required extension: its arc, the name a refusal gives it, the code of the refusal.
REQUIRED: list[tuple[str, str, Code]] = [
    ("8", "OIDC issuer (v2)", Code.SIGNER_UNTRUSTED),
    ("21", "run invocation URI", WIM),
    ("9", "build signer URI", WIM),
    ("10", "build signer digest", WIM),
    ("11", "runner environment", WIM),
    ("12", "source repository URI", WIM),
    ("13", "source repository digest", WIM),
    ("14", "source repository ref", WIM),
    ("18", "build config URI", WIM),
    ("20", "build trigger", WIM),
]

# The optional extensions: absent is None, present is decoded as strictly as a required one.
OPTIONAL: list[tuple[str, str]] = [
    ("15", "source repository identifier"),
    ("17", "source repository owner identifier"),
    ("19", "build config digest"),
]

NOT_UTF8 = b"\x13\x04push"  # a PrintableString, not a UTF8String


def _refusal(claims: Claims) -> QualificationError:
    with pytest.raises(QualificationError) as info:
        identity_from_certificate(make_certificate(claims))
    return info.value


def _decode_refusal(der: bytes, name: str = "build trigger") -> QualificationError:
    with pytest.raises(QualificationError) as info:
        _decode_utf8_string(der, name)
    return info.value


@pytest.mark.parametrize(("arc", "name", "code"), REQUIRED, ids=[name for _, name, _ in REQUIRED])
def test_a_missing_required_extension_is_refused_naming_the_field_and_its_oid(arc: str, name: str, code: Code) -> None:
    error = _refusal(Claims(omit=frozenset({arc})))
    assert error.code is code
    assert error.message == f"certificate carries no {name} ({ARC}{arc})"


@pytest.mark.parametrize(("arc", "name", "code"), REQUIRED, ids=[name for _, name, _ in REQUIRED])
def test_a_required_extension_that_is_not_a_utf8_string_is_refused_naming_the_field(
        arc: str, name: str, code: Code) -> None:
    error = _refusal(Claims(raw_extensions={arc: NOT_UTF8}))
    # A malformed value is a mismatch whatever the field: only a missing issuer is an untrusted signer.
    assert error.code is WIM
    assert error.message == f"certificate extension {name} is not a DER UTF8String"


@pytest.mark.parametrize(("arc", "name"), OPTIONAL, ids=[name for _, name in OPTIONAL])
def test_a_present_optional_extension_that_is_not_a_utf8_string_is_refused_naming_the_field(
        arc: str, name: str) -> None:
    error = _refusal(Claims(overrides={arc: "123"}, raw_extensions={arc: NOT_UTF8}))
    assert error.code is WIM
    assert error.message == f"certificate extension {name} is not a DER UTF8String"


def test_present_optional_extensions_are_read_and_absent_ones_are_none() -> None:
    identity = identity_from_certificate(make_certificate(Claims(overrides={"15": "123", "17": "456"})))
    assert (identity.source_repository_identifier, identity.source_repository_owner_identifier) == ("123", "456")
    assert identity.build_config_digest == SHA
    bare = identity_from_certificate(make_certificate(Claims(omit=frozenset({"19"}))))
    assert (bare.source_repository_identifier, bare.source_repository_owner_identifier) == (None, None)
    assert bare.build_config_digest is None


def test_the_identity_keeps_the_run_invocation_uri_it_was_read_from() -> None:
    identity = identity_from_certificate(make_certificate(Claims()))
    assert identity.run_invocation_uri == f"https://github.com/{REPO}/actions/runs/{RUN_ID}/attempts/1"


@pytest.mark.parametrize("read", [_extension, _optional_extension], ids=["required", "optional"])
def test_a_present_extension_of_a_type_cryptography_recognises_is_refused_with_the_callers_code(
        read: Callable[[x509.Extensions, x509.ObjectIdentifier, str, Code], object]) -> None:
    extensions = make_certificate(Claims()).extensions
    with pytest.raises(QualificationError) as info:
        read(extensions, ExtensionOID.SUBJECT_ALTERNATIVE_NAME, "subject alternative name", WIM)
    assert info.value.code is WIM
    assert info.value.message == "certificate extension subject alternative name has an unexpected type"


def test_a_certificate_without_a_subject_alternative_name_is_refused_as_such() -> None:
    error = _refusal(Claims(san_uris=()))
    assert error.code is WIM
    assert error.message == "certificate has no subject alternative name"


def test_a_certificate_with_two_san_uris_is_refused_as_not_exactly_one_uri() -> None:
    uri = f"https://github.com/{REPO}/.github/workflows/qualify.yml@refs/heads/main"
    error = _refusal(Claims(san_uris=(uri, f"https://github.com/{REPO}-evil/x")))
    assert error.code is WIM
    assert error.message == "certificate's subject alternative name is not exactly one URI"


@pytest.mark.parametrize("other", [x509.DNSName("github.com"), x509.RFC822Name("ci@example.com")],
                         ids=["dns name", "email"])
def test_one_san_uri_beside_another_kind_of_name_is_refused(other: x509.GeneralName) -> None:
    uri = f"https://github.com/{REPO}/.github/workflows/qualify.yml@refs/heads/main"
    san = x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri), other])
    extensions = x509.Extensions([x509.Extension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME, True, san)])
    with pytest.raises(QualificationError) as info:
        _san_uri(extensions)
    assert info.value.code is WIM
    assert info.value.message == "certificate's subject alternative name is not exactly one URI"


def test_a_san_of_one_uri_alone_is_read() -> None:
    uri = f"https://github.com/{REPO}/.github/workflows/qualify.yml@refs/heads/main"
    san = x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)])
    assert _san_uri(x509.Extensions([x509.Extension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME, True, san)])) == uri


def test_a_certificate_with_a_duplicated_extension_is_refused_with_a_code_not_a_crash() -> None:
    # Fulcio's trigger extension (.20) written twice: the spare arc .99 is renamed to .20 in the DER.
    der = make_certificate(Claims(overrides={"99": "push"})).public_bytes(Encoding.DER)
    spare, trigger = bytes.fromhex("83bf300163"), bytes.fromhex("83bf300114")
    assert der.count(spare) == 1
    certificate = x509.load_der_x509_certificate(der.replace(spare, trigger))
    with pytest.raises(QualificationError) as info:
        identity_from_certificate(certificate)
    error = info.value
    assert error.code is WIM
    assert error.message.startswith("certificate extensions are malformed (")
    assert f"{ARC}20" in error.message


# --- the DER UTF8String decoder, at its exact bounds ---


def test_a_refused_value_names_its_field_in_the_message() -> None:
    error = _decode_refusal(b"\x13\x01x", "source repository ref")
    assert error.code is WIM
    assert error.message == "certificate extension source repository ref is not a DER UTF8String"


@pytest.mark.parametrize("der", [b"\x0c\x80", b"\x0c\x81", b"\x0c\x82", b"\x0c\x82\x01", b"\x0c\x80\x01",
                                 b"\x0c\x81\x05"],
                         ids=["zero length octets", "one length octet missing", "two length octets missing",
                              "second length octet missing", "indefinite length with a byte",
                              "short value in long form"])
def test_a_truncated_or_indefinite_long_form_length_is_a_coded_refusal(der: bytes) -> None:
    assert _decode_refusal(der).code is WIM


def test_a_long_form_length_with_a_leading_zero_octet_is_refused() -> None:
    assert _decode_refusal(b"\x0c\x82\x00\x80" + b"a" * 0x80).code is WIM
    assert _decode_refusal(b"\x0c\x82\x00\xff" + b"a" * 0xFF).code is WIM


def test_a_long_form_length_below_128_is_refused_as_not_minimal() -> None:
    assert _decode_refusal(b"\x0c\x81\x7f" + b"a" * 0x7F).code is WIM


def test_a_value_of_exactly_128_bytes_in_one_length_octet_is_read() -> None:
    assert _decode_utf8_string(b"\x0c\x81\x80" + b"a" * 0x80, "build trigger") == "a" * 0x80


def test_a_value_with_a_two_octet_length_is_read() -> None:
    assert _decode_utf8_string(der_utf8("a" * 300), "build trigger") == "a" * 300
    assert der_utf8("a" * 300)[:4] == b"\x0c\x82\x01\x2c"


def test_a_three_octet_length_is_refused() -> None:
    assert _decode_refusal(b"\x0c\x83\x00\x01\x00" + b"a" * 256).code is WIM


def test_an_empty_string_is_refused() -> None:
    assert _decode_refusal(b"\x0c\x00").code is WIM


def test_1024_characters_are_read_and_1025_refused() -> None:
    assert _decode_utf8_string(der_utf8("a" * 1024), "build trigger") == "a" * 1024
    assert _decode_refusal(der_utf8("a" * 1025)).code is WIM


def test_1024_four_byte_characters_fill_the_4096_byte_cap_and_are_read() -> None:
    text = "\U0001f600" * 1024
    der = der_utf8(text)
    assert der[:4] == b"\x0c\x82\x10\x00"
    assert _decode_utf8_string(der, "build trigger") == text


def test_a_value_past_4096_bytes_is_refused() -> None:
    assert _decode_refusal(der_utf8("\U0001f600" * 1024 + "a")).code is WIM


def test_non_ascii_utf8_is_decoded_as_utf8() -> None:
    assert _decode_utf8_string(der_utf8("réf/ü"), "source repository ref") == "réf/ü"
