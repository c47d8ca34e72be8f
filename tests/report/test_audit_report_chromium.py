"""The HTML audit report as headless Chromium renders it: the text a reader sees, the colours, the print sheet.

Every check reads the rendered page (``innerText``, computed styles, the
browser's own record of what it loaded), never the HTML source. The page is
opened from a file:// URL; the browser's deadline bounds each test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_qualify.evidence_schemas import AuditReport
from support.audit_runs import FAILING_STEP, HOSTILE, AuditRuns
from support.chromium import Browser
from support.cli import CliRun

# Each run section's matrix as the reader sees it: {row label: [cell texts]}, one dict per run.
_MATRICES = """[...document.querySelectorAll('section.run')].map(s => Object.fromEntries(
  [...s.querySelectorAll('table.matrix tbody tr')].filter(r => r.cells.length > 1)
    .map(r => [r.cells[0].innerText.trim(), [...r.cells].slice(1).map(c => c.innerText.trim())])))"""
_ROWS = "[...document.querySelectorAll('{rows}')].map(r => [...r.cells].map(c => c.innerText.trim()))"
_SUMMARY = _ROWS.format(rows="section.summary tbody tr")
_ARTIFACTS = _ROWS.format(rows="table.artifacts tbody tr")
# The background of the first cell of a class in the n-th run section (0-based).
_BACKGROUND = ("getComputedStyle(document.querySelectorAll('section.run')[{n}].querySelector('td.{cls}'))"
               ".backgroundColor")


def _render(audit: Callable[..., CliRun], tmp_path: Path) -> tuple[Path, AuditReport]:
    page, data = tmp_path / "report" / "audit.html", tmp_path / "report" / "audit.json"
    page.parent.mkdir()
    assert audit("--html", str(page), "--json", str(data)).status == 1
    return page, AuditReport.model_validate_json(data.read_bytes())


def test_the_page_shows_every_run_in_run_time_order_with_its_matrix_and_reasons(
        chromium: str, runs: AuditRuns, audit: Callable[..., CliRun], tmp_path: Path) -> None:
    page, report = _render(audit, tmp_path)
    with Browser(chromium, tmp_path / "profile") as browser:
        browser.open(page)
        text: str = browser.evaluate("document.body.innerText")
        summary: list[list[str]] = browser.evaluate(_SUMMARY)
        matrices: list[dict[str, list[str]]] = browser.evaluate(_MATRICES)
        artifacts: list[list[str]] = browser.evaluate(_ARTIFACTS)
        loaded = browser.requested_urls()
        elements = browser.evaluate("document.querySelectorAll('script,img,link,iframe,object,embed').length")
        sheets = browser.evaluate("[...document.styleSheets].map(s => s.href)")
        fail_bg = browser.evaluate(_BACKGROUND.format(n=1, cls="fail"))
        pass_bg = browser.evaluate(_BACKGROUND.format(n=1, cls="pass"))

    # The summary opens the page: run1, run2, run10 by run time, although the folders were given as text sorts.
    assert text.index("Runs, by run time") < text.index("1. Run ")
    assert [row[1] for row in summary] == [f"{run_id}#1" for run_id in runs.run_ids]
    assert [row[5] for row in summary] == ["QUALIFIED", "REJECTED", "QUALIFIED"]
    assert [row[6] for row in summary] == ["-", "QE_INSTALL_FAILED, QE_JOURNEY_INCOMPLETE", "-"]
    assert [row[7] for row in summary] == [str(f) for f in runs.folders]

    # Per run: commit, ref, workflow identity, run and attempt, signers, policy digest.
    for run_id in runs.run_ids:
        assert f"{run_id}, attempt 1" in text
    assert text.count("local/desktop-qualify .github/workflows/qualify.yml, trigger local, runner local") == 3
    assert text.count("ed25519 key local-aggregate") == 3
    # Three runs of three platforms: each platform key signed its statement and that statement's SLSA provenance.
    assert text.count("ed25519 key local-platform") == 18
    assert text.count("provenance-") >= 9
    assert "the same policy" in text

    # The matrix: platforms across, every check and every journey step down, outcome in words.
    assert len(matrices) == 3
    passing, failing = matrices[0], matrices[1]
    assert all(cells[0] for cells in passing.values())  # an expectation beside every row
    for label in ("statement (signer, identity, commit)", "source gate", "build", "signature and read-back",
                  "OS signing state", "install", "launch probe", "journey (overall)", FAILING_STEP):
        assert all(cell.startswith("PASS") for cell in passing[label][1:]), (label, passing[label])
    assert all(cell.startswith("N/A") for cell in passing["candidate file"][1:])
    assert passing["OS signing state"][1].endswith("unsigned (none); accepted: unsigned")
    expected, linux, macos, windows = failing[FAILING_STEP]
    assert expected == "reject CC_SKILL_SIGNATURE_MISSING"
    assert macos.startswith("FAIL")
    assert "observed allow" in macos
    assert "the policy requires reject CC_SKILL_SIGNATURE_MISSING" in macos
    assert linux.startswith("PASS")
    assert "observed reject CC_SKILL_SIGNATURE_MISSING" in linux
    assert windows.startswith("PASS")
    assert failing["journey (overall)"][2].startswith("FAIL")
    assert "QE_JOURNEY_INCOMPLETE" in failing["journey (overall)"][2]
    assert failing["install"][1].startswith("FAIL")
    assert "QE_INSTALL_FAILED" in failing["install"][1]
    # Colour as well as words: a failing cell is red, a passing one green.
    assert (fail_bg, pass_bg) == ("rgb(255, 235, 233)", "rgb(218, 251, 225)")

    # The exact reason of each failure, as printed text, markup shown as text and never run.
    assert ("QE_JOURNEY_INCOMPLETE [macos]: platform-macos.dsse.json: 1 problem(s): external-unsigned-rejected: "
            "observed allow, the policy requires reject CC_SKILL_SIGNATURE_MISSING") in text
    assert f"QE_INSTALL_FAILED [linux]: platform-linux.dsse.json: install failed: {HOSTILE}" in text
    assert elements == 0

    # Self-contained: the browser loaded the page and nothing else; its only style sheet is inline.
    assert loaded == [page.resolve().as_uri()]
    assert sheets == [None]
    # The artifact digests are on the page in full, each beside its file name.
    digests = [[p.platform, p.artifact.name, str(p.artifact.size), p.artifact.sha256]
               for run in report.runs for p in run.platforms if p.artifact]
    assert len(digests) == 9
    assert artifacts == digests


def test_the_print_sheet_keeps_the_colours_and_starts_each_run_on_a_page(
        chromium: str, audit: Callable[..., CliRun], tmp_path: Path) -> None:
    page, _ = _render(audit, tmp_path)
    with Browser(chromium, tmp_path / "profile") as browser:
        browser.open(page)
        browser.media("print")
        styles: list[dict[str, Any]] = browser.evaluate(
            "[...document.querySelectorAll('section.run')].map(s => ({brk: getComputedStyle(s).breakBefore, "
            "adjust: getComputedStyle(s.querySelector('td.fail, td.pass')).printColorAdjust, "
            "keep: getComputedStyle(s.querySelector('h3')).breakAfter}))")
        fail_bg = browser.evaluate(_BACKGROUND.format(n=1, cls="fail"))
    assert [s["brk"] for s in styles] == ["page"] * 3
    assert {s["adjust"] for s in styles} == {"exact"}
    assert {s["keep"] for s in styles} == {"avoid"}  # a heading stays with what it heads
    assert fail_bg == "rgb(255, 235, 233)"
