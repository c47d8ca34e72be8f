"""Injected failures: retries and their bounds, clear codes, timeouts, cut-off bodies, and a token that never leaks."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_github import GitHubError, RetryPolicy
from gh_testenv import REPOSITORY, WORKFLOW, MakeClient
from support.github_emulator import DEFAULT_TOKEN, Artifact, Branch, Fault, GitHubEmulator, Run

SHA = "c" * 40
BRANCH = r"/branches/main$"
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."


@pytest.fixture
def main_branch(github_emulator: GitHubEmulator) -> GitHubEmulator:
    github_emulator.repo(REPOSITORY).branches["main"] = Branch(SHA, protected=True)
    return github_emulator


@pytest.mark.parametrize("fault", [
    Fault(status=500), Fault(status=502, message="Bad Gateway"), Fault(status=503),
    Fault(status=429, message="Too Many Requests"), Fault(truncate=True),
    Fault(raw_body=b'{"name": "main", "commit": {"sh'),
], ids=["500", "502", "503", "429", "truncated", "cut-json"])
def test_transient_failure_is_retried_then_succeeds(main_branch: GitHubEmulator, make_client: MakeClient,
                                                    fault: Fault) -> None:
    main_branch.inject(BRANCH, fault, times=2)
    assert make_client().head_sha(REPOSITORY, "main") == SHA
    assert len(main_branch.calls(BRANCH)) == 3


@pytest.mark.parametrize(("fault", "words"), [
    (Fault(status=500), "HTTP 500 after 3 attempts"),
    (Fault(truncate=True), "network failure after 3 attempts"),
])
def test_retries_are_bounded(main_branch: GitHubEmulator, make_client: MakeClient, fault: Fault, words: str) -> None:
    main_branch.inject(BRANCH, fault, times=100)
    with pytest.raises(GitHubError, match=words) as caught:
        make_client().head_sha(REPOSITORY, "main")
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.exit_status == 2
    assert len(main_branch.calls(BRANCH)) == 3


def test_retry_after_is_honoured(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    main_branch.inject(BRANCH, Fault(status=403, message=SECONDARY, headers={"Retry-After": "1"}))
    started = time.monotonic()
    assert make_client().head_sha(REPOSITORY, "main") == SHA
    # The backoff alone would be 0.01 s: the wait is GitHub's Retry-After.
    assert time.monotonic() - started >= 1.0
    assert len(main_branch.calls(BRANCH)) == 2


def test_primary_rate_limit_waits_for_the_reset(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    reset = str(int(time.time()))
    main_branch.inject(BRANCH, Fault(status=403, message="API rate limit exceeded for installation ID 1.",
                                     headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}))
    assert make_client().head_sha(REPOSITORY, "main") == SHA


def test_retry_after_beyond_the_cap_fails_without_waiting(main_branch: GitHubEmulator,
                                                          make_client: MakeClient) -> None:
    main_branch.inject(BRANCH, Fault(status=403, message=SECONDARY, headers={"Retry-After": "3600"}))
    started = time.monotonic()
    with pytest.raises(GitHubError, match="cap on waiting") as caught:
        make_client(retry=RetryPolicy(max_attempts=5, base_backoff=0.01, max_total_wait=30)).head_sha(REPOSITORY,
                                                                                                     "main")
    assert time.monotonic() - started < 1.0
    assert caught.value.code is Code.ENVIRONMENT
    assert caught.value.status == 403
    assert len(main_branch.calls(BRANCH)) == 1


@pytest.mark.parametrize(("fault", "status", "words"), [
    (Fault(status=404, message="Not Found"), 404, "not found"),
    (Fault(status=401, message="Bad credentials"), 401, "rejected the credentials"),
    (Fault(status=403, message="Resource not accessible by integration"), 403, "not accessible"),
    (Fault(status=422, message="Validation Failed"), 422, "HTTP 422"),
])
def test_client_errors_are_not_retried_and_say_what_happened(main_branch: GitHubEmulator, make_client: MakeClient,
                                                             fault: Fault, status: int, words: str) -> None:
    main_branch.inject(BRANCH, fault, times=100)
    with pytest.raises(GitHubError, match=words) as caught:
        make_client().branch(REPOSITORY, "main")
    assert (caught.value.code, caught.value.status, caught.value.exit_status) == (Code.ENVIRONMENT, status, 2)
    assert len(main_branch.calls(BRANCH)) == 1


def test_unknown_branch_and_bad_token(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    with pytest.raises(GitHubError) as missing:
        make_client().branch(REPOSITORY, "nope")
    assert missing.value.status == 404
    assert missing.value.hint is not None
    with pytest.raises(GitHubError) as refused:
        make_client(token="ghs_wrong").branch(REPOSITORY, "main")
    assert refused.value.status == 401
    assert "GITHUB_TOKEN" in (refused.value.hint or "")


def test_answer_not_in_githubs_shape_is_refused(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    main_branch.inject(BRANCH, Fault(raw_body=b'{"name": "main", "commit": {"sha": "HEAD"}, "protected": true}'))
    with pytest.raises(GitHubError, match=r"'commit\.sha' is missing or not GitHub's shape"):
        make_client().head_sha(REPOSITORY, "main")
    assert len(main_branch.calls(BRANCH)) == 1


def test_slow_answer_times_out(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    main_branch.inject(BRANCH, Fault(delay=5), times=100)
    started = time.monotonic()
    with pytest.raises(GitHubError, match="network failure after 2 attempts") as caught:
        make_client(timeout=1, retry=RetryPolicy(max_attempts=2, base_backoff=0.01)).head_sha(REPOSITORY, "main")
    assert caught.value.code is Code.ENVIRONMENT
    assert 2.0 <= time.monotonic() - started < 4.5


def test_one_slow_answer_then_a_fast_one(main_branch: GitHubEmulator, make_client: MakeClient) -> None:
    main_branch.inject(BRANCH, Fault(delay=5))
    assert make_client(timeout=1).head_sha(REPOSITORY, "main") == SHA


def test_download_cut_short_is_retried(github_emulator: GitHubEmulator, make_client: MakeClient,
                                       tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[5] = Run(5, WORKFLOW, "push", "main", SHA)
    repo.artifacts[5] = [Artifact(50, "evidence", b"0123456789" * 1000)]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 5)
    github_emulator.inject(r"^/_blobs/artifacts/50$", Fault(truncate=True))
    got = client.download_artifact(artifact, tmp_path / "e.zip", max_bytes=1 << 20)
    assert got.path.read_bytes() == b"0123456789" * 1000
    github_emulator.inject(r"^/_blobs/artifacts/50$", Fault(truncate=True), times=100)
    with pytest.raises(GitHubError, match="network failure after 3 attempts"):
        client.download_artifact(artifact, tmp_path / "f.zip", max_bytes=1 << 20)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.zip"]


def test_download_server_errors_are_retried(github_emulator: GitHubEmulator, make_client: MakeClient,
                                            tmp_path: Path) -> None:
    repo = github_emulator.repo(REPOSITORY)
    repo.runs[5] = Run(5, WORKFLOW, "push", "main", SHA)
    repo.artifacts[5] = [Artifact(51, "evidence", b"zip")]
    client = make_client()
    (artifact,) = client.run_artifacts(REPOSITORY, 5)
    github_emulator.inject(r"/actions/artifacts/51/zip$", Fault(status=503), times=2)
    assert client.download_artifact(artifact, tmp_path / "e.zip", max_bytes=10).size == 3
    github_emulator.inject(r"/actions/artifacts/51/zip$", Fault(status=404), times=100)
    with pytest.raises(GitHubError, match="not found") as caught:
        client.download_artifact(artifact, tmp_path / "e.zip", max_bytes=10)
    assert caught.value.status == 404


def test_the_token_never_appears_in_errors_or_logs(main_branch: GitHubEmulator, make_client: MakeClient,
                                                   caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client()
    assert DEFAULT_TOKEN not in repr(client)
    messages: list[str] = []
    # The server echoes the Authorization header it received into its error message.
    main_branch.inject(BRANCH, Fault(status=500, echo_authorization=True), times=100)
    with pytest.raises(GitHubError) as echoed:
        client.branch(REPOSITORY, "main")
    messages.append(echoed.value.diagnostics())
    assert "***" in echoed.value.message
    main_branch.inject(r"/rules/branches/main$", Fault(status=403, message=SECONDARY, echo_authorization=True,
                                                        headers={"Retry-After": "999"}))
    with pytest.raises(GitHubError) as limited:
        client.branch_rules(REPOSITORY, "main")
    messages.append(limited.value.diagnostics())
    main_branch.repo(REPOSITORY).runs[3] = Run(3, WORKFLOW, "push", "main", SHA)
    main_branch.repo(REPOSITORY).artifacts[3] = [Artifact(30, "e", b"x")]
    (artifact,) = client.run_artifacts(REPOSITORY, 3)
    main_branch.inject(r"/actions/artifacts/30/zip$", Fault(status=500, echo_authorization=True), times=100)
    with pytest.raises(GitHubError) as download:
        client.download_artifact(artifact, tmp_path / "x.zip", max_bytes=10)
    messages.append(download.value.diagnostics())
    # The token did reach the server (so the scrubbing above is what kept it out).
    assert any(DEFAULT_TOKEN in (call.authorization or "") for call in main_branch.requests)
    for text in [*messages, caplog.text, str(echoed.value), str(download.value)]:
        assert DEFAULT_TOKEN not in text
