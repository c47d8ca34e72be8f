"""The hostile corpus's rows for the update journey's previous release (issue 32, item 11): not vouched for.

In GitHub mode the producer takes the newest published release as the release an update journey starts from
(producer/previous/_previous_github.py), and it must be vouched for as the last release the release gate
passed, for an ancestor of the candidate. Every row starts from a real, QUALIFIED local run, its bundle and
the gate's own signed summaries (the baseline row proves that release is taken, audited and vouched for), and
has the loopback GitHub emulator hold the releases, tags and commit graph in one hostile way. The bundle
audits and the artifact is the audited bytes in every row, so nothing but the vouching refuses it: each is
QE_PREVIOUS_RELEASE_NOT_VOUCHED (exit 1), and names why.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError, canonical_bytes
from desktop_qualify.producer.previous._previous_github import previous_from_release
from desktop_qualify.qualify_github import GitHubClient
from desktop_qualify.qualify_policy import host_platform
from desktop_qualify.qualify_trust import load_private_key
from desktop_qualify.qualify_trust._envelope import sign_envelope
from support.evidence_factory import REPOSITORY, Evidence, make_evidence
from support.github_emulator import DEFAULT_TOKEN, Asset, GitHubEmulator, Release
from support.release_summaries import gate_summaries

# The commit this job qualifies (GITHUB_SHA); one before the previous release's; one on another line; one after.
CANDIDATE = "c" * 40
OLDER = "a" * 40
ASIDE = "d" * 40
NEWER = "e" * 40
TAG = "v1.1.0"


@dataclass
class Site:
    tmp: Path
    qualify: Any
    ev: Evidence
    bundle: Path
    summaries: bytes  # the gate's signed summaries of the run, as release.yml attaches them
    emulator: GitHubEmulator

    def assets(self, summaries: bytes | None) -> list[Asset]:
        """The release's artifact and bundle, and its summaries asset unless None."""
        artifact = self.ev.artifact_paths[0]
        assets = [Asset(101, artifact.name, artifact.read_bytes()),
                  Asset(102, self.bundle.name, self.bundle.read_bytes())]
        if summaries is not None:
            assets.append(Asset(103, "verification-summary.intoto.jsonl", summaries))
        return assets

    def resigned_summaries(self, **predicate: Any) -> bytes:
        """The gate's summary with ``predicate`` fields changed, signed again by the policy's own verifier key."""
        statement = json.loads(base64.b64decode(json.loads(self.summaries.splitlines()[0])["payload"]))
        statement["predicate"].update(predicate)
        key = load_private_key(self.ev.keys.keyring.parent / "keys" / "verifier.ed25519.pem")
        return sign_envelope(canonical_bytes(statement), key) + b"\n"

    def audit_summaries(self) -> bytes:
        """What `qualify audit --vsa` writes for the same run: signed by the verifier key, at the audit's level."""
        out = self.tmp / "audit.intoto.jsonl"
        done = self.qualify(["audit", "--policy", str(self.ev.policy_path), "--evidence", str(self.ev.evidence_dir),
                             "--vsa", str(out)])
        assert done.status == 0, done.text
        return out.read_bytes()

    def line(self) -> None:
        """main: OLDER (v1.0.0), then the previous release's commit (v1.1.0), then the candidate."""
        repo = self.emulator.repo(REPOSITORY)
        repo.history(OLDER, self.ev.sha, CANDIDATE)
        repo.tags.update({"v1.0.0": OLDER, TAG: self.ev.sha})

    def publish(self, *releases: Release) -> None:
        self.emulator.repo(REPOSITORY).releases = list(releases)


def _vouched(site: Site) -> None:
    site.line()
    site.publish(Release(2, "v1.0.0", [Asset(201, "old.qualify-bundle.zip", b"not read")]),
                 Release(3, TAG, site.assets(site.summaries)))


def _re_published_after_a_newer_one(site: Site) -> None:
    # v1.2.0 (NEWER, created first) was the last release the gate passed; v1.1.0, of an ancestor of NEWER,
    # was published again after it: the newest release by creation time, of an older commit.
    repo = site.emulator.repo(REPOSITORY)
    repo.history(OLDER, site.ev.sha, NEWER, CANDIDATE)
    repo.tags.update({TAG: site.ev.sha, "v1.2.0": NEWER})
    site.publish(Release(7, TAG, site.assets(site.summaries)),
                 Release(6, "v1.2.0", [Asset(201, "v12.qualify-bundle.zip", b"not read")]))


def _published_without_the_gates_summaries(site: Site) -> None:
    # Bundle and artifact, but no summaries: never through the release gate.
    site.line()
    site.publish(Release(3, TAG, site.assets(None)))


