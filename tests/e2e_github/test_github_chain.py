"""GitHub mode end to end, offline: gate, build, Sigstore signing, aggregate, verify."""

from __future__ import annotations

import base64
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, canonical_bytes
from desktop_qualify.qualify_trust import GitHubIdentity
from desktop_qualify.qualify_verify import verify_release
from support.github_chain import GitHubChain, NoSigner, platform_identity, run_job_env, sign_job_env

from desktop_qualify import producer, qualify_cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="builds the linux bundle")]


def _verify(chain: GitHubChain, evidence: Path, *extra: str) -> int:
    args = ["verify", "--policy", str(chain.policy.path), "--evidence", str(evidence)]
    for artifact in chain.artifacts:
        args += ["--artifact", str(artifact)]
    return qualify_cli.main([*args, *extra])


def test_github_mode_chain_is_qualified(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    code = _verify(github_chain, github_chain.evidence, "--sha", github_chain.sha)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "QUALIFIED" in out
    names = sorted(p.name for p in github_chain.evidence.iterdir())
    assert names == ["aggregate.sigstore.json", "platform-linux.sigstore.json", "provenance-linux.sigstore.json"]


def test_the_provenance_is_signed_by_the_linux_job_and_names_it_as_builder(github_chain: GitHubChain) -> None:
    """The GitHub-mode provenance: the signer workflow is the builder, the run attempt the invocation, and it is
    SLSA Provenance v1 by the in-toto framework's definitions."""
    from support.slsa_format import check_slsa_provenance

    verdict = verify_release(github_chain.policy, [github_chain.evidence], github_chain.artifacts)
    assert verdict.qualified, verdict.reasons
    provenance = verdict.provenance["linux"]
    signer = "https://github.com/acme/desktop/.github/workflows/produce-linux.yml@refs/heads/main"
    assert provenance.signed.signer.name == signer
    details = provenance.statement.predicate.runDetails
    assert details.builder.id == signer
    assert details.metadata.invocationId == \
        f"https://github.com/acme/desktop/actions/runs/{github_chain.identity.run_id}/attempts/1"
    check_slsa_provenance(provenance.signed.payload)


def test_gate_observed_protected_main_through_the_api(github_chain: GitHubChain) -> None:
    # Once by the run job's gate, and once more by the sign job just before the statement was signed.
    assert (github_chain.head_reads_by_run_job, github_chain.head_reads_by_sign_job) == (1, 1)
    verdict = verify_release(github_chain.policy, [github_chain.evidence], github_chain.artifacts)
    (vp,) = verdict.platforms
    gate = vp.statement.predicate.source_gate
    assert gate.mode == "github"
    assert gate.protection == "protected"
    # The linux job's own identity: its reusable workflow (.9/SAN), called by qualify.yml (.18).
    assert vp.signed.signer.name == "https://github.com/acme/desktop/.github/workflows/produce-linux.yml@refs/heads/main"
    claims = vp.signed.signer.claims
    assert isinstance(claims, GitHubIdentity)
    assert claims.build_config_uri == "https://github.com/acme/desktop/.github/workflows/qualify.yml@refs/heads/main"


def test_another_candidate_sha_is_refused(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    code = _verify(github_chain, github_chain.evidence, "--sha", "f" * 40)
    assert code == 1
    assert Code.SHA_MISMATCH.value in capsys.readouterr().out


def _replace_platform_statement(chain: GitHubChain, target: Path, signer_identity, mutate=None) -> None:  # type: ignore[no-untyped-def]
    """Re-sign the platform statement's exact payload (optionally changed) under another identity."""
    name = "platform-linux.sigstore.json"
    bundle = json.loads((chain.evidence / name).read_bytes())
    payload = base64.b64decode(bundle["dsseEnvelope"]["payload"])
    if mutate is not None:
        statement = json.loads(payload)
        mutate(statement)
        payload = canonical_bytes(statement)
    (target / name).write_bytes(chain.signer(signer_identity).sign_statement(payload))


@pytest.mark.parametrize(("identity_change", "code"), [
    ({"repository": "acme/desktop-evil"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"workflow": ".github/workflows/other.yml"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"ref": "refs/tags/v1.0"}, Code.REF_NOT_MAIN),
    ({"trigger": "pull_request"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"runner_environment": "self-hosted"}, Code.WORKFLOW_IDENTITY_MISMATCH),
    ({"attempt": 2}, Code.RUN_MISMATCH),
])
def test_statement_from_another_identity_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str], identity_change: dict,  # type: ignore[type-arg]
                                                    code: Code) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)
    _replace_platform_statement(github_chain, evidence, replace(github_chain.identity, **identity_change))
    assert _verify(github_chain, evidence) == 1
    assert code.value in capsys.readouterr().out


