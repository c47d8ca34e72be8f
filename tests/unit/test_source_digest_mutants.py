"""The source digest recomputed from a checkout, exactly: when it is skipped, what it compares, what it says.

``check_source_digest`` and ``check_source_digest_at`` turn ``build.source_digest`` from the producer's word into a
fact. These tests pin the note the decision carries (skipped outside a checkout, with no platform or no commit; the
app folder's or git's error, cut at 2,000 characters; recomputed, naming every platform that differs), the exact
refusal per platform (each digest cut to 16 hex digits, the commit to 12), and that the digest is recomputed at the
verdict's commit for the app folder relative to the checkout. ``committed_source_digest`` is replaced by a recorder
here: test_source_digest.py runs the real ``git archive``. Written for the mutants of ``consumer._source_digest``
that survived the suite (docs/mutation.md).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from desktop_qualify.consumer import _source_digest
from desktop_qualify.consumer._source_digest import check_source_digest, check_source_digest_at
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_verify import Findings

SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"
TRUE_DIGEST = "ab12" * 16
FALSE_DIGEST = "cd34" * 16
REPO = Path("/checkouts/desktop-app")


def _platform(platform: str, digest: str) -> Any:
    build = SimpleNamespace(source_digest=digest)
    return SimpleNamespace(platform=platform, file_name=f"platform-{platform}.dsse.json",
                           statement=SimpleNamespace(predicate=SimpleNamespace(build=build)))


def _verdict(*platforms: Any, sha: str | None = SHA) -> Any:
    return SimpleNamespace(platforms=list(platforms), sha=sha, findings=Findings())


@pytest.fixture
def recomputed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str, str]]:
    """Each call to git archive's digest: (checkout, commit, app folder); it answers TRUE_DIGEST."""
    calls: list[tuple[Path, str, str]] = []

    def committed_source_digest(repo: Path, sha: str, relative: str) -> str:
        calls.append((repo, sha, relative))
        return TRUE_DIGEST

    monkeypatch.setattr(_source_digest, "committed_source_digest", committed_source_digest)
    return calls


@pytest.mark.parametrize("verdict", [_verdict(), _verdict(_platform("linux", TRUE_DIGEST), sha=None),
                                     _verdict(sha=None)], ids=["no-platform", "no-commit", "neither"])
def test_without_a_platform_and_a_commit_nothing_is_recomputed(
        verdict: Any, recomputed: list[tuple[Path, str, str]]) -> None:
    assert check_source_digest_at(REPO, "apps/desktop", verdict) == \
        "source digest not recomputed: no verified statement named one commit"
    assert recomputed == []
    assert verdict.findings.ok


def test_every_build_naming_the_commit_s_digest_is_noted_and_passes(
        recomputed: list[tuple[Path, str, str]]) -> None:
    verdict = _verdict(_platform("linux", TRUE_DIGEST), _platform("macos", TRUE_DIGEST))
    note = check_source_digest_at(REPO, "apps/desktop", verdict)
    assert note == f"source digest recomputed from git archive of apps/desktop at 3b18e512dba7 in {REPO}: " \
                   "every build names it"
    assert recomputed == [(REPO, SHA, "apps/desktop")]
    assert verdict.findings.ok


def test_each_build_naming_another_digest_is_refused_and_named_in_the_note(
        recomputed: list[tuple[Path, str, str]]) -> None:
    verdict = _verdict(_platform("linux", FALSE_DIGEST), _platform("macos", TRUE_DIGEST),
                       _platform("windows", FALSE_DIGEST))
    note = check_source_digest_at(REPO, "apps/desktop", verdict)
    assert note == f"source digest recomputed from git archive of apps/desktop at 3b18e512dba7 in {REPO}: " \
                   "differs on linux, windows"
    assert [(r.code, r.message, r.platform) for r in verdict.findings.reasons] == [
        (Code.SOURCE_DIGEST_MISMATCH.value,
         f"platform-{p}.dsse.json: the build names source digest cd34cd34cd34cd34..., but git archive of "
         f"apps/desktop at 3b18e512dba7 in {REPO} gives ab12ab12ab12ab12...", p) for p in ("linux", "windows")]


def test_a_checkout_that_cannot_give_the_digest_is_noted_and_cut_at_2000_characters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(repo: Path, sha: str, relative: str) -> str:
        raise QualificationError(Code.SOURCE_DIGEST_MISMATCH, f"git archive {sha} failed: " + "x" * 3000)

    monkeypatch.setattr(_source_digest, "committed_source_digest", fails)
    verdict = _verdict(_platform("linux", TRUE_DIGEST))
    note = check_source_digest_at(REPO, "apps/desktop", verdict)
    assert len(note) == 2000
    assert note.startswith(f"source digest not recomputed from {REPO}: git archive {SHA} failed: xxx")
    assert verdict.findings.ok


def _policy(repo: Path | None) -> Any:
    """What check_source_digest reads of a policy: its checkout, its path, and the app folder it names."""
    app = SimpleNamespace(source="apps/desktop")
    return SimpleNamespace(repository_root=lambda: repo, path=Path("/policies/release.toml"),
                           resolve=lambda source: (repo or Path("/nowhere")) / source,
                           file=SimpleNamespace(app=app))


def test_a_policy_outside_a_checkout_says_to_give_root(recomputed: list[tuple[Path, str, str]]) -> None:
    verdict = _verdict(_platform("linux", FALSE_DIGEST))
    assert check_source_digest(_policy(None), verdict) == (
        "source digest not recomputed: the policy /policies/release.toml is not in a git checkout "
        "(give --root with a checkout holding the commit)")
    assert recomputed == []
    assert verdict.findings.ok


def test_an_app_folder_outside_the_checkout_is_noted_and_cut_at_2000_characters(
        monkeypatch: pytest.MonkeyPatch, recomputed: list[tuple[Path, str, str]]) -> None:
    def outside(repo: Path, source: Path) -> str:
        raise QualificationError(Code.SOURCE_DIGEST_MISMATCH, f"{source} is not inside {repo}: " + "y" * 3000)

    monkeypatch.setattr(_source_digest, "app_relative_path", outside)
    verdict = _verdict(_platform("linux", FALSE_DIGEST))
    note = check_source_digest(_policy(REPO), verdict)
    assert len(note) == 2000
    assert note.startswith(f"source digest not recomputed: {REPO}/apps/desktop is not inside {REPO}: yyy")
    assert recomputed == []
    assert verdict.findings.ok


def test_the_app_folder_is_taken_relative_to_the_policy_s_checkout(recomputed: list[tuple[Path, str, str]]) -> None:
    verdict = _verdict(_platform("linux", TRUE_DIGEST))
    check_source_digest(_policy(REPO), verdict)
    assert recomputed == [(REPO, SHA, "apps/desktop")]
