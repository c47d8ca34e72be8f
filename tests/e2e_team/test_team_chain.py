"""A team's repository qualified by desktop-qualify's reusable workflows at a tag, end to end and offline.

The builder identity is desktop-qualify's workflow at refs/tags/vX.Y.Z (build signer URI, .9, and its commit,
.10); the source is the team's repository, main and commit (.12 to .14). The policy pins both, and the
verifier checks both: another tag, another commit behind the tag, another team's repository and the team's
own copy of the workflows are each refused with a stable code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_trust import GitHubIdentity, vsa_verifier_for
from desktop_qualify.qualify_verify import verify_release
from support.github_chain import GitHubChain
from support.github_team import BUILDER_REF, BUILDER_REPOSITORY, TEAM_REPOSITORY, gate_identity, team_identity

from desktop_qualify import qualify_cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="builds the linux bundle")]

BUILDER = f"https://github.com/{BUILDER_REPOSITORY}/.github/workflows"


def _verify(chain: GitHubChain, evidence: Path, *extra: str) -> int:
    args = ["verify", "--policy", str(chain.policy.path), "--evidence", str(evidence), "--sha", chain.sha]
    for artifact in chain.artifacts:
        args += ["--artifact", str(artifact)]
    return qualify_cli.main([*args, *extra])


def _resign(chain: GitHubChain, target: Path, name: str, identity: GitHubIdentity) -> None:
    """The statement's exact payload, signed again under ``identity`` (a Fulcio certificate of that job)."""
    payload = base64.b64decode(json.loads((chain.evidence / name).read_bytes())["dsseEnvelope"]["payload"])
    (target / name).write_bytes(chain.signer(identity).sign_statement(payload))


def test_the_team_is_qualified_by_the_builders_workflows_at_the_tag(
        team_chain: GitHubChain, capsys: pytest.CaptureFixture[str]) -> None:
    code = _verify(team_chain, team_chain.evidence)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "QUALIFIED" in out
    verdict = verify_release(team_chain.policy, [team_chain.evidence], team_chain.artifacts,
                             candidate_sha=team_chain.sha)
    assert verdict.qualified, verdict.reasons
    (platform,) = verdict.platforms
    # The builder: desktop-qualify's file at the tag. The source: the team's repository, main, commit.
    assert platform.signed.signer.name == f"{BUILDER}/produce-linux.yml@{BUILDER_REF}"
    claims = platform.signed.signer.claims
    assert isinstance(claims, GitHubIdentity)
    assert claims.source_repository_uri == f"https://github.com/{TEAM_REPOSITORY}"
    assert (claims.source_repository_ref, claims.source_repository_digest) == ("refs/heads/main", team_chain.sha)
    assert claims.build_config_uri == f"https://github.com/{TEAM_REPOSITORY}/.github/workflows/qualify.yml" \
                                      "@refs/heads/main"
    assert verdict.provenance["linux"].statement.predicate.runDetails.builder.id == platform.signed.signer.name


@pytest.mark.parametrize("statement", [("platform-linux.sigstore.json", "linux"),
                                       ("aggregate.sigstore.json", "aggregate")], ids=["platform", "aggregate"])
@pytest.mark.parametrize("refusal", [
    # The same workflow file of the same builder, called at another tag: a version the policy does not pin.
    ({"tag_ref": "refs/tags/v9.9.9"}, Code.BUILDER_REF_MISMATCH),
    # The pinned tag, moved to another commit of the builder's repository.
    ({"builder_commit": "badc0ffee" + "0" * 31}, Code.BUILDER_REF_MISMATCH),
    # The builder's workflows at the tag, run for another team's repository.
    ({"repository": "acme-team/other-app"}, Code.WORKFLOW_IDENTITY_MISMATCH),
], ids=["another-tag", "tag-moved", "another-team"])
def test_a_statement_from_another_tag_or_team_is_refused(
        team_chain: GitHubChain, tmp_path: Path, capsys: pytest.CaptureFixture[str], statement: tuple[str, str],
        refusal: tuple[dict[str, str], Code]) -> None:
    (name, who), (change, code) = statement, refusal
    evidence = tmp_path / "evidence"
    shutil.copytree(team_chain.evidence, evidence)
    _resign(team_chain, evidence, name, team_identity(team_chain.sha, who, **change))
    assert _verify(team_chain, evidence) == 1
    out = capsys.readouterr().out
    assert code.value in out
    assert "REJECTED" in out


