"""Every qualify_github read against the loopback GitHub: shapes, pagination, downloads."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_github import DEFAULT_API_URL, ClientConfig, GitHubClient, GitHubError
from gh_testenv import REPOSITORY, WORKFLOW, MakeClient
from support.github_emulator import Artifact, Asset, Branch, Fault, GitHubEmulator, Release, Run, rule, zip_bytes

SHA = "a" * 40


def test_branch_head_and_protected_flag(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.branches["main"] = Branch(SHA, protected=True)
    repo.branches["dev"] = Branch("b" * 40, protected=False)
    client = make_client()
    main = client.branch(REPOSITORY, "main")
    assert (main.name, main.head_sha, main.protected) == ("main", SHA, True)
    assert client.head_sha(REPOSITORY, "dev") == "b" * 40
    assert client.is_protected(REPOSITORY, "dev") is False
    assert [c.path for c in github_emulator.calls("/branches/")] == [
        f"/api/v3/repos/{REPOSITORY}/branches/main", f"/api/v3/repos/{REPOSITORY}/branches/dev",
        f"/api/v3/repos/{REPOSITORY}/branches/dev"]


def test_branch_rules_follow_every_page(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    github_emulator.repo(REPOSITORY).rules["main"] = [rule(t, ruleset_id=i) for i, t in enumerate(
        ["deletion", "non_fast_forward", "pull_request", "required_status_checks", "update"], start=1)]
    rules = make_client(per_page=2).branch_rules(REPOSITORY, "main")
    assert [(r.type, r.ruleset_id) for r in rules] == [
        ("deletion", 1), ("non_fast_forward", 2), ("pull_request", 3), ("required_status_checks", 4), ("update", 5)]
    calls = github_emulator.calls("/rules/branches/main")
    assert [c.query.get("page") for c in calls] == [None, ["2"], ["3"]]


def test_no_rules_is_an_empty_tuple(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    github_emulator.repo(REPOSITORY)
    assert make_client().branch_rules(REPOSITORY, "main") == ()


def test_listing_longer_than_the_cap_is_refused(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    github_emulator.repo(REPOSITORY).rules["main"] = [rule("update", ruleset_id=i) for i in range(5)]
    with pytest.raises(GitHubError, match="more than 4 items") as caught:
        make_client(per_page=2, max_items=4).branch_rules(REPOSITORY, "main")
    assert caught.value.code is Code.ENVIRONMENT


def test_workflow_run_metadata(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    github_emulator.repo(REPOSITORY).runs[77] = Run(77, WORKFLOW, "push", "main", SHA, run_attempt=2,
                                                    status="in_progress", conclusion=None)
    run = make_client().workflow_run(REPOSITORY, 77)
    assert (run.id, run.path, run.event, run.head_branch, run.head_sha, run.run_attempt, run.status,
            run.conclusion) == (77, WORKFLOW, "push", "main", SHA, 2, "in_progress", None)


def test_run_artifacts_paginated_and_downloaded(github_emulator: GitHubEmulator, make_client: MakeClient,
                                                tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[9] = Run(9, WORKFLOW, "push", "main", SHA)
    repo.artifacts[9] = [Artifact(100 + i, f"evidence-{i}", zip_bytes({f"f{i}.json": b"{}" * (i + 1)}))
                         for i in range(5)]
    client = make_client(per_page=2)
    artifacts = client.run_artifacts(REPOSITORY, 9)
    assert [a.name for a in artifacts] == [f"evidence-{i}" for i in range(5)]
    assert len(github_emulator.calls(r"/actions/runs/9/artifacts$")) == 3
    target = artifacts[3]
    assert target.digest == f"sha256:{hashlib.sha256(repo.artifacts[9][3].body).hexdigest()}"

    got = client.download_artifact(target, tmp_path / "a.zip", max_bytes=1 << 20)
    assert got.size == target.size_in_bytes
    assert got.sha256 == hashlib.sha256(got.path.read_bytes()).hexdigest()
    with zipfile.ZipFile(io.BytesIO(got.path.read_bytes())) as archive:
        assert archive.read("f3.json") == b"{}" * 4
    # The token goes to the API only; the pre-signed blob URL never sees it.
    (api_call,) = github_emulator.calls(r"/actions/artifacts/103/zip$")
    (blob_call,) = github_emulator.calls(r"^/_blobs/artifacts/103$")
    assert api_call.authorization is not None
    assert blob_call.authorization is None


def test_artifact_over_the_cap_is_not_downloaded(github_emulator: GitHubEmulator, make_client: MakeClient,
                                                 tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[9] = Run(9, WORKFLOW, "push", "main", SHA)
    repo.artifacts[9] = [Artifact(1, "big", b"x" * 5000)]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 9)
    with pytest.raises(QualificationError) as caught:
        client.download_artifact(artifact, tmp_path / "big.zip", max_bytes=4999)
    assert caught.value.code is Code.EVIDENCE_TOO_LARGE
    assert github_emulator.calls("/zip") == []
    assert not (tmp_path / "big.zip").exists()


def test_stream_longer_than_cap_is_cut_off(github_emulator: GitHubEmulator, make_client: MakeClient,
                                          tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[9] = Run(9, WORKFLOW, "push", "main", SHA)
    repo.artifacts[9] = [Artifact(1, "liar", b"x" * 10)]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 9)
    # GitHub reported 10 bytes; the blob store then serves far more.
    repo.artifacts[9][0].body = b"y" * 300_000
    with pytest.raises(QualificationError) as caught:
        client.download_artifact(artifact, tmp_path / "liar.zip", max_bytes=100_000)
    assert caught.value.code is Code.EVIDENCE_TOO_LARGE
    assert list(tmp_path.iterdir()) == []


def test_artifact_digest_mismatch_is_refused(github_emulator: GitHubEmulator, make_client: MakeClient,
                                             tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[9] = Run(9, WORKFLOW, "push", "main", SHA)
    repo.artifacts[9] = [Artifact(1, "tampered", b"zipbytes", digest="sha256:" + "0" * 64)]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 9)
    with pytest.raises(QualificationError) as caught:
        client.download_artifact(artifact, tmp_path / "t.zip", max_bytes=1000)
    assert caught.value.code is Code.ARTIFACT_DIGEST_MISMATCH
    assert not (tmp_path / "t.zip").exists()


def test_expired_artifact_is_reported_not_fetched(github_emulator: GitHubEmulator, make_client: MakeClient,
                                                  tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[9] = Run(9, WORKFLOW, "push", "main", SHA)
    repo.artifacts[9] = [Artifact(1, "old", b"z", expired=True, digest="")]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 9)
    assert artifact.digest is None
    with pytest.raises(GitHubError, match="expired") as caught:
        client.download_artifact(artifact, tmp_path / "o.zip", max_bytes=1000)
    assert caught.value.status == 410
    assert github_emulator.calls("/zip") == []


def test_releases_assets_and_download(github_emulator: GitHubEmulator, make_client: MakeClient,
                                      tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.releases = [Release(i, f"v1.{i}", [Asset(10 * i + 1, f"app-{i}.tar.gz", bytes([i]) * 64)])
                     for i in range(1, 4)]
    repo.releases[2].prerelease = True
    client = make_client(per_page=2)
    releases = client.releases(REPOSITORY)
    assert [(r.tag_name, r.prerelease) for r in releases] == [("v1.1", False), ("v1.2", False), ("v1.3", True)]
    assert len(github_emulator.calls(r"/releases$")) == 2
    release = client.release_by_tag(REPOSITORY, "v1.2")
    (asset,) = release.assets
    assert (release.id, asset.name, asset.size) == (2, "app-2.tar.gz", 64)
    got = client.download_asset(asset, tmp_path / asset.name, max_bytes=64)
    assert got.path.read_bytes() == bytes([2]) * 64
    (api_call,) = github_emulator.calls(r"/releases/assets/21$")
    assert api_call.accept == "application/octet-stream"
    assert github_emulator.calls(r"^/_blobs/assets/21$")[0].authorization is None


def test_missing_release_tag_is_a_404(github_emulator: GitHubEmulator, make_client: MakeClient) -> None:
    github_emulator.repo(REPOSITORY)
    with pytest.raises(GitHubError, match="not found") as caught:
        make_client().release_by_tag(REPOSITORY, "v9.9")
    assert caught.value.status == 404


@pytest.mark.parametrize(("call", "arg"), [
    ("branch", "main"), ("branch_rules", "main"), ("workflow_run", 1), ("run_artifacts", 1), ("releases", None)])
def test_names_are_checked_before_any_request(github_emulator: GitHubEmulator, make_client: MakeClient,
                                              call: str, arg: object) -> None:
    client = make_client()
    with pytest.raises(QualificationError) as caught:
        getattr(client, call)("../../etc", *([] if arg is None else [arg]))
    assert caught.value.code is Code.USAGE
    with pytest.raises(QualificationError):
        client.branch(REPOSITORY, "main/../../x")
    assert github_emulator.requests == []


def test_api_url_comes_from_the_environment() -> None:
    assert ClientConfig.from_env({}).api_url == DEFAULT_API_URL
    enterprise = ClientConfig.from_env({"GITHUB_API_URL": "https://ghe.example.invalid/api/v3/"})
    assert enterprise.api_url == "https://ghe.example.invalid/api/v3"
    client = GitHubClient.from_env({"GITHUB_API_URL": "https://ghe.example.invalid/api/v3", "GITHUB_TOKEN": "t"})
    assert client.api_url == "https://ghe.example.invalid/api/v3"
    with pytest.raises(QualificationError) as caught:
        ClientConfig.from_env({"GITHUB_API_URL": "file:///etc/passwd"})
    assert caught.value.code is Code.USAGE


@pytest.mark.parametrize("annotated", [False, True])
def test_the_commit_a_tag_names_is_read_through_annotated_tags(make_client: MakeClient,
                                                               github_emulator: GitHubEmulator,
                                                               annotated: bool) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.tags["v1.0.0"] = "c" * 40
    if annotated:
        repo.annotated.add("v1.0.0")
    assert make_client().tag_commit(REPOSITORY, "v1.0.0") == "c" * 40
    assert len(github_emulator.calls(r"/git/tags/")) == (1 if annotated else 0)


@pytest.mark.parametrize("body", [
    b'{"ref": "refs/tags/v1", "object": {"type": "blob", "sha": "' + b"a" * 40 + b'"}}',
    b'{"ref": "refs/tags/v1", "object": {"type": "commit", "sha": "HEAD"}}',
])
def test_a_tag_reference_of_another_shape_is_refused(make_client: MakeClient, github_emulator: GitHubEmulator,
                                                     body: bytes) -> None:
    github_emulator.repo(REPOSITORY).tags["v1"] = "c" * 40
    github_emulator.inject(r"/git/ref/tags/v1", Fault(raw_body=body))
    with pytest.raises(GitHubError) as refused:
        make_client().tag_commit(REPOSITORY, "v1")
    assert refused.value.code is Code.ENVIRONMENT
    assert "object." in refused.value.message


def test_an_unknown_tag_is_an_environment_error(make_client: MakeClient, github_emulator: GitHubEmulator) -> None:
    github_emulator.repo(REPOSITORY)
    with pytest.raises(GitHubError) as refused:
        make_client().tag_commit(REPOSITORY, "v9")
    assert refused.value.code is Code.ENVIRONMENT
