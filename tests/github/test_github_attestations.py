"""The aggregate job's upload: statements stored through GitHub's attestation API, read back by digest."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, canonical_bytes
from desktop_qualify.qualify_github import GitHubError, attestations_for, store_evidence
from desktop_qualify.qualify_github._cli import main
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow
from desktop_qualify.qualify_trust._sigstore_verify import verify_dsse_bundle
from desktop_qualify.qualify_trust.sigstore import trusted_root_from_bytes
from gh_testenv import REPOSITORY, MakeClient
from support.github_emulator import DEFAULT_TOKEN, Fault, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

ARTIFACT = hashlib.sha256(b"skillhost archive").hexdigest()
SIGNERS = {"linux": ".github/workflows/produce-linux.yml", "macos": ".github/workflows/produce-macos.yml",
           "windows": ".github/workflows/produce-windows.yml", "aggregate": ".github/workflows/qualify.yml"}


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore"))


def _statement(kind: str) -> bytes:
    return canonical_bytes({"_type": "https://in-toto.io/Statement/v1",
                            "subject": [{"name": "skillhost.tar.gz", "digest": {"sha256": ARTIFACT}}],
                            "predicateType": f"https://example.invalid/{kind}/v1", "predicate": {}})


@pytest.fixture
def evidence(tmp_path: Path, instance: TestSigstoreInstance, github_emulator: GitHubEmulator) -> Path:
    github_emulator.repo(REPOSITORY)
    folder = tmp_path / "evidence"
    folder.mkdir()
    linux = GitHubIdentity(repository=REPOSITORY, signer_workflow=SIGNERS["linux"])
    for name, who in (("platform-linux", linux), ("aggregate", GitHubIdentity(repository=REPOSITORY))):
        bundle = instance.issue_dsse_bundle(_statement(name), extensions=who.extensions, san_uri=who.san_uri)
        (folder / f"{name}.sigstore.json").write_bytes(bundle)
    (folder / "decision.json").write_text("{}", encoding="utf-8")  # not a bundle: not stored
    return folder


def test_every_statement_is_stored_and_read_back_by_its_subject_digest(
        evidence: Path, make_client: MakeClient, github_emulator: GitHubEmulator,
        instance: TestSigstoreInstance) -> None:
    stored = store_evidence(make_client(), REPOSITORY, evidence)
    # The aggregate last: a store that fails part-way never leaves it without the statements it binds.
    assert [(s.file, s.attestation_id) for s in stored] == [("platform-linux.sigstore.json", 1),
                                                            ("aggregate.sigstore.json", 2)]
    posts = [r for r in github_emulator.requests if r.method == "POST"]
    assert [r.path for r in posts] == [f"/api/v3/repos/{REPOSITORY}/attestations"] * 2
    assert all(r.authorization == f"token {DEFAULT_TOKEN}" for r in posts)
    kept = github_emulator.repo(REPOSITORY).attestations
    assert kept[1] == json.loads((evidence / "platform-linux.sigstore.json").read_bytes())

    # What a release gate fetches by digest verifies again, each bundle under its own signer.
    bundles = attestations_for(make_client(), REPOSITORY, ARTIFACT)
    assert len(bundles) == 2
    expected = ExpectedWorkflow("https://token.actions.githubusercontent.com", REPOSITORY,
                                ".github/workflows/qualify.yml", "refs/heads/main", frozenset({"push"}),
                                "github-hosted", signers=SIGNERS)
    root = trusted_root_from_bytes(instance.trusted_root_path.read_bytes(), what="test root")
    roles = [verify_dsse_bundle(b, root, expected, "fetched", role=role).identity.build_signer_uri
             for b, role in zip(bundles, ["platform", "aggregate"], strict=True)]
    assert roles == [expected.signer_uri("linux"), expected.signer_uri("aggregate")]
    # Nothing stored for a digest: GitHub answers 404, which is an empty listing, not a failure.
    assert attestations_for(make_client(), REPOSITORY, "0" * 64) == []
    assert github_emulator.requests[-1].path.endswith(f"/attestations/sha256:{'0' * 64}")


def test_the_upload_command_stores_the_folder(evidence: Path, github_emulator: GitHubEmulator,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    env = {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": github_emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN}
    assert main(["store-attestations", "--evidence", str(evidence)], env=env) == 0
    out = capsys.readouterr().out
    assert f"stored platform-linux.sigstore.json as attestation 1 of {REPOSITORY}" in out
    assert len(github_emulator.repo(REPOSITORY).attestations) == 2


def test_a_transient_failure_is_retried(evidence: Path, make_client: MakeClient,
                                        github_emulator: GitHubEmulator) -> None:
    github_emulator.inject(rf"/repos/{REPOSITORY}/attestations", Fault(status=502), times=1)
    assert len(store_evidence(make_client(), REPOSITORY, evidence)) == 2


@pytest.mark.parametrize(("case", "expected"), [
    ("bad token", (Code.ENVIRONMENT, 2)),
    ("no repository", (Code.ENVIRONMENT, 2)),
    ("not a bundle", (Code.SCHEMA_INVALID, 1)),
    ("duplicate keys", (Code.JSON_DUPLICATE_KEY, 1)),
    ("nothing to store", (Code.EVIDENCE_MISSING, 1)),
])
def test_the_upload_refuses_with_a_stable_code(case: str, expected: tuple[Code, int], evidence: Path,
                                               github_emulator: GitHubEmulator,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, status = expected
    env = {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": github_emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN}
    folder = evidence
    if case == "bad token":
        env["GITHUB_TOKEN"] = "wrong-token"
    elif case == "no repository":
        del env["GITHUB_REPOSITORY"]
    elif case == "not a bundle":
        (evidence / "platform-macos.sigstore.json").write_text('{"mediaType": "text/plain"}', encoding="utf-8")
    elif case == "duplicate keys":
        (evidence / "platform-macos.sigstore.json").write_text('{"a": 1, "a": 2}', encoding="utf-8")
    else:
        folder = evidence.parent / "empty"
        folder.mkdir()
    assert main(["store-attestations", "--evidence", str(folder)], env=env) == status
    err = capsys.readouterr().err
    assert code.value in err
    assert "wrong-token" not in err
    assert "Traceback" not in err


def test_a_digest_that_is_not_sha256_hex_is_a_usage_error(make_client: MakeClient) -> None:
    with pytest.raises(QualificationError) as refused:
        attestations_for(make_client(), REPOSITORY, "ABC")
    assert refused.value.code is Code.USAGE


def _stored_statement(github_emulator: GitHubEmulator, predicate_type: str, index: int) -> None:
    """A stored bundle as GitHub indexes it (listing does not verify; the gate verifies what it reads)."""
    statement = {"_type": "https://in-toto.io/Statement/v1",
                 "subject": [{"name": "skillhost.tar.gz", "digest": {"sha256": ARTIFACT}}],
                 "predicateType": predicate_type, "predicate": {"n": index}}
    repo = github_emulator.repo(REPOSITORY)
    repo.attestations[len(repo.attestations) + 1] = {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "dsseEnvelope": {"payload": base64.b64encode(canonical_bytes(statement)).decode(),
                         "payloadType": "application/vnd.in-toto+json", "signatures": []}}


def test_every_page_is_read_and_the_predicate_type_filter_travels_with_the_cursor(
        make_client: MakeClient, github_emulator: GitHubEmulator) -> None:
    wanted, other = "https://example.invalid/wanted/v1", "https://example.invalid/other/v1"
    for index in range(75):
        _stored_statement(github_emulator, wanted if index % 3 else other, index)
    found = attestations_for(make_client(per_page=20), REPOSITORY, ARTIFACT, predicate_type=wanted)
    numbers = [json.loads(base64.b64decode(json.loads(b)["dsseEnvelope"]["payload"]))["predicate"]["n"]
               for b in found]
    assert numbers == [i for i in range(75) if i % 3]
    listed = [r for r in github_emulator.requests if "/attestations/sha256:" in r.path]
    assert len(listed) == 3  # 50 items, 20 a page
    assert all(r.query.get("predicate_type") == [wanted] for r in listed)
    assert len(attestations_for(make_client(per_page=20), REPOSITORY, ARTIFACT)) == 75


def test_only_the_first_pages_404_means_nothing_stored(make_client: MakeClient,
                                                       github_emulator: GitHubEmulator) -> None:
    for index in range(12):
        _stored_statement(github_emulator, "https://example.invalid/wanted/v1", index)
    # A 404 on the second page is a broken listing, never "nothing stored" (which would hide the first page).
    github_emulator.inject(rf"/repos/{REPOSITORY}/attestations/sha256:", Fault(status=404, message="Not Found"),
                           after=1)
    with pytest.raises(GitHubError) as refused:
        attestations_for(make_client(per_page=5), REPOSITORY, ARTIFACT)
    assert refused.value.code is Code.ENVIRONMENT
    assert refused.value.status == 404


def test_a_listing_longer_than_the_bound_is_refused_not_truncated(make_client: MakeClient,
                                                                  github_emulator: GitHubEmulator) -> None:
    for index in range(12):
        _stored_statement(github_emulator, "https://example.invalid/wanted/v1", index)
    with pytest.raises(GitHubError) as refused:
        attestations_for(make_client(per_page=5, max_items=10), REPOSITORY, ARTIFACT)
    assert refused.value.code is Code.ENVIRONMENT
    assert "more than 10 items" in refused.value.message


def test_an_attestation_listed_without_its_bundle_is_refused(make_client: MakeClient,
                                                             github_emulator: GitHubEmulator) -> None:
    _stored_statement(github_emulator, "https://example.invalid/wanted/v1", 0)
    github_emulator.repo(REPOSITORY).attestations_inline = False
    with pytest.raises(GitHubError) as refused:
        attestations_for(make_client(), REPOSITORY, ARTIFACT)
    assert "bundle_url only" in refused.value.message
