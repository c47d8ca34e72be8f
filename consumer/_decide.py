"""From a verdict to the consumer-decision document."""

from __future__ import annotations

from typing import Literal

from desktop_qualify.evidence_schemas import ConsumerDecision, utc_now
from desktop_qualify.qualify_verify import Verdict


def decide(verdict: Verdict, *, mode: Literal["release-gate", "audit"], notes: list[str] | None = None,
           ) -> ConsumerDecision:
    run = verdict.run
    return ConsumerDecision(
        decision="QUALIFIED" if verdict.qualified else "REJECTED",
        mode=mode,
        policy_sha256=verdict.expectations.policy_sha256,
        candidate_sha=verdict.sha,
        run_id=run.run_id if run else None,
        attempt=run.attempt if run else None,
        checked_at=utc_now(),
        rows=verdict.rows(),
        reasons=verdict.reasons,
        notes=notes or [],
    )
