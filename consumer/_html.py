"""The audit report as one self-contained HTML page: inline CSS only, no script, nothing fetched.

Every piece of evidence text is untrusted: it is escaped (``html.escape`` with
quotes) wherever it lands, and the page's Content-Security-Policy forbids
every load, so a report cannot reach out even if a future edit forgot to escape.
The page opens with one summary line per run (in the report's order, by run
time), then each run: who ran it, under what policy, who signed each
statement, its platform x check matrix with every journey step, its artifact
digests and the exact reason for each failure. Pass and fail are told by
colour and in words; the print style sheet keeps the colours and starts each
run on a new page.
"""

from __future__ import annotations

from html import escape

from desktop_qualify.evidence_schemas import AuditReport, AuditRun, Cell, PlatformChecks

from ._rebuilds import rebuild_line
from ._render import (
    CHECK_LABELS,
    SUMMARY_COLUMNS,
    UPDATE_COLUMNS,
    absent_step,
    expectation,
    reason_codes,
    split_notes,
    step_observed,
    summary_cells,
    totals_line,
    update_cells,
    who,
)

_WORDS: dict[str, str] = {"pass": "PASS", "fail": "FAIL", "missing": "MISSING", "n/a": "N/A",
                          "QUALIFIED": "QUALIFIED", "REJECTED": "REJECTED"}
_CLASS: dict[str, str] = {"pass": "pass", "fail": "fail", "missing": "missing", "n/a": "na",
                          "QUALIFIED": "pass", "REJECTED": "fail"}

