"""Human renderings of a decision: a text table for the terminal, Markdown for a job summary."""

from __future__ import annotations

import html

from desktop_qualify.evidence_schemas import AuditReport, ConsumerDecision

_STAGES = ("gate", "build", "signature", "install", "probe", "journey")
_COLUMNS = ("platform", "artifact", "sha256", *_STAGES)


def _cells(decision: ConsumerDecision) -> list[list[str]]:
    return [[row.platform, row.artifact or "-", (row.sha256 or "-")[:16], *(getattr(row, s) for s in _STAGES)]
            for row in decision.rows]


def render_text(decision: ConsumerDecision) -> str:
    rows = [list(_COLUMNS), *_cells(decision)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    sha = decision.candidate_sha or "unknown"
    run = f"{decision.run_id}#{decision.attempt}" if decision.run_id else "unknown"
    out = [f"candidate {sha}  run {run}", *lines, ""]
    if decision.reasons:
        out.append(f"{decision.decision}: {len(decision.reasons)} reason(s)")
        for reason in decision.reasons:
            where = f" [{reason.platform}]" if reason.platform else ""
            out.append(f"  {reason.code.value}{where}: {reason.message}")
    else:
        out.append(decision.decision)
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(decision: ConsumerDecision) -> str:
    icon = "✅" if decision.decision == "QUALIFIED" else "❌"
    out = [f"## {icon} Release qualification: {decision.decision}", "",
           f"Candidate `{decision.candidate_sha or 'unknown'}`, run `{decision.run_id or 'unknown'}` "
           f"attempt `{decision.attempt if decision.attempt is not None else '-'}`, policy sha256 "
           f"`{decision.policy_sha256[:16]}`.", "",
           "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in _cells(decision)]
    if decision.reasons:
        out += ["", "### Reasons", ""]
        out += [f"- `{r.code.value}`{f' ({r.platform})' if r.platform else ''}: {_md(r.message)}"
                for r in decision.reasons]
    return "\n".join(out) + "\n"


def render_audit_html(report: AuditReport) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Qualification audit</title></head><body>",
             f"<h1>Qualification audit</h1><p>Policy sha256 {html.escape(report.policy_sha256)}, checked "
             f"{html.escape(report.checked_at)}</p>"]
    for folder, decision in zip(report.evidence, report.runs, strict=True):
        parts.append(f"<h2>{html.escape(folder)}: {html.escape(decision.decision)}</h2>")
        parts.append("<table border='1'><tr>" + "".join(f"<th>{c}</th>" for c in _COLUMNS) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
                  for cells in _cells(decision)]
        parts.append("</table><ul>")
        parts += [f"<li><code>{html.escape(r.code.value)}</code> {html.escape(r.message)}</li>"
                  for r in decision.reasons]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
