"""The bounded per-stage records a producer job writes (docs/design.md §2.1, §4.3).

A record carries digests of what the stage looked at and bounded excerpts at
most; a log is never evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
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
    LayerName,
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
    """Where the value was read: a git command, an environment variable, or a GitHub API call and field."""
    value: Text
    """What the source answered, cut to 4096 characters (a failed git command: its exit status)."""
    observed_at: Timestamp
    """When it was read (UTC)."""


class SourceGateRecord(Record):
    """The source gate's record: the gated commit, and what the gate read to find it the head of main."""

    kind: Literal["source-gate"] = "source-gate"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[1] = 1
    """The version of this record's format."""
    mode: Literal["local", "github"]
    """Where the gate ran: a local git checkout, or a GitHub Actions run read through GitHub's REST API."""
    repository: ShortText
    """The repository the commit belongs to (owner/name)."""
    ref: ShortText
    """The ref the checkout or run was on; only refs/heads/main passes."""
    sha: GitSha
    """The commit that was gated, and then built."""
    # The head of main as the gate read it (git locally, the REST API in GitHub
    # mode): the fact ``head_matches`` summarises, so a verifier can re-derive it.
    main_head: GitSha
    """The head of main as the gate read it; the verifier compares it with ``sha`` itself."""
    worktree_clean: bool
    """Whether the checkout had no uncommitted changes to tracked files."""
    # Local evidence never claims protection it did not observe.
    protection: Literal["not-observed", "protected", "ruleset", "unprotected"]
    """How main was protected, as GitHub mode observed it; local mode always records not-observed."""
    head_matches: bool
    """The producer's claim that ``main_head`` equals ``sha``; the verifier recomputes it."""
    observations: list[Observation] = Field(min_length=1, max_length=32)
    """Everything the gate read, in order, each with where and when."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""


class ArtifactRef(Record):
    """The released artifact: its file name, size and SHA-256."""

    name: FileName
    """The artifact's file name: app, commit, platform and architecture, with the build output's ending."""
    size: Count
    """Its size in bytes."""
    sha256: Sha256Hex
    """The SHA-256 of its bytes."""


# What the second build of a reproducibility check changed (reprotest's variations that apply to a build run
# by the producer): the source's folder, TMPDIR, HOME, the umask, the locale, the time zone, and the time.
VariationName = Literal["build-path", "tmpdir", "home", "umask", "locale", "timezone", "time"]


class BuildVariation(Record):
    """One condition the second build ran under differently, with both values (for people; the digests decide)."""

    name: VariationName
    """The condition varied (build path, TMPDIR, HOME, umask, locale, time zone, time)."""
    first: ShortText
    """Its value in the first build."""
    second: ShortText
    """Its value in the second build."""


class BuildReproduction(Record):
    """The second build of the same commit under varied conditions, and its output's digest beside the first's.

    Both digests are of the build's own output file, before operating-system code signing (a signature carries
    a time and a certificate of its own); for an unsigned artifact the first is the artifact's digest. The
    verifier re-derives ``reproduced`` from the two digests and refuses a record whose flag contradicts them.
    """

    first_sha256: Sha256Hex
    """The SHA-256 of the first build's output (before OS code signing)."""
    second_sha256: Sha256Hex
    """The SHA-256 of the second build's output."""
    second_size: Count
    """The second output's size in bytes."""
    variations: list[BuildVariation] = Field(min_length=1, max_length=16)
    """Each condition the second build ran under differently."""
    reproduced: bool
    """Whether the two digests are equal: a claim the verifier re-derives."""
    duration_ms: Millis
    """How long the second build took, in milliseconds."""


class BuildRecord(Record):
    """The build stage's record: the artifact built from the gated commit's exported source, and how."""

    kind: Literal["build"] = "build"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[2] = 2
    """The version of this record's format."""
    artifact: ArtifactRef
    """The artifact the build produced (after OS code signing), under its release name."""
    build_sha: GitSha
    """The commit whose exported source (``git archive``, never the work tree) was built."""
    source_digest: Sha256Hex
    """The SHA-256 of the manifest of the exported source tree the build ran in."""
    # The policy's build argv, as written there (placeholders unexpanded): the command that ran.
    command: Argv
    """The policy's build command line, as written there (placeholders unexpanded)."""
    tools: dict[ShortText, ShortText] = Field(max_length=16)
    """Each tool's version by name: the producer's python, os and machine, and each tool the policy names."""
    started_at: Timestamp
    """When the build started (UTC)."""
    duration_ms: Millis
    """How long the stage took, in milliseconds."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""
    # The second build, when the policy requires this platform's build to reproduce ([reproducible]).
    reproduction: BuildReproduction | None = None
    """The second build, when the policy requires this platform's build to reproduce; else None."""


