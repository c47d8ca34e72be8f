"""The audit report over many folders: one verdict per folder, runs counted once, one overall line.

Copies of one run's evidence (the same commit, run id and attempt) are one run:
the report counts it once and notes which folders repeat it, so that three
copies of a run never read as three qualified runs.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import AuditReport, AuditTotals, ConsumerDecision, utc_now
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_runtime import tool_version

from ._decide import policy_ref

MAX_EXCERPT = 2000


def _run_key(index: int, decision: ConsumerDecision) -> tuple[str, ...]:
    # A folder whose run could not be established is a run of its own.
    if decision.run_id is None or decision.candidate_sha is None:
        return ("folder", str(index))
    return ("run", decision.candidate_sha, decision.run_id, str(decision.attempt))


def audit_report(policy: Policy, policy_path: str, folders: list[Path],
                 decisions: list[ConsumerDecision]) -> AuditReport:
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, decision in enumerate(decisions):
        groups.setdefault(_run_key(i, decision), []).append(i)
    notes = []
    for key, members in groups.items():
        if len(members) > 1:
            names = ", ".join(str(folders[i]) for i in members)
            note = f"run {key[2]}#{key[3]} of {key[1][:12]} appears in {len(members)} folders ({names}); counted once"
            notes.append(note[:MAX_EXCERPT])
    # A run is qualified only when every copy of it is.
    qualified = sum(all(decisions[i].decision == "QUALIFIED" for i in members) for members in groups.values())
    totals = AuditTotals(folders=len(decisions), runs=len(groups), qualified=qualified,
                         rejected=len(groups) - qualified)
    return AuditReport(
        decision="QUALIFIED" if decisions and totals.rejected == 0 else "REJECTED",
        trust_mode=policy.file.trust.mode,
        policy=policy_ref(policy, policy_path),
        tool_version=tool_version(),
        checked_at=utc_now(),
        totals=totals,
        runs=decisions,
        evidence=[str(f)[:4000] for f in folders],
        notes=notes,
    )
