"""The update journey as rows (docs/update-journey.md): the job summary's and the audit report's.

Each step of a verified statement's ``UpdateRecord`` becomes a row: what the
record shows (its facts, in a few words) and the step's outcome by the
verifier's own rule (``update_facts`` against the policy's ``[update]``),
never by the step's own ``passed``. The text is evidence: each renderer
escapes it as it escapes every other field (``_escape``).
"""

from __future__ import annotations

from desktop_qualify.evidence_schemas import (
    InstallRecord,
    PlatformPredicate,
    StateStep,
    UpdatePart,
    UpdateRecord,
    UpdateStepCell,
)
from desktop_qualify.qualify_verify import Expectations, Verdict, rules_for, update_facts

_MAX_TEXT = 4000
# Each step, in the journey's order, and what it shows.
PARTS: dict[str, UpdatePart] = {
    "previous-release": "previous", "previous-install": "previous", "write-state": "state",
    "upgrade-install": "upgrade", "upgrade-check": "state", "upgrade-probe": "upgrade",
    "rollback-install": "rollback", "rollback-check": "rollback", "downgrade-check": "downgrade",
}
PART_LABELS: dict[UpdatePart, str] = {
    "previous": "previous release", "upgrade": "upgrade", "state": "user state", "rollback": "rollback",
    "downgrade": "downgrade", "journey": "update journey",
}


def _install(inst: InstallRecord) -> str:
    text = (f"{inst.method} at {inst.executable}, {inst.file_count} files, artifact sha256 "
            f"{inst.artifact_sha256[:16]}")
    return text + (f"; failure: {inst.failure}" if inst.failure else "")


def _state(step: StateStep) -> str:
    report = step.report
    if step.timed_out:
        return f"{step.verb}: timed out"
    if report is None:
        return f"{step.verb}: no state record (exit {step.exit_code})"
    seen = f"{report.observed} {report.code}" if report.code else report.observed
    digest = f", state sha256 {report.state_sha256[:16]}" if report.state_sha256 else ""
    return f"{step.verb} by build {report.build_sha[:12]} ({report.app_version}): {seen}{digest}, exit {step.exit_code}"


def _observed(u: UpdateRecord) -> dict[str, str]:
    prev, probe = u.previous, u.upgrade_probe
    rule = f"downgrade rule {u.downgrade}" + (f" {u.downgrade_code}" if u.downgrade_code else "")
    return {
        "previous-release": f"{prev.artifact.name} of {prev.sha[:12]} (run {prev.run_id}), bundle sha256 "
                            f"{prev.bundle_sha256[:16]} audited {prev.audit_decision}",
        "previous-install": _install(u.previous_install),
        "write-state": _state(u.write_state),
        "upgrade-install": _install(u.upgrade_install),
        "upgrade-check": _state(u.upgrade_check),
        "upgrade-probe": ("timed out" if probe.timed_out else f"exit {probe.exit_code}")
                         + ("; no report" if probe.report is None else
                            f"; version {probe.report.app_version}, build {probe.report.build_sha[:12]}"),
        "rollback-install": _install(u.rollback_install),
        "rollback-check": _state(u.rollback_check),
        "downgrade-check": f"{rule}: {_state(u.downgrade_check)}",
    }


def _journey(outcome: str, observed: str, problem: str | None = None) -> list[UpdateStepCell]:
    return [UpdateStepCell(step="update-journey", part="journey", outcome="fail" if outcome == "fail" else "missing",
                           observed=observed[:_MAX_TEXT], problem=problem)]


def update_rows(p: PlatformPredicate, exp: Expectations) -> list[UpdateStepCell]:
    """The statement's update journey, step by step; none when the policy asks for none and it carries none."""
    u, rules = p.update, rules_for(p, exp)
    if rules is None:
        return [] if u is None else _journey("fail", "the statement carries an update journey the policy does not "
                                                     "ask for")
    if u is None:
        return _journey("missing", "no update journey: the policy requires one ([update])")
    facts = dict(update_facts(u, rules).step_problems)
    observed = _observed(u)
    rows = []
    for step, part in PARTS.items():
        problems = facts.get(step, ())
        rows.append(UpdateStepCell(step=step, part=part, outcome="fail" if problems else "pass",
                                   observed=observed[step][:_MAX_TEXT],
                                   problem="; ".join(problems)[:_MAX_TEXT] or None))
    return rows


def verdict_update_rows(verdict: Verdict) -> list[tuple[str, list[UpdateStepCell]]]:
    """Each verified platform's update journey rows (the job summary's), in the verdict's order."""
    return [(vp.platform, rows) for vp in verdict.platforms
            if (rows := update_rows(vp.statement.predicate, verdict.expectations))]
