"""One run's platform x check matrix for the audit report, from the verified statements and the findings.

A cell's outcome comes from the findings through the same column-to-code map
as the decision table (``COLUMN_CODES``), so the matrix and the verdict cannot
disagree; the text beside it is what the verified statement records. Journey
steps are judged by the verifier's own rule (``platform_journey_facts``) against the
policy, never by a step's own ``passed``.
"""

from __future__ import annotations

import datetime as _dt

from desktop_qualify.evidence_schemas import (
    Cell,
    Check,
    CheckCell,
    Code,
    PlatformChecks,
    PlatformPredicate,
    Reason,
    StepCell,
)
from desktop_qualify.qualify_verify import COLUMN_CODES, Expectations, Verdict, VerifiedPlatform, platform_journey_facts

from ._update_rows import update_rows

_MAX_TEXT = 4000
# The decision table's signature column, split in two: the artifact signature (and its read-back) and the
# OS code-signing state.
_OS_SIGNING = frozenset({Code.PLATFORM_SIGNING_UNACCEPTED})
_CHECK_CODES: dict[Check, frozenset[Code]] = {
    "gate": COLUMN_CODES["gate"],
    "build": COLUMN_CODES["build"],
    "signature": COLUMN_CODES["signature"] - _OS_SIGNING,
    "os-signing": _OS_SIGNING,
    "install": COLUMN_CODES["install"],
    "probe": COLUMN_CODES["probe"],
    "journey": COLUMN_CODES["journey"],
    "candidate": COLUMN_CODES["candidate"],
}
CHECKS: tuple[Check, ...] = ("statement", *_CHECK_CODES)


def _check_of(code: Code) -> Check:
    """The column a platform's reason falls in; identity, commit and subject faults are the statement's."""
    return next((check for check, codes in _CHECK_CODES.items() if code in codes), "statement")


def _observed(p: PlatformPredicate, exp: Expectations) -> dict[Check, str]:
    """What the verified statement records for each check, in a few words."""
    gate, build, sig, inst = p.source_gate, p.build, p.signature, p.install
    probe, journey, run = p.launch_probe, p.journey, p.run
    accepted = ", ".join(sorted(exp.accepted_signing(p.platform))) or "none"
    report = probe.report
    return {
        "statement": f"run {run.run_id}#{run.attempt}, {run.trigger} on {run.runner_environment}, "
                     f"commit {run.sha[:12]}",
        "gate": f"{gate.ref} at {gate.sha[:12]}; main at {gate.main_head[:12]}; protection {gate.protection}; "
                f"work tree {'clean' if gate.worktree_clean else 'dirty'}",
        "build": f"{build.artifact.name}, {build.artifact.size} bytes",
        "signature": f"{sig.method}; read-back {'verified' if sig.readback_verified else 'not verified'}",
        "os-signing": f"{sig.platform_signing_state} ({sig.platform_signing_tool}); accepted: {accepted}",
        "install": f"{inst.method}, {inst.file_count} files, {inst.executable}"
                   + (f"; failure: {inst.failure}" if inst.failure else ""),
        "probe": ("timed out" if probe.timed_out else f"exit {probe.exit_code}")
                 + ("; no report" if report is None else f"; version {report.app_version}, build "
                                                         f"{report.build_sha[:12]}, checks passed "
                                                         f"{sum(c.passed for c in report.checks)}/"
                                                         f"{len(report.checks)}"),
        "journey": ("timed out" if journey.timed_out else f"exit {journey.exit_code}")
                   + f"; {len(journey.steps)} step(s) reported",
        "candidate": "checked against the presented file",
    }


def _steps(p: PlatformPredicate, exp: Expectations) -> list[StepCell]:
    """Each policy step (in the policy's order), then any other step the app reported, with the verifier's view."""
    j = p.journey
    facts = platform_journey_facts(p, exp)
    reported = {s.id: s for s in j.steps}

    def problem(step_id: str) -> str | None:
        found = [why.removeprefix(f"{step_id}: ") for why in facts.problems if why.startswith(f"{step_id}: ")]
        return "; ".join(found)[:_MAX_TEXT] or None

    def outcome(step_id: str) -> Cell:
        if step_id in facts.missing:
            return "missing"
        return "fail" if step_id in facts.failed else "pass"

    out = []
    for step_id, want in exp.steps.items():
        got = reported.get(step_id)
        out.append(StepCell(id=step_id, required=True, expected=want.expect, expected_code=want.code,
                            observed=got.observed if got else None, observed_code=got.code if got else None,
                            outcome=outcome(step_id), problem=problem(step_id)))
    for step in j.steps:
        if step.id not in exp.steps and step.id not in {s.id for s in out}:
            out.append(StepCell(id=step.id, required=False, expected=None, expected_code=None,
                                observed=step.observed, observed_code=step.code,
                                outcome=outcome(step.id), problem=problem(step.id)))
    return out


