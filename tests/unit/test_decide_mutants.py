"""The consumer-decision document field by field: who signed what, under which policy, on which run, and the notes.

``decide`` is the last step of every consumer command: what it writes is what a release engineer reads and an
auditor keeps. These tests pin each field it derives: the policy as given (its path cut at 4,000 characters), each
signer read from its signature in the order platform statements, provenance, aggregate (an Ed25519 key's name cut at
256 characters and its keyring as shown; a Sigstore certificate's SAN, and its issuer and run only from GitHub
claims), the dirty-tree note word for word and only where the policy allows a dirty tree, and the run named by the
aggregate when no platform statement verified. Written for the mutants of ``consumer._decide`` (docs/mutation.md).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer._decide import DIRTY_TREE_NOTE, decide, dirty_tree_note, policy_ref, signers
from desktop_qualify.evidence_schemas import Signer
from desktop_qualify.qualify_trust import GitHubIdentity, SignerIdentity

from desktop_qualify import __version__

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
OTHER_SHA = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
POLICY_SHA = "ab" * 32
KEY_A, KEY_B, KEY_C = "a1" * 32, "b2" * 32, "c3" * 32
KEYRING = Path("/repo/policies/keys/keyring.toml")


def _policy(*, clean_required: bool = False, mode: str = "ed25519") -> Any:
    """What decide reads of a policy: its name, digest, keyring, trust mode and clean-tree rule."""
    return SimpleNamespace(
        sha256=POLICY_SHA, ed25519=SimpleNamespace(keyring="keys/keyring.toml"),
        resolve=lambda relative: Path("/repo/policies") / relative,
        file=SimpleNamespace(name="release", trust=SimpleNamespace(mode=mode),
                             source=SimpleNamespace(require_clean_worktree=clean_required)))


def _ed25519(name: str, keyid: str) -> SignerIdentity:
    return SignerIdentity("ed25519", name, keyid)


def _platform(platform: str, signer: SignerIdentity, *, clean: bool = True, sha: str = SHA) -> Any:
    gate = SimpleNamespace(worktree_clean=clean, sha=sha)
    return SimpleNamespace(platform=platform, file_name=f"platform-{platform}.dsse.json",
                           signed=SimpleNamespace(signer=signer),
                           statement=SimpleNamespace(predicate=SimpleNamespace(source_gate=gate)))


def _verdict(platforms: list[Any], *, provenance: dict[str, SignerIdentity] | None = None,
             aggregate: SignerIdentity | None = None, run: Any = None, aggregate_run: Any = None,
             sha: str | None = SHA, qualified: bool = True) -> Any:
    return SimpleNamespace(
        platforms=platforms, sha=sha, qualified=qualified, run=run, reasons=[], rows=list,
        provenance={p: SimpleNamespace(file_name=f"provenance-{p}.dsse.json", signed=SimpleNamespace(signer=s))
                    for p, s in (provenance or {}).items()},
        aggregate_signed=None if aggregate is None else SimpleNamespace(signer=aggregate),
        aggregate=None if aggregate_run is None else SimpleNamespace(predicate=SimpleNamespace(run=aggregate_run)),
        verifier=SimpleNamespace(file_suffix=".dsse.json"))


def _claims(run: str = "42") -> GitHubIdentity:
    uri = "https://github.com/octo/desktop-app"
    workflow = f"{uri}/.github/workflows/qualify.yml@refs/heads/main"
    return GitHubIdentity(
        issuer="https://token.actions.githubusercontent.com", san_uri=workflow, build_signer_uri=workflow,
        build_signer_digest=SHA, runner_environment="github-hosted", source_repository_uri=uri,
        source_repository_digest=SHA, source_repository_ref="refs/heads/main", build_config_uri=workflow,
        build_trigger="push", run_invocation_uri=f"{uri}/actions/runs/{run}/attempts/1",
        run_repository="octo/desktop-app", run_id=run, run_attempt=1)


def test_the_policy_is_named_as_given_and_its_path_cut_at_4000_characters() -> None:
    assert policy_ref(_policy(), "policies/release.toml").model_dump() == {
        "name": "release", "path": "policies/release.toml", "sha256": POLICY_SHA}
    long = "p/" * 2500
    assert policy_ref(_policy(), long).path == long[:4000]


def test_signers_come_platforms_first_then_provenance_by_platform_then_the_aggregate() -> None:
    verdict = _verdict([_platform("macos", _ed25519("mac-key", KEY_A)), _platform("linux", _ed25519("lin", KEY_B))],
                       provenance={"macos": _ed25519("prov", KEY_C), "linux": _ed25519("prov", KEY_C)},
                       aggregate=_ed25519("agg", KEY_A))
    shown = signers(verdict, _policy(), show=lambda path: f"shown:{path.name}")
    assert [(s.statement, s.platform, s.key_name, s.keyid) for s in shown] == [
        ("platform-macos.dsse.json", "macos", "mac-key", KEY_A), ("platform-linux.dsse.json", "linux", "lin", KEY_B),
        ("provenance-linux.dsse.json", "linux", "prov", KEY_C), ("provenance-macos.dsse.json", "macos", "prov", KEY_C),
        ("aggregate.dsse.json", None, "agg", KEY_A)]
    assert {s.keyring for s in shown} == {"shown:keyring.toml"}
    assert {s.kind for s in shown} == {"ed25519"}


def test_an_ed25519_signer_names_its_key_cut_at_256_and_the_keyring_as_shown_cut_at_4000() -> None:
    verdict = _verdict([_platform("linux", _ed25519("k" * 300, KEY_A))])
    [by_default] = signers(verdict, _policy())
    assert by_default == Signer(statement="platform-linux.dsse.json", platform="linux", kind="ed25519", keyid=KEY_A,
                                key_name="k" * 256, keyring=str(KEYRING))
    [long_shown] = signers(verdict, _policy(), show=lambda path: "bundle/" + "d" * 5000)
    assert long_shown.keyring == ("bundle/" + "d" * 5000)[:4000]


def test_a_sigstore_signer_carries_its_san_and_only_github_claims_give_issuer_and_run() -> None:
    github = SignerIdentity("sigstore", "s" * 4100, KEY_A, _claims("42"))
    other = SignerIdentity("sigstore", "https://ci.example/build", KEY_B, object())
    verdict = _verdict([_platform("linux", github), _platform("windows", other)], aggregate=github)
    shown = signers(verdict, _policy(mode="sigstore"))
    assert [s.model_dump(exclude_none=True) for s in shown] == [
        {"statement": "platform-linux.dsse.json", "platform": "linux", "kind": "sigstore", "keyid": KEY_A,
         "san": "s" * 4000, "issuer": "https://token.actions.githubusercontent.com",
         "run_uri": "https://github.com/octo/desktop-app/actions/runs/42/attempts/1"},
        {"statement": "platform-windows.dsse.json", "platform": "windows", "kind": "sigstore", "keyid": KEY_B,
         "san": "https://ci.example/build"},
        {"statement": "aggregate.dsse.json", "kind": "sigstore", "keyid": KEY_A, "san": "s" * 4000,
         "issuer": "https://token.actions.githubusercontent.com",
         "run_uri": "https://github.com/octo/desktop-app/actions/runs/42/attempts/1"}]


def test_the_dirty_tree_note_names_each_dirty_platform_and_its_commit() -> None:
    verdict = _verdict([_platform("linux", _ed25519("a", KEY_A), clean=False),
                        _platform("macos", _ed25519("b", KEY_B)),
                        _platform("windows", _ed25519("c", KEY_C), clean=False, sha=OTHER_SHA)])
    assert dirty_tree_note(verdict, _policy()) == (
        "dirty work tree: the source gate recorded uncommitted changes to tracked files (worktree_clean = false) "
        "for linux (commit 3b18e512dba7), windows (commit c0ffee00c0ff); policy release allows it "
        "([source] require_clean_worktree = false): the artifact was built from the commit (git archive), but "
        "the checkout it was qualified from held other changes")
    assert dirty_tree_note(verdict, _policy()).startswith(DIRTY_TREE_NOTE)


def test_no_dirty_tree_note_when_every_tree_was_clean_or_the_policy_requires_it() -> None:
    clean = _verdict([_platform("linux", _ed25519("a", KEY_A))])
    assert dirty_tree_note(clean, _policy()) is None
    dirty = _verdict([_platform("linux", _ed25519("a", KEY_A), clean=False)])
    assert dirty_tree_note(dirty, _policy(clean_required=True)) is None


def test_the_decision_names_the_run_the_policy_and_puts_the_dirty_note_first() -> None:
    verdict = _verdict([_platform("linux", _ed25519("a", KEY_A), clean=False)],
                       run=SimpleNamespace(run_id="local-1", attempt=2),
                       aggregate_run=SimpleNamespace(sha=OTHER_SHA, run_id="other", attempt=9))
    decision = decide(verdict, _policy(), policy_path="policies/release.toml", mode="local-check",
                      notes=["source digest recomputed"])
    assert (decision.decision, decision.mode, decision.trust_mode, decision.tool_version) == (
        "QUALIFIED", "local-check", "ed25519", __version__)
    assert (decision.candidate_sha, decision.run_id, decision.attempt) == (SHA, "local-1", 2)
    assert decision.policy.path == "policies/release.toml"
    assert [s.statement for s in decision.signers] == ["platform-linux.dsse.json"]
    assert len(decision.notes) == 2
    assert decision.notes[0].startswith(DIRTY_TREE_NOTE)
    assert decision.notes[1] == "source digest recomputed"


@pytest.mark.parametrize("qualified", [True, False])
def test_without_a_verified_platform_the_aggregate_names_the_run(qualified: bool) -> None:
    verdict = _verdict([], sha=None, qualified=qualified,
                       aggregate_run=SimpleNamespace(sha=OTHER_SHA, run_id="from-aggregate", attempt=3))
    decision = decide(verdict, _policy(), policy_path="p.toml", mode="audit")
    assert (decision.decision, decision.candidate_sha, decision.run_id, decision.attempt) == (
        "QUALIFIED" if qualified else "REJECTED", OTHER_SHA, "from-aggregate", 3)
    assert decision.notes == []


def test_with_nothing_verified_the_run_is_unknown() -> None:
    decision = decide(_verdict([], sha=None, qualified=False), _policy(), policy_path="p.toml", mode="release-gate")
    assert (decision.decision, decision.candidate_sha, decision.run_id, decision.attempt) == (
        "REJECTED", None, None, None)
    assert decision.signers == []
