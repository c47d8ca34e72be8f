"""A rebuild attestation (`qualify rebuild --attest`'s format) saying whatever a test tells it to, signed by a
rebuilder's own fresh key: for `qualify audit --rebuild` rows that must re-derive its verdict."""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import (
    IN_TOTO_STATEMENT_TYPE,
    REBUILD_PREDICATE_TYPE,
    DigestSet,
    PlatformPredicate,
    RebuildPredicate,
    RebuildStatement,
    Subject,
    canonical_bytes,
)
from desktop_qualify.qualify_trust import generate_private_key, public_key_text, sign_self_signed

from support.evidence_factory import Evidence

# A digest no run's artifact has.
OTHER = "ee" * 32


def predicate(ev: Evidence) -> PlatformPredicate:
    predicate = ev.platforms[0].predicate
    assert predicate is not None
    return predicate


def attestation(ev: Evidence, path: Path, *, rebuilt: str | None = None, expected: str | None = None,
                 matches: bool = True, subject: str | None = None) -> Path:
    """An attestation of the run's first artifact, signed by a rebuilder's own key, saying what it is told to."""
    p = predicate(ev)
    artifact = p.build.artifact
    key = generate_private_key(path.with_suffix(".pem"))
    statement = RebuildStatement(
        type_=IN_TOTO_STATEMENT_TYPE,
        subject=[Subject(name=artifact.name, digest=DigestSet(sha256=subject or artifact.sha256))],
        predicateType=REBUILD_PREDICATE_TYPE,
        predicate=RebuildPredicate(
            commit=p.run.sha, platform=p.platform, run_id=p.run.run_id, attempt=p.run.attempt, artifact=artifact,
            expected_sha256=expected or artifact.sha256, rebuilt_sha256=rebuilt or artifact.sha256,
            rebuilt_size=artifact.size, source_digest=p.build.source_digest, matches=matches,
            first_difference=None if matches else "main.py differs", tools={"python": "3"},
            rebuilt_at="2026-12-01T12:00:00Z", rebuilder_public_key=public_key_text(key)))
    path.write_bytes(sign_self_signed(canonical_bytes(statement), key))
    return path