def test_the_teams_own_copy_of_the_workflows_is_refused(team_chain: GitHubChain, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """produce-linux.yml copied into the team's repository signs as the team's file, not the builder's."""
    evidence = tmp_path / "evidence"
    shutil.copytree(team_chain.evidence, evidence)
    own = replace(team_identity(team_chain.sha, "linux"), signer_repository=None, signer_ref=None, signer_sha=None)
    _resign(team_chain, evidence, "platform-linux.sigstore.json", own)
    assert _verify(team_chain, evidence) == 1
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in capsys.readouterr().out


def test_another_platforms_builder_workflow_cannot_sign_for_linux(team_chain: GitHubChain, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(team_chain.evidence, evidence)
    _resign(team_chain, evidence, "platform-linux.sigstore.json", team_identity(team_chain.sha, "macos"))
    assert _verify(team_chain, evidence) == 1
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in capsys.readouterr().out


def test_the_gate_signs_as_the_builders_release_gate_called_by_the_team(team_chain: GitHubChain) -> None:
    """A VSA's signer: release-gate.yml at the tag (.9), called by the team's release.yml (.18); at another
    tag refused, and the team's own release.yml signing as its own gate refused."""
    verifier = vsa_verifier_for(team_chain.policy)
    payload = b'{"_type": "https://in-toto.io/Statement/v1"}'
    gate = gate_identity(team_chain.sha, run_id=4243)
    verified = verifier.verify_statement(team_chain.signer(gate).sign_statement(payload), role="verifier", what="vsa")
    assert verified.signer.name == f"{BUILDER}/release-gate.yml@{BUILDER_REF}"
    refusals = {
        Code.BUILDER_REF_MISMATCH: replace(gate, signer_ref="refs/tags/v0.0.1"),
        Code.WORKFLOW_IDENTITY_MISMATCH: replace(gate, signer_repository=None, signer_workflow=None),
    }
    for code, identity in refusals.items():
        with pytest.raises(QualificationError) as refused:
            verifier.verify_statement(team_chain.signer(identity).sign_statement(payload), role="verifier", what="vsa")
        assert refused.value.code == code


def test_verify_vsa_accepts_the_teams_gate_summary_and_refuses_one_from_another_tag(team_chain: GitHubChain,
                                                                                    tmp_path: Path) -> None:
    """The gate's summaries of the team's run, through the consumer's check: another tag is the signature's fault."""
    from desktop_qualify.consumer._verify_vsa import check_summaries

    from desktop_qualify import consumer

    verdict = verify_release(team_chain.policy, [team_chain.evidence], team_chain.artifacts,
                             candidate_sha=team_chain.sha)
    decision = consumer.decide(verdict, team_chain.policy, policy_path="policies/release.toml", mode="release-gate")
    statements = consumer.summary_statements(verdict, team_chain.policy, decision, release_tag="v2.0.0")
    (artifact,) = team_chain.artifacts
    digest = hashlib.sha256(artifact.read_bytes()).hexdigest()
    gate = gate_identity(team_chain.sha, run_id=4243)
    for name, who in (("right", gate), ("other-tag", replace(gate, signer_ref="refs/tags/v0.0.1"))):
        path = tmp_path / f"{name}.intoto.jsonl"
        consumer.SummaryWriter(path, team_chain.signer(who)).write(statements)
        if who is gate:
            accepted = check_summaries(path.read_bytes(), digest, team_chain.policy,
                                       vsa_verifier_for(team_chain.policy), "vsa")
            assert [s.signer for s in accepted] == [f"{BUILDER}/release-gate.yml@{BUILDER_REF}"]
            continue
        with pytest.raises(QualificationError) as refused:
            check_summaries(path.read_bytes(), digest, team_chain.policy, vsa_verifier_for(team_chain.policy), "vsa")
        assert refused.value.code == Code.VSA_SIGNATURE
        assert Code.BUILDER_REF_MISMATCH.value in str(refused.value)
