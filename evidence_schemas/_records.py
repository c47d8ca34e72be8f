"""The bounded per-stage records a producer job writes (docs/design.md §2.1, §4.3).

A record carries digests of what the stage looked at and bounded excerpts at
most; a log is never evidence.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._app_contract import MAX_APP_LAYERS, MAX_CHECKS, AppCheck, DisplayKind, InstallerKind, IsolationLayer
from ._limits import MAX_BUNDLE_TEXT, MAX_LIST
from ._types import (
    AppCode,
    Count,
    ErrnoName,
    Excerpt,
    FileName,
    GitSha,
    KeyId,
    Millis,
    Platform,
    Record,
    RelPath,
    Sha256Hex,
    ShortText,
    StepId,
    Text,
    Timestamp,
)


class Observation(Record):
    """One thing the source gate read, from where, and when."""

    source: ShortText
    value: Text
    observed_at: Timestamp


class SourceGateRecord(Record):
    kind: Literal["source-gate"] = "source-gate"
    version: Literal[1] = 1
    mode: Literal["local", "github"]
    repository: ShortText
    ref: ShortText
    sha: GitSha
    # The head of main as the gate read it (git locally, the REST API in GitHub
    # mode): the fact ``head_matches`` summarises, so a verifier can re-derive it.
    main_head: GitSha
    worktree_clean: bool
    # Local evidence never claims protection it did not observe.
    protection: Literal["not-observed", "protected", "ruleset", "unprotected"]
    head_matches: bool
    observations: list[Observation] = Field(min_length=1, max_length=32)
    passed: bool


class ArtifactRef(Record):
    name: FileName
    size: Count
    sha256: Sha256Hex


# What the second build of a reproducibility check changed (reprotest's variations that apply to a build run
# by the producer): the source's folder, TMPDIR, HOME, the umask, the locale, the time zone, and the time.
VariationName = Literal["build-path", "tmpdir", "home", "umask", "locale", "timezone", "time"]


class BuildVariation(Record):
    """One condition the second build ran under differently, with both values (for people; the digests decide)."""

    name: VariationName
    first: ShortText
    second: ShortText


class BuildReproduction(Record):
    """The second build of the same commit under varied conditions, and its output's digest beside the first's.

    Both digests are of the build's own output file, before operating-system code signing (a signature carries
    a time and a certificate of its own); for an unsigned artifact the first is the artifact's digest. The
    verifier re-derives ``reproduced`` from the two digests and refuses a record whose flag contradicts them.
    """

    first_sha256: Sha256Hex
    second_sha256: Sha256Hex
    second_size: Count
    variations: list[BuildVariation] = Field(min_length=1, max_length=16)
    reproduced: bool
    duration_ms: Millis


class BuildRecord(Record):
    kind: Literal["build"] = "build"
    version: Literal[2] = 2
    artifact: ArtifactRef
    build_sha: GitSha
    source_digest: Sha256Hex
    # The policy's build argv, as written there (placeholders unexpanded): the command that ran.
    command: Argv
    tools: dict[ShortText, ShortText] = Field(max_length=16)
    started_at: Timestamp
    duration_ms: Millis
    passed: bool
    # The second build, when the policy requires this platform's build to reproduce ([reproducible]).
    reproduction: BuildReproduction | None = None


class NotarizationRecord(Record):
    """The after-sign notarization hook's bounded result (macOS only; see producer._notarize)."""

    # accepted: Apple's notary service accepted the submission; rejected: it answered Invalid or
    # Rejected; failed: no usable answer (the tool failed or said nothing parseable); skipped: the
    # job had no notarization credentials, so nothing was submitted.
    outcome: Literal["accepted", "rejected", "failed", "skipped"]
    # notarytool's submission id (a UUID), to look the submission up with `xcrun notarytool log`.
    submission_id: Annotated[str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")] \
        | None = None
    # notarytool's own status word ("Accepted", "Invalid", ...), when it gave one.
    status: ShortText | None = None
    # Whether `xcrun stapler staple` attached the ticket to the bundle (Gatekeeper can then check
    # offline; without it, Gatekeeper fetches the ticket online on first launch).
    stapled: bool
    detail: ShortText


class SignatureRecord(Record):
    kind: Literal["signature"] = "signature"
    version: Literal[1] = 1
    method: Literal["ed25519-detached", "sigstore-bundle"]
    artifact_sha256: Sha256Hex
    keyid: KeyId
    # A base64 Ed25519 signature, or a whole Sigstore bundle (JSON text).
    signature: Annotated[str, Field(min_length=1, max_length=MAX_BUNDLE_TEXT)]
    readback_verified: bool
    # The operating system's own code signing (codesign, signtool); see
    # producer._platform_signing for the tools each platform runs.
    platform_signing_tool: ShortText
    platform_signing_state: Literal["unsigned", "signed", "notarized", "failed"]
    passed: bool
    # macOS: what the notarization hook did (None on Linux and Windows, and in evidence made before it).
    notarization: NotarizationRecord | None = None


class InstalledFile(Record):
    path: RelPath
    size: Count
    sha256: Sha256Hex


class InstallRecord(Record):
    kind: Literal["install"] = "install"
    version: Literal[2] = 2
    artifact_sha256: Sha256Hex
    # The installer kind that installed it; the verifier requires the policy's kind for the platform.
    method: InstallerKind
    file_count: Count
    total_bytes: Count
    manifest_sha256: Sha256Hex
    executable: RelPath
    executable_sha256: Sha256Hex
    duration_ms: Millis
    passed: bool
    failure: Excerpt | None = None


MAX_LAYERS = MAX_APP_LAYERS
# One item of a command line as the policy writes it (placeholders unexpanded), recorded so the verifier
# can hold the command that ran to the policy's.
ArgvItem = Annotated[str, Field(min_length=1, max_length=1024)]
Argv = Annotated[list[ArgvItem], Field(min_length=1, max_length=64)]


class ProbeReport(Record):
    """What the installed app said about itself (its ``qualify-probe`` v2 record, bounded, re-validated)."""

    app_version: ShortText
    build_sha: GitSha
    platform: Platform
    executable_sha256: Sha256Hex
    checks: list[AppCheck] = Field(max_length=MAX_CHECKS)
    isolation_layers: list[IsolationLayer] = Field(max_length=MAX_LAYERS)


class LaunchProbeRecord(Record):
    kind: Literal["launch-probe"] = "launch-probe"
    version: Literal[2] = 2
    # The policy's probe argv as written there, and the display it ran under.
    command: Argv
    display: DisplayKind
    exit_code: int | None
    timed_out: bool
    duration_ms: Millis
    report: ProbeReport | None
    build_sha_matches: bool
    executable_matches_install: bool
    stderr_excerpt: Excerpt
    passed: bool


class JourneyStep(Record):
    """One step as the app (or its runner) observed it, and whether it meets the policy's step table."""

    id: StepId
    observed: Literal["allow", "reject", "error"]
    code: AppCode | None
    # The kernel's refusal of a kernel-refusal step; None for every other step.
    errno: ErrnoName | None
    detail: Annotated[str, Field(max_length=400)]
    # The producer's verdict against the policy: a claim the verifier re-derives.
    passed: bool


class JourneyRecord(Record):
    kind: Literal["journey"] = "journey"
    version: Literal[2] = 2
    # The policy's journey argv as written there (the app's own subcommand or a runner), and the display.
    command: Argv
    display: DisplayKind
    exit_code: int | None
    timed_out: bool
    duration_ms: Millis
    app_build_sha: GitSha | None
    steps: list[JourneyStep] = Field(max_length=MAX_LIST)
    required_steps: list[StepId] = Field(max_length=MAX_LIST)
    missing_steps: list[StepId] = Field(max_length=MAX_LIST)
    failed_steps: list[StepId] = Field(max_length=MAX_LIST)
    # The layers the journey's sandboxed worker reported (the hostile self-test's worker).
    isolation_layers: list[IsolationLayer] = Field(max_length=MAX_LAYERS)
    stderr_excerpt: Excerpt
    passed: bool

