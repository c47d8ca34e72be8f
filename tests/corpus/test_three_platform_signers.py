"""Three platforms, three signer identities, under the release policy's three-platform coverage.

GitHub-mode evidence as the workflow leaves it (no build: see corpus_github):
each platform statement and its artifact signature signed by that platform's
reusable producer (produce-PLATFORM.yml called by qualify.yml), the aggregate
by qualify.yml itself. Untouched, it qualifies; a statement of one platform,
or its SLSA provenance, signed with another platform's (or the aggregate's)
identity is refused, whichever pair.
"""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any

import pytest
from corpus_github import (
    AGGREGATE_IDENTITY,
    IDENTITY,
    GitHubSite,
    Signing,
    github_predicate,
    signer_of,
)
from desktop_qualify.evidence_schemas import (
    AGGREGATE_PREDICATE_TYPE,
    IN_TOTO_STATEMENT_TYPE,
    AggregateStatement,
    Code,
    Platform,
    PlatformPredicate,
    canonical_bytes,
    provenance_statement,
)
from desktop_qualify.qualify_policy import load_policy
from support.evidence_factory import platform_payload, utc_now, write_artifact
from support.github_chain import platform_identity
from support.sigstore_instance import GitHubIdentity

from desktop_qualify import qualify_cli

PLATFORMS: tuple[Platform, ...] = ("linux", "macos", "windows")
TOOLS = {"linux": ("none", "unsigned"), "macos": ("codesign", "signed"), "windows": ("signtool", "signed")}


def _three_platform_policy(site: GitHubSite) -> Path:
    text = site.world.policy_path.read_text(encoding="utf-8")
    path = site.tmp_path / "release-three.toml"
    path.write_text(text.replace('required = ["linux"]', 'required = ["linux", "macos", "windows"]'),
                    encoding="utf-8")
    return path


def _evidence(site: GitHubSite, signed_by: dict[Platform, GitHubIdentity],
              provenance_by: dict[Platform, GitHubIdentity] | None = None) -> list[str]:
    """Write the run's evidence; ``signed_by`` says whose certificate signs each platform's statement, and
    ``provenance_by`` its provenance (the statement's signer by default)."""
    root = site.tmp_path / "github"
    evidence = root / "evidence"
    evidence.mkdir(parents=True)
    policy = _three_platform_policy(site)
    entries: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    argv = ["verify", "--policy", str(policy), "--evidence", str(evidence), "--sha", site.sha]
    for platform in PLATFORMS:
        artifact = write_artifact(root / "artifacts", platform, site.sha)
        argv += ["--artifact", str(artifact)]
        own = platform_identity(IDENTITY, platform)
        data = github_predicate(site, artifact, site.sha, Signing(identity=own), platform=platform)
        tool, state = TOOLS[platform]
        data["signature"].update(platform_signing_tool=tool, platform_signing_state=state)
        predicate = PlatformPredicate.model_validate(data)
        bundle = Signing(identity=signed_by[platform]).signer(site.world).sign_statement(platform_payload(predicate))
        (evidence / f"platform-{platform}.sigstore.json").write_bytes(bundle)
        keyid, signer_uri = signer_of(bundle)
        statement_sha256 = hashlib.sha256(platform_payload(predicate)).hexdigest()
        provenance = canonical_bytes(provenance_statement(
            predicate, statement_name=f"platform-{platform}.sigstore.json", statement_sha256=statement_sha256,
            policy_path=policy.name, policy_sha256=load_policy(policy).sha256, builder_id=signer_uri))
        provenance_signer = Signing(identity=(provenance_by or signed_by)[platform]).signer(site.world)
        (evidence / f"provenance-{platform}.sigstore.json").write_bytes(provenance_signer.sign_statement(provenance))
        entries.append({"platform": platform, "artifact": predicate.build.artifact.model_dump(mode="json"),
                        "payload_sha256": statement_sha256, "signer_keyid": keyid, "signer_identity": signer_uri,
                        "provenance_sha256": hashlib.sha256(provenance).hexdigest()})
        run = predicate.run.model_dump(mode="json")
    aggregate = AggregateStatement.model_validate({
        "_type": IN_TOTO_STATEMENT_TYPE,
        "subject": [{"name": e["artifact"]["name"], "digest": {"sha256": e["artifact"]["sha256"]}} for e in entries],
        "predicateType": AGGREGATE_PREDICATE_TYPE,
        "predicate": {"version": 3, "run": run, "required_platforms": list(PLATFORMS), "platforms": entries,
                      "aggregated_at": utc_now(), "policy_sha256": load_policy(policy).sha256},
    })
    signer = Signing(identity=AGGREGATE_IDENTITY).signer(site.world)
    (evidence / "aggregate.sigstore.json").write_bytes(signer.sign_statement(canonical_bytes(aggregate)))
    return argv


def _own() -> dict[Platform, GitHubIdentity]:
    return {p: platform_identity(IDENTITY, p) for p in PLATFORMS}


def test_three_platforms_signed_by_three_identities_qualify(github_site: GitHubSite,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = qualify_cli.main(_evidence(github_site, _own()))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "QUALIFIED" in out
    assert len({platform_identity(IDENTITY, p).san_uri for p in PLATFORMS} | {AGGREGATE_IDENTITY.san_uri}) == 4


FORGERIES = [(victim, forger) for victim, forger in itertools.product(PLATFORMS, (*PLATFORMS, "aggregate"))
             if victim != forger]


@pytest.mark.parametrize(("victim", "forger"), FORGERIES, ids=[f"{v}-signed-by-{f}" for v, f in FORGERIES])
def test_a_statement_signed_with_another_jobs_identity_is_refused(github_site: GitHubSite,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  victim: Platform, forger: str) -> None:
    signed_by = _own()
    signed_by[victim] = AGGREGATE_IDENTITY if forger == "aggregate" else platform_identity(IDENTITY, forger)
    assert qualify_cli.main(_evidence(github_site, signed_by)) == 1
    out = capsys.readouterr().out
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in out
    assert f"platform-{victim}.sigstore.json" in out


@pytest.mark.parametrize(("victim", "forger"), FORGERIES, ids=[f"{v}-signed-by-{f}" for v, f in FORGERIES])
def test_a_provenance_signed_with_another_jobs_identity_is_refused(github_site: GitHubSite,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   victim: Platform, forger: str) -> None:
    """The provenance names the victim's own signer workflow as its builder; only its signature is another job's."""
    provenance_by = _own()
    provenance_by[victim] = AGGREGATE_IDENTITY if forger == "aggregate" else platform_identity(IDENTITY, forger)
    assert qualify_cli.main(_evidence(github_site, _own(), provenance_by)) == 1
    out = capsys.readouterr().out
    assert Code.WORKFLOW_IDENTITY_MISMATCH.value in out
    assert f"provenance-{victim}.sigstore.json" in out
