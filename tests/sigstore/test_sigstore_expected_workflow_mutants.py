"""Building the trusted workflow identity from the policy: every field carried over, every refusal's code and words.

``qualify_trust._sigstore_expected.ExpectedWorkflow`` refuses an identity that lacks a signer for a platform or the
aggregate, names a ref other than main, allows no trigger, names half a builder or a builder at a branch, or carries
a candidate that is not a commit SHA; ``from_policy`` refuses a policy that is not Sigstore mode, names no
signers or does not run on GitHub's hosted runners, and carries the producer's repository, ids, builder and the
candidate over exactly; ``verifier_from_policy`` refuses a policy without ``[verifier]`` (or a team's without its
caller) and builds the release gate's identity from the same pinned values. Written for the mutants of
``qualify_trust._sigstore_expected``'s ``ExpectedWorkflow`` construction that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_policy._model import BuilderIdentity, VerifierIdentity
from desktop_qualify.qualify_trust._sigstore_expected import GITHUB_ISSUER, MAIN_REF, ExpectedWorkflow
from sigstore_vectors import RELEASE_POLICY, REPO

RELEASE = load_policy(RELEASE_POLICY)
LOCAL = load_policy(REPO / "policies" / "local.toml")

REPOSITORY = "desktop-qualify/desktop-qualify"
QUALIFY = ".github/workflows/qualify.yml"
GATE = ".github/workflows/release-gate.yml"
CALLER = ".github/workflows/release.yml"
SIGNERS = {
    "linux": ".github/workflows/produce-linux.yml",
    "macos": ".github/workflows/produce-macos.yml",
    "windows": ".github/workflows/produce-windows.yml",
    "aggregate": ".github/workflows/aggregate.yml",
}
BUILDER_REPOSITORY = "dq/desktop-qualify"
BUILDER_TAG = "refs/tags/v1.2.3"
BUILDER_COMMIT = "c" * 40
REPOSITORY_ID = 123456789
OWNER_ID = 987654321
CANDIDATE = "b" * 40

BASE = ExpectedWorkflow(
    issuer=GITHUB_ISSUER, repository=REPOSITORY, workflow=QUALIFY, ref=MAIN_REF,
    allowed_triggers=frozenset({"push", "workflow_dispatch"}), runner_environment="github-hosted",
    signers=MappingProxyType(SIGNERS),
)


def _policy(policy: Policy = RELEASE, *, verifier: object = "keep", **producer: object) -> Policy:
    """``policy`` with its [producer] fields (and, when given, its [verifier]) replaced, unvalidated."""
    update: dict[str, object] = {"producer": policy.file.producer.model_copy(update=producer)}
    if verifier != "keep":
        update["verifier"] = verifier
    return replace(policy, file=policy.file.model_copy(update=update))


def _pinned(**producer: object) -> Policy:
    """The release policy with its numeric ids pinned and desktop-qualify's workflows at a tag and commit."""
    builder = BuilderIdentity(repository=BUILDER_REPOSITORY, ref=BUILDER_TAG, commit=BUILDER_COMMIT)
    return _policy(repository_id=REPOSITORY_ID, owner_id=OWNER_ID, builder=builder, **producer)


def _refusal(call: Callable[[], object]) -> QualificationError:
    with pytest.raises(QualificationError) as info:
        call()
    return info.value


# --- ExpectedWorkflow itself -------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["linux", "macos", "windows", "aggregate"])
def test_an_identity_without_a_signer_for_each_role_is_refused_naming_every_role(missing: str) -> None:
    signers = MappingProxyType({k: v for k, v in SIGNERS.items() if k != missing})
    refused = _refusal(lambda: replace(BASE, signers=signers))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == "the policy names no signer workflow for each of linux, macos, windows and the aggregate"


def test_a_ref_other_than_main_is_refused_naming_main_and_the_ref() -> None:
    refused = _refusal(lambda: replace(BASE, ref="refs/heads/attacker"))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == "the producer ref must be refs/heads/main, not 'refs/heads/attacker'"


def test_an_identity_that_allows_no_trigger_is_refused() -> None:
    refused = _refusal(lambda: replace(BASE, allowed_triggers=frozenset()))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == "the policy allows no workflow trigger"


@pytest.mark.parametrize("builder", [
    {"builder_repository": BUILDER_REPOSITORY},
    {"builder_ref": BUILDER_TAG},
    {"builder_commit": BUILDER_COMMIT},
    {"builder_ref": BUILDER_TAG, "builder_commit": BUILDER_COMMIT},
    {"builder_repository": BUILDER_REPOSITORY, "builder_commit": BUILDER_COMMIT},
], ids=["repository-only", "tag-only", "commit-only", "tag-and-commit", "repository-and-commit"])
def test_half_a_builder_is_refused_as_needing_its_repository_and_its_tag(builder: dict[str, str]) -> None:
    refused = _refusal(lambda: replace(BASE, **builder))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == "a builder needs both its repository and its tag"


@pytest.mark.parametrize("commit", [BUILDER_COMMIT, None])
def test_a_whole_builder_at_a_release_tag_is_accepted_with_or_without_its_commit(commit: str | None) -> None:
    team = replace(BASE, builder_repository=BUILDER_REPOSITORY, builder_ref=BUILDER_TAG, builder_commit=commit)
    assert (team.builder_repository, team.builder_ref, team.builder_commit) == (BUILDER_REPOSITORY, BUILDER_TAG, commit)
    assert team.signer_uri("linux") == f"https://github.com/{BUILDER_REPOSITORY}/{SIGNERS['linux']}@{BUILDER_TAG}"


