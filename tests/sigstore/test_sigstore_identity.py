"""The exact workflow identity check, attack by attack (each case names its code)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, RunIdentity
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import GitHubIdentity, cross_check_claims, same_run
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow, SignerRole, check_identity
from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate
from fulcio_certs import REPO, RUN_ID, SHA, WORKFLOW, Claims, der_utf8, make_certificate

WIM = Code.WORKFLOW_IDENTITY_MISMATCH
MAIN_URI = f"https://github.com/{REPO}/{WORKFLOW}@refs/heads/main"


# The release policy's aggregate signer: a reusable workflow of its own, called by qualify.yml.
AGGREGATE = ".github/workflows/aggregate.yml"


def _identity(claims: Claims) -> GitHubIdentity:
    return identity_from_certificate(make_certificate(claims))


def _as_aggregate(claims: Claims) -> Claims:
    """The aggregate job's certificate for these claims: aggregate.yml (.9), unless the case names a signer."""
    return claims if claims.signer is not None else claims.with_(signer=AGGREGATE)


def _refused(claims: Claims, expected: ExpectedWorkflow, role: SignerRole = "aggregate") -> Code:
    with pytest.raises(QualificationError) as info:
        check_identity(_identity(_as_aggregate(claims) if role == "aggregate" else claims), expected, role)
    return info.value.code


def test_the_aggregate_workflow_called_by_the_policy_workflow_is_accepted(
        release_expected: ExpectedWorkflow) -> None:
    identity = _identity(_as_aggregate(Claims()))
    check_identity(identity, release_expected, "aggregate")
    assert identity.build_signer_uri == f"https://github.com/{REPO}/{AGGREGATE}@refs/heads/main"
    assert identity.build_config_uri == MAIN_URI
    assert (identity.run_repository, identity.run_id, identity.run_attempt) == (REPO, RUN_ID, 1)


def test_candidate_sha_binds_the_commit(release_expected: ExpectedWorkflow) -> None:
    check_identity(_identity(_as_aggregate(Claims())), replace(release_expected, candidate_sha=SHA), "aggregate")


ATTACKS: list[tuple[str, Claims, Code]] = [
    ("lookalike repository suffix", Claims(repository=f"{REPO}-evil"), WIM),
    ("lookalike owner suffix", Claims(repository="desktop-qualify-evil/desktop-qualify"), WIM),
    ("repository case variant", Claims(repository="Desktop-Qualify/desktop-qualify"), WIM),
    ("workflow file name extended", Claims(workflow=f"{WORKFLOW}.attacker.yml"), WIM),
    ("another workflow in the same repository", Claims(workflow=".github/workflows/other.yml"),
     WIM),
    ("workflow at another branch, source on main",
     Claims(overrides={"9": f"https://github.com/{REPO}/{WORKFLOW}@refs/heads/attacker",
                       "18": f"https://github.com/{REPO}/{WORKFLOW}@refs/heads/attacker"},
            san_uris=(f"https://github.com/{REPO}/{WORKFLOW}@refs/heads/attacker",)),
     WIM),
    ("main@refs/heads/attacker suffix trick",
     Claims(overrides={"9": f"{MAIN_URI}@refs/heads/attacker", "18": f"{MAIN_URI}@refs/heads/attacker"},
            san_uris=(f"{MAIN_URI}@refs/heads/attacker",)),
     WIM),
    ("branch named main@refs/heads/attacker", Claims(ref="refs/heads/main@refs/heads/attacker"), Code.REF_NOT_MAIN),
    ("branch below main", Claims(ref="refs/heads/main/attacker"), Code.REF_NOT_MAIN),
    ("v* tag at the same commit", Claims(ref="refs/tags/v1.0.0"), Code.REF_NOT_MAIN),
    ("another branch", Claims(ref="refs/heads/release"), Code.REF_NOT_MAIN),
    ("workflow at the tag, source ref main",
     Claims(overrides={"9": f"https://github.com/{REPO}/{WORKFLOW}@refs/tags/v1.0.0"},
            san_uris=(f"https://github.com/{REPO}/{WORKFLOW}@refs/tags/v1.0.0",)),
     WIM),
    ("our workflow called as reusable by another workflow",
     Claims(overrides={"18": f"https://github.com/{REPO}/.github/workflows/evil.yml@refs/heads/main"}),
     WIM),
    ("disallowed trigger", Claims(trigger="pull_request_target"), WIM),
    ("self-hosted runner", Claims(runner="self-hosted"), WIM),
    ("lookalike issuer", Claims(issuer="https://token.actions.githubusercontent.com.evil"), Code.SIGNER_UNTRUSTED),
    ("another issuer", Claims(issuer="https://accounts.google.com"), Code.SIGNER_UNTRUSTED),
    ("repository URI with a trailing slash", Claims(overrides={"12": f"https://github.com/{REPO}/"}),
     WIM),
    ("repository URI over http", Claims(overrides={"12": f"http://github.com/{REPO}"}), WIM),
    ("SAN differs from the build signer", Claims(san_uris=(f"https://github.com/{REPO}-evil/{WORKFLOW}@refs/heads/main",)),
     WIM),
    ("two SAN URIs", Claims(san_uris=(MAIN_URI, f"https://github.com/{REPO}-evil/x")), WIM),
    ("run of another repository",
     Claims(overrides={"21": f"https://github.com/{REPO}-evil/actions/runs/{RUN_ID}/attempts/1"}),
     WIM),
    ("workflow file from another commit", Claims(overrides={"10": "f" * 40}), WIM),
]


