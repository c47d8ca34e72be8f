"""Human renderings of a decision: a text table for the terminal, Markdown for a job summary.

The audit report's HTML page is ``_html``, its Markdown ``_markdown``; the
words they share (a run's summary line, the check labels) are here.

Each says who decided under what (policy, trust mode, tool version, signers),
lists root causes first with their consequences indented beneath them, and
prints the notes on what was not observed.
"""

from __future__ import annotations

from desktop_qualify.evidence_schemas import (
    AuditReport,
    AuditRun,
    Cell,
    Check,
    ConsumerDecision,
    PlatformChecks,
    Reason,
    Signer,
    StepCell,
    UpdateStepCell,
)

from ._decide import DIRTY_TREE_NOTE
from ._escape import md_code, md_text, terminal_field
from ._rebuilds import rebuild_line
from ._update_rows import PART_LABELS

_STAGES = ("gate", "build", "signature", "install", "probe", "journey", "candidate")
_COLUMNS = ("platform", "artifact", "sha256", *_STAGES)


def _cells(decision: ConsumerDecision) -> list[list[str]]:
    return [[row.platform, row.artifact or "-", (row.sha256 or "-")[:16], *(getattr(row, s) for s in _STAGES)]
            for row in decision.rows]


def _t(text: object) -> str:
    """One evidence field for a terminal: on one line, whatever it holds."""
    return terminal_field(text)


def _context(decision: ConsumerDecision) -> str:
    p = decision.policy
    return (f"policy {_t(p.name)} ({_t(p.path)}, sha256 {_t(p.sha256[:16])}), trust {_t(decision.trust_mode)}, "
            f"mode {_t(decision.mode)}, qualify {_t(decision.tool_version)}")


def who(signer: Signer) -> str:
    if signer.kind == "ed25519":
        return f"ed25519 key {signer.key_name} {signer.keyid[:16]} (keyring {signer.keyring})"
    return f"certificate {signer.san}, issuer {signer.issuer}, run {signer.run_uri}"


def _roots_count(reasons: list[Reason]) -> str:
    roots = sum(r.cause == "root" for r in reasons)
    consequences = len(reasons) - roots
    return f"{roots} root cause(s)" + (f", {consequences} consequence(s)" if consequences else "")


def _reason_line(reason: Reason) -> str:
    where = f" [{_t(reason.platform)}]" if reason.platform else ""
    return f"{reason.code.value}{where}: {_t(reason.message)}"


def _aligned(rows: list[list[str]]) -> list[str]:
    """A header row and its rows in aligned columns, a rule under the header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def split_notes(decision: ConsumerDecision) -> tuple[list[str], list[str]]:
    """The notes a reader must see first (a dirty work tree the policy allowed), and the others, in order."""
    first = [note for note in decision.notes if note.startswith(DIRTY_TREE_NOTE)]
    return first, [note for note in decision.notes if not note.startswith(DIRTY_TREE_NOTE)]


def render_text(decision: ConsumerDecision) -> str:
    lines = _aligned([list(_COLUMNS), *([_t(c) for c in cells] for cells in _cells(decision))])
    sha = decision.candidate_sha or "unknown"
    run = f"{decision.run_id}#{decision.attempt}" if decision.run_id else "unknown"
    first, later = split_notes(decision)
    out = [f"WARNING: {_t(note)}" for note in first]
    out += [f"candidate {_t(sha)}  run {_t(run)}", _context(decision)]
    out += [f"signed  {_t(s.statement)}: {_t(who(s))}" for s in decision.signers]
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
    out += [f"note: {_t(note)}" for note in later]
    return "\n".join(out) + "\n"


UPDATE_COLUMNS = ("platform", "part", "step", "outcome", "observed")


def update_cells(step: UpdateStepCell) -> list[str]:
    """One update journey step in words (unescaped: each format escapes them): part, step, outcome, observed."""
    observed = step.observed + (f"; fails: {step.problem}" if step.problem else "")
    return [PART_LABELS[step.part], step.step, step.outcome, observed]


def update_markdown(update: list[tuple[str, list[UpdateStepCell]]]) -> list[str]:
    """The update journey's upgrade, state, rollback and downgrade rows as a Markdown table (escaped)."""
    rows = [[md_text(platform), md_text(part), md_code(step_id), md_text(outcome), md_text(observed)]
            for platform, steps in update for part, step_id, outcome, observed in map(update_cells, steps)]
    if not rows:
        return []
    return ["| " + " | ".join(UPDATE_COLUMNS) + " |", "|" + "---|" * len(UPDATE_COLUMNS),
            *("| " + " | ".join(row) + " |" for row in rows)]


