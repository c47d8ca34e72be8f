"""Keyless signing: refused without GitHub's OIDC credential; in GitHub Actions, signed and read back."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest
from desktop_qualify.evidence_schemas import (
    IN_TOTO_PAYLOAD_TYPE,
    IN_TOTO_STATEMENT_TYPE,
    Code,
    QualificationError,
    canonical_bytes,
)
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow
from desktop_qualify.qualify_trust._sigstore_root import load_pinned_trusted_root
from desktop_qualify.qualify_trust._sigstore_sign import sign_artifact_bundle, sign_dsse_statement
from desktop_qualify.qualify_trust._sigstore_verify import verify_dsse_bundle
from desktop_qualify.qualify_trust.sigstore import verify_artifact_bundle
from sigstore_vectors import PRODUCTION_ROOT, PRODUCTION_SHA256

_STATEMENT = canonical_bytes({
    "_type": IN_TOTO_STATEMENT_TYPE,
    "subject": [{"name": "probe.txt", "digest": {"sha256": "a" * 64}}],
    "predicateType": "https://desktop-qualify.dev/test/v1",
    "predicate": {"note": "qualify_trust sigstore signing test"},
})


@pytest.mark.parametrize(
    "env",
    [{}, {"GITHUB_ACTIONS": "true"}, {"GITHUB_ACTIONS": "false", "ACTIONS_ID_TOKEN_REQUEST_URL": "http://127.0.0.1:9"}],
    ids=["no CI", "Actions without id-token permission", "not Actions"],
)
def test_signing_outside_github_actions_is_an_environment_error(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    signers: list[Callable[[], bytes]] = [
        lambda: sign_dsse_statement(_STATEMENT),
        lambda: sign_artifact_bundle("b" * 64),
    ]
    for sign in signers:
        with pytest.raises(QualificationError) as info:
            sign()
        assert info.value.code is Code.ENVIRONMENT
        assert info.value.exit_status == 2
        assert "id-token: write" in (info.value.hint or "")


def test_artifact_digest_is_checked_before_any_request() -> None:
    with pytest.raises(QualificationError) as info:
        sign_artifact_bundle("B" * 64)
    assert info.value.code is Code.USAGE


@pytest.mark.github_actions
@pytest.mark.skipif(os.environ.get("GITHUB_ACTIONS") != "true", reason="needs a GitHub Actions OIDC token")
def test_sign_in_github_actions_and_read_back() -> None:
    bundle = sign_dsse_statement(_STATEMENT)
    assert json.loads(bundle)["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    root = load_pinned_trusted_root(PRODUCTION_ROOT, PRODUCTION_SHA256)
    workflow_ref = os.environ["GITHUB_WORKFLOW_REF"]  # OWNER/REPO/.github/workflows/FILE@REF
    repository = os.environ["GITHUB_REPOSITORY"]
    workflow = workflow_ref.removeprefix(f"{repository}/").split("@", 1)[0]
    expected = ExpectedWorkflow(
        issuer="https://token.actions.githubusercontent.com",
        repository=repository,
        workflow=workflow,
        ref="refs/heads/main",
        allowed_triggers=frozenset({os.environ["GITHUB_EVENT_NAME"]}),
        runner_environment=os.environ.get("RUNNER_ENVIRONMENT", "github-hosted"),
        candidate_sha=os.environ["GITHUB_SHA"],
    )
    artifact_bundle = sign_artifact_bundle("b" * 64)
    if os.environ.get("GITHUB_REF") != "refs/heads/main":
        with pytest.raises(QualificationError) as info:
            verify_dsse_bundle(bundle, root, expected, "signed bundle")
        assert info.value.code is Code.REF_NOT_MAIN
        return
    verified = verify_dsse_bundle(bundle, root, expected, "signed bundle")
    assert verified.payload == _STATEMENT
    assert verified.payload_type == IN_TOTO_PAYLOAD_TYPE
    assert verified.identity.run_id == os.environ["GITHUB_RUN_ID"]
    assert verified.identity.run_attempt == int(os.environ["GITHUB_RUN_ATTEMPT"])
    covered = verify_artifact_bundle(artifact_bundle, "b" * 64, root, expected, what="artifact bundle")
    assert covered.identity == verified.identity
