"""The manifest of a qualification bundle: one run's evidence, the policy it was judged by, and its trust root.

A bundle is a release asset an auditor checks long after the run; the manifest
names every other member with its SHA-256 and size, so a member added, removed,
renamed or altered is refused before anything in it is read as evidence.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from ._types import Count, LateRecord, Sha256Hex, Timestamp, TrustMode

MAX_BUNDLE_MEMBERS = 32


def _plain_segments(value: str) -> str:
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError("a bundle path has no empty, '.' or '..' segment")
    return value


# Relative, POSIX separators, at most 8 segments of plain characters: nothing a file system reads specially.
BundlePath = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}(/[A-Za-z0-9._-]{1,64}){0,7}$"),
                       AfterValidator(_plain_segments)]


class BundleFile(LateRecord):
    """One member of a qualification bundle, with its size and SHA-256."""

    path: BundlePath
    """The member's path in the bundle."""
    sha256: Sha256Hex
    """The SHA-256 of its bytes."""
    size: Count
    """Its size in bytes."""


class BundleManifest(LateRecord):
    """A qualification bundle's manifest: every other member with its SHA-256 and size, and what each is."""

    kind: Literal["qualification-bundle"] = "qualification-bundle"
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[1] = 1
    """The version of this document's format."""
    created_at: Timestamp
    """When the bundle was made (UTC)."""
    trust_mode: TrustMode
    """The trust mode of the run's evidence."""
    # Where the policy stands in the bundle, as in its repository: its relative paths resolve from there.
    policy: BundlePath
    """Where the policy stands in the bundle."""
    policy_sha256: Sha256Hex
    """The SHA-256 of the policy's bytes."""
    trust: list[BundlePath] = Field(max_length=4)
    """The trust root: the policy's keyring (Ed25519) or its pinned Sigstore trusted root."""
    evidence: list[BundlePath] = Field(min_length=1, max_length=MAX_BUNDLE_MEMBERS)
    """The run's signed statements."""
    files: list[BundleFile] = Field(min_length=2, max_length=MAX_BUNDLE_MEMBERS)
    """Every member but the manifest, with its SHA-256 and size."""