def render_markdown(decision: ConsumerDecision,
                    update: list[tuple[str, list[UpdateStepCell]]] | None = None) -> str:
    """The job summary: every evidence string through the one Markdown escaper (``_escape``).

    ``update``: each platform's update journey rows (``verdict_update_rows``), shown when there are any.
    """
    icon = "✅" if decision.decision == "QUALIFIED" else "❌"
    p = decision.policy
    attempt = decision.attempt if decision.attempt is not None else "-"
    first, later = split_notes(decision)
    out = [f"## {icon} Release qualification: {decision.decision}", ""]
    out += [line for note in first for line in (f"> **Warning:** {md_text(note)}", "")]
    out += [f"Candidate {md_code(decision.candidate_sha or 'unknown')}, run {md_code(decision.run_id or 'unknown')} "
            f"attempt {md_code(attempt)}; policy {md_code(p.name)} ({md_code(p.path)}, sha256 "
            f"{md_code(p.sha256[:16])}), trust {md_code(decision.trust_mode)}, mode {md_code(decision.mode)}, "
            f"qualify {md_code(decision.tool_version)}.", ""]
    out += [f"- {md_code(s.statement)} signed by {md_text(who(s))}" for s in decision.signers]
    out += ["", "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    out += ["| " + " | ".join(md_text(c) for c in cells) + " |" for cells in _cells(decision)]
    journey = update_markdown(update or [])
    if journey:
        out += ["", "### Update journey", "", *journey]
    if decision.reasons:
        out += ["", f"### Reasons: {_roots_count(decision.reasons)}", ""]
        for r in decision.reasons:
            line = f"{md_code(r.code.value)}{f' ({md_text(r.platform)})' if r.platform else ''}: {md_text(r.message)}"
            out.append(f"- {line}" if r.cause == "root" else f"  - which leaves {line}")
    if later:
        out += ["", "### Notes", ""]
        out += [f"- {md_text(note)}" for note in later]
    return "\n".join(out) + "\n"


def totals_line(report: AuditReport) -> str:
    t = report.totals
    return (f"audit {report.decision}: {t.runs} run(s) in {t.folders} folder(s): {t.qualified} qualified, "
            f"{t.rejected} rejected")


def render_audit_text(report: AuditReport) -> str:
    """The summary of every run first (by run time), then each run's decision, then the overall line."""
    summary = _aligned([["#", *SUMMARY_COLUMNS], *([str(n), *map(_t, summary_cells(run))]
                                                  for n, run in enumerate(report.runs, 1))])
    parts = ["runs, by run time:\n", *(f"{line}\n" for line in summary), "\n"]
    for run in report.runs:
        parts.append(f"== {_t(run.evidence)}\n{render_text(run.decision)}")
        parts += [f"update [{_t(p.platform)}] {' | '.join(map(_t, update_cells(step)))}\n"
                  for p in run.platforms for step in p.update]
        parts += [f"{_t(rebuild_line(seen))}\n" for seen in run.rebuilds]
    parts.append(totals_line(report) + "\n")
    parts += [f"note: {_t(note)}\n" for note in report.notes]
    return "".join(parts)


# Each check of the matrix: its label, and what the policy asks of it.
CHECK_LABELS: dict[Check, tuple[str, str]] = {
    "statement": ("statement (signer, identity, commit)", "signed by a trusted signer; the policy's workflow"),
    "gate": ("source gate", "the policy's ref, at main's head"),
    "build": ("build", "the named artifact, not empty"),
    "signature": ("signature and read-back", "verifies; read back by the producer"),
    "os-signing": ("OS signing state", "a state the policy accepts"),
    "install": ("install", "the built bytes, unpacked"),
    "probe": ("launch probe", "exit 0; reports this build, isolation available"),
    "journey": ("journey (overall)", "every required step as the policy expects"),
    "candidate": ("candidate file", "the presented file's SHA-256"),
}


def reason_codes(decision: ConsumerDecision) -> list[str]:
    """Each code once, in the order of the reasons (root causes first)."""
    return list(dict.fromkeys(r.code.value for r in decision.reasons))


def expectation(expected: str | None, code: str | None) -> str:
    """The policy's requirement (or an observation) in a few words; None: the policy does not judge the step."""
    if expected is None:
        return "not required"
    return f"{expected} {code}" if code else expected


def absent_step(column: PlatformChecks) -> tuple[Cell, str]:
    """A step a platform's column has no row for: not reported by its journey, or its statement is missing or
    was never reached."""
    if column.steps:
        return "missing", "not reported"
    statement = next((c for c in column.checks if c.check == "statement"), None)
    return ("missing", "no statement") if statement and statement.outcome == "missing" else ("n/a", "not reached")


def step_observed(step: StepCell) -> tuple[str, str | None]:
    """What a step showed, and why it does not pass (without repeating what it showed)."""
    seen = expectation(step.observed, step.observed_code) if step.observed else "not reported"
    why = step.problem.removeprefix(f"observed {seen}, ") if step.problem else None
    return seen, why


def summary_cells(run: AuditRun) -> list[str]:
    """A run's summary line: run, date, SHA, ref, verdict, reason codes, evidence."""
    d = run.decision
    return [f"{d.run_id}#{d.attempt}" if d.run_id else "unknown",
            run.run_at or "unknown",
            (d.candidate_sha or "unknown")[:12],
            run.identity.ref if run.identity else "unknown",
            d.decision,
            ", ".join(reason_codes(d)) or "-",
            run.evidence]


SUMMARY_COLUMNS = ("run", "date", "SHA", "ref", "verdict", "reason codes", "evidence")