@pytest.mark.parametrize("forger", ["macos", "windows", "aggregate"])
def test_linux_statement_signed_with_another_jobs_identity_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      forger: str) -> None:
    """A compromised macOS (or Windows, or aggregate) job signs the exact linux statement: refused."""
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)
    identity = (github_chain.aggregate_identity if forger == "aggregate"
                else platform_identity(github_chain.identity, forger))
    _replace_platform_statement(github_chain, evidence, identity)
    assert _verify(github_chain, evidence, "--sha", github_chain.sha) == 1
    out = capsys.readouterr().out
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in out
    assert "REJECTED" in out


def test_aggregate_signed_with_a_platform_jobs_identity_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)
    name = "aggregate.sigstore.json"
    payload = base64.b64decode(json.loads((evidence / name).read_bytes())["dsseEnvelope"]["payload"])
    (evidence / name).write_bytes(github_chain.signer(github_chain.identity).sign_statement(payload))
    assert _verify(github_chain, evidence, "--sha", github_chain.sha) == 1
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in capsys.readouterr().out


def test_payload_claim_disagreeing_with_its_certificate_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)

    def claim_other_run(statement: dict) -> None:  # type: ignore[type-arg]
        statement["predicate"]["run"]["run_id"] = "9999"

    # Signed by the right workflow identity, but the payload lies about the run.
    _replace_platform_statement(github_chain, evidence, github_chain.identity, claim_other_run)
    assert _verify(github_chain, evidence) == 1
    assert Code.RUN_MISMATCH.value in capsys.readouterr().out


def test_bundle_from_another_sigstore_instance_is_refused(github_chain: GitHubChain, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from support.sigstore_instance import TestSigstoreInstance

    other = TestSigstoreInstance(tmp_path / "other")
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)
    name = "platform-linux.sigstore.json"
    payload = base64.b64decode(json.loads((evidence / name).read_bytes())["dsseEnvelope"]["payload"])
    who = github_chain.identity
    (evidence / name).write_bytes(other.issue_dsse_bundle(payload, extensions=who.extensions, san_uri=who.san_uri))
    assert _verify(github_chain, evidence) == 1
    assert Code.SIGNATURE_INVALID.value in capsys.readouterr().out


@pytest.mark.parametrize(("env_change", "code"), [
    ({"GITHUB_REF": "refs/tags/v1.0",
      "GITHUB_WORKFLOW_REF": "acme/desktop/.github/workflows/qualify.yml@refs/tags/v1.0"}, Code.REF_NOT_MAIN),
    ({"GITHUB_REF": "refs/heads/release"}, Code.REF_NOT_MAIN),
    ({"GITHUB_SHA": "0" * 40}, Code.NOT_MAIN_HEAD),
])
def test_producer_refuses_a_wrong_ref_or_an_old_head(github_chain: GitHubChain, tmp_path: Path,
                                                     env_change: dict[str, str], code: Code) -> None:
    from desktop_qualify.evidence_schemas import QualificationError

    # The run job's gate refuses before anything runs: no unsigned run, no artifact, nothing to sign.
    with pytest.raises(QualificationError) as refused:
        producer.produce(github_chain.policy, "linux", tmp_path / "out",
                         env=run_job_env({**github_chain.env, **env_change}), signer=NoSigner(), sign=False)
    assert refused.value.code is code
    assert not (tmp_path / "out" / "unsigned").exists()
    assert not (tmp_path / "out" / "evidence").exists()


def test_the_run_job_signed_nothing_and_handed_on_only_its_run(github_chain: GitHubChain) -> None:
    """The run job (no OIDC variable, a signer that fails on any use) wrote no evidence; the sign job got its run."""
    jobs = github_chain.jobs["linux"]
    assert not (jobs.run_out / "evidence").exists() or not any((jobs.run_out / "evidence").iterdir())
    assert sorted(p.name for p in jobs.run_in.iterdir()) == ["artifacts", "unsigned"]
    assert [p.name for p in (jobs.run_in / "unsigned").iterdir()] == ["platform-linux.run.json"]
    # The artifact the sign job signed is byte for byte the one the run job built.
    (built,) = (jobs.run_out / "artifacts").iterdir()
    (signed,) = github_chain.artifacts
    assert built.read_bytes() == signed.read_bytes()


def _sign_again(chain: GitHubChain, run_in: Path, out: Path, **env_change: str) -> None:
    env = {**sign_job_env(chain.env, chain.emulator.api_url), **env_change}
    producer.sign_run(chain.policy, "linux", run_in, out, env=env, signer=chain.signer())


def _copy_of_the_run(chain: GitHubChain, tmp_path: Path) -> Path:
    run_in = tmp_path / "run"
    shutil.copytree(chain.jobs["linux"].run_in, run_in)
    return run_in


