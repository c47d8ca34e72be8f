"""The audit report over many folders: one entry per folder, sorted by run time, runs counted once.

Runs are ordered by when they ran, as their verified statements say, never
by the text of their folder names (run1, run10, run2 ...); folders whose run
time is unknown come last, in natural order of their names.

Copies of one run's evidence (the same commit, run id and attempt) are one run:
the report counts it once and notes which folders repeat it, so that three
copies of a run never read as three qualified runs.
"""

from __future__ import annotations

import re
from pathlib import Path

from desktop_qualify.evidence_schemas import AuditReport, AuditRun, AuditTotals, ConsumerDecision, utc_now
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_runtime import tool_version
from desktop_qualify.qualify_verify import Verdict

from ._decide import policy_ref
from ._matrix import platform_matrix, run_time, sort_key

MAX_EXCERPT = 2000


def audit_run(folder: Path, verdict: Verdict, decision: ConsumerDecision) -> AuditRun:
    """One folder's entry: when and by what it ran, its platform x check matrix, and the decision on it."""
    aggregate = verdict.aggregate
    identity = (aggregate.predicate.run if aggregate is not None else
                verdict.platforms[0].statement.predicate.run if verdict.platforms else None)
    return AuditRun(evidence=str(folder)[:4000], run_at=run_time(verdict), identity=identity,
                    evidence_policy_sha256=aggregate.predicate.policy_sha256 if aggregate is not None else None,
                    platforms=platform_matrix(verdict), decision=decision)


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """run2 before run10: digit runs compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def _run_key(index: int, decision: ConsumerDecision) -> tuple[str, ...]:
    # A folder whose run could not be established is a run of its own.
    if decision.run_id is None or decision.candidate_sha is None:
        return ("folder", str(index))
    return ("run", decision.candidate_sha, decision.run_id, str(decision.attempt))


def audit_report(policy: Policy, policy_path: str, runs: list[AuditRun]) -> AuditReport:
    runs = sorted(runs, key=lambda r: (sort_key(r.run_at), _natural(r.evidence)))
    decisions = [r.decision for r in runs]
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, decision in enumerate(decisions):
        groups.setdefault(_run_key(i, decision), []).append(i)
    notes = []
    for key, members in groups.items():
        if len(members) > 1:
            names = ", ".join(runs[i].evidence for i in members)
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
        runs=runs,
        notes=notes,
    )
