"""Real bundles signed by real GitHub workflows, verified offline under pinned roots."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, replace

import pytest
from desktop_qualify.evidence_schemas import IN_TOTO_PAYLOAD_TYPE, Code, QualificationError
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow
from desktop_qualify.qualify_trust._sigstore_verify import verify_dsse_bundle
from desktop_qualify.qualify_trust.sigstore import (
    CertificateIdentity,
    PinnedTrustedRoot,
    load_trusted_root,
    verify_artifact_bundle,
)
from sigstore_vectors import vectors_dir

GITHUB = "https://token.actions.githubusercontent.com"
BEACON_REPO = "sigstore-conformance/extremely-dangerous-public-oidc-beacon"
BEACON_WORKFLOW = ".github/workflows/extremely-dangerous-oidc-beacon.yml"
BEACON_SAN = f"https://github.com/{BEACON_REPO}/{BEACON_WORKFLOW}@refs/heads/main"


@dataclass(frozen=True)
class RealBundle:
    folder: str
    bundle: str
    artifact: str
    san: str
    dsse: bool
    # The run the certificate names; None where the identity is not a main-branch top-level workflow.
    workflow: ExpectedWorkflow | None
    run: tuple[str, int]
    own_root: bool = False


def _beacon(sha: str) -> ExpectedWorkflow:
    return ExpectedWorkflow(GITHUB, BEACON_REPO, BEACON_WORKFLOW, "refs/heads/main", frozenset({"workflow_dispatch"}),
                            "github-hosted", sha)


POSITIVE = [
    RealBundle("beacon_dsse_v1", "bundle.sigstore.json", "a.txt", BEACON_SAN, True,
               _beacon("82a3bfe6dd50fe9c71d6315eae66da15307856cf"), ("12359147651", 1)),
    RealBundle("beacon_hashedrekord_v03", "bundle.sigstore.json", "a.txt", BEACON_SAN, False,
               _beacon("c7b3dfb335f051e1c86bda4c716fac97df62ad81"), ("8347481628", 1)),
    RealBundle("beacon_rekor2_dsse", "bundle.sigstore.json", "a.txt", BEACON_SAN, True,
               _beacon("977e8d08554ca9bda279c96e91be2119fb67c730"), ("25821282059", 1), own_root=True),
    RealBundle("rfc8785_release_whl", "bundle_v3_github.whl.sigstore", "bundle_v3_github.whl",
               "https://github.com/trailofbits/rfc8785.py/.github/workflows/release.yml@refs/tags/v0.1.2", False,
               None, ("8351058501", 1)),
    RealBundle("attest_reusable_workflow", "reusable-workflow-attestation.sigstore.json", "reusable-workflow-artifact",
               "https://github.com/github/artifact-attestations-workflows/.github/workflows/attest.yml"
               "@09b495c3f12c7881b3cc17209a327792065c1a1d", True, None, ("9228858953", 1)),
]
IDS = [case.folder for case in POSITIVE]


def _root(case: RealBundle, production: PinnedTrustedRoot) -> PinnedTrustedRoot:
    if case.own_root:
        return load_trusted_root(vectors_dir("github-sigstore-bundles", case.folder) / "trusted_root.json")
    return production


def _files(case: RealBundle) -> tuple[bytes, bytes]:
    folder = vectors_dir("github-sigstore-bundles", case.folder)
    return (folder / case.bundle).read_bytes(), (folder / case.artifact).read_bytes()


@pytest.mark.parametrize("case", POSITIVE, ids=IDS)
def test_bundle_verifies_with_its_true_identity(case: RealBundle, production_root: PinnedTrustedRoot) -> None:
    bundle, artifact = _files(case)
    root = _root(case, production_root)
    started = time.perf_counter()
    result = verify_artifact_bundle(bundle, artifact, root, None,
                                    certificate_identity=CertificateIdentity(case.san, GITHUB), what=case.folder)
    elapsed = time.perf_counter() - started
    print(f"\n{case.folder}: verified offline in {elapsed * 1000:.1f} ms")
    assert result.identity is None
    # The digest form verifies the same bundle.
    digest = result.artifact_sha256
    again = verify_artifact_bundle(bundle, digest, root, None,
                                   certificate_identity=CertificateIdentity(case.san, GITHUB), what=case.folder)
    assert again.artifact_sha256 == digest
    material = json.loads(bundle)["verificationMaterial"]
    leaf = material["certificate"] if "certificate" in material else material["x509CertificateChain"]["certificates"][0]
    assert again.certificate_sha256 == hashlib.sha256(base64.b64decode(leaf["rawBytes"])).hexdigest()


@pytest.mark.parametrize("case", POSITIVE, ids=IDS)
@pytest.mark.parametrize(
    ("san_change", "issuer", "code"),
    [("-evil", GITHUB, Code.WORKFLOW_IDENTITY_MISMATCH), ("", "https://accounts.google.com", Code.SIGNER_UNTRUSTED),
     ("", f"{GITHUB}/", Code.SIGNER_UNTRUSTED)],
    ids=["other SAN", "other issuer", "issuer with slash"],
)
def test_bundle_fails_with_any_other_identity(
    case: RealBundle, san_change: str, issuer: str, code: Code, production_root: PinnedTrustedRoot
) -> None:
    bundle, artifact = _files(case)
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle(bundle, artifact, _root(case, production_root), None,
                               certificate_identity=CertificateIdentity(case.san + san_change, issuer),
                               what=case.folder)
    assert info.value.code is code


@pytest.mark.parametrize("case", POSITIVE, ids=IDS)
def test_bundle_does_not_cover_another_artifact(case: RealBundle, production_root: PinnedTrustedRoot) -> None:
    bundle, artifact = _files(case)
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle(bundle, artifact + b"\n", _root(case, production_root), None,
                               certificate_identity=CertificateIdentity(case.san, GITHUB), what=case.folder)
    expected = Code.ARTIFACT_DIGEST_MISMATCH if case.dsse else Code.SIGNATURE_INVALID
    assert info.value.code is expected


WORKFLOW_CASES = [case for case in POSITIVE if case.workflow is not None]


@pytest.mark.parametrize("case", WORKFLOW_CASES, ids=[c.folder for c in WORKFLOW_CASES])
def test_beacon_verifies_as_an_exact_workflow_identity(case: RealBundle, production_root: PinnedTrustedRoot) -> None:
    assert case.workflow is not None
    bundle, artifact = _files(case)
    root = _root(case, production_root)
    if case.dsse:
        verified = verify_dsse_bundle(bundle, root, case.workflow, case.folder)
        assert verified.payload_type == IN_TOTO_PAYLOAD_TYPE
        envelope = json.loads(bundle)["dsseEnvelope"]
        # The exact signed bytes come back, not a re-serialisation.
        assert verified.payload == base64.b64decode(envelope["payload"])
        leaf = base64.b64decode(json.loads(bundle)["verificationMaterial"]["certificate"]["rawBytes"])
        assert verified.certificate_sha256 == hashlib.sha256(leaf).hexdigest()
        assert verified.bundle_sha256 == hashlib.sha256(bundle).hexdigest()
        identity = verified.identity
    else:
        result = verify_artifact_bundle(bundle, artifact, root, case.workflow, what=case.folder)
        assert result.identity is not None
        identity = result.identity
    assert (identity.run_id, identity.run_attempt) == case.run
    assert identity.source_repository_digest == case.workflow.candidate_sha


OTHER_WORKFLOWS = [
    ("other repository", {"repository": f"{BEACON_REPO}-evil"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ("other workflow file", {"workflow": ".github/workflows/other.yml"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ("trigger not allowed", {"allowed_triggers": frozenset({"push"})}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ("another candidate", {"candidate_sha": "0" * 40}, Code.SHA_MISMATCH),
    ("another issuer", {"issuer": "https://accounts.google.com"}, Code.SIGNER_UNTRUSTED),
]


@pytest.mark.parametrize("case", WORKFLOW_CASES, ids=[c.folder for c in WORKFLOW_CASES])
@pytest.mark.parametrize(
    ("changes", "code"), [(c, k) for _, c, k in OTHER_WORKFLOWS], ids=[n for n, _, _ in OTHER_WORKFLOWS]
)
def test_beacon_fails_as_any_other_workflow(
    case: RealBundle, changes: dict[str, object], code: Code, production_root: PinnedTrustedRoot
) -> None:
    assert case.workflow is not None
    expected = replace(case.workflow, **changes)  # type: ignore[arg-type]
    bundle, artifact = _files(case)
    root = _root(case, production_root)
    with pytest.raises(QualificationError) as info:
        _verify_as(case, bundle, artifact, root, expected)
    assert info.value.code is code


def _verify_as(
    case: RealBundle, bundle: bytes, artifact: bytes, root: PinnedTrustedRoot, expected: ExpectedWorkflow
) -> None:
    if case.dsse:
        verify_dsse_bundle(bundle, root, expected, case.folder)
    else:
        verify_artifact_bundle(bundle, artifact, root, expected, what=case.folder)


def test_tag_release_is_not_a_main_producer(production_root: PinnedTrustedRoot) -> None:
    case = POSITIVE[3]
    bundle, artifact = _files(case)
    expected = ExpectedWorkflow(GITHUB, "trailofbits/rfc8785.py", ".github/workflows/release.yml", "refs/heads/main",
                                frozenset({"release"}), "github-hosted")
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle(bundle, artifact, production_root, expected, what=case.folder)
    assert info.value.code is Code.REF_NOT_MAIN


def test_reusable_workflow_signer_is_not_the_calling_workflow(production_root: PinnedTrustedRoot) -> None:
    case = POSITIVE[4]
    bundle, _ = _files(case)
    expected = ExpectedWorkflow(GITHUB, "malancas/attest-demo", ".github/workflows/shared.yml", "refs/heads/main",
                                frozenset({"workflow_dispatch"}), "github-hosted")
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(bundle, production_root, expected, case.folder)
    assert info.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
    assert "artifact-attestations-workflows" in info.value.message


def test_staging_bundle_fails_under_the_production_root(production_root: PinnedTrustedRoot) -> None:
    case = POSITIVE[2]
    assert case.workflow is not None
    bundle, _ = _files(case)
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(bundle, production_root, case.workflow, case.folder)
    assert info.value.code is Code.SIGNATURE_INVALID


def test_hashedrekord_bundle_is_not_a_statement(production_root: PinnedTrustedRoot) -> None:
    case = POSITIVE[1]
    assert case.workflow is not None
    bundle, _ = _files(case)
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(bundle, production_root, case.workflow, case.folder)
    assert info.value.code is Code.SCHEMA_INVALID


NEGATIVE = [
    # intoto/0.0.2 log entries: sigstore-python 4.x verifies dsse/0.0.1 and hashedrekord only.
    ("neg_sigstore_js_intoto", ("sigstore-js-2.1.0-bundle.json", "sigstore-js-2.1.0.tgz"),
     "https://github.com/sigstore/sigstore-js/.github/workflows/release.yml@refs/heads/main", Code.SIGNATURE_INVALID),
    # GitHub's own Fulcio instance, no transparency log entry: not loadable.
    ("neg_github_instance",
     ("github_provenance_demo-0.0.12.sigstore.json", "github_provenance_demo-0.0.12-py3-none-any.whl"),
     "https://github.com/actions/attest-demo/.github/workflows/build-python.yml@refs/heads/main", Code.SCHEMA_INVALID),
]


@pytest.mark.parametrize(("folder", "files", "san", "code"), NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_unsupported_bundle_is_refused_with_a_code(
    folder: str, files: tuple[str, str], san: str, code: Code, production_root: PinnedTrustedRoot
) -> None:
    bundle, artifact = files
    path = vectors_dir("github-sigstore-bundles", folder)
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle((path / bundle).read_bytes(), (path / artifact).read_bytes(), production_root, None,
                               certificate_identity=CertificateIdentity(san, GITHUB), what=folder)
    assert info.value.code is code
    assert folder in info.value.message


def _real(folder: str = "beacon_dsse_v1") -> bytes:
    return (vectors_dir("github-sigstore-bundles", folder) / "bundle.sigstore.json").read_bytes()


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b[: len(b) // 2], Code.JSON_MALFORMED),
        (lambda b: b"[" + b + b"]", Code.SCHEMA_INVALID),
        (lambda b: b'{"mediaType": 1, ' + b[1:], Code.JSON_DUPLICATE_KEY),
        (lambda b: b.replace(b'"logIndex": "', b'"logIndex": NaN, "x": "', 1), Code.JSON_NONFINITE),
        (lambda b: b"[" * 40 + b"]" * 40, Code.JSON_TOO_DEEP),
        (lambda b: b + b" " * (25 * 1024 * 1024), Code.EVIDENCE_TOO_LARGE),
        (lambda b: b"\xff" + b, Code.JSON_INVALID_UTF8),
    ],
    ids=["truncated", "array", "duplicate key", "NaN", "deep", "too large", "not utf-8"],
)
def test_hostile_bundle_bytes_are_refused_before_sigstore(
    mutate: object, code: Code, production_root: PinnedTrustedRoot
) -> None:
    data = mutate(_real())  # type: ignore[operator]
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(data, production_root, POSITIVE[0].workflow, "hostile")  # type: ignore[arg-type]
    assert info.value.code is code


@pytest.mark.parametrize(("position", "bit"), [(7341, 0x20)], ids=["certificate version byte"])
def test_corrupted_certificate_version_is_a_schema_error(
    position: int, bit: int, production_root: PinnedTrustedRoot
) -> None:
    # Found by the sweep below: cryptography raises InvalidVersion, not ValueError.
    data = bytearray(_real())
    data[position] ^= bit
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(bytes(data), production_root, POSITIVE[0].workflow, "corrupted")  # type: ignore[arg-type]
    assert info.value.code is Code.SCHEMA_INVALID


def test_byte_corruptions_are_coded_refusals(production_root: PinnedTrustedRoot) -> None:
    """Flip bits across a real bundle: each result is a pass or a QualificationError, never a traceback."""
    case = POSITIVE[0]
    assert case.workflow is not None
    original = _real()
    positions = range(0, len(original), 5)
    refused = 0
    for position in positions:
        for bit in (0x01, 0x20):
            data = bytearray(original)
            data[position] ^= bit
            try:
                verify_dsse_bundle(bytes(data), production_root, case.workflow, "corrupted")
            except QualificationError:
                refused += 1
    # Nearly every flip lands in signed material, base64 or JSON syntax; a few only touch ignorable text.
    assert refused > 0.9 * 2 * len(positions)


def test_bundle_size_bound_is_the_callers(production_root: PinnedTrustedRoot) -> None:
    with pytest.raises(QualificationError) as info:
        verify_dsse_bundle(_real(), production_root, POSITIVE[0].workflow, "small", max_bytes=1024)  # type: ignore[arg-type]
    assert info.value.code is Code.EVIDENCE_TOO_LARGE


def test_neither_workflow_nor_identity_is_api_misuse(production_root: PinnedTrustedRoot) -> None:
    folder = vectors_dir("github-sigstore-bundles", "beacon_hashedrekord_v03")
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle((folder / "bundle.sigstore.json").read_bytes(), (folder / "a.txt").read_bytes(),
                               production_root, None, what="unpinned")
    assert info.value.code is Code.USAGE


def test_bad_digest_argument_is_usage(production_root: PinnedTrustedRoot) -> None:
    with pytest.raises(QualificationError) as info:
        verify_artifact_bundle(_real(), "ABC", production_root, None,
                               certificate_identity=CertificateIdentity(BEACON_SAN, GITHUB), what="digest")
    assert info.value.code is Code.USAGE

