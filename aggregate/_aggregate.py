"""The aggregate job: re-verify every platform statement, then sign one aggregate over them.

It signs only a complete, consistent set: every required platform exactly
once, each with its SLSA provenance, one commit, one run, every stage passed. Anything less is refused with
the reasons, and no aggregate is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    AGGREGATE_PREDICATE_TYPE,
    IN_TOTO_STATEMENT_TYPE,
    AggregatedPlatform,
    AggregatePredicate,
    AggregateStatement,
    DigestSet,
    Reason,
    Subject,
    aggregate_file_name,
    canonical_bytes,
    utc_now,
)
from desktop_qualify.qualify_files import discard_leftovers, write_atomic
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import StatementSigner, signer_for
from desktop_qualify.qualify_verify import verify_platform_set


@dataclass(frozen=True)
class AggregateResult:
    """What the aggregate job did: the statement it wrote (None when it refused) and the reasons it refused."""

    written: Path | None
    reasons: list[Reason]


def aggregate(policy: Policy, evidence_dirs: list[Path], out: Path, *,
              signer: StatementSigner | None = None) -> AggregateResult:
    """Verify the platform statements in ``evidence_dirs``; sign and write the aggregate into ``out``."""
    signer = signer or signer_for(policy, "aggregate")
    target = out / aggregate_file_name(signer.file_suffix)
    # A rerun after a kill mid-write: the hidden temporary file the killed job left is its own debris, and would
    # otherwise stand in the evidence folder as a stray file that the verification below refuses.
    discard_leftovers(target)
    verdict = verify_platform_set(policy, evidence_dirs)
    if not verdict.qualified:
        return AggregateResult(None, verdict.reasons)
    platforms = sorted(verdict.platforms, key=lambda vp: vp.platform)
    run = platforms[0].statement.predicate.run
    entries = [
        AggregatedPlatform(platform=vp.statement.predicate.platform, artifact=vp.statement.predicate.build.artifact,
                           payload_sha256=vp.signed.payload_sha256, signer_keyid=vp.signed.signer.keyid,
                           signer_identity=vp.signed.signer.name,
                           provenance_sha256=verdict.provenance[vp.platform].signed.payload_sha256)
        for vp in platforms
    ]
    statement = AggregateStatement(
        type_=IN_TOTO_STATEMENT_TYPE,
        subject=[Subject(name=e.artifact.name, digest=DigestSet(sha256=e.artifact.sha256)) for e in entries],
        predicateType=AGGREGATE_PREDICATE_TYPE,
        predicate=AggregatePredicate(run=run, required_platforms=list(verdict.expectations.required_platforms),
                                     platforms=entries, aggregated_at=utc_now(), policy_sha256=policy.sha256),
    )
    write_atomic(target, signer.sign_statement(canonical_bytes(statement)))
    return AggregateResult(target, [])
