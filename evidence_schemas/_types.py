"""Constrained scalar types shared by every model."""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ._limits import MAX_EXCERPT, MAX_SHORT_STRING, MAX_STRING


def _no_parent_segment(value: str) -> str:
    if ".." in value.split("/"):
        raise ValueError("path must not contain a '..' segment")
    return value


Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
# A git commit id: SHA-1 (40 hex) or SHA-256 object format (64 hex).
GIT_SHA_PATTERN = r"^([0-9a-f]{40}|[0-9a-f]{64})$"
GitSha = Annotated[str, Field(pattern=GIT_SHA_PATTERN)]
KeyId = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Timestamp = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")]
ShortText = Annotated[str, Field(min_length=1, max_length=MAX_SHORT_STRING)]
Text = Annotated[str, Field(max_length=MAX_STRING)]
Excerpt = Annotated[str, Field(max_length=MAX_EXCERPT)]
# A file name in evidence: one path component, no separators, no leading dot.
FileName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")]
# A path relative to an install prefix, POSIX separators, no "..".
RelPath = Annotated[str, Field(pattern=r"^[^/\\\x00][^\\\x00]{0,511}$"), AfterValidator(_no_parent_segment)]
Count = Annotated[int, Field(ge=0, le=2**53)]
Millis = Annotated[int, Field(ge=0, le=7 * 24 * 3600 * 1000)]
StepId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
# An app's stable refusal code as evidence holds it; each policy narrows it with its own ``[app.codes] pattern``.
APP_CODE_PATTERN = r"^[A-Z][A-Z0-9_]{1,79}$"
AppCode = Annotated[str, Field(pattern=APP_CODE_PATTERN)]
# An isolation layer's name as the app reports it (``no-new-privs``, ``landlock-fs``, ``sandbox-exec``...).
LayerName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
# A POSIX errno name (``EACCES``, ``EPERM``), as the kernel refused a journey step's operation.
ErrnoName = Annotated[str, Field(pattern=r"^E[A-Z0-9]{1,15}$")]

Platform = Literal["linux", "macos", "windows"]
def utc_now() -> str:
    """Now, in the evidence's timestamp format (RFC 3339, UTC, microseconds): what ``Timestamp`` accepts."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


PLATFORMS: tuple[Platform, ...] = ("linux", "macos", "windows")
TrustMode = Literal["ed25519", "sigstore"]


class Record(BaseModel):
    """Base of every model of untrusted input (evidence, policy, keyring, app output).

    Unknown fields and loose types are errors; instances are immutable.
    Each field's docstring (the string under it) is its description in the exported JSON Schema.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LateRecord(Record):
    """A Record whose validator is built on first use: for documents a verify never touches (audit reports,
    bundle manifests), so that the release gate's start-up does not pay for them.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)
