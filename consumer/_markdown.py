"""The audit report in Markdown: the same summary, matrix, digests and reasons as the HTML page.

Evidence text is untrusted: it goes through ``_escape``, the one Markdown
escaper this report and the job summary share.
"""

from __future__ import annotations

from desktop_qualify.evidence_schemas import AuditReport, AuditRun, CheckCell, PlatformChecks

from ._escape import md_code as _code
from ._escape import md_text as _md
from ._rebuilds import rebuild_line
from ._render import (
    CHECK_LABELS,
    SUMMARY_COLUMNS,
    absent_step,
    expectation,
    split_notes,
    step_observed,
    summary_cells,
    totals_line,
    update_markdown,
    who,
)

_WORDS = {"pass": "✅ PASS", "fail": "❌ FAIL", "missing": "⚠️ MISSING", "n/a": "N/A"}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def _cell(c: CheckCell | None) -> str:
    if c is None:
        return "N/A"
    codes = f" {', '.join(_code(code.value) for code in c.codes)}" if c.codes else ""
    return f"{_WORDS[c.outcome]}{codes}: {_md(c.observed)}"


def _matrix(platforms: list[PlatformChecks]) -> list[str]:
    rows = []
    for check, (label, wanted) in CHECK_LABELS.items():
        rows.append([label, _md(wanted), *(_cell(next((c for c in p.checks if c.check == check), None))
                                           for p in platforms)])
    for step_id in dict.fromkeys(s.id for p in platforms for s in p.steps):
        first = next(s for p in platforms for s in p.steps if s.id == step_id)
        cells = []
        for p in platforms:
            step = next((s for s in p.steps if s.id == step_id), None)
            if step is None:
                outcome, absent = absent_step(p)
                cells.append(f"{_WORDS[outcome]}: {absent}")
                continue
            seen, why = step_observed(step)
            cells.append(f"{_WORDS[step.outcome]}: observed {_code(seen)}" + (f"; {_md(why)}" if why else ""))
        required = "" if first.required else " (not required)"
        rows.append([f"step {_code(step_id)}", _code(expectation(first.expected, first.expected_code)) + required,
                     *cells])
    return _table(["check", "expected", *(_md(p.platform) for p in platforms)], rows)


def _run(n: int, run: AuditRun) -> list[str]:
    d, ident = run.decision, run.identity
    icon = "✅" if d.decision == "QUALIFIED" else "❌"
    title = f"{d.run_id}#{d.attempt}" if d.run_id else run.evidence
    first, later = split_notes(d)
    out = [f"### {n}. {icon} Run {_code(title)}: {d.decision}", ""]
    out += [line for note in first for line in (f"> **Warning:** {_md(note)}", "")]
    out.append(f"- commit {_code(d.candidate_sha or 'unknown')}, ref {_code(ident.ref if ident else 'unknown')}, "
               f"ran at {_code(run.run_at or 'unknown')}, evidence {_code(run.evidence)}")
    if ident is not None:
        out.append(f"- workflow {_code(ident.repository)} {_code(ident.workflow)}, trigger {_code(ident.trigger)}, "
                   f"runner {_code(ident.runner_environment)}, run {_code(ident.run_id)} attempt {ident.attempt}")
    recorded = run.evidence_policy_sha256
    out.append(f"- policy {_code(d.policy.name)} sha256 {_code(d.policy.sha256)}"
               + (f"; the aggregate recorded {_code(recorded)}" if recorded else ""))
    out += [f"- {_code(s.statement)} signed by {_md(who(s))}" for s in d.signers]
    out += ["", *_matrix(run.platforms), ""]
    known = [p for p in run.platforms if p.artifact is not None]
    if known:
        out += _table(["platform", "artifact", "bytes", "sha256"],
                      [[_md(p.platform), _code(p.artifact.name), str(p.artifact.size), _code(p.artifact.sha256)]
                       for p in known if p.artifact is not None])
        out.append("")
    journey = update_markdown([(p.platform, p.update) for p in run.platforms if p.update])
    if journey:
        out += ["#### Update journey", "", *journey, ""]
    for r in d.reasons:
        line = f"{_code(r.code.value)}{f' ({r.platform})' if r.platform else ''}: {_md(r.message)}"
        out.append(f"- {line}" if r.cause == "root" else f"  - which leaves {line}")
    out += [f"- note: {_md(note)}" for note in later]
    out += [f"- {_md(rebuild_line(seen))}" for seen in run.rebuilds]
    return [*out, ""]


def render_audit_markdown(report: AuditReport) -> str:
    icon = "✅" if report.decision == "QUALIFIED" else "❌"
    p = report.policy
    out = [f"## {icon} Qualification audit: {report.decision}", "",
           f"Policy {_code(p.name)} ({_code(p.path)}, sha256 {_code(p.sha256)}), trust {_code(report.trust_mode)}, "
           f"qualify {_code(report.tool_version)}, checked at {_code(report.checked_at)}.", "",
           f"**{_md(totals_line(report))}**", ""]
    out += [f"- note: {_md(note)}" for note in report.notes]
    rows = []
    for n, run in enumerate(report.runs, 1):
        cells = summary_cells(run)
        verdict = f"{'✅' if cells[4] == 'QUALIFIED' else '❌'} {cells[4]}"
        rows.append([str(n), *(verdict if i == 4 else _code(cell) for i, cell in enumerate(cells))])
    out += ["### Runs, by run time", "", *_table(["#", *SUMMARY_COLUMNS], rows), ""]
    for n, run in enumerate(report.runs, 1):
        out += _run(n, run)
    return "\n".join(out).rstrip("\n") + "\n"
