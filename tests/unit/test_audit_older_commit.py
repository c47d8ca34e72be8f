"""An auditor checks a run made at commit A after the repository has moved on to commit B (docs/design.md §1).

The run's evidence folder and its bundle are audited offline, with B checked out: the code changed and the policy
was tightened in B. The audit judges the run as of A (the bundle's policy anchored at A, the folder under the
policy A held), says the run is A's and that main's head was not required, and never reads B's code into it.
The release gate, by contrast, is for main's head only (consumer/_freshness.py, tested in the GitHub suites).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code
from desktop_qualify.qualify_policy import host_platform
from support.bundles import make_bundle
from support.evidence_factory import Evidence, PlatformSpec, make_evidence

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="a repository history needs git")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                               "PATH": os.environ.get("PATH", ""), "HOME": str(root)})
    return done.stdout.strip()


def _run_at_a(tmp_path: Path) -> tuple[Evidence, str]:
    """A repository whose commit A holds the policy and the app, and a complete run of A."""
    ev = make_evidence(tmp_path / "repo", committed_layout=True, aggregate=False)
    (ev.root / "app.py").write_text("print('version A')\n", encoding="utf-8")
    _git(ev.root, "init", "-q", "-b", "main")
    _git(ev.root, "add", "policies/local.toml", "app.py")
    _git(ev.root, "commit", "-q", "-m", "A")
    first = _git(ev.root, "rev-parse", "HEAD")
    run = dataclasses.replace(ev, sha=first, evidence_dir=ev.root / "evidence-a", artifacts_dir=ev.root / "artifacts-a",
                              platforms=[], aggregate_path=None)
    run.evidence_dir.mkdir()
    run.artifacts_dir.mkdir()
    run.write_platform(PlatformSpec(host_platform()))
    run.write_aggregate()
    return run, first


def _move_on(run: Evidence) -> str:
    """Main moves on to B: new code and a tightened policy, committed; returns B."""
    (run.root / "app.py").write_text("print('version B')\n", encoding="utf-8")
    run.policy_path.write_bytes(run.policy_path.read_bytes() + b"\n# tightened in B\n")
    _git(run.root, "commit", "-q", "-am", "B")
    second = _git(run.root, "rev-parse", "HEAD")
    assert _git(run.root, "status", "--porcelain", "--untracked-files=no") == ""
    return second


def _audit(qualify: Any, tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    report = tmp_path / "audit.json"
    report.unlink(missing_ok=True)
    done = qualify(["audit", *args, "--json", str(report)])
    return done, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}


def test_a_bundle_of_commit_a_is_qualified_as_of_a_once_main_is_at_b(tmp_path: Path, qualify: Any) -> None:
    run, first = _run_at_a(tmp_path)
    bundle = make_bundle(qualify, run.policy_path, run.evidence_dir, tmp_path / "a.qualify-bundle.zip")
    second = _move_on(run)
    assert _git(run.root, "rev-parse", "HEAD") == second != first
    # The auditor's policy is B's; the bundle's is A's, anchored in A's history.
    done, report = _audit(qualify, tmp_path, "--policy", str(run.policy_path), "--bundle", str(bundle))
    assert done.status == 0, done.text
    assert report["decision"] == "QUALIFIED"
    [entry] = report["runs"]
    assert entry["identity"]["sha"] == first
    assert entry["decision"]["candidate_sha"] == first
    notes = entry["decision"]["notes"]
    assert any(f"policy anchored at commit {first}" in note for note in notes), notes
    assert any("head of main not required" in note for note in notes), notes
    assert not any(second in note for note in notes), notes


def test_an_evidence_folder_of_commit_a_is_qualified_under_as_policy(tmp_path: Path, qualify: Any) -> None:
    run, first = _run_at_a(tmp_path)
    second = _move_on(run)
    # Under B's tightened policy the folder is refused: it was not made under that policy.
    done_b, report_b = _audit(qualify, tmp_path, "--policy", str(run.policy_path), "--evidence", str(run.evidence_dir))
    assert done_b.status == 1, done_b.text
    assert report_b["decision"] == "REJECTED"
    codes = {reason["code"] for reason in report_b["runs"][0]["decision"]["reasons"]}
    assert Code.AGGREGATE_MISMATCH.value in codes, codes
    # The auditor's copy of the policy as A held it (from A's history), beside the same keyring.
    copy = tmp_path / "at-a"
    shutil.copytree(run.root / "trust", copy / "trust")
    policy_at_a = copy / "policies" / "local.toml"
    policy_at_a.parent.mkdir()
    policy_at_a.write_bytes(subprocess.run(["git", "-C", str(run.root), "show", f"{first}:policies/local.toml"],
                                           check=True, capture_output=True).stdout)
    done, report = _audit(qualify, tmp_path, "--policy", str(policy_at_a), "--evidence", str(run.evidence_dir))
    assert done.status == 0, done.text
    [entry] = report["runs"]
    assert entry["decision"]["decision"] == "QUALIFIED"
    assert entry["decision"]["candidate_sha"] == first != second
    assert any("head of main not required" in note for note in entry["decision"]["notes"])
