"""A dirty work tree the policy allows is shown first: text verdict, job summary, audit report (issue 32 item 4).

The source gate records ``worktree_clean``; a policy that requires a clean tree (the local default, the release
policy) rejects a dirty one (QE_WORKTREE_DIRTY). One that allows it qualifies the run, and the reader sees the
dirty tree before the table: the first line of the text verdict, under the summary's heading, at the top of each
run of the audit report, and first among the decision's JSON notes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import AuditReport, ConsumerDecision
from support.evidence_factory import Evidence, PlatformSpec, host_platform, make_evidence

PREFIX = "dirty work tree: "


def _dirty(tmp_path: Path, *, require_clean: bool = False) -> Evidence:
    return make_evidence(tmp_path, require_clean=require_clean, platforms=[
        PlatformSpec(host_platform(), edit=lambda p: p["source_gate"].update(worktree_clean=False))])


def test_a_dirty_tree_the_policy_allows_is_the_verdicts_first_line(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    ev = _dirty(tmp_path)
    decision, summary = tmp_path / "decision.json", tmp_path / "summary.md"
    result = qualify(ev.verify_argv("--json", str(decision), "--summary", str(summary)))
    assert result.status == 0, result.text
    first = result.out.splitlines()[0]
    assert first.startswith(f"WARNING: {PREFIX}the source gate recorded uncommitted changes"), result.out
    assert f"{host_platform()} (commit {ev.sha[:12]})" in first
    assert "require_clean_worktree = false" in first
    assert result.out.count(PREFIX) == 1  # not repeated among the notes at the end
    parsed = ConsumerDecision.model_validate_json(decision.read_text())
    assert parsed.decision == "QUALIFIED"
    assert parsed.notes[0].startswith(PREFIX)
    lines = summary.read_text().splitlines()
    assert lines[0] == "## ✅ Release qualification: QUALIFIED"
    assert lines[2].startswith("> **Warning:** dirty work tree"), lines[:4]
    assert summary.read_text().count("dirty work tree") == 1


def test_the_audit_report_shows_it_at_the_top_of_the_run(tmp_path: Path, qualify) -> None:  # type: ignore[no-untyped-def]
    ev = _dirty(tmp_path)
    report, html, markdown = tmp_path / "audit.json", tmp_path / "audit.html", tmp_path / "audit.md"
    result = qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir),
                      "--json", str(report), "--html", str(html), "--markdown", str(markdown)])
    assert result.status == 0, result.text
    run = AuditReport.model_validate_json(report.read_text()).runs[0]
    assert run.decision.notes[0].startswith(PREFIX)
    page = html.read_text()
    section = page[page.index("<section class='run'"):]
    assert section.index("<p class='warning'><strong>Warning:</strong> dirty work tree") < section.index("<dl")
    assert page.count("dirty work tree") == 1
    text = markdown.read_text()
    heading = text.index("### 1. ")
    assert text.index("> **Warning:** dirty work tree", heading) < text.index("- commit ", heading)
    assert text.count("dirty work tree") == 1
    assert result.out.count(PREFIX) == 1


@pytest.mark.parametrize("require_clean", [True, False])
def test_a_clean_tree_is_not_flagged_and_a_required_one_is_a_reason(tmp_path: Path, qualify,  # type: ignore[no-untyped-def]
                                                                    require_clean: bool) -> None:
    clean = make_evidence(tmp_path / "clean", require_clean=require_clean)
    result = qualify(clean.verify_argv())
    assert result.status == 0, result.text
    assert "dirty work tree" not in result.text
    # A dirty tree under a policy that requires a clean one: a reason (exit 1), not a warning.
    if require_clean:
        dirty = _dirty(tmp_path / "dirty", require_clean=True)
        rejected = qualify([*dirty.verify_argv(), "--json", str(tmp_path / "d.json")])
        assert rejected.status == 1
        assert "QE_WORKTREE_DIRTY" in rejected.out
        assert "dirty work tree" not in rejected.text
        assert not any(n.startswith(PREFIX) for n in json.loads((tmp_path / "d.json").read_text())["notes"])
