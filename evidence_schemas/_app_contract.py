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
    version: Literal[1] = 1
    build_sha: GitSha
    built_at: Timestamp
    source_ref: ShortText
    platform: Platform


class AppCheck(Record):
    """One named check of the probe; the policy's ``[app.probe] require`` names those that must pass."""

    name: CheckName
    passed: bool
    detail: _Detail


class IsolationLayer(Record):
    """One isolation layer the app's sandboxed part reported (only policies with ``[isolation]`` require any)."""

    name: LayerName
    applied: bool
    detail: Annotated[str, Field(max_length=120)]


class AppProbeRecord(Record):
    """``qualify-probe`` v2: what the installed app says about itself right after launch."""

    kind: Literal["qualify-probe"]
    version: Literal[2]
    app_version: ShortText
    build_sha: GitSha
    platform: Platform
    executable_sha256: Sha256Hex
    checks: list[AppCheck] = Field(max_length=MAX_CHECKS)
    isolation_layers: list[IsolationLayer] = Field(default_factory=list, max_length=MAX_APP_LAYERS)


class AppStep(Record):
    """One journey step as observed: what happened, never what was expected and never whether it passed."""

    id: StepId
    # allow: the operation went through; reject: it was refused; error: the step could not be carried out.
    observed: Literal["allow", "reject", "error"]
    code: AppCode | None
    errno: ErrnoName | None
    # The layer the app found refused a kernel-refusal step, derived from the errno and its sandbox's layer
    # report; None for every other step (and for an app with no sandbox of its own, which may omit it).
    layer: LayerName | None = None
    detail: _Detail


class AppJourneyRecord(Record):
    """``qualify-journey`` v2: written by the app's own journey command or by a runner driving it from outside."""

    kind: Literal["qualify-journey"]
    version: Literal[2]
    app_version: ShortText
    build_sha: GitSha
    platform: Platform
    steps: list[AppStep] = Field(max_length=256)
    isolation_layers: list[IsolationLayer] = Field(default_factory=list, max_length=MAX_APP_LAYERS)