def _verified_column(vp: VerifiedPlatform, verdict: Verdict) -> PlatformChecks:
    p = vp.statement.predicate
    codes: dict[Check, list[Code]] = {check: [] for check in CHECKS}
    for reason in verdict.reasons:
        if reason.platform == vp.platform and reason.code not in codes[_check_of(reason.code)]:
            codes[_check_of(reason.code)].append(reason.code)
    observed = _observed(p, verdict.expectations)
    cells = []
    for check in CHECKS:
        outcome: Cell = "fail" if codes[check] else "pass"
        text = observed[check]
        if check == "candidate" and not verdict.candidates_checked:
            outcome, text = "n/a", "not checked: an audit has no candidate files"
        cells.append(CheckCell(check=check, outcome=outcome, observed=text[:_MAX_TEXT], codes=codes[check]))
    return PlatformChecks(platform=vp.platform, produced_at=p.produced_at, artifact=p.build.artifact,
                          checks=cells, steps=_steps(p, verdict.expectations),
                          update=update_rows(p, verdict.expectations))


def _absent_column(platform: str, blocked: Reason | None) -> PlatformChecks:
    """A required platform with no verified statement: unreached (n/a) behind its root cause, or missing."""
    cells = []
    for check in CHECKS:
        if blocked is None:
            cells.append(CheckCell(check=check, outcome="missing", observed="no statement", codes=[]))
        elif check == "statement":
            cells.append(CheckCell(check=check, outcome="fail", observed=blocked.message[:_MAX_TEXT],
                                   codes=[blocked.code]))
        else:
            cells.append(CheckCell(check=check, outcome="n/a", observed="not reached: the statement did not verify",
                                   codes=[]))
    return PlatformChecks(platform=platform, produced_at=None, artifact=None, checks=cells, steps=[])


def platform_matrix(verdict: Verdict) -> list[PlatformChecks]:
    """One column per required platform (in the policy's order), then any other verified platform."""
    by_platform: dict[str, list[VerifiedPlatform]] = {}
    for vp in verdict.platforms:
        by_platform.setdefault(vp.platform, []).append(vp)
    out = []
    for platform in verdict.expectations.required_platforms:
        found = by_platform.pop(platform, [])
        if found:
            out += [_verified_column(vp, verdict) for vp in found]
        else:
            blocker = verdict.blocked.get(platform)
            # An absent statement is missing (its root names it); one that did not verify stopped what follows.
            reached = blocker if blocker is not None and blocker.code != Code.EVIDENCE_MISSING else None
            out.append(_absent_column(platform, reached or verdict.absence_cause))
    out += [_verified_column(vp, verdict) for extra in by_platform.values() for vp in extra]
    return out[:8]


def _parse(stamp: str) -> _dt.datetime:
    return _dt.datetime.strptime(stamp.replace("Z", "+0000"),
                                 "%Y-%m-%dT%H:%M:%S.%f%z" if "." in stamp else "%Y-%m-%dT%H:%M:%S%z")


def run_time(verdict: Verdict) -> str | None:
    """When the run happened, as its verified statements say: the aggregate's time, else the earliest statement's."""
    if verdict.aggregate is not None:
        return verdict.aggregate.predicate.aggregated_at
    stamps = [vp.statement.predicate.produced_at for vp in verdict.platforms]
    return min(stamps, key=_parse) if stamps else None


def sort_key(stamp: str | None) -> tuple[bool, _dt.datetime]:
    """Runs in time order; a run whose time is unknown after every dated run."""
    floor = _dt.datetime.min.replace(tzinfo=_dt.UTC)
    return (stamp is None, floor if stamp is None else _parse(stamp))

