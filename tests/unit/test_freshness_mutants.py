"""The release gate's freshness check, exactly: its notes word for word, and main's head read from the env it is given.

``check_candidate_is_main_head`` is what keeps an older run's evidence from qualifying a release once main has moved
on. These tests pin its notes (the decision shows them to the release engineer) and that it asks the GitHub API the
caller's environment names, never the process's own: the gate passes the job's environment explicitly. Two loopback
emulators answer differently, so reading the wrong one shows. Written for the mutants of ``consumer._freshness`` that
survived the suite (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer._freshness import check_candidate_is_main_head
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_verify import Findings
from support.github_emulator import DEFAULT_TOKEN, Branch, GitHubEmulator

REPOSITORY = "octo/desktop-app"
CANDIDATE = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
NEWER = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"


def _github_policy() -> Any:
    """What the check reads of a GitHub-mode policy: that it has a Sigstore section, and the repository."""
    return SimpleNamespace(sigstore=object(), file=SimpleNamespace(producer=SimpleNamespace(repository=REPOSITORY)))


def _emulator(head: str) -> GitHubEmulator:
    emulator = GitHubEmulator().start()
    emulator.repo(REPOSITORY).branches["main"] = Branch(sha=head, protected=True)
    return emulator


@pytest.fixture
def sites() -> Iterator[tuple[GitHubEmulator, GitHubEmulator]]:
    """The API the gate's env names (main at the candidate) and the one the process env names (main moved on)."""
    named, ambient = _emulator(CANDIDATE), _emulator(NEWER)
    try:
        yield named, ambient
    finally:
        named.stop()
        ambient.stop()


def test_local_mode_notes_that_main_was_not_observed() -> None:
    findings = Findings()
    note = check_candidate_is_main_head(SimpleNamespace(sigstore=None), CANDIDATE, {}, findings)
    assert note == "local mode: main's head on a protected remote was not observed"
    assert findings.ok


def test_without_a_commit_the_note_says_main_was_not_compared() -> None:
    findings = Findings()
    note = check_candidate_is_main_head(_github_policy(), None, {}, findings)
    assert note == "no verified statement named a commit: main's head not compared"
    assert findings.ok


def test_main_s_head_is_read_from_the_environment_the_gate_passes(
        sites: tuple[GitHubEmulator, GitHubEmulator], monkeypatch: pytest.MonkeyPatch) -> None:
    named, ambient = sites
    monkeypatch.setenv("GITHUB_API_URL", ambient.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", DEFAULT_TOKEN)
    findings = Findings()
    note = check_candidate_is_main_head(_github_policy(), CANDIDATE,
                                        {"GITHUB_API_URL": named.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN}, findings)
    assert findings.ok, findings.reasons
    assert note.startswith(f"GET /repos/{REPOSITORY}/branches/main at ")
    assert note.endswith(f": head {CANDIDATE}")
    assert [c.path for c in named.requests] == [f"/api/v3/repos/{REPOSITORY}/branches/main"]
    assert ambient.requests == []


def test_main_moved_on_is_refused_naming_both_commits(sites: tuple[GitHubEmulator, GitHubEmulator]) -> None:
    _, moved = sites
    findings = Findings()
    note = check_candidate_is_main_head(_github_policy(), CANDIDATE,
                                        {"GITHUB_API_URL": moved.api_url, "GITHUB_TOKEN": DEFAULT_TOKEN}, findings)
    assert [(r.code, r.message) for r in findings.reasons] == [
        (Code.NOT_MAIN_HEAD.value, "the evidence is for 3b18e512dba7, but main's head is now c0ffee00c0ff: "
                                   "a newer commit needs its own qualification run")]
    assert note.endswith(f": head {NEWER}")
