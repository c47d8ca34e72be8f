"""Verifying Sigstore bundles: the exact refusal codes and messages, the subject list's bounds, the signer role.

Written for the mutants of ``qualify_trust._sigstore_verify`` that the other tests let through
(docs/mutation.md). Bundles are issued at run time by a throwaway Sigstore instance (``support.sigstore_instance``)
and verified offline under its trusted root: a refusal must keep its code and name the file, the field and the
bound a person needs to fix; the subject list is bounded at its exact edges; every subject is read, not only the
first; a statement of another predicate type never stands in for the one asked for; and the signer role (the
default ``platform``, or ``aggregate``) picks the policy's signer workflows.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import (
    IN_TOTO_PAYLOAD_TYPE,
    Code,
    QualificationError,
)
from desktop_qualify.evidence_schemas._limits import MAX_STATEMENT_BYTES
from desktop_qualify.qualify_trust import _sigstore_verify as sv
from desktop_qualify.qualify_trust._sigstore_expected import CertificateIdentity, ExpectedWorkflow
from desktop_qualify.qualify_trust._sigstore_root import PinnedTrustedRoot, load_trusted_root
from desktop_qualify.qualify_trust._sigstore_verify import verify_artifact_bundle, verify_dsse_bundle
from sigstore.errors import VerificationError
from sigstore.models import Bundle
from support.sigstore_instance import GITHUB_ISSUER, GitHubIdentity, TestSigstoreInstance

WHAT = "evidence/linux.sigstore.json"
REPO = "desktop-qualify/desktop-qualify"
SIGNERS = {
    "linux": ".github/workflows/linux.yml",
    "macos": ".github/workflows/macos.yml",
    "windows": ".github/workflows/windows.yml",
    "aggregate": ".github/workflows/aggregate.yml",
}
PREDICATE = "https://desktop-qualify.dev/platform/v1"
ARTIFACT = b"the release artifact\n"
ARTIFACT_SHA256 = hashlib.sha256(ARTIFACT).hexdigest()
LINUX = GitHubIdentity(signer_workflow=SIGNERS["linux"])
AGGREGATE = GitHubIdentity(signer_workflow=SIGNERS["aggregate"])


def _statement(*digests: str, predicate_type: str = PREDICATE) -> bytes:
    subjects = [{"name": f"file{i}", "digest": {"sha256": d}} for i, d in enumerate(digests)]
    return json.dumps({"_type": "https://in-toto.io/Statement/v1", "subject": subjects,
                       "predicateType": predicate_type, "predicate": {}}).encode()


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore-verify"))


@pytest.fixture(scope="module")
def root(instance: TestSigstoreInstance) -> PinnedTrustedRoot:
    return load_trusted_root(instance.trusted_root_path)


@pytest.fixture(scope="module")
def expected() -> ExpectedWorkflow:
    return ExpectedWorkflow(GITHUB_ISSUER, REPO, ".github/workflows/qualify.yml", "refs/heads/main",
                            frozenset({"push"}), "github-hosted", signers=SIGNERS)


def _dsse(instance: TestSigstoreInstance, who: GitHubIdentity, payload: bytes,
          payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> bytes:
    return instance.issue_dsse_bundle(payload, payload_type, extensions=who.extensions, san_uri=who.san_uri)


def _message(instance: TestSigstoreInstance, who: GitHubIdentity = LINUX) -> bytes:
    return instance.issue_message_bundle(ARTIFACT, extensions=who.extensions, san_uri=who.san_uri)


# -- _brief and _artifact_digest --------------------------------------------------------------------------------


def test_brief_keeps_the_first_line_of_the_error_only() -> None:
    assert sv._brief(ValueError("  the first line\nthe second line  ")) == "the first line"


def test_brief_names_the_error_type_when_the_error_says_nothing() -> None:
    assert sv._brief(ValueError("  \n ")) == "ValueError"
    assert sv._brief(KeyError()) == "KeyError"


def test_brief_cuts_a_long_line_at_exactly_300_characters() -> None:
    assert sv._brief(ValueError("x" * 299 + "yz")) == "x" * 299 + "y"


def test_a_bad_artifact_digest_is_refused_naming_its_first_80_characters() -> None:
    bad = "A" * 80 + "B" * 10
    with pytest.raises(QualificationError) as caught:
        sv._artifact_digest(bad)
    assert caught.value.code is Code.USAGE
    assert caught.value.message == f"artifact digest {'A' * 80!r} is not 64 lowercase hex digits"


# -- parsing the bundle -----------------------------------------------------------------------------------------


def test_a_bundle_that_is_not_a_json_object_is_refused_naming_the_file(root: PinnedTrustedRoot,
                                                                        expected: ExpectedWorkflow) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(b"[1, 2]", root, expected, WHAT)
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message == f"{WHAT}: a Sigstore bundle must be a JSON object"


def test_a_bundle_that_is_not_json_is_refused_naming_the_file(root: PinnedTrustedRoot,
                                                               expected: ExpectedWorkflow) -> None:
    for call in (lambda: verify_dsse_bundle(b"{not json", root, expected, WHAT),
                 lambda: verify_artifact_bundle(b"{not json", ARTIFACT, root, expected, what=WHAT)):
        with pytest.raises(QualificationError) as caught:
            call()
        assert caught.value.code is Code.JSON_MALFORMED
        assert caught.value.message.startswith(f"{WHAT}: not valid JSON")


def test_a_bundle_nested_deeper_than_16_levels_is_refused_as_too_deep(root: PinnedTrustedRoot,
                                                                      expected: ExpectedWorkflow) -> None:
    deep = b'{"a": ' + b"[" * 16 + b"]" * 16 + b"}"
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(deep, root, expected, WHAT)
    assert caught.value.code is Code.JSON_TOO_DEEP
    assert caught.value.message == f"{WHAT}: nesting depth 17 exceeds 16"


def test_a_json_object_that_is_no_bundle_is_refused_with_sigstores_own_reason(root: PinnedTrustedRoot,
                                                                              expected: ExpectedWorkflow) -> None:
    data = b'{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}'
    try:
        Bundle.from_json(data)
    except Exception as exc:  # whatever sigstore raises is what the message must quote
        reason = sv._brief(exc)
    else:  # pragma: no cover - sigstore accepting an empty bundle would break this test's premise
        pytest.fail("sigstore accepted a bundle with no content")
    assert reason != "None"
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(data, root, expected, WHAT)
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message == f"{WHAT}: not a usable Sigstore bundle ({reason})"


# -- policies and refusals --------------------------------------------------------------------------------------


def test_a_verification_pinned_to_no_signer_is_a_usage_error(instance: TestSigstoreInstance,
                                                            root: PinnedTrustedRoot) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(_message(instance), ARTIFACT, root, None, what=WHAT)
    assert caught.value.code is Code.USAGE
    assert caught.value.message == "a Sigstore verification needs an expected workflow or identity"


def test_a_failed_signature_check_names_the_file_the_reason_and_what_to_check() -> None:
    error = sv._refusal(VerificationError("the chain is broken\ndetails"), [], WHAT)
    assert error.code is Code.SIGNATURE_INVALID
    assert error.message == f"{WHAT}: Sigstore verification failed: the chain is broken"
    assert error.hint == ("the signature, certificate chain or transparency log entry does not verify "
                          "under the pinned root")


def test_a_bundle_from_another_sigstore_instance_is_refused_naming_the_file_and_sigstores_reason(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow, tmp_path: Path) -> None:
    other = TestSigstoreInstance(tmp_path / "other")
    dsse = _dsse(other, LINUX, _statement(ARTIFACT_SHA256))
    for call in (lambda: verify_dsse_bundle(dsse, root, expected, WHAT),
                 lambda: verify_artifact_bundle(_message(other), ARTIFACT, root, expected, what=WHAT)):
        with pytest.raises(QualificationError) as caught:
            call()
        assert caught.value.code is Code.SIGNATURE_INVALID
        prefix = f"{WHAT}: Sigstore verification failed: "
        assert caught.value.message.startswith(prefix)
        reason = caught.value.message[len(prefix):]
        assert reason
        assert reason != "None"


def test_a_wrong_san_is_refused_quoting_sigstores_reason_cut_at_300_characters(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot) -> None:
    san = "https://github.com/someone/else/.github/workflows/" + "w" * 400 + ".yml@refs/heads/main"
    identity = CertificateIdentity(san=san, issuer=GITHUB_ISSUER)
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(_message(instance), ARTIFACT, root, None, certificate_identity=identity, what=WHAT)
    assert caught.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
    refusal = f"Certificate's SANs do not match {san}"[:300]
    assert caught.value.message == f"{WHAT}: signer identity refused: {refusal}"


# -- the signer role --------------------------------------------------------------------------------------------


def test_a_dsse_bundle_is_checked_against_the_platform_signers_by_default(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, AGGREGATE, _statement(ARTIFACT_SHA256))
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(bundle, root, expected, WHAT)
    assert caught.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
    assert caught.value.message.startswith(f"{WHAT}: signed by workflow ")
    assert "not by one of the policy's platform signers (" in caught.value.message


def test_an_artifact_bundle_is_checked_against_the_platform_signers_by_default(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(_message(instance, AGGREGATE), ARTIFACT, root, expected, what=WHAT)
    assert caught.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
    assert "not by one of the policy's platform signers (" in caught.value.message


def test_an_artifact_bundle_signed_by_the_aggregate_is_accepted_for_the_aggregate_role(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _message(instance, AGGREGATE)
    result = verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT, role="aggregate")
    assert result.artifact_sha256 == ARTIFACT_SHA256
    assert result.identity is not None
    assert result.identity.build_signer_uri == AGGREGATE.san_uri
    assert result.bundle_sha256 == hashlib.sha256(bundle).hexdigest()


def test_a_dsse_bundle_signed_by_the_aggregate_is_accepted_for_the_aggregate_role(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, AGGREGATE, _statement(ARTIFACT_SHA256))
    result = verify_dsse_bundle(bundle, root, expected, WHAT, role="aggregate")
    assert result.payload == _statement(ARTIFACT_SHA256)
    assert result.bundle_sha256 == hashlib.sha256(bundle).hexdigest()


# -- verify_dsse_bundle -----------------------------------------------------------------------------------------


def test_a_message_bundle_given_as_dsse_is_refused_naming_the_file(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(_message(instance), root, expected, WHAT)
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message == f"{WHAT}: the bundle holds no DSSE envelope"


def test_a_dsse_payload_that_is_not_in_toto_is_refused_quoting_its_type_cut_at_100_characters(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    payload_type = "application/" + "x" * 88 + "yz"
    bundle = _dsse(instance, LINUX, _statement(ARTIFACT_SHA256), payload_type)
    with pytest.raises(QualificationError) as caught:
        verify_dsse_bundle(bundle, root, expected, WHAT)
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message == f"{WHAT}: payload type {payload_type[:100]!r} is not in-toto"


# -- verify_artifact_bundle -------------------------------------------------------------------------------------


def test_a_message_bundle_reports_the_bundles_own_sha256(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _message(instance)
    result = verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT)
    assert result.bundle_sha256 == hashlib.sha256(bundle).hexdigest()


def test_a_message_bundle_cannot_stand_in_for_a_named_statement_type(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(_message(instance), ARTIFACT, root, expected, what=WHAT, predicate_type=PREDICATE)
    assert caught.value.code is Code.PREDICATE_TYPE_UNKNOWN
    assert caught.value.message == f"{WHAT}: a {PREDICATE} statement was expected"


def test_a_dsse_statement_of_the_named_type_covering_the_artifact_is_accepted(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, LINUX, _statement(ARTIFACT_SHA256))
    result = verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT, predicate_type=PREDICATE)
    assert result.artifact_sha256 == ARTIFACT_SHA256
    assert result.bundle_sha256 == hashlib.sha256(bundle).hexdigest()


def test_a_dsse_statement_of_another_type_is_refused_even_when_it_covers_the_artifact(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, LINUX, _statement(ARTIFACT_SHA256, predicate_type="https://example.com/other/v1"))
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT, predicate_type=PREDICATE)
    assert caught.value.code is Code.PREDICATE_TYPE_UNKNOWN
    assert caught.value.message == f"{WHAT}: not a one-subject statement of type {PREDICATE}"


def test_a_dsse_statement_without_a_subject_list_is_refused_naming_the_file(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, LINUX, json.dumps({"predicateType": PREDICATE}).encode())
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT)
    assert caught.value.code is Code.SCHEMA_INVALID
    assert caught.value.message == f"{WHAT}: the statement has no usable subject list"


def test_a_dsse_statement_not_covering_the_artifact_is_refused_naming_the_digest(
        instance: TestSigstoreInstance, root: PinnedTrustedRoot, expected: ExpectedWorkflow) -> None:
    bundle = _dsse(instance, LINUX, _statement("0" * 64))
    with pytest.raises(QualificationError) as caught:
        verify_artifact_bundle(bundle, ARTIFACT, root, expected, what=WHAT)
    assert caught.value.code is Code.ARTIFACT_DIGEST_MISMATCH
    assert caught.value.message == f"{WHAT}: no statement subject has the artifact's SHA-256 {ARTIFACT_SHA256}"


# -- _subject_digests -------------------------------------------------------------------------------------------


def _refused(payload: bytes, payload_type: str = IN_TOTO_PAYLOAD_TYPE, predicate_type: str | None = None
             ) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        sv._subject_digests(payload, payload_type, WHAT, predicate_type=predicate_type)
    return caught.value


def test_a_payload_type_other_than_in_toto_is_refused_quoting_it_cut_at_100_characters() -> None:
    payload_type = "text/" + "t" * 95 + "uv"
    error = _refused(_statement(ARTIFACT_SHA256), payload_type)
    assert error.code is Code.SCHEMA_INVALID
    assert error.message == f"{WHAT}: payload type {payload_type[:100]!r} is not in-toto"


def test_a_payload_that_is_not_json_is_refused_naming_the_statement() -> None:
    error = _refused(b"{oops")
    assert error.code is Code.JSON_MALFORMED
    assert error.message.startswith(f"{WHAT} statement: not valid JSON")


def test_a_payload_larger_than_the_default_statement_bound_is_still_read() -> None:
    statement = _statement(ARTIFACT_SHA256)
    payload = statement[:-1] + b" " * MAX_STATEMENT_BYTES + b"}"
    assert sv._subject_digests(payload, IN_TOTO_PAYLOAD_TYPE, WHAT) == {ARTIFACT_SHA256}


@pytest.mark.parametrize("payload", [
    b"[]",
    b'{"predicateType": "x"}',
    b'{"subject": "not a list"}',
    b'{"subject": []}',
    b'{"subject": null}',
], ids=["a-list", "no-subject", "subject-not-a-list", "empty-subject-list", "null-subject"])
def test_a_statement_without_a_usable_subject_list_is_refused(payload: bytes) -> None:
    error = _refused(payload)
    assert error.code is Code.SCHEMA_INVALID
    assert error.message == f"{WHAT}: the statement has no usable subject list"


def test_a_statement_of_exactly_1024_subjects_is_read_and_1025_are_refused() -> None:
    digests = [f"{i:064x}" for i in range(1025)]
    assert sv._subject_digests(_statement(*digests[:1024]), IN_TOTO_PAYLOAD_TYPE, WHAT) == set(digests[:1024])
    error = _refused(_statement(*digests))
    assert error.code is Code.SCHEMA_INVALID
    assert error.message == f"{WHAT}: the statement has no usable subject list"


def test_every_subject_is_read_and_malformed_ones_are_skipped() -> None:
    payload = json.dumps({"subject": [
        "a bare string",
        {"digest": "not a mapping"},
        {"digest": {"sha512": "ab"}},
        {"digest": {"sha256": 7}},
        {"digest": {"sha256": "1" * 64}},
        {"name": "last", "digest": {"sha256": "2" * 64}},
    ]}).encode()
    assert sv._subject_digests(payload, IN_TOTO_PAYLOAD_TYPE, WHAT) == {"1" * 64, "2" * 64}


def test_a_one_subject_statement_of_the_named_type_is_accepted() -> None:
    digests = sv._subject_digests(_statement("3" * 64), IN_TOTO_PAYLOAD_TYPE, WHAT, predicate_type=PREDICATE)
    assert digests == {"3" * 64}


@pytest.mark.parametrize("payload", [
    _statement("3" * 64, predicate_type="https://example.com/other/v1"),
    _statement("3" * 64, "4" * 64),
    _statement("3" * 64, "4" * 64, predicate_type="https://example.com/other/v1"),
    json.dumps({"subject": [{"digest": {"sha256": "3" * 64}}]}).encode(),
], ids=["other-type", "two-subjects", "other-type-two-subjects", "no-type"])
def test_a_statement_not_of_the_named_type_or_not_one_subject_is_refused(payload: bytes) -> None:
    error = _refused(payload, predicate_type=PREDICATE)
    assert error.code is Code.PREDICATE_TYPE_UNKNOWN
    assert error.message == f"{WHAT}: not a one-subject statement of type {PREDICATE}"