@pytest.mark.parametrize(("claims", "code"), [(c, k) for _, c, k in ATTACKS], ids=[n for n, _, _ in ATTACKS])
def test_identity_attack_is_refused(claims: Claims, code: Code, release_expected: ExpectedWorkflow) -> None:
    assert _refused(claims, release_expected) is code


def test_sha_one_character_off_is_a_sha_mismatch(release_expected: ExpectedWorkflow) -> None:
    off = SHA[:-1] + ("8" if SHA[-1] != "8" else "9")
    expected = replace(release_expected, candidate_sha=off)
    assert _refused(Claims(), expected) is Code.SHA_MISMATCH


MALFORMED: list[tuple[str, Claims, Code]] = [
    ("run URI with a trailing segment",
     Claims(overrides={"21": f"https://github.com/{REPO}/actions/runs/{RUN_ID}/attempts/1/x"}),
     WIM),
    ("run URI with attempt 0", Claims(overrides={"21": f"https://github.com/{REPO}/actions/runs/{RUN_ID}/attempts/0"}),
     WIM),
    ("run URI with a leading zero", Claims(overrides={"21": f"https://github.com/{REPO}/actions/runs/0{RUN_ID}/attempts/1"}),
     WIM),
    ("run URI with a newline", Claims(overrides={"21": f"https://github.com/{REPO}/actions/runs/{RUN_ID}/attempts/1\n"}),
     WIM),
    ("run URI not on github.com",
     Claims(overrides={"21": f"https://github.com.evil/{REPO}/actions/runs/{RUN_ID}/attempts/1"}),
     WIM),
    ("no run invocation URI", Claims(omit=frozenset({"21"})), WIM),
    ("no build signer URI", Claims(omit=frozenset({"9"})), WIM),
    ("no v2 issuer", Claims(omit=frozenset({"8"})), Code.SIGNER_UNTRUSTED),
    ("no SAN", Claims(san_uris=()), WIM),
    ("issuer as a raw (v1-style) string", Claims(raw_extensions={"8": b"https://token.actions.githubusercontent.com"}),
     WIM),
    ("PrintableString instead of UTF8String", Claims(raw_extensions={"14": b"\x13\x0frefs/heads/main"}),
     WIM),
    ("trailing bytes after the string", Claims(raw_extensions={"14": der_utf8("refs/heads/main") + b"\x00"}),
     WIM),
    ("non-minimal DER length", Claims(raw_extensions={"14": b"\x0c\x81\x0frefs/heads/main"}),
     WIM),
    ("length longer than the value", Claims(raw_extensions={"14": b"\x0c\x20refs/heads/main"}),
     WIM),
    ("invalid UTF-8", Claims(raw_extensions={"20": b"\x0c\x02\xff\xfe"}), WIM),
]


@pytest.mark.parametrize(("claims", "code"), [(c, k) for _, c, k in MALFORMED], ids=[n for n, _, _ in MALFORMED])
def test_malformed_certificate_identity_is_refused(claims: Claims, code: Code) -> None:
    with pytest.raises(QualificationError) as info:
        identity_from_certificate(make_certificate(claims))
    assert info.value.code is code


def _run(**changes: object) -> RunIdentity:
    values: dict[str, object] = {
        "mode": "github", "repository": REPO, "workflow": WORKFLOW, "ref": "refs/heads/main", "sha": SHA,
        "run_id": RUN_ID, "attempt": 1, "trigger": "push", "runner_environment": "github-hosted",
    }
    values.update(changes)
    return RunIdentity.model_validate(values)


def test_claims_equal_to_the_certificate_pass() -> None:
    cross_check_claims(_identity(Claims()), _run())


