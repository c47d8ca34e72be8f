"""GitHub mode's Verification Summary Attestations: signed keylessly by the release workflow, checked offline.

Signing needs GitHub's OIDC token and the public Sigstore instance, which no
test reaches; the signer is the same SigstoreSigner the gate uses, fed by a
test Sigstore instance that issues certificates with the exact Fulcio claims
of each workflow identity. What verify-vsa accepts is the policy's [verifier]
workflow on main in the policy's repository, started by an allowed trigger;
every other identity is refused with QE_VSA_SIGNATURE.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest
from desktop_qualify.consumer._verify_vsa import check_summaries
from desktop_qualify.consumer._vsa import SummaryWriter, check_release_tag, resource_uri
from desktop_qualify.evidence_schemas import VSA_PREDICATE_TYPE, Code, QualificationError, canonical_bytes
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_trust import vsa_verifier_for
from desktop_qualify.qualify_trust._github_mode import SigstoreSigner
from support.github_chain import REPOSITORY, github_policy
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

# The gate: the reusable release-gate.yml (.9), called by release.yml (.18), dispatched by hand.
RELEASE = GitHubIdentity(repository=REPOSITORY, workflow=".github/workflows/release.yml", trigger="workflow_dispatch",
                         workflow_name="release-gate", signer_workflow=".github/workflows/release-gate.yml")
ARTIFACT = b"the qualified artifact's bytes"


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore"))


@pytest.fixture
def policy(tmp_path: Path, instance: TestSigstoreInstance) -> Policy:
    return load_policy(github_policy(tmp_path, instance, tmp_path))


def _statement(policy: Policy, *, result: str = "PASSED") -> bytes:
    return canonical_bytes({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "app-linux.tar.gz", "digest": {"sha256": hashlib.sha256(ARTIFACT).hexdigest()}}],
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": "https://desktop-qualify.invalid/verifier/qualify", "version": {"desktop-qualify": "1"}},
            "timeVerified": "2026-01-01T00:00:00.000000Z",
            "resourceUri": resource_uri(policy, "app-linux.tar.gz", "v1.2.0"),
            "policy": {"uri": "git+https://github.com/acme/desktop#policies/release.toml",
                       "digest": {"sha256": policy.sha256}},
            "inputAttestations": [{"uri": "platform-linux.sigstore.json", "digest": {"sha256": "ab" * 32}}],
            "verificationResult": result,
            "verifiedLevels": ["DESKTOP_QUALIFIED_RELEASE_GATE"] if result == "PASSED" else [],
        },
    })


def _signed_by(instance: TestSigstoreInstance, who: GitHubIdentity, path: Path, statement: bytes) -> bytes:
    signer = SigstoreSigner(lambda payload: instance.issue_dsse_bundle(payload, extensions=who.extensions,
                                                                       san_uri=who.san_uri))
    SummaryWriter(path, signer).write([statement])
    return path.read_bytes()


def test_the_release_policy_names_the_gate_called_by_release_yml_as_the_verifier() -> None:
    policy = load_policy(Path(__file__).resolve().parents[2] / "policies" / "release.toml")
    assert policy.file.verifier is not None
    assert policy.file.verifier.workflow == ".github/workflows/release-gate.yml"
    assert policy.file.verifier.caller == ".github/workflows/release.yml"
    # The gate signs keylessly there: the writer's signer is the Sigstore one, never a key file.
    assert isinstance(SummaryWriter.for_policy(policy, Path("vsa.jsonl")).signer, SigstoreSigner)


def test_a_summary_signed_by_the_release_workflow_is_accepted(instance: TestSigstoreInstance, policy: Policy,
                                                               tmp_path: Path) -> None:
    data = _signed_by(instance, RELEASE, tmp_path / "vsa.jsonl", _statement(policy))
    assert data.count(b"\n") == 1  # one Sigstore bundle, on one line
    accepted = check_summaries(data, hashlib.sha256(ARTIFACT).hexdigest(), policy, vsa_verifier_for(policy), "vsa")
    assert [s.statement.predicate.resourceUri for s in accepted] == [
        "https://github.com/acme/desktop/releases/download/v1.2.0/app-linux.tar.gz"]
    assert accepted[0].signer == RELEASE.san_uri


SIGNERS = [
    ("the-aggregate-job-of-qualify-yml", replace(RELEASE, workflow=".github/workflows/qualify.yml", trigger="push")),
    ("release-yml-on-another-branch", replace(RELEASE, ref="refs/heads/evil")),
    ("release-yml-on-a-tag", replace(RELEASE, ref="refs/tags/v1.2.0")),
    ("release-yml-started-by-push", replace(RELEASE, trigger="push")),
    ("release-yml-of-a-fork", replace(RELEASE, repository="mallory/desktop")),
    ("a-reusable-workflow-called-by-release-yml", replace(RELEASE, signer_workflow=".github/workflows/x.yml")),
    ("release-yml-itself-not-the-gate", replace(RELEASE, signer_workflow=None)),
    ("the-gate-called-by-another-workflow", replace(RELEASE, workflow=".github/workflows/other.yml")),
    ("a-self-hosted-runner", replace(RELEASE, runner_environment="self-hosted")),
]


@pytest.mark.parametrize("who", [s[1] for s in SIGNERS], ids=[s[0] for s in SIGNERS])
def test_a_summary_by_another_identity_is_refused(instance: TestSigstoreInstance, policy: Policy, tmp_path: Path,
                                                  who: GitHubIdentity) -> None:
    data = _signed_by(instance, who, tmp_path / "vsa.jsonl", _statement(policy))
    with pytest.raises(QualificationError) as refused:
        check_summaries(data, hashlib.sha256(ARTIFACT).hexdigest(), policy, vsa_verifier_for(policy), "vsa")
    assert refused.value.code == Code.VSA_SIGNATURE


def test_a_failed_result_signed_by_the_release_workflow_is_refused(instance: TestSigstoreInstance, policy: Policy,
                                                                   tmp_path: Path) -> None:
    data = _signed_by(instance, RELEASE, tmp_path / "vsa.jsonl", _statement(policy, result="FAILED"))
    with pytest.raises(QualificationError) as refused:
        check_summaries(data, hashlib.sha256(ARTIFACT).hexdigest(), policy, vsa_verifier_for(policy), "vsa")
    assert refused.value.code == Code.VSA_FAILED


def test_a_policy_without_a_verifier_section_cannot_check_a_summary(tmp_path: Path,
                                                                    instance: TestSigstoreInstance) -> None:
    path = github_policy(tmp_path, instance, tmp_path)
    text = path.read_text(encoding="utf-8")
    start = text.index("[verifier]")
    path.write_text(text[:start] + text[text.index("[source]"):], encoding="utf-8")
    with pytest.raises(QualificationError) as refused:
        vsa_verifier_for(load_policy(path))
    assert refused.value.code == Code.POLICY_INVALID
    assert refused.value.exit_status == 2


@pytest.mark.parametrize("tag", ["", "v1 2", "../v1", "v1..2", "-v1", "x" * 201])
def test_a_release_tag_that_is_no_tag_name_is_refused(tag: str) -> None:
    with pytest.raises(QualificationError) as refused:
        check_release_tag(tag)
    assert refused.value.code == Code.USAGE
