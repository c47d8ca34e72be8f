"""The audit report's content and order (JSON), and its Markdown; the browser's view is in the Chromium test."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.consumer._html import render_audit_html
from desktop_qualify.consumer._markdown import render_audit_markdown
from desktop_qualify.evidence_schemas import AuditReport, PlatformChecks
from support.audit_runs import FAILING_STEP, PLATFORMS, AuditRuns
from support.cli import CliRun
from support.evidence_factory import DEFAULT_STEPS, PlatformSpec, make_evidence


def _report(audit: Callable[..., CliRun], tmp_path: Path, *extra: str) -> AuditReport:
    out = tmp_path / "audit.json"
    audit("--json", str(out), *extra)
    return AuditReport.model_validate_json(out.read_bytes())


def _cells(column: PlatformChecks) -> dict[str, str]:
    return {c.check: c.outcome for c in column.checks}


def test_runs_are_sorted_by_run_time_not_by_folder_name(runs: AuditRuns, audit: Callable[..., CliRun],
                                                         tmp_path: Path) -> None:
    report = _report(audit, tmp_path)
    assert [r.evidence for r in report.runs] == [str(f) for f in runs.folders]  # run1, run2, run10
    assert [r.decision.run_id for r in report.runs] == runs.run_ids
    stamps = [r.run_at for r in report.runs]
    assert None not in stamps
    assert stamps == sorted(stamps)  # type: ignore[type-var]


def test_folders_without_a_run_time_come_last_in_natural_order(runs: AuditRuns, qualify: Callable[..., CliRun],
                                                               tmp_path: Path) -> None:
    empties = [tmp_path / name for name in ("empty10", "empty2")]
    for folder in empties:
        folder.mkdir()
    out = tmp_path / "audit.json"
    qualify(["audit", "--policy", str(runs.policy), "--evidence", *map(str, empties), str(runs.folders[2]),
             "--json", str(out)])
    report = AuditReport.model_validate_json(out.read_bytes())
    assert [Path(r.evidence).name for r in report.runs] == ["run10", "empty2", "empty10"]
    assert [r.run_at is None for r in report.runs] == [False, True, True]


def test_each_run_carries_identity_policy_digests_and_a_matrix(runs: AuditRuns, audit: Callable[..., CliRun],
                                                               tmp_path: Path) -> None:
    report = _report(audit, tmp_path)
    passing, failing = report.runs[0], report.runs[1]
    assert passing.identity is not None
    assert (passing.identity.ref, passing.identity.workflow) == ("refs/heads/main", ".github/workflows/qualify.yml")
    assert passing.evidence_policy_sha256 == passing.decision.policy.sha256
    assert [p.platform for p in passing.platforms] == list(PLATFORMS)
    assert all(set(_cells(p).values()) == {"pass", "n/a"} for p in passing.platforms)
    by_platform = {p.platform: p for p in failing.platforms}
    assert _cells(by_platform["linux"])["install"] == "fail"
    (step,) = [s for s in by_platform["macos"].steps if s.id == FAILING_STEP]
    assert (step.expected, step.expected_code, step.observed, step.observed_code, step.outcome) == (
        "reject", "CC_SKILL_SIGNATURE_MISSING", "allow", None, "fail")
    assert step.problem == "observed allow, the policy requires reject CC_SKILL_SIGNATURE_MISSING"
    # The matrix and the decision table are drawn from the same findings: they agree cell by cell.
    for run in report.runs:
        for row, column in zip(run.decision.rows, run.platforms, strict=True):
            cells = _cells(column)
            worst = "fail" if "fail" in (cells["signature"], cells["os-signing"]) else cells["signature"]
            assert (row.gate, row.build, row.signature, row.install, row.probe, row.journey) == (
                cells["gate"], cells["build"], worst, cells["install"], cells["probe"], cells["journey"])


def test_a_step_is_judged_by_its_facts_not_by_its_own_passed(tmp_path: Path, qualify: Callable[..., CliRun]) -> None:
    def lie(pred: dict[str, Any]) -> None:
        # Observed the wrong outcome, yet claims to have passed (and the journey with it).
        step = next(s for s in pred["journey"]["steps"] if s["id"] == FAILING_STEP)
        step.update(observed="allow", code=None)

    ev = make_evidence(tmp_path, platforms=[PlatformSpec("linux", edit=lie)], required=["linux"])
    out = tmp_path / "audit.json"
    qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json", str(out)])
    (column,) = AuditReport.model_validate_json(out.read_bytes()).runs[0].platforms
    (step,) = [s for s in column.steps if s.id == FAILING_STEP]
    assert step.outcome == "fail"
    assert step.problem is not None
    assert "the policy requires reject" in step.problem
    assert _cells(column)["journey"] == "fail"


def test_the_os_signing_state_is_a_check_of_its_own(tmp_path: Path, qualify: Callable[..., CliRun]) -> None:
    def signed(pred: dict[str, Any]) -> None:
        # An honest record of a state the policy does not accept: its own verdict says failed.
        pred["signature"].update(platform_signing_state="signed", platform_signing_tool="codesign", passed=False)

    ev = make_evidence(tmp_path, platforms=[PlatformSpec("macos", edit=signed)], required=["macos"],
                       signing={"macos": ["unsigned"]})
    out = tmp_path / "audit.json"
    qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json", str(out)])
    (column,) = AuditReport.model_validate_json(out.read_bytes()).runs[0].platforms
    cells = {c.check: c for c in column.checks}
    assert (cells["signature"].outcome, cells["os-signing"].outcome) == ("pass", "fail")
    assert [c.value for c in cells["os-signing"].codes] == ["QE_PLATFORM_SIGNING_UNACCEPTED"]
    assert cells["os-signing"].observed == "signed (codesign); accepted: unsigned"


def test_a_statement_that_does_not_verify_fails_its_statement_cell_and_reaches_nothing(
        tmp_path: Path, qualify: Callable[..., CliRun]) -> None:
    ev = make_evidence(tmp_path, platforms=["linux"], required=["linux"])
    statement = ev.platform_file("linux")
    statement.write_bytes(statement.read_bytes()[:-40])
    out = tmp_path / "audit.json"
    qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--json", str(out)])
    run = AuditReport.model_validate_json(out.read_bytes()).runs[0]
    (column,) = run.platforms
    cells = _cells(column)
    assert cells.pop("statement") == "fail"
    assert set(cells.values()) == {"n/a"}
    assert column.steps == []
    assert column.checks[0].codes == [run.decision.reasons[0].code]


def test_markdown_has_the_summary_the_matrix_and_the_reasons_with_evidence_text_escaped(
        runs: AuditRuns, audit: Callable[..., CliRun], tmp_path: Path) -> None:
    md_file, html_file = tmp_path / "audit.md", tmp_path / "audit.html"
    assert audit("--markdown", str(md_file), "--html", str(html_file)).status == 1
    md = md_file.read_text()
    summary = md[md.index("### Runs, by run time"):md.index("### 1.")]
    order = [summary.index(f"`{run_id}#1`") for run_id in runs.run_ids]
    assert order == sorted(order)
    assert "❌ REJECTED" in summary
    assert "`QE_INSTALL_FAILED, QE_JOURNEY_INCOMPLETE`" in summary
    assert f"| step `{FAILING_STEP}` | `reject CC_SKILL_SIGNATURE_MISSING` |" in md
    # Evidence text outside code spans is escaped for Markdown (underscores included).
    assert "❌ FAIL: observed `allow`; the policy requires reject CC\\_SKILL\\_SIGNATURE\\_MISSING" in md
    # A matrix row keeps its five columns whatever the evidence says: no unescaped pipe from the hostile text.
    rows = [line for line in md.splitlines() if line.startswith(("| statement", "| install", "| step "))]
    assert len(rows) == 3 * (2 + len(DEFAULT_STEPS))  # per platform: statement, install, each step
    assert {len(re.findall(r"(?<!\\)\|", row)) for row in rows} == {6}
    assert "<script>" not in md
    assert "\\<script\\>alert(1)\\</script\\>" in md
    # The HTML source never carries the markup raw either.
    page = html_file.read_text()
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_copies_of_a_run_are_still_counted_once_after_sorting(runs: AuditRuns, qualify: Callable[..., CliRun],
                                                               tmp_path: Path) -> None:
    copy = tmp_path / "copy-of-run2"
    shutil.copytree(runs.folders[1], copy)
    out = tmp_path / "audit.json"
    qualify(["audit", "--policy", str(runs.policy), "--evidence", *map(str, [*runs.folders, copy]),
             "--json", str(out)])
    report = AuditReport.model_validate_json(out.read_bytes())
    assert (report.totals.folders, report.totals.runs, report.totals.rejected) == (4, 3, 1)
    assert [Path(r.evidence).name for r in report.runs][1:3] == ["copy-of-run2", "run2"]
    (note,) = report.notes
    assert "appears in 2 folders" in note


def test_the_terminal_output_opens_with_the_summary_in_run_time_order(runs: AuditRuns,
                                                                      audit: Callable[..., CliRun]) -> None:
    result = audit()
    lines = result.out.splitlines()
    assert lines[0] == "runs, by run time:"
    rows = lines[3:6]
    assert [row.split()[1] for row in rows] == [f"{run_id}#1" for run_id in runs.run_ids]
    assert [row.split()[5] for row in rows] == ["QUALIFIED", "REJECTED", "QUALIFIED"]
    assert rows[1].split()[-1] == str(runs.folders[1])
    # Then each run in the same order, and the overall line last but the notes.
    assert [line[3:] for line in lines if line.startswith("== ")] == [str(f) for f in runs.folders]
    assert lines[-1].startswith("audit REJECTED: 3 run(s) in 3 folder(s)")


def test_a_certificate_signer_shows_its_identity_and_issuer_escaped(runs: AuditRuns, audit: Callable[..., CliRun],
                                                                   tmp_path: Path) -> None:
    """GitHub mode's signer (certificate SAN and issuer), through the same renderers as a key's."""
    data = _report(audit, tmp_path).model_dump(mode="json")
    san = "https://github.com/o/r/.github/workflows/produce-linux.yml@refs/heads/main<b>x</b>"
    data["runs"][0]["decision"]["signers"][0] = {
        "statement": "platform-linux.sigstore.json", "platform": "linux", "kind": "sigstore", "keyid": "ab" * 32,
        "key_name": None, "keyring": None, "san": san, "issuer": "https://token.actions.githubusercontent.com",
        "run_uri": "https://github.com/o/r/actions/runs/7/attempts/1"}
    report = AuditReport.model_validate_json(json.dumps(data))
    page, md = render_audit_html(report), render_audit_markdown(report)
    assert f"certificate {html.escape(san)}, issuer https://token.actions.githubusercontent.com" in page
    assert "<b>x</b>" not in page
    # Escaped as text: no bare-URL autolink can start from a SAN.
    assert "signed by certificate https\\://github.com/o/r/.github/workflows/produce-linux.yml\\@refs/heads/main" in md
    assert "\\<b\\>x\\</b\\>" in md


def test_a_missing_platform_is_missing_to_its_last_step_and_an_unverified_one_unreached(
        tmp_path: Path, qualify: Callable[..., CliRun]) -> None:
    ev = make_evidence(tmp_path, platforms=list(PLATFORMS))
    corrupt = ev.platform_file("macos")
    corrupt.write_bytes(corrupt.read_bytes()[:-40])
    ev.platform_file("windows").unlink()
    md_file = tmp_path / "audit.md"
    qualify(["audit", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), "--markdown",
             str(md_file)])
    (row,) = [line for line in md_file.read_text().splitlines() if line.startswith(f"| step `{FAILING_STEP}`")]
    linux, macos, windows = [cell.strip() for cell in row.strip("|").split(" | ")][2:]
    assert linux.startswith("✅ PASS: observed")
    assert macos == "N/A: not reached"
    assert windows == "⚠️ MISSING: no statement"