class NotarizationRecord(Record):
    """The after-sign notarization hook's bounded result (macOS only; see producer._notarize)."""

    # accepted: Apple's notary service accepted the submission; rejected: it answered Invalid or
    # Rejected; failed: no usable answer (the tool failed or said nothing parseable); skipped: the
    # job had no notarization credentials, so nothing was submitted.
    outcome: Literal["accepted", "rejected", "failed", "skipped"]
    """What became of the submission: accepted, rejected, failed (no usable answer) or skipped."""
    # notarytool's submission id (a UUID), to look the submission up with `xcrun notarytool log`.
    submission_id: Annotated[str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")] \
        | None = None
    """notarytool's submission id, when a submission was made."""
    # notarytool's own status word ("Accepted", "Invalid", ...), when it gave one.
    status: ShortText | None = None
    """notarytool's own status word, when it gave one."""
    # Whether `xcrun stapler staple` attached the ticket to the bundle (Gatekeeper can then check
    # offline; without it, Gatekeeper fetches the ticket online on first launch).
    stapled: bool
    """Whether the notarization ticket was stapled to the bundle."""
    detail: ShortText
    """What happened, in a few words, for people."""


class SignatureRecord(Record):
    """The sign stage's record: the pipeline's signature over the artifact, its read-back, the OS code signing."""

    kind: Literal["signature"] = "signature"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[1] = 1
    """The version of this record's format."""
    method: Literal["ed25519-detached", "sigstore-bundle"]
    """How the artifact was signed: a detached Ed25519 signature (local mode) or a Sigstore bundle (GitHub)."""
    artifact_sha256: Sha256Hex
    """The SHA-256 of the artifact that was signed."""
    keyid: KeyId
    """The signer's id: the SHA-256 of the raw public key (Ed25519) or of the certificate's DER (Sigstore)."""
    # A base64 Ed25519 signature, or a whole Sigstore bundle (JSON text).
    signature: Annotated[str, Field(min_length=1, max_length=MAX_BUNDLE_TEXT)]
    """The signature: base64 Ed25519, or a whole Sigstore bundle as JSON text."""
    readback_verified: bool
    """Whether the artifact, re-read from disk, had the signed digest and the signature verified."""
    # The operating system's own code signing (codesign, signtool); see
    # producer._platform_signing for the tools each platform runs.
    platform_signing_tool: ShortText
    """The operating system's code-signing tool that signed the artifact, or none."""
    platform_signing_state: Literal["unsigned", "signed", "notarized", "failed"]
    """The artifact's OS code-signing state; the policy lists the states it accepts."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""
    # macOS: what the notarization hook did (None on Linux and Windows, and in evidence made before it).
    notarization: NotarizationRecord | None = None
    """macOS: what the notarization hook did; None on Linux and Windows."""


class InstalledFile(Record):
    """One entry of an install manifest: a regular file or a symbolic link under the install prefix."""

    path: RelPath
    """Its path relative to the install prefix, with POSIX separators."""
    size: Count
    """Its size in bytes (a link: the length of its target)."""
    sha256: Sha256Hex
    """The SHA-256 of its bytes (a link: of its target, domain-separated from file contents)."""


# The installer kinds that check the package's own signature before they install it, and the tool that does.
INSTALLER_SIGNATURE_TOOLS: Mapping[str, str] = MappingProxyType({"pkg": "pkgutil", "msi": "signtool"})


class InstallerSignature(Record):
    """The installer's own check of the package's signature, made before a byte was installed.

    ``pkg``: ``pkgutil --check-signature`` (a productsign signature that verifies to a trusted root); ``msi``:
    ``signtool verify /pa /tw``, pinned to the job's certificate when it names one. Where the policy accepts only
    signed builds for the platform, the verifier requires ``signed`` (``QE_INSTALLER_SIGNATURE_REFUSED``).
    """

    tool: Literal["pkgutil", "signtool"]
    """The tool that checked the signature."""
    state: Literal["signed", "unsigned", "failed", "not-checked"]
    """What it found: ``signed`` (it verifies), ``unsigned`` (no signature), ``failed`` (a signature that does not
    verify, is untrusted, not the pinned certificate's or not timestamped, or a tool that could not run) or
    ``not-checked`` (the job has no signtool and the policy does not require a signed build)."""
    detail: Annotated[str, Field(max_length=300)]
    """What the tool said (pkgutil's ``Status:`` line, signtool's refusal), bounded, for people."""


class InstallRecord(Record):
    """The install stage's record: the artifact installed into a fresh prefix, and digests of what landed."""

    kind: Literal["install"] = "install"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[2] = 2
    """The version of this record's format."""
    artifact_sha256: Sha256Hex
    """The SHA-256 of the artifact bytes installed, taken while copying them (zeros if unread)."""
    # The installer kind that installed it; the verifier requires the policy's kind for the platform.
    method: InstallerKind
    """The installer kind that installed the artifact."""
    file_count: Count
    """How many files and links were installed."""
    total_bytes: Count
    """Their total size in bytes."""
    manifest_sha256: Sha256Hex
    """The SHA-256 of the installed tree's manifest (RFC 8785 JSON); zeros when the install failed."""
    executable: RelPath
    """The app's executable, relative to the install prefix, as the policy names it."""
    executable_sha256: Sha256Hex
    """The installed executable's SHA-256; zeros when the install failed."""
    duration_ms: Millis
    """How long the stage took, in milliseconds."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""
    failure: Excerpt | None = None
    """Why the install failed; None when it succeeded."""
    package_signature: InstallerSignature | None = None
    """The installer's own check of the package's signature (``pkg``, ``msi``); None for the kinds that have none,
    and in evidence made before it was recorded."""


# A toolchain's name is its placeholder in the policy's command lines (``{node}``): lowercase letters only, as
# the placeholder syntax allows.
ToolchainName = Annotated[str, Field(pattern=r"^[a-z]{1,32}$")]
ToolPath = Annotated[str, Field(min_length=1, max_length=1024)]
MAX_TOOLCHAINS = 9
MAX_TOOLCHAIN_FOLDERS = 4


class ToolchainRecord(Record):
    """A tool the probe, journey and state commands name by placeholder, resolved once on the producer's machine.

    The policy names it (``[app.toolchains]``: an executable name looked up on the producer's ``PATH``, or an
    absolute path) or it is ``{python}``, the producer's own interpreter. Informational: the commands in the
    records keep the placeholder, and this says what it stood for on this machine; the verifier decides nothing
    from it.
    """

    name: ToolchainName
    """The placeholder's name (``node`` for ``{node}``)."""
    requested: ToolPath
    """What the policy asked for: an executable name, an absolute path, or ``{python}`` (the producer's own)."""
    path: ToolPath
    """The absolute path substituted into the command lines (links not followed, so a virtual environment's
    interpreter stays in it)."""
    resolved: ToolPath
    """The file that runs: ``path`` with every link followed."""
    sha256: Sha256Hex
    """The SHA-256 of the resolved file, read when it was resolved."""
    version: Annotated[str, Field(min_length=1, max_length=200)]
    """The first line ``TOOL --version`` printed, run confined once before the probe."""
    folders: list[ToolPath] = Field(min_length=1, max_length=MAX_TOOLCHAIN_FOLDERS)
    """The folders bound read-only into the probe, journey and state stages for it (its install prefix, and its
    link target's)."""


MAX_LAYERS = MAX_APP_LAYERS
# One item of a command line as the policy writes it (placeholders unexpanded), recorded so the verifier
# can hold the command that ran to the policy's.
ArgvItem = Annotated[str, Field(min_length=1, max_length=1024)]
Argv = Annotated[list[ArgvItem], Field(min_length=1, max_length=64)]


class ProbeReport(Record):
    """What the installed app said about itself (its ``qualify-probe`` v2 record, bounded, re-validated)."""

    app_version: ShortText
    """The version the app reports."""
    build_sha: GitSha
    """The commit the app says it was built from (embedded by its build)."""
    platform: Platform
    """The platform the app says it runs on."""
    executable_sha256: Sha256Hex
    """The SHA-256 the app computed of its own executable."""
    checks: list[AppCheck] = Field(max_length=MAX_CHECKS)
    """The app's named checks and their results."""
    isolation_layers: list[IsolationLayer] = Field(max_length=MAX_LAYERS)
    """The isolation layers the app's sandboxed part reported."""


class LaunchProbeRecord(Record):
    """The launch probe's record: the installed executable run with the policy's probe command, and its report."""

    kind: Literal["launch-probe"] = "launch-probe"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[2] = 2
    """The version of this record's format."""
    # The policy's probe argv as written there, and the display it ran under.
    command: Argv
    """The policy's probe command line, as written there (placeholders unexpanded)."""
    display: DisplayKind
    """The display the command ran under, as the policy sets it for the platform."""
    exit_code: int | None
    """The command's exit status; None when it was not run or was stopped at its time limit."""
    timed_out: bool
    """Whether the command was stopped at the policy's time limit."""
    duration_ms: Millis
    """How long the stage took, in milliseconds."""
    report: ProbeReport | None
    """The app's probe record, validated; None when none was read that validated."""
    build_sha_matches: bool
    """The producer's claim that the reported build SHA is the gated commit; recomputed."""
    executable_matches_install: bool
    """The producer's claim that the app's own digest is the installed one's; recomputed."""
    stderr_excerpt: Excerpt
    """Bounded tails of the command's output and the problems found, for people: never evidence."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""


class JourneyStep(Record):
    """One step as the app (or its runner) observed it, and whether it meets the policy's step table."""

    id: StepId
    """The step's id, as the policy's step table names it."""
    observed: Literal["allow", "reject", "error"]
    """What happened: allow (went through), reject (refused) or error (could not be carried out)."""
    code: AppCode | None
    """The app's refusal code, for a refused step."""
    # The kernel's refusal of a kernel-refusal step; None for every other step.
    errno: ErrnoName | None
    """The errno name the kernel refused with, for a kernel-refusal step."""
    # The isolation layer that refused a kernel-refusal step, as the app derived it from the errno and its
    # worker's layer report; None for every other step. The verifier holds it to the policy's step table.
    layer: LayerName | None
    """The isolation layer that refused a kernel-refusal step (held to the policy's step table); None otherwise."""
    detail: Annotated[str, Field(max_length=400)]
    """What the app said about the step, for people."""
    # The producer's verdict against the policy: a claim the verifier re-derives.
    passed: bool
    """The producer's verdict on the step against the policy: a claim the verifier re-derives."""


class JourneyRecord(Record):
    """The journey's record: the installed app's scripted journey, step by step, against the policy's table."""

    kind: Literal["journey"] = "journey"
    """The document kind: a fixed value that tells this record from every other."""
    version: Literal[2] = 2
    """The version of this record's format."""
    # The policy's journey argv as written there (the app's own subcommand or a runner), and the display.
    command: Argv
    """The policy's journey command line, as written there (placeholders unexpanded)."""
    display: DisplayKind
    """The display the command ran under, as the policy sets it for the platform."""
    exit_code: int | None
    """The command's exit status; None when it was not run or was stopped at its time limit."""
    timed_out: bool
    """Whether the command was stopped at the policy's time limit."""
    duration_ms: Millis
    """How long the stage took, in milliseconds."""
    app_build_sha: GitSha | None
    """The commit the journey record says the app was built from; None without a valid record for this platform."""
    steps: list[JourneyStep] = Field(max_length=MAX_LIST)
    """The steps as reported, in order, each with the producer's verdict."""
    required_steps: list[StepId] = Field(max_length=MAX_LIST)
    """The steps the policy requires, in its order: a claim the verifier re-derives."""
    missing_steps: list[StepId] = Field(max_length=MAX_LIST)
    """The required steps not reported: a claim the verifier re-derives."""
    failed_steps: list[StepId] = Field(max_length=MAX_LIST)
    """The reported steps that fail the policy, each once: a claim the verifier re-derives."""
    # The layers the journey's sandboxed worker reported (the hostile self-test's worker).
    isolation_layers: list[IsolationLayer] = Field(max_length=MAX_LAYERS)
    """The isolation layers the journey's sandboxed worker reported."""
    stderr_excerpt: Excerpt
    """Bounded tails of the command's output and the problems found, for people: never evidence."""
    passed: bool
    """The producer's verdict on the stage: a claim the verifier re-derives from the facts and the policy."""

