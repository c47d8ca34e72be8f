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
    """A rebuild's result: the qualified commit rebuilt elsewhere and its output compared with the artifact."""

    version: Literal[1] = 1
    """The version of this format."""
    commit: GitSha
    """The qualified commit that was rebuilt."""
    platform: Platform
    """The platform whose artifact was rebuilt."""
    run_id: ShortText
    """The run that qualified the artifact."""
    attempt: Annotated[int, Field(ge=1, le=10_000)]
    """That run's attempt."""
    # The qualified artifact (also the subject), and the digest a rebuild had to give (the unsigned output's).
    artifact: ArtifactRef
    """The qualified artifact (also the statement's subject)."""
    expected_sha256: Sha256Hex
    """The digest a rebuild had to give (the unsigned output's)."""
    rebuilt_sha256: Sha256Hex
    """The SHA-256 of the rebuilt output."""
    rebuilt_size: Count
    """The rebuilt output's size in bytes."""
    source_digest: Sha256Hex
    """The digest of the exported source the rebuild ran on."""
    matches: bool
    """Whether the rebuilt digest equals the expected one."""
    first_difference: Excerpt | None
    """The first member that differs, when they differ; else None."""
    tools: dict[ShortText, ShortText] = Field(max_length=16)
    """Each tool's version by name, as the rebuild ran them."""
    rebuilt_at: Timestamp
    """When the rebuild ran (UTC)."""
    # The rebuilder's raw 32-byte Ed25519 public key (base64): the signature is verified with it.
    rebuilder_public_key: Annotated[Base64, Field(min_length=44, max_length=44)]
    """The rebuilder's raw Ed25519 public key (base64), which verifies the signature."""


class RebuildStatement(_StatementHead):
    """An in-toto statement of a rebuild, signed by the rebuilder's own key."""

    predicateType: RebuildPredicateType  # noqa: N815
    predicate: RebuildPredicate
    """The rebuild's result."""


class RebuildSeen(Record):
    """A rebuild attestation as ``qualify audit`` shows it beside the run it rebuilt (its signature verified).

    Its claims are re-derived, never taken: ``required_sha256`` is the digest the audited run's own verified
    build record says a rebuild must give, and ``matches`` compares the rebuilt digest with it. An attestation
    whose ``expected_sha256`` or ``matches`` says otherwise carries a ``contradiction`` and is never shown as a
    reproduced build.
    """

    attestation: Annotated[str, Field(min_length=1, max_length=4000)]
    """The attestation file as given to qualify audit --rebuild."""
    # Who signed it: the key id of the public key it carries. Not a key the policy trusts: the reader decides.
    rebuilder_keyid: Sha256Hex
    """The key id of the public key the attestation carries (not one the policy trusts)."""
    platform: Platform
    """The platform that was rebuilt."""
    commit: GitSha
    """The commit that was rebuilt."""
    artifact_sha256: Sha256Hex
    """The qualified artifact's SHA-256."""
    rebuilt_sha256: Sha256Hex
    """The SHA-256 of the rebuilt output."""
    required_sha256: Sha256Hex | None
    """The digest the audited run's verified build record says a rebuild must give (the unsigned output's for an
    OS-signed artifact, else the artifact's); None when the record names none."""
    matches: bool | None
    """Whether the rebuilt digest equals ``required_sha256``, re-derived by the audit; None when there is none."""
    claimed_expected_sha256: Sha256Hex
    """The digest the attestation says a rebuild had to give (its own claim)."""
    claimed_matches: bool
    """The attestation's own ``matches`` flag."""
    contradiction: Excerpt | None
    """Why the attestation's claims contradict the run's build record (QE_REBUILD_CLAIM_CONTRADICTED); else None."""
    first_difference: Excerpt | None
    """The first member that differs, when they differ; else None."""
    rebuilt_at: Timestamp
    """When the rebuild ran (UTC)."""
