"""The app contract, version 2 (docs/app-contract.md): what the pipeline hands an app, and what it reads back.

These are the shapes of untrusted input: the records an app (or its journey
runner) writes to the file the producer names, parsed strictly and bounded,
then copied into the evidence records. The vocabulary of installer and display
kinds lives here too, because the producer installs by it and the verifier
checks the recorded method against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import Field

from ._types import AppCode, ErrnoName, GitSha, LayerName, Platform, Record, Sha256Hex, ShortText, StepId, Timestamp

CONTRACT_VERSION = 2

InstallerKind = Literal["archive", "deb", "appimage", "dmg", "pkg", "msi", "nsis"]
DisplayKind = Literal["none", "xvfb", "offscreen"]

# Where each installer kind can run: the platform whose own tools install it.
INSTALLER_PLATFORMS: Mapping[str, frozenset[Platform]] = MappingProxyType({
    "archive": frozenset({"linux", "macos", "windows"}),
    "deb": frozenset({"linux"}),
    "appimage": frozenset({"linux"}),
    "dmg": frozenset({"macos"}),
    "pkg": frozenset({"macos"}),
    "msi": frozenset({"windows"}),
    "nsis": frozenset({"windows"}),
})
# The endings an artifact of each kind may have; the artifact's file name keeps the build output's ending.
INSTALLER_SUFFIXES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "archive": (".tar.gz", ".zip"),
    "deb": (".deb",),
    "appimage": (".AppImage",),
    "dmg": (".dmg",),
    "pkg": (".pkg",),
    "msi": (".msi",),
    "nsis": (".exe",),
})

CheckName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
MAX_CHECKS = 32
MAX_APP_LAYERS = 16
_Detail = Annotated[str, Field(max_length=400)]


class BuildInfo(Record):
    """The file ``QUALIFY_BUILD_INFO`` names: what the build embeds into the app."""

    kind: Literal["qualify-build-info"] = "qualify-build-info"
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[1] = 1
    """The version of this document's format."""
    build_sha: GitSha
    """The gated commit being built: the app embeds it and reports it back."""
    built_at: Timestamp
    """When the build started (UTC)."""
    source_ref: ShortText
    """The ref the commit was gated on."""
    platform: Platform
    """The platform the build is for."""


class AppCheck(Record):
    """One named check of the probe; the policy's ``[app.probe] require`` names those that must pass."""

    name: CheckName
    """The check's name."""
    passed: bool
    """Whether the check passed, as the app reports it."""
    detail: _Detail
    """What the app says about the check, for people."""


class IsolationLayer(Record):
    """One isolation layer the app's sandboxed part reported (only policies with ``[isolation]`` require any)."""

    name: LayerName
    """The layer's name."""
    applied: bool
    """Whether the layer was in force."""
    detail: Annotated[str, Field(max_length=120)]
    """What the app says about the layer, for people."""


class AppProbeRecord(Record):
    """``qualify-probe`` v2: what the installed app says about itself right after launch."""

    kind: Literal["qualify-probe"]
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[2]
    """The version of this document's format."""
    app_version: ShortText
    """The app's version."""
    build_sha: GitSha
    """The commit the app was built from, as its build embedded it from QUALIFY_BUILD_INFO."""
    platform: Platform
    """The platform the app runs on."""
    executable_sha256: Sha256Hex
    """The SHA-256 of the app's own executable, as the app reads its own file."""
    checks: list[AppCheck] = Field(max_length=MAX_CHECKS)
    """The app's named checks and their results."""
    isolation_layers: list[IsolationLayer] = Field(default_factory=list, max_length=MAX_APP_LAYERS)
    """The isolation layers the app's sandboxed part reported (none when absent)."""


class AppStep(Record):
    """One journey step as observed: what happened, never what was expected and never whether it passed."""

    id: StepId
    """The step's id; each id once."""
    # allow: the operation went through; reject: it was refused; error: the step could not be carried out.
    observed: Literal["allow", "reject", "error"]
    """What happened to the step's operation."""
    code: AppCode | None
    """The app's refusal code, for a refused step."""
    errno: ErrnoName | None
    """The errno name the kernel refused with, for a kernel-refusal step."""
    # The layer the app found refused a kernel-refusal step, derived from the errno and its sandbox's layer
    # report; None for every other step (and for an app with no sandbox of its own, which may omit it).
    layer: LayerName | None = None
    """The isolation layer that refused a kernel-refusal step, as the app derived it; None otherwise."""
    detail: _Detail
    """What the app says about the step, for people."""


class AppJourneyRecord(Record):
    """``qualify-journey`` v2: written by the app's own journey command or by a runner driving it from outside."""

    kind: Literal["qualify-journey"]
    """The document kind: a fixed value that tells this document from every other."""
    version: Literal[2]
    """The version of this document's format."""
    app_version: ShortText
    """The app's version."""
    build_sha: GitSha
    """The commit the app was built from, as its build embedded it from QUALIFY_BUILD_INFO."""
    platform: Platform
    """The platform the journey ran on."""
    steps: list[AppStep] = Field(max_length=256)
    """The steps, in the order they ran."""
    isolation_layers: list[IsolationLayer] = Field(default_factory=list, max_length=MAX_APP_LAYERS)
    """The isolation layers the journey's sandboxed worker reported (none when absent)."""
