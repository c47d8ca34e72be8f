"""Checking a certificate's workflow identity against the policy's: each refusal's code and the words a person reads.

``qualify_trust._sigstore_expected`` refuses a certificate whose issuer, repository, ref, signer workflow, build
config, run repository, runner, trigger, commit, numeric ids or file commits are not the policy's, names a
desktop-qualify workflow at another tag or commit apart (``QE_BUILDER_REF_MISMATCH``), refuses a platform statement
signed by another platform's workflow, refuses a predicate whose run claims differ from its certificate's, and refuses
evidence from two runs. Every case here pins the refusal's code and the values its message names. Written for the
mutants of ``qualify_trust._sigstore_expected``'s checks that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, RunIdentity
from desktop_qualify.qualify_trust import GitHubIdentity
from desktop_qualify.qualify_trust._sigstore_expected import (
    GITHUB_ISSUER,
    MAIN_REF,
    ExpectedWorkflow,
    SignerRole,
    check_identity,
    check_platform_signer,
    cross_check_claims,
    same_run,
)

WIM = Code.WORKFLOW_IDENTITY_MISMATCH
REPOSITORY = "acme/desktop"
BUILDER = "dq/desktop-qualify"
TAG = "refs/tags/v1.2.3"
SHA = "a" * 40
BUILDER_COMMIT = "c" * 40
QUALIFY = ".github/workflows/qualify.yml"
SIGNERS = {
    "linux": ".github/workflows/produce-linux.yml",
    "macos": ".github/workflows/produce-macos.yml",
    "windows": ".github/workflows/produce-windows.yml",
    "aggregate": ".github/workflows/aggregate.yml",
}


def _local_uri(workflow: str, ref: str = MAIN_REF) -> str:
    return f"https://github.com/{REPOSITORY}/{workflow}@{ref}"


def _builder_uri(workflow: str, ref: str = TAG) -> str:
    return f"https://github.com/{BUILDER}/{workflow}@{ref}"


EXPECTED = ExpectedWorkflow(
    issuer=GITHUB_ISSUER, repository=REPOSITORY, workflow=QUALIFY, ref=MAIN_REF,
    allowed_triggers=frozenset({"push", "workflow_dispatch"}), runner_environment="github-hosted",
    signers=MappingProxyType(SIGNERS),
)
TEAM = replace(EXPECTED, builder_repository=BUILDER, builder_ref=TAG, builder_commit=BUILDER_COMMIT)

AGGREGATE = GitHubIdentity(
    issuer=GITHUB_ISSUER, san_uri=_local_uri(SIGNERS["aggregate"]), build_signer_uri=_local_uri(SIGNERS["aggregate"]),
    build_signer_digest=SHA, runner_environment="github-hosted", source_repository_uri=f"https://github.com/{REPOSITORY}",
    source_repository_digest=SHA, source_repository_ref=MAIN_REF, build_config_uri=_local_uri(QUALIFY),
    build_trigger="push", run_invocation_uri=f"https://github.com/{REPOSITORY}/actions/runs/7/attempts/1",
    run_repository=REPOSITORY, run_id="7", run_attempt=1,
)
TEAM_AGGREGATE = replace(AGGREGATE, san_uri=_builder_uri(SIGNERS["aggregate"]),
                         build_signer_uri=_builder_uri(SIGNERS["aggregate"]), build_signer_digest=BUILDER_COMMIT)

OTHER_TAG = _builder_uri(SIGNERS["aggregate"], "refs/tags/v9.9.9")

RUN = RunIdentity(mode="github", repository=REPOSITORY, workflow=QUALIFY, ref=MAIN_REF, sha=SHA, run_id="7", attempt=1,
                  trigger="push", runner_environment="github-hosted")


def _refusal(call: Callable[[], object]) -> QualificationError:
    with pytest.raises(QualificationError) as info:
        call()
    return info.value


def _identity_refusal(identity: GitHubIdentity, expected: ExpectedWorkflow = EXPECTED,
                      role: SignerRole = "aggregate") -> QualificationError:
    return _refusal(lambda: check_identity(identity, expected, role))


# --- check_identity: every refusal's code and the values its message names ----------------------------------------

IDENTITY_REFUSALS: list[tuple[str, GitHubIdentity, ExpectedWorkflow, Code, list[str]]] = [
    ("another issuer", replace(AGGREGATE, issuer="https://issuer.example"), EXPECTED, Code.SIGNER_UNTRUSTED,
     ["certificate issuer", "'https://issuer.example'", "not the policy's", repr(GITHUB_ISSUER)]),
    ("another source repository", replace(AGGREGATE, source_repository_uri="https://github.com/acme/desktop-evil"),
     EXPECTED, WIM, ["signed from repository", "'https://github.com/acme/desktop-evil'", "expected",
                     "'https://github.com/acme/desktop'"]),
    ("another source ref", replace(AGGREGATE, source_repository_ref="refs/heads/attacker"), EXPECTED,
     Code.REF_NOT_MAIN, ["signed from ref", "'refs/heads/attacker'", f"only {MAIN_REF} may produce evidence"]),
    ("a SAN that differs from the build signer URI", replace(AGGREGATE, san_uri=_local_uri(SIGNERS["linux"])),
     EXPECTED, WIM, ["certificate SAN", repr(_local_uri(SIGNERS["linux"])), "differs from its build signer URI"]),
    ("another build config workflow", replace(AGGREGATE, build_config_uri=_local_uri(".github/workflows/evil.yml")),
     EXPECTED, WIM, ["run started by workflow", repr(_local_uri(".github/workflows/evil.yml")), "not by",
                     repr(_local_uri(QUALIFY))]),
    ("a run of another repository",
     replace(AGGREGATE, run_repository="evil/desktop",
             run_invocation_uri="https://github.com/evil/desktop/actions/runs/7/attempts/1"),
     EXPECTED, WIM, ["run 'https://github.com/evil/desktop/actions/runs/7/attempts/1'",
                     "belongs to another repository"]),
    ("a self-hosted runner", replace(AGGREGATE, runner_environment="self-hosted"), EXPECTED, WIM,
     ["runner environment 'self-hosted'", "expected 'github-hosted'"]),
    ("a trigger the policy does not allow", replace(AGGREGATE, build_trigger="pull_request_target"), EXPECTED, WIM,
     ["trigger 'pull_request_target'", "is not one the policy allows (push, workflow_dispatch)"]),
    ("another commit than the candidate",
     replace(AGGREGATE, source_repository_digest="b" * 40, build_signer_digest="b" * 40),
     replace(EXPECTED, candidate_sha=SHA), Code.SHA_MISMATCH,
     ["signed at commit", repr("b" * 40), "the candidate is", repr(SHA)]),
    ("another repository id", replace(AGGREGATE, source_repository_identifier="666"),
     replace(EXPECTED, repository_id="42"), WIM, ["repository id '666'", "is not the policy's 42"]),
    ("another owner id", replace(AGGREGATE, source_repository_owner_identifier="666"),
     replace(EXPECTED, owner_id="43"), WIM, ["owner id '666'", "is not the policy's 43"]),
    ("a signer file from another commit", replace(AGGREGATE, build_signer_digest="d" * 40), EXPECTED, WIM,
     ["workflow file from commit", repr("d" * 40), "source commit", repr(SHA)]),
    ("a build config file from another commit", replace(AGGREGATE, build_config_digest="e" * 40), EXPECTED, WIM,
     ["build config from commit", repr("e" * 40), "source commit", repr(SHA)]),
    ("the builder's file at the pinned tag but another commit", replace(TEAM_AGGREGATE, build_signer_digest="f" * 40),
     TEAM, Code.BUILDER_REF_MISMATCH,
     [f"{TAG} signed from commit", repr("f" * 40), f"the policy pins {BUILDER_COMMIT}"]),
    ("the builder's file at another tag", replace(TEAM_AGGREGATE, san_uri=OTHER_TAG, build_signer_uri=OTHER_TAG),
     TEAM, Code.BUILDER_REF_MISMATCH,
     [f"signed by {OTHER_TAG!r}",
      "desktop-qualify's workflow at another version than the policy's", TAG]),
]


@pytest.mark.parametrize(("identity", "expected", "code", "words"), [c[1:] for c in IDENTITY_REFUSALS],
                         ids=[c[0] for c in IDENTITY_REFUSALS])
def test_each_identity_refusal_has_its_code_and_names_the_values(identity: GitHubIdentity, expected: ExpectedWorkflow,
                                                                code: Code, words: list[str]) -> None:
    refusal = _identity_refusal(identity, expected)
    assert refusal.code is code
    for word in words:
        assert word in refusal.message


def test_the_policy_identity_and_the_team_identity_at_the_pinned_commit_pass() -> None:
    check_identity(AGGREGATE, EXPECTED, "aggregate")
    check_identity(TEAM_AGGREGATE, TEAM, "aggregate")
    check_identity(replace(TEAM_AGGREGATE, build_signer_digest="9" * 40), replace(TEAM, builder_commit=None),
                   "aggregate")


def test_an_unpinned_builder_commit_takes_any_signer_commit_but_a_pinned_one_only_its_own() -> None:
    moved = replace(TEAM_AGGREGATE, build_signer_digest="9" * 40)
    check_identity(moved, replace(TEAM, builder_commit=None), "aggregate")
    assert _identity_refusal(moved, TEAM).code is Code.BUILDER_REF_MISMATCH


@pytest.mark.parametrize("role", ["platform", "aggregate"])
def test_the_builders_file_on_a_branch_is_another_version_for_every_role(role: SignerRole) -> None:
    signer = SIGNERS["windows" if role == "platform" else "aggregate"]
    uri = _builder_uri(signer, "refs/heads/main")
    refusal = _identity_refusal(replace(TEAM_AGGREGATE, san_uri=uri, build_signer_uri=uri), TEAM, role)
    assert refusal.code is Code.BUILDER_REF_MISMATCH
    assert repr(uri) in refusal.message


def test_the_producers_own_file_at_another_ref_is_not_one_of_the_policys_signers() -> None:
    uri = _local_uri(SIGNERS["aggregate"], "refs/heads/attacker")
    refusal = _identity_refusal(replace(AGGREGATE, san_uri=uri, build_signer_uri=uri))
    assert refusal.code is WIM
    assert refusal.message == (f"signed by workflow {uri!r}, not by one of the policy's aggregate signers "
                               f"({_local_uri(SIGNERS['aggregate'])})")


def test_a_foreign_file_under_a_builder_is_not_another_version() -> None:
    uri = _builder_uri(".github/workflows/evil.yml")
    refusal = _identity_refusal(replace(TEAM_AGGREGATE, san_uri=uri, build_signer_uri=uri), TEAM)
    assert refusal.code is WIM


def test_an_unknown_platform_signer_lists_every_platform_signer_sorted() -> None:
    uri = _local_uri(".github/workflows/evil.yml")
    refusal = _identity_refusal(replace(AGGREGATE, san_uri=uri, build_signer_uri=uri), role="platform")
    assert refusal.code is WIM
    listed = ", ".join(sorted(_local_uri(SIGNERS[p]) for p in ("linux", "macos", "windows")))
    assert refusal.message == f"signed by workflow {uri!r}, not by one of the policy's platform signers ({listed})"


def test_the_builders_file_at_a_tag_holding_an_at_sign_is_another_version() -> None:
    uri = _builder_uri(SIGNERS["aggregate"], "refs/tags/v1.2.3@evil")
    refusal = _identity_refusal(replace(TEAM_AGGREGATE, san_uri=uri, build_signer_uri=uri), TEAM)
    assert refusal.code is Code.BUILDER_REF_MISMATCH
    assert "desktop-qualify's workflow at another version" in refusal.message


# --- check_platform_signer -------------------------------------------------------------------------------------------

def test_a_platform_statement_signed_by_another_platforms_file_names_both() -> None:
    identity = replace(AGGREGATE, san_uri=_local_uri(SIGNERS["linux"]), build_signer_uri=_local_uri(SIGNERS["linux"]))
    refusal = _refusal(lambda: check_platform_signer(identity, EXPECTED, "macos"))
    assert refusal.code is WIM
    assert refusal.message == (f"a macos statement signed by {_local_uri(SIGNERS['linux'])!r}; "
                               f"only {_local_uri(SIGNERS['macos'])!r} speaks for macos")


def test_an_unknown_platform_is_named_cut_at_forty_characters() -> None:
    platform = "p" * 40 + "Q" * 10
    refusal = _refusal(lambda: check_platform_signer(AGGREGATE, EXPECTED, platform))
    assert refusal.code is Code.PLATFORM_UNKNOWN
    assert refusal.message == f"no signer workflow for platform {'p' * 40!r}"


# --- cross_check_claims: every claim the predicate shares with the certificate ---------------------------------------

CLAIM_REFUSALS: list[tuple[str, GitHubIdentity, RunIdentity, Code, str]] = [
    ("local mode", AGGREGATE, RUN.model_copy(update={"mode": "local"}), WIM,
     "predicate claims 'local' mode but carries a Sigstore signature"),
    ("another repository", replace(AGGREGATE, source_repository_uri="https://github.com/acme/other"), RUN, WIM,
     "predicate claims repository 'acme/desktop'; the certificate says 'https://github.com/acme/other'"),
    ("another workflow", replace(AGGREGATE, build_config_uri=_local_uri(".github/workflows/evil.yml")), RUN, WIM,
     f"predicate claims workflow {QUALIFY!r}@{MAIN_REF!r}; the certificate says "
     f"{_local_uri('.github/workflows/evil.yml')!r}"),
    ("another ref", replace(AGGREGATE, build_config_uri=_local_uri(QUALIFY, "refs/heads/other")),
     RUN.model_copy(update={"ref": "refs/heads/other"}), WIM,
     "predicate claims ref 'refs/heads/other'; the certificate says 'refs/heads/main'"),
    ("another commit", AGGREGATE, RUN.model_copy(update={"sha": "b" * 40}), Code.SHA_MISMATCH,
     f"predicate claims commit {'b' * 40!r}; the certificate says {SHA!r}"),
    ("another run attempt", AGGREGATE, RUN.model_copy(update={"attempt": 2}), Code.RUN_MISMATCH,
     "predicate claims run '7' attempt 2; the certificate says run '7' attempt 1"),
    ("another trigger", AGGREGATE, RUN.model_copy(update={"trigger": "schedule"}), WIM,
     "predicate claims trigger 'schedule'; the certificate says 'push'"),
    ("another runner", AGGREGATE, RUN.model_copy(update={"runner_environment": "self-hosted"}), WIM,
     "predicate claims runner 'self-hosted'; the certificate says 'github-hosted'"),
]


@pytest.mark.parametrize(("identity", "run", "code", "message"), [c[1:] for c in CLAIM_REFUSALS],
                         ids=[c[0] for c in CLAIM_REFUSALS])
def test_each_predicate_claim_differing_from_the_certificate_is_refused_naming_both(
        identity: GitHubIdentity, run: RunIdentity, code: Code, message: str) -> None:
    refusal = _refusal(lambda: cross_check_claims(identity, run))
    assert refusal.code is code
    assert refusal.message == message


def test_a_predicate_agreeing_with_its_certificate_passes() -> None:
    cross_check_claims(AGGREGATE, RUN)


# --- same_run --------------------------------------------------------------------------------------------------------

OTHER_RUN = replace(AGGREGATE, run_id="8", run_invocation_uri=f"https://github.com/{REPOSITORY}/actions/runs/8/attempts/1")


def test_no_identity_is_api_misuse_named_as_such() -> None:
    refusal = _refusal(lambda: same_run([]))
    assert refusal.code is Code.USAGE
    assert refusal.message == "same_run() needs at least one identity"


def test_one_identity_is_its_own_run() -> None:
    assert same_run([OTHER_RUN]) == ("8", 1)


@pytest.mark.parametrize("identities", [[AGGREGATE, OTHER_RUN], [AGGREGATE, AGGREGATE, OTHER_RUN]],
                         ids=["the second of two", "the third of three"])
def test_evidence_from_two_runs_is_refused_naming_both_runs(identities: list[GitHubIdentity]) -> None:
    refusal = _refusal(lambda: same_run(identities))
    assert refusal.code is Code.RUN_MISMATCH
    assert refusal.message == (f"evidence from two runs: {AGGREGATE.run_invocation_uri!r} and "
                               f"{OTHER_RUN.run_invocation_uri!r}")
    assert refusal.hint == "all platform statements and the aggregate must come from one run attempt"


def test_identities_of_one_run_give_its_id_and_attempt() -> None:
    assert same_run([AGGREGATE, AGGREGATE, AGGREGATE]) == ("7", 1)