CLAIMS: list[tuple[str, dict[str, object], Code]] = [
    ("repository", {"repository": f"{REPO}-evil"}, WIM),
    ("workflow", {"workflow": ".github/workflows/other.yml"}, WIM),
    ("ref", {"ref": "refs/tags/v1.0.0"}, WIM),
    ("sha", {"sha": "f" * 40}, Code.SHA_MISMATCH),
    ("run id", {"run_id": "9876543211"}, Code.RUN_MISMATCH),
    ("attempt", {"attempt": 2}, Code.RUN_MISMATCH),
    ("trigger", {"trigger": "workflow_dispatch"}, WIM),
    ("runner", {"runner_environment": "self-hosted"}, WIM),
    ("local mode under a certificate", {"mode": "local"}, WIM),
]


@pytest.mark.parametrize(("changes", "code"), [(c, k) for _, c, k in CLAIMS], ids=[n for n, _, _ in CLAIMS])
def test_payload_claim_disagreeing_with_its_certificate_is_refused(changes: dict[str, object], code: Code) -> None:
    with pytest.raises(QualificationError) as info:
        cross_check_claims(_identity(Claims()), _run(**changes))
    assert info.value.code is code


def test_same_run_accepts_one_run_attempt() -> None:
    identities = [_identity(Claims()), _identity(Claims(trigger="workflow_dispatch"))]
    assert same_run(identities) == (RUN_ID, 1)


@pytest.mark.parametrize(
    "other",
    [Claims(attempt=2), Claims(run_id="9876543211"), Claims(repository=f"{REPO}-fork")],
    ids=["two attempts of one run", "two runs", "same run id in another repository"],
)
def test_same_run_refuses_mixed_runs(other: Claims) -> None:
    with pytest.raises(QualificationError) as info:
        same_run([_identity(Claims()), _identity(Claims()), _identity(other)])
    assert info.value.code is Code.RUN_MISMATCH


def test_same_run_refuses_an_empty_list() -> None:
    with pytest.raises(QualificationError) as info:
        same_run([])
    assert info.value.code is Code.USAGE


@pytest.mark.parametrize(
    ("changes", "code"),
    [({"ref": "refs/tags/v1"}, Code.POLICY_INVALID), ({"allowed_triggers": frozenset()}, Code.POLICY_INVALID),
     ({"candidate_sha": SHA.upper()}, Code.USAGE), ({"candidate_sha": SHA[:-1]}, Code.USAGE)],
    ids=["tag ref", "no triggers", "uppercase sha", "short sha"],
)
def test_expected_workflow_refuses_a_bad_definition(
    changes: dict[str, object], code: Code, release_expected: ExpectedWorkflow
) -> None:
    with pytest.raises(QualificationError) as info:
        replace(release_expected, **changes)  # type: ignore[arg-type]
    assert info.value.code is code


def test_expected_workflow_comes_from_the_policy(release_expected: ExpectedWorkflow) -> None:
    assert release_expected.repository_uri == f"https://github.com/{REPO}"
    assert release_expected.workflow_uri == MAIN_URI
    assert release_expected.allowed_triggers == frozenset({"push", "workflow_dispatch"})
    assert release_expected.runner_environment == "github-hosted"
    assert release_expected.candidate_sha is None


def test_a_local_policy_has_no_expected_workflow() -> None:
    local = Path(__file__).resolve().parents[2] / "policies" / "local.toml"
    with pytest.raises(QualificationError) as info:
        ExpectedWorkflow.from_policy(load_policy(local))
    assert info.value.code is Code.POLICY_INVALID


@pytest.mark.parametrize(("extensions", "accepted"), [
    ({"15": "1234", "17": "99"}, True),
    ({"15": "4321", "17": "99"}, False),  # same name, another repository
    ({"15": "1234", "17": "98"}, False),  # same name, another owner
    ({}, False),  # a certificate without the ids cannot satisfy a policy that pins them
])
def test_pinned_numeric_ids_refuse_a_name_takeover(release_expected: ExpectedWorkflow,
                                                  extensions: dict[str, str], accepted: bool) -> None:
    from desktop_qualify.qualify_trust._sigstore_expected import check_identity
    from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate

    pinned = replace(release_expected, repository_id="1234", owner_id="99")
    claims = _as_aggregate(Claims(overrides=extensions))  # arcs under 1.3.6.1.4.1.57264.1
    identity = identity_from_certificate(make_certificate(claims))
    if accepted:
        check_identity(identity, pinned, "aggregate")
        check_identity(identity, release_expected, "aggregate")  # unpinned policies ignore the ids
    else:
        with pytest.raises(QualificationError) as refused:
            check_identity(identity, pinned, "aggregate")
        assert refused.value.code is Code.WORKFLOW_IDENTITY_MISMATCH