def _gate_summary_says_failed(site: Site) -> None:
    # The gate's summary of these very bytes, under this policy, by the verifier key: but the gate FAILED them.
    site.line()
    site.publish(Release(3, TAG, site.assets(site.resigned_summaries(verificationResult="FAILED", verifiedLevels=[]))))


def _an_audits_summary_not_the_gates(site: Site) -> None:
    # An auditor's summary of the run (the audit's level): the gate's verdict was never attached.
    site.line()
    site.publish(Release(3, TAG, site.assets(site.audit_summaries())))


def _commit_on_another_line(site: Site) -> None:
    # The release's commit is on a line of its own: not an ancestor of the candidate (GitHub: diverged).
    repo = site.emulator.repo(REPOSITORY)
    repo.commits.update({OLDER: (), site.ev.sha: (OLDER,), ASIDE: (OLDER,), CANDIDATE: (ASIDE,)})
    repo.tags[TAG] = site.ev.sha
    site.publish(Release(3, TAG, site.assets(site.summaries)))


def _commit_newer_than_the_candidate(site: Site) -> None:
    # The candidate is an ancestor of the release's commit, not the other way round (GitHub: behind).
    repo = site.emulator.repo(REPOSITORY)
    repo.history(OLDER, CANDIDATE, site.ev.sha)
    repo.tags[TAG] = site.ev.sha
    site.publish(Release(3, TAG, site.assets(site.summaries)))


def _commit_unknown_to_github(site: Site) -> None:
    repo = site.emulator.repo(REPOSITORY)
    repo.history(OLDER, CANDIDATE)
    repo.tags[TAG] = site.ev.sha
    site.publish(Release(3, TAG, site.assets(site.summaries)))


@dataclass(frozen=True)
class PreviousRow:
    id: str
    publish: Callable[[Site], None]
    code: Code | None  # None: the vouched-for baseline, which must be taken
    says: str = ""  # what the refusal names, so the row is refused by its own check


PREVIOUS_RELEASE_CORPUS = [
    PreviousRow("previous-release-vouched-for", _vouched, None),
    # -- not the last release whose gate passed
    PreviousRow("previous-release-re-published-after-a-newer-one", _re_published_after_a_newer_one,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "re-published is not the last release the gate passed"),
    PreviousRow("previous-release-without-the-gates-summaries", _published_without_the_gates_summaries,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "0 gate summaries assets"),
    PreviousRow("previous-release-whose-gate-failed-it", _gate_summary_says_failed,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "QE_VSA_FAILED"),
    PreviousRow("previous-release-vouched-by-an-audit-not-the-gate", _an_audits_summary_not_the_gates,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "QE_VSA_LEVEL"),
    # -- its commit is not an ancestor of the candidate
    PreviousRow("previous-release-commit-on-another-line", _commit_on_another_line,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "is not an ancestor of the candidate"),
    PreviousRow("previous-release-commit-newer-than-the-candidate", _commit_newer_than_the_candidate,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "(GitHub's compare: behind)"),
    PreviousRow("previous-release-commit-unknown-to-github", _commit_unknown_to_github,
                Code.PREVIOUS_RELEASE_NOT_VOUCHED, "(GitHub's compare: unknown)"),
]


@pytest.fixture
def site(tmp_path: Path, qualify: Any) -> Iterator[Site]:
    ev = make_evidence(tmp_path / "previous", committed_layout=True)
    summaries = gate_summaries(qualify, ev, tmp_path / "summaries.intoto.jsonl")  # before bundling: see its doc
    bundle = tmp_path / "previous.qualify-bundle.zip"
    done = qualify(["bundle", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--out",
                    str(bundle)])
    assert done.status == 0, done.text
    emulator = GitHubEmulator().start()
    try:
        yield Site(tmp_path, qualify, ev, bundle, summaries, emulator)
    finally:
        emulator.stop()


def test_row_ids_are_unique() -> None:
    ids = [row.id for row in PREVIOUS_RELEASE_CORPUS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("row", PREVIOUS_RELEASE_CORPUS, ids=lambda row: row.id)
def test_previous_release(row: PreviousRow, site: Site) -> None:
    row.publish(site)
    client = GitHubClient.from_env({"GITHUB_API_URL": site.emulator.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN})

    def take() -> Any:
        with client:
            return previous_from_release(site.ev.policy, site.ev.policy, client, host_platform(), site.tmp / "dl",
                                         candidate_sha=CANDIDATE)

    if row.code is None:
        audited = take()
        assert audited.facts.audit_decision == "QUALIFIED"
        assert audited.facts.sha == site.ev.sha
        assert audited.artifact.read_bytes() == site.ev.artifact_paths[0].read_bytes()
        return
    with pytest.raises(QualificationError) as caught:
        take()
    assert caught.value.code is row.code, (caught.value.code, caught.value.message)
    assert caught.value.exit_status == 1
    assert row.says in caught.value.message, caught.value.message
