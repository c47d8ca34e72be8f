"""Issue 36: a committed link out of the app folder, in the export of the commit's source.

``git archive`` of the app folder is extracted with tarfile's "data" filter (``qualify_archive._git_source``):
a committed symbolic link to an absolute path, or one leading out of the export, is refused. The refusal is the
caller's coded one, never an internal error: the producer's export is a failed build (``QE_BUILD_FAILED``), and
the source digest ``qualify verify`` and ``qualify audit --root`` recompute is not recomputed, which the decision
says in its note (the design's answer for a commit whose source cannot be exported here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import Code, ConsumerDecision, QualificationError
from desktop_qualify.producer._build import export_committed_source
from desktop_qualify.qualify_archive import committed_source_digest
from desktop_qualify.qualify_policy import host_platform
from support.checkout import commit_all
from support.evidence_factory import Evidence, PlatformSpec, make_evidence

pytestmark = pytest.mark.skipif(os.name != "posix", reason="committed symbolic links")

LINKS = {
    "absolute-link": "/etc/passwd",
    "link-out-of-the-export": "../../../../../../etc/passwd",
}


def _app_with_link(root: Path, target: str) -> str:
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text("print(1)\n", encoding="utf-8")
    (root / "app" / "escape").symlink_to(target)
    return commit_all(root)


@pytest.mark.parametrize("target", LINKS.values(), ids=list(LINKS))
def test_the_source_digest_refuses_a_committed_link_out_of_the_app_folder(tmp_path: Path, target: str) -> None:
    sha = _app_with_link(tmp_path, target)
    with pytest.raises(QualificationError) as refused:
        committed_source_digest(tmp_path, sha, "app")
    assert refused.value.code == Code.ENVIRONMENT
    assert "holds a member the export refuses" in refused.value.message
    assert "app/escape" in refused.value.message


@pytest.mark.parametrize("target", LINKS.values(), ids=list(LINKS))
def test_the_producers_export_of_such_a_commit_is_a_failed_build(tmp_path: Path, target: str) -> None:
    sha = _app_with_link(tmp_path / "repo", target)
    dest = tmp_path / "export"
    dest.mkdir()
    with pytest.raises(QualificationError) as refused:
        export_committed_source(tmp_path / "repo", sha, tmp_path / "repo" / "app", dest)
    assert refused.value.code == Code.BUILD_FAILED
    assert "holds a member the export refuses" in refused.value.message
    assert not (dest / "app" / "escape").is_symlink()


def _run_of_a_commit_with_an_absolute_link(tmp_path: Path) -> Evidence:
    """A passing run of a real commit whose app folder (the factory policy's) holds a link to an absolute path."""
    ev = make_evidence(tmp_path, committed_layout=True)
    app = ev.policy.resolve(ev.policy.file.app.source)
    (app / "escape").symlink_to("/etc/passwd")
    ev.sha = commit_all(ev.root)
    ev.platforms = []
    ev.write_platform(PlatformSpec(host_platform()))
    ev.write_aggregate()
    return ev


def _not_recomputed(notes: list[str]) -> bool:
    return any(n.startswith("source digest not recomputed from") and "holds a member the export refuses" in n
               for n in notes)


def test_verify_notes_the_source_digest_was_not_recomputed(tmp_path: Path, qualify: Any) -> None:
    ev = _run_of_a_commit_with_an_absolute_link(tmp_path)
    out = tmp_path / "decision.json"
    result = qualify([*ev.verify_argv(), "--json", str(out)])
    assert "Traceback" not in result.text
    assert Code.INTERNAL.value not in result.text
    assert result.status == 0, result.text
    decision = ConsumerDecision.model_validate_json(out.read_text())
    assert _not_recomputed(decision.notes), decision.notes


def test_audit_with_root_notes_the_source_digest_was_not_recomputed(tmp_path: Path, qualify: Any) -> None:
    ev = _run_of_a_commit_with_an_absolute_link(tmp_path)
    report = tmp_path / "audit.json"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--root", str(ev.root),
                      "--evidence", str(ev.evidence_dir), "--json", str(report)])
    assert "Traceback" not in result.text
    assert Code.INTERNAL.value not in result.text
    assert result.status == 0, result.text
    notes = json.loads(report.read_text())["runs"][0]["decision"]["notes"]
    assert _not_recomputed(notes), notes
