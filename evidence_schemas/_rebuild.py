"""The rebuild attestation: what a ``qualify rebuild`` found, signed by the rebuilder's own local key.

A statement of its own (in-toto, its own predicate type), never evidence of a
run: the subject is the qualified artifact, the predicate says which commit and
run it rebuilt, on what platform, what the rebuild gave and whether it matched.
It carries the rebuilder's public key; the signature is verified with it and
its key id derived from it, so the attestation names who signed it. Whether
that key is trusted is the reader's call: ``qualify audit`` shows the key id
beside the run, never as a pass of the run.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import Field

from ._records import ArtifactRef
from ._statement import Base64, _StatementHead
from ._types import Count, Excerpt, GitSha, Platform, Record, Sha256Hex, ShortText, Timestamp

RebuildPredicateType = Literal["https://desktop-qualify.invalid/evidence/rebuild/v1"]
REBUILD_PREDICATE_TYPE: Final[RebuildPredicateType] = "https://desktop-qualify.invalid/evidence/rebuild/v1"


class RebuildPredicate(Record):
    version: Literal[1] = 1
    commit: GitSha
    platform: Platform
    run_id: ShortText
    attempt: Annotated[int, Field(ge=1, le=10_000)]
    # The qualified artifact (also the subject), and the digest a rebuild had to give (the unsigned output's).
    artifact: ArtifactRef
    expected_sha256: Sha256Hex
    rebuilt_sha256: Sha256Hex
    rebuilt_size: Count
    source_digest: Sha256Hex
    matches: bool
    first_difference: Excerpt | None
    tools: dict[ShortText, ShortText] = Field(max_length=16)
    rebuilt_at: Timestamp
    # The rebuilder's raw 32-byte Ed25519 public key (base64): the signature is verified with it.
    rebuilder_public_key: Annotated[Base64, Field(min_length=44, max_length=44)]


class RebuildStatement(_StatementHead):
    predicateType: RebuildPredicateType  # noqa: N815
    predicate: RebuildPredicate


class RebuildSeen(Record):
    """A rebuild attestation as ``qualify audit`` shows it beside the run it rebuilt (its signature verified)."""

    attestation: Annotated[str, Field(min_length=1, max_length=4000)]
    # Who signed it: the key id of the public key it carries. Not a key the policy trusts: the reader decides.
    rebuilder_keyid: Sha256Hex
    platform: Platform
    commit: GitSha
    artifact_sha256: Sha256Hex
    rebuilt_sha256: Sha256Hex
    matches: bool
    first_difference: Excerpt | None
    rebuilt_at: Timestamp