_CSS = """
:root{color-scheme:light}
body{font:14px/1.45 "DejaVu Sans",Arial,Helvetica,sans-serif;color:#1f2328;background:#fff;margin:24px 32px}
h1{font-size:24px;margin:0 0 6px}h2{font-size:19px;margin:28px 0 8px;padding-top:10px;border-top:2px solid #d0d7de}
h3{font-size:15px;margin:16px 0 6px}
code,.mono{font-family:"DejaVu Sans Mono",Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:4px 0 10px}
th,td{border:1px solid #d0d7de;padding:4px 7px;text-align:left;vertical-align:top}
thead th{background:#f0f3f6}
.matrix td{min-width:150px;max-width:360px}
.matrix th.group{background:#f6f8fa;font-style:italic}
.word{display:inline-block;font-weight:bold;padding:0 6px;border-radius:3px;margin-right:4px}
.pass .word,.word.pass{background:#1a7f37;color:#fff}.fail .word,.word.fail{background:#cf222e;color:#fff}
.missing .word,.word.missing{background:#9a6700;color:#fff}.na .word,.word.na{background:#6e7781;color:#fff}
td.pass{background:#dafbe1}td.fail{background:#ffebe9}td.missing{background:#fff8c5}td.na{background:#f6f8fa}
.obs{display:block;color:#424a53;font-size:12px;overflow-wrap:anywhere}
.codes{display:block;font-weight:bold;color:#a40e26;font-size:12px}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}
dl.facts dt{font-weight:bold}dl.facts dd{margin:0;overflow-wrap:anywhere}
.reasons li{margin:3px 0}.reasons li.consequence{margin-left:22px;list-style:circle}
.meta{color:#424a53}
.warning{background:#fff8c5;border-left:4px solid #9a6700;padding:.4em .6em}
@page{size:A4 landscape;margin:12mm}
@media print{
body{margin:0;font-size:9.5pt}
h2,h3{break-after:avoid}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
section.run{break-before:page}
tr,dl.facts,li{break-inside:avoid}
thead{display:table-header-group}
a{color:inherit;text-decoration:none}
}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _word(outcome: str) -> str:
    return f"<span class='word {_CLASS[outcome]}'>{_WORDS[outcome]}</span>"


def _cell(outcome: Cell, observed: str, codes: list[str] | None = None) -> str:
    codes_html = f"<span class='codes'>{_e(', '.join(codes))}</span>" if codes else ""
    return f"<td class='{_CLASS[outcome]}'>{_word(outcome)}{codes_html}<span class='obs'>{_e(observed)}</span></td>"


def _summary(report: AuditReport) -> list[str]:
    out = ["<section class='summary'><h2>Runs, by run time</h2><table><thead><tr><th>#</th>"
           + "".join(f"<th>{_e(c)}</th>" for c in SUMMARY_COLUMNS) + "</tr></thead><tbody>"]
    for n, run in enumerate(report.runs, 1):
        cells = summary_cells(run)
        verdict = cells[4]
        out.append(f"<tr><td><a href='#run-{n}'>{n}</a></td>"
                   + "".join(f"<td class='{_CLASS[verdict]}'>{_word(verdict)}</td>" if i == 4 else
                             f"<td class='mono'>{_e(c)}</td>" for i, c in enumerate(cells)) + "</tr>")
    out.append("</tbody></table></section>")
    return out


def _facts(run: AuditRun) -> str:
    d, ident = run.decision, run.identity
    rows = [("commit", d.candidate_sha or "unknown"), ("ref", ident.ref if ident else "unknown"),
            ("workflow identity", f"{ident.repository} {ident.workflow}, trigger {ident.trigger}, runner "
                                  f"{ident.runner_environment}" if ident else "unknown"),
            ("run id, attempt", f"{d.run_id}, attempt {d.attempt}" if d.run_id else "unknown"),
            ("ran at", run.run_at or "unknown"), ("evidence", run.evidence),
            ("policy (judged under)", f"{d.policy.name} ({d.policy.path}), sha256 {d.policy.sha256}")]
    recorded = run.evidence_policy_sha256
    if recorded is not None:
        same = "the same policy" if recorded == d.policy.sha256 else "a different policy"
        rows.append(("policy (aggregate recorded)", f"sha256 {recorded}: {same}"))
    rows.append(("checked", f"{d.mode}, trust {d.trust_mode}, qualify {d.tool_version}, at {d.checked_at}"))
    return "<dl class='facts'>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows) + "</dl>"


def _signers(run: AuditRun) -> list[str]:
    if not run.decision.signers:
        return ["<p>No statement verified: no signer is known.</p>"]
    out = ["<table><thead><tr><th>statement</th><th>platform</th><th>signer</th><th>key id</th></tr></thead><tbody>"]
    out += [f"<tr><td class='mono'>{_e(s.statement)}</td><td>{_e(s.platform or '-')}</td><td>{_e(who(s))}</td>"
            f"<td class='mono'>{_e(s.keyid)}</td></tr>" for s in run.decision.signers]
    return [*out, "</tbody></table>"]


def _matrix(platforms: list[PlatformChecks]) -> list[str]:
    out = ["<table class='matrix'><thead><tr><th>check</th><th>expected</th>"
           + "".join(f"<th>{_e(p.platform)}</th>" for p in platforms) + "</tr></thead><tbody>"]
    for check, (label, wanted) in CHECK_LABELS.items():
        cells = []
        for p in platforms:
            c = next((c for c in p.checks if c.check == check), None)
            cells.append(_cell("n/a", "not recorded") if c is None else
                         _cell(c.outcome, c.observed, [code.value for code in c.codes]))
        out.append(f"<tr><th>{_e(label)}</th><td>{_e(wanted)}</td>{''.join(cells)}</tr>")
    step_ids = list(dict.fromkeys(s.id for p in platforms for s in p.steps))
    if step_ids:
        out.append(f"<tr><th class='group' colspan='{2 + len(platforms)}'>journey steps: expected and observed"
                   "</th></tr>")
    for step_id in step_ids:
        first = next(s for p in platforms for s in p.steps if s.id == step_id)
        cells = []
        for p in platforms:
            step = next((s for s in p.steps if s.id == step_id), None)
            if step is None:
                cells.append(_cell(*absent_step(p)))
                continue
            seen, why = step_observed(step)
            cells.append(_cell(step.outcome, f"observed {seen}" + (f"; {why}" if why else "")))
        required = "" if first.required else " (not required by the policy)"
        wants = expectation(first.expected, first.expected_code) + required
        out.append(f"<tr><th class='mono'>{_e(step_id)}</th><td>{_e(wants)}</td>{''.join(cells)}</tr>")
    return [*out, "</tbody></table>"]


def _update(platforms: list[PlatformChecks]) -> list[str]:
    """The update journey's upgrade, state, rollback and downgrade rows of each platform that has one."""
    rows = [(p.platform, update_cells(step), step.outcome) for p in platforms for step in p.update]
    if not rows:
        return []
    out = ["<h3>Update journey</h3>", "<table class='update'><thead><tr>"
           + "".join(f"<th>{_e(c)}</th>" for c in UPDATE_COLUMNS if c not in ("outcome", "observed"))
           + "<th>outcome: observed</th></tr></thead><tbody>"]
    out += [f"<tr><td>{_e(platform)}</td><td>{_e(part)}</td><td class='mono'>{_e(step_id)}</td>"
            f"{_cell(outcome, observed)}</tr>" for platform, (part, step_id, _, observed), outcome in rows]
    return [*out, "</tbody></table>"]


