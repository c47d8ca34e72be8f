"""Human renderings of a decision: a text table for the terminal, Markdown for a job summary, HTML for audits.

Each says who decided under what (policy, trust mode, tool version, signers),
lists root causes first with their consequences indented beneath them, and
prints the notes on what was not observed.
"""

from __future__ import annotations

import html

from desktop_qualify.evidence_schemas import AuditReport, ConsumerDecision, Reason, Signer

_STAGES = ("gate", "build", "signature", "install", "probe", "journey", "candidate")
_COLUMNS = ("platform", "artifact", "sha256", *_STAGES)


def _cells(decision: ConsumerDecision) -> list[list[str]]:
    return [[row.platform, row.artifact or "-", (row.sha256 or "-")[:16], *(getattr(row, s) for s in _STAGES)]
            for row in decision.rows]


def _context(decision: ConsumerDecision) -> str:
    p = decision.policy
    return (f"policy {p.name} ({p.path}, sha256 {p.sha256[:16]}), trust {decision.trust_mode}, "
            f"mode {decision.mode}, qualify {decision.tool_version}")


def _who(signer: Signer) -> str:
    if signer.kind == "ed25519":
        return f"ed25519 key {signer.key_name} {signer.keyid[:16]} (keyring {signer.keyring})"
    return f"certificate {signer.san}, issuer {signer.issuer}, run {signer.run_uri}"


def _roots_count(reasons: list[Reason]) -> str:
    roots = sum(r.cause == "root" for r in reasons)
    consequences = len(reasons) - roots
    return f"{roots} root cause(s)" + (f", {consequences} consequence(s)" if consequences else "")


def _reason_line(reason: Reason) -> str:
    where = f" [{reason.platform}]" if reason.platform else ""
    return f"{reason.code.value}{where}: {reason.message}"


def render_text(decision: ConsumerDecision) -> str:
    rows = [list(_COLUMNS), *_cells(decision)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    sha = decision.candidate_sha or "unknown"
    run = f"{decision.run_id}#{decision.attempt}" if decision.run_id else "unknown"
    out = [f"candidate {sha}  run {run}", _context(decision)]
    out += [f"signed  {s.statement}: {_who(s)}" for s in decision.signers]
    out += [*lines, ""]
    if decision.reasons:
        out.append(f"{decision.decision}: {_roots_count(decision.reasons)}")
        for reason in decision.reasons:
            if reason.cause == "root":
                out.append(f"  {_reason_line(reason)}")
            else:
                out.append(f"      which leaves: {_reason_line(reason)}")
    else:
        out.append(decision.decision)
    out += [f"note: {note}" for note in decision.notes]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(decision: ConsumerDecision) -> str:
    icon = "✅" if decision.decision == "QUALIFIED" else "❌"
    p = decision.policy
    out = [f"## {icon} Release qualification: {decision.decision}", "",
           f"Candidate `{decision.candidate_sha or 'unknown'}`, run `{decision.run_id or 'unknown'}` "
           f"attempt `{decision.attempt if decision.attempt is not None else '-'}`; policy `{_md(p.name)}` "
           f"(`{_md(p.path)}`, sha256 `{p.sha256[:16]}`), trust `{decision.trust_mode}`, mode `{decision.mode}`, "
           f"qualify `{_md(decision.tool_version)}`.", ""]
    out += [f"- `{s.statement}` signed by {_md(_who(s))}" for s in decision.signers]
    out += ["", "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in _cells(decision)]
    if decision.reasons:
        out += ["", f"### Reasons: {_roots_count(decision.reasons)}", ""]
        for r in decision.reasons:
            line = f"`{r.code.value}`{f' ({r.platform})' if r.platform else ''}: {_md(r.message)}"
            out.append(f"- {line}" if r.cause == "root" else f"  - which leaves {line}")
    if decision.notes:
        out += ["", "### Notes", ""]
        out += [f"- {_md(note)}" for note in decision.notes]
    return "\n".join(out) + "\n"


def _totals(report: AuditReport) -> str:
    t = report.totals
    return (f"audit {report.decision}: {t.runs} run(s) in {t.folders} folder(s): {t.qualified} qualified, "
            f"{t.rejected} rejected")


def render_audit_text(report: AuditReport) -> str:
    parts = [f"== {folder}\n{render_text(decision)}" for folder, decision in zip(report.evidence, report.runs,
                                                                                   strict=True)]
    parts.append(_totals(report) + "\n")
    parts += [f"note: {note}\n" for note in report.notes]
    return "".join(parts)


def render_audit_html(report: AuditReport) -> str:
    p = report.policy
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Qualification audit</title></head><body>",
             f"<h1>Qualification audit</h1><p>Policy {html.escape(p.name)} ({html.escape(p.path)}, sha256 "
             f"{html.escape(p.sha256)}), trust {html.escape(report.trust_mode)}, qualify "
             f"{html.escape(report.tool_version)}, checked {html.escape(report.checked_at)}</p>",
             f"<p><strong>{html.escape(_totals(report))}</strong></p>"]
    parts += [f"<p>Note: {html.escape(note)}</p>" for note in report.notes]
    for folder, decision in zip(report.evidence, report.runs, strict=True):
        parts.append(f"<h2>{html.escape(folder)}: {html.escape(decision.decision)}</h2><ul>")
        parts += [f"<li>{html.escape(s.statement)} signed by {html.escape(_who(s))}</li>" for s in decision.signers]
        parts.append("</ul><table border='1'><tr>" + "".join(f"<th>{c}</th>" for c in _COLUMNS) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
                  for cells in _cells(decision)]
        parts.append("</table><ul>")
        parts += [f"<li>{'' if r.cause == 'root' else 'which leaves: '}<code>{html.escape(r.code.value)}</code> "
                  f"{html.escape(r.message)}</li>" for r in decision.reasons]
        parts += [f"<li>note: {html.escape(note)}</li>" for note in decision.notes]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