@pytest.mark.parametrize(("env_change", "code"), [
    # "re-run failed jobs": the sign job of attempt 2 on attempt 1's run.
    ({"GITHUB_RUN_ATTEMPT": "2"}, Code.UNSIGNED_RUN_INVALID),
    ({"GITHUB_RUN_ID": "4243"}, Code.UNSIGNED_RUN_INVALID),  # another run's sign job
    # A sign job of another workflow is refused on its own context first, as the gate refuses it.
    ({"GITHUB_WORKFLOW_REF": "acme/desktop/.github/workflows/other.yml@refs/heads/main"},
     Code.WORKFLOW_IDENTITY_MISMATCH),
])
def test_the_sign_job_refuses_a_run_its_own_context_does_not_match(github_chain: GitHubChain, tmp_path: Path,
                                                                  env_change: dict[str, str], code: Code) -> None:
    from desktop_qualify.evidence_schemas import QualificationError

    with pytest.raises(QualificationError) as refused:
        _sign_again(github_chain, _copy_of_the_run(github_chain, tmp_path), tmp_path / "out", **env_change)
    assert refused.value.code is code
    assert not (tmp_path / "out" / "evidence").exists()


def test_the_sign_job_refuses_an_artifact_the_run_did_not_build(github_chain: GitHubChain, tmp_path: Path) -> None:
    from desktop_qualify.evidence_schemas import QualificationError

    run_in = _copy_of_the_run(github_chain, tmp_path)
    (artifact,) = (run_in / "artifacts").iterdir()
    artifact.write_bytes(artifact.read_bytes() + b"\0")
    with pytest.raises(QualificationError) as refused:
        _sign_again(github_chain, run_in, tmp_path / "out")
    assert refused.value.code is Code.ARTIFACT_DIGEST_MISMATCH
    assert not (tmp_path / "out" / "evidence").exists()


def test_the_sign_job_refuses_once_main_moved_on_after_the_run(github_chain: GitHubChain, tmp_path: Path) -> None:
    from desktop_qualify.evidence_schemas import QualificationError

    branches = github_chain.emulator.repo("acme/desktop").branches
    original = branches["main"]
    branches["main"] = replace(original, sha="1" * 40)
    try:
        with pytest.raises(QualificationError) as refused:
            _sign_again(github_chain, _copy_of_the_run(github_chain, tmp_path), tmp_path / "out")
    finally:
        branches["main"] = original
    assert refused.value.code is Code.NOT_MAIN_HEAD
    assert not (tmp_path / "out" / "evidence").exists()


def test_release_gate_refuses_once_main_has_moved_on(github_chain: GitHubChain,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    branches = github_chain.emulator.repo("acme/desktop").branches
    original = branches["main"]
    branches["main"] = replace(original, sha="1" * 40)
    try:
        code = _verify(github_chain, github_chain.evidence)
    finally:
        branches["main"] = original
    assert code == 1
    assert Code.NOT_MAIN_HEAD.value in capsys.readouterr().out


def test_audit_does_not_require_main_head(github_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    branches = github_chain.emulator.repo("acme/desktop").branches
    original = branches["main"]
    branches["main"] = replace(original, sha="1" * 40)
    try:
        code = qualify_cli.main(["audit", "--policy", str(github_chain.policy.path), "--evidence",
                                 str(github_chain.evidence)])
    finally:
        branches["main"] = original
    assert code == 0, capsys.readouterr().out


def test_failed_build_claim_is_refused_even_when_validly_signed(github_chain: GitHubChain, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(github_chain.evidence, evidence)

    def build_failed(statement: dict) -> None:  # type: ignore[type-arg]
        statement["predicate"]["build"]["passed"] = False

    _replace_platform_statement(github_chain, evidence, github_chain.identity, build_failed)
    assert _verify(github_chain, evidence) == 1
    out = capsys.readouterr().out
    assert Code.BUILD_FAILED.value in out
    assert Code.AGGREGATE_MISMATCH.value in out


def test_another_signed_statement_cannot_stand_in_for_the_artifact_signature(github_chain: GitHubChain) -> None:
    """The platform statement names the artifact too, but it is not an artifact-signature statement."""
    from desktop_qualify.qualify_trust import ArtifactSignature, verifier_for

    verifier = verifier_for(github_chain.policy)
    (vp,) = verify_release(github_chain.policy, [github_chain.evidence], github_chain.artifacts).platforms
    sig = vp.statement.predicate.signature
    artifact = vp.statement.predicate.build.artifact.sha256
    genuine = ArtifactSignature(sig.method, sig.keyid, sig.signature)
    assert verifier.verify_artifact_signature(artifact, genuine)
    statement_bundle = (github_chain.evidence / "platform-linux.sigstore.json").read_text()
    stand_in = ArtifactSignature("sigstore-bundle", vp.signed.signer.keyid, statement_bundle)
    assert not verifier.verify_artifact_signature(artifact, stand_in)
