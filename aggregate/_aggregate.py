"""The aggregate job: re-verify every platform statement, then sign one aggregate over them.

It signs only a complete, consistent set: every required platform exactly
once, one commit, one run, every stage passed. Anything less is refused with
the reasons, and no aggregate is written.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from evidence_schemas import (
    AggregatedPlatform,
    AggregatePredicate,
    AggregateStatement,
    Code,
    DigestSet,
    QualificationError,
    Reason,
    Subject,
    canonical_bytes,
    write_atomic,
)
from qualify_policy import Policy
from qualify_trust import Keyring, keyid_of, load_private_key, sign_envelope
from qualify_verify import AGGREGATE_FILE, verify_platform_set


@dataclass(frozen=True)
class AggregateResult:
    written: Path | None
    reasons: list[Reason]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def aggregate(policy: Policy, evidence_dirs: list[Path], out: Path) -> AggregateResult:
    trust = policy.ed25519
    key = load_private_key(policy.resolve(trust.aggregate_key))
    keyring = Keyring.load(policy.resolve(trust.keyring))
    trusted = keyring.lookup(keyid_of(key.public_key()))
    if trusted is None or "aggregate" not in trusted.roles:
        raise QualificationError(Code.KEY_INVALID, "the aggregate signing key is not in the policy's keyring")
    verdict = verify_platform_set(policy, evidence_dirs)
    if not verdict.qualified:
        return AggregateResult(None, verdict.reasons)
    platforms = sorted(verdict.platforms, key=lambda vp: vp.platform)
    run = platforms[0].statement.predicate.run
    entries = [
        AggregatedPlatform(platform=vp.statement.predicate.platform, artifact=vp.statement.predicate.build.artifact,
                           statement_sha256=vp.signer.envelope_sha256, signer_keyid=vp.signer.keyid,
                           signer_identity=vp.signer.signer_name)
        for vp in platforms
    ]
    statement = AggregateStatement(
        type_="https://in-toto.io/Statement/v1",
        subject=[Subject(name=e.artifact.name, digest=DigestSet(sha256=e.artifact.sha256)) for e in entries],
        predicateType="https://desktop-qualify.invalid/evidence/aggregate-qualification/v1",
        predicate=AggregatePredicate(run=run, required_platforms=list(verdict.expectations.required_platforms),
                                     platforms=entries, aggregated_at=_now(), policy_sha256=policy.sha256),
    )
    target = out / AGGREGATE_FILE
    write_atomic(target, sign_envelope(canonical_bytes(statement), key))
    return AggregateResult(target, [])