def _artifacts(platforms: list[PlatformChecks]) -> list[str]:
    known = [p for p in platforms if p.artifact is not None]
    if not known:
        return ["<p>No verified statement names an artifact.</p>"]
    out = ["<table class='artifacts'><thead><tr><th>platform</th><th>artifact</th><th>bytes</th><th>sha256</th></tr>"
           "</thead><tbody>"]
    out += [f"<tr><td>{_e(p.platform)}</td><td class='mono'>{_e(p.artifact.name)}</td><td>{p.artifact.size}</td>"
            f"<td class='mono'>{_e(p.artifact.sha256)}</td></tr>" for p in known if p.artifact is not None]
    return [*out, "</tbody></table>"]


def _reasons(run: AuditRun) -> list[str]:
    d = run.decision
    if not d.reasons:
        return ["<p>No failures: every check passed.</p>"]
    out = ["<ul class='reasons'>"]
    for r in d.reasons:
        where = f" [{r.platform}]" if r.platform else ""
        lead = "" if r.cause == "root" else "which leaves: "
        out.append(f"<li class='{r.cause}'>{_e(lead)}<code>{_e(r.code.value)}</code>{_e(where)}: {_e(r.message)}</li>")
    return [*out, "</ul>"]


def _run(n: int, run: AuditRun) -> list[str]:
    d = run.decision
    title = f"{d.run_id}#{d.attempt}" if d.run_id else run.evidence
    first, later = split_notes(d)
    out = [f"<section class='run' id='run-{n}'><h2>{n}. Run {_e(title)} {_word(d.decision)}</h2>"]
    out += [f"<p class='warning'><strong>Warning:</strong> {_e(note)}</p>" for note in first]
    out += [_facts(run),
            "<h3>Signers</h3>", *_signers(run), "<h3>Platform &times; check</h3>", *_matrix(run.platforms),
            *_update(run.platforms), "<h3>Artifacts</h3>", *_artifacts(run.platforms),
            f"<h3>Reasons ({_e(', '.join(reason_codes(d)) or 'none')})</h3>", *_reasons(run)]
    out += [f"<p class='meta'>Note: {_e(note)}</p>" for note in later]
    out += [f"<p class='meta'>{_e(rebuild_line(seen))}</p>" for seen in run.rebuilds]
    return [*out, "</section>"]


def render_audit_html(report: AuditReport) -> str:
    p = report.policy
    parts = ["<!doctype html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>Qualification audit: {_e(report.decision)}</title><style>{_CSS}</style></head><body>",
             f"<header><h1>Qualification audit {_word(report.decision)}</h1>",
             f"<p class='meta'>Policy {_e(p.name)} ({_e(p.path)}, sha256 {_e(p.sha256)}), trust "
             f"{_e(report.trust_mode)}, qualify {_e(report.tool_version)}, checked at {_e(report.checked_at)}</p>",
             f"<p><strong>{_e(totals_line(report))}</strong></p>"]
    parts += [f"<p class='meta'>Note: {_e(note)}</p>" for note in report.notes]
    parts += ["</header>", *_summary(report)]
    for n, run in enumerate(report.runs, 1):
        parts += _run(n, run)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