def test_a_builder_at_a_branch_is_refused_naming_the_tag_form_and_the_ref() -> None:
    refused = _refusal(lambda: replace(BASE, builder_repository=BUILDER_REPOSITORY, builder_ref=MAIN_REF))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == "the builder ref must be a release tag (refs/tags/vX.Y.Z), not 'refs/heads/main'"


def test_a_candidate_that_is_not_a_commit_sha_is_a_usage_error_quoting_its_first_80_characters() -> None:
    bad = "A" * 100
    refused = _refusal(lambda: replace(BASE, candidate_sha=bad))
    assert refused.code == Code.USAGE
    assert refused.message == f"candidate SHA {'A' * 80!r} is not a lowercase hex commit SHA"


# --- from_policy -------------------------------------------------------------------------------------------------


def test_the_release_policy_gives_its_producer_identity_exactly() -> None:
    assert ExpectedWorkflow.from_policy(RELEASE) == BASE


def test_from_policy_carries_the_candidate_the_ids_as_text_and_the_builder_over() -> None:
    expected = ExpectedWorkflow.from_policy(_pinned(), candidate_sha=CANDIDATE)
    assert expected == replace(BASE, candidate_sha=CANDIDATE, repository_id=str(REPOSITORY_ID),
                               owner_id=str(OWNER_ID), builder_repository=BUILDER_REPOSITORY,
                               builder_ref=BUILDER_TAG, builder_commit=BUILDER_COMMIT)
    assert (expected.repository_id, expected.owner_id) == ("123456789", "987654321")


def test_a_local_mode_policy_has_no_sigstore_identity() -> None:
    refused = _refusal(lambda: ExpectedWorkflow.from_policy(LOCAL))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == f"{LOCAL.path}: trust mode is not 'sigstore'"


def test_a_sigstore_policy_without_producer_signers_is_refused_naming_the_section() -> None:
    policy = _policy(signers=None)
    refused = _refusal(lambda: ExpectedWorkflow.from_policy(policy))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == f"{policy.path}: [producer.signers] is missing"


def test_a_sigstore_policy_not_on_github_hosted_runners_is_refused_naming_the_field() -> None:
    policy = _policy(runner_environment="local")
    refused = _refusal(lambda: ExpectedWorkflow.from_policy(policy))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == f"{policy.path}: sigstore trust requires runner_environment = 'github-hosted'"


# --- verifier_from_policy ----------------------------------------------------------------------------------------


def test_a_policy_without_a_verifier_section_cannot_sign_or_check_a_vsa() -> None:
    policy = _policy(verifier=None)
    refused = _refusal(lambda: ExpectedWorkflow.verifier_from_policy(policy))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == (f"{policy.path}: names no [verifier] workflow, so no "
                               "Verification Summary Attestation can be signed or checked")


def test_a_called_gate_keeps_the_producers_ids_and_builder_and_signs_with_the_gate_file() -> None:
    verifier = VerifierIdentity(workflow=GATE, caller=CALLER, allowed_triggers=["workflow_dispatch"])
    gate = ExpectedWorkflow.verifier_from_policy(_policy(_pinned(), verifier=verifier))
    assert gate == ExpectedWorkflow(
        issuer=GITHUB_ISSUER, repository=REPOSITORY, workflow=CALLER, ref=MAIN_REF,
        allowed_triggers=frozenset({"workflow_dispatch"}), runner_environment="github-hosted",
        repository_id=str(REPOSITORY_ID), owner_id=str(OWNER_ID), builder_repository=BUILDER_REPOSITORY,
        builder_ref=BUILDER_TAG, builder_commit=BUILDER_COMMIT, gate_workflow=GATE,
    )
    assert gate.signer_uris("verifier") == frozenset({f"https://github.com/{BUILDER_REPOSITORY}/{GATE}@{BUILDER_TAG}"})


def test_a_teams_gate_without_its_caller_is_refused() -> None:
    policy = _policy(_pinned(), verifier=VerifierIdentity(workflow=GATE, allowed_triggers=["workflow_dispatch"]))
    refused = _refusal(lambda: ExpectedWorkflow.verifier_from_policy(policy))
    assert refused.code == Code.POLICY_INVALID
    assert refused.message == f"{policy.path}: [verifier] names no caller"


def test_a_gate_that_is_its_own_caller_is_built_from_the_producers_pinned_values() -> None:
    verifier = VerifierIdentity(workflow=GATE, allowed_triggers=["workflow_dispatch", "push"])
    policy = _policy(repository_id=REPOSITORY_ID, owner_id=OWNER_ID, verifier=verifier)
    gate = ExpectedWorkflow.verifier_from_policy(policy)
    assert gate == ExpectedWorkflow(
        issuer=GITHUB_ISSUER, repository=REPOSITORY, workflow=GATE, ref=MAIN_REF,
        allowed_triggers=frozenset({"workflow_dispatch", "push"}), runner_environment="github-hosted",
        repository_id=str(REPOSITORY_ID), owner_id=str(OWNER_ID),
    )
    assert gate.signer_uris("verifier") == frozenset({f"https://github.com/{REPOSITORY}/{GATE}@{MAIN_REF}"})
