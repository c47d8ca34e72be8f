"""The policy file's shape (docs/design.md §8): the only source of what is trusted."""

from __future__ import annotations

from typing import Annotated, Literal

from desktop_qualify.evidence_schemas import (
    APP_STAGES,
    CONFINEMENT_LAYERS,
    CONFINEMENT_LAYERS_BY_PLATFORM,
    GIT_SHA_PATTERN,
    PLATFORMS,
    AppCode,
    AppStage,
    ErrnoName,
    LayerName,
    Platform,
    Record,
)
from pydantic import Field, model_validator

from ._app import AppPolicy

_Name = Annotated[str, Field(min_length=1, max_length=256)]
_RelPath = Annotated[str, Field(min_length=1, max_length=512)]
_StepId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
PlatformChoice = Literal["linux", "macos", "windows", "host"]
SigningState = Literal["unsigned", "signed", "notarized"]

_WorkflowPath = Annotated[str, Field(pattern=r"^\.github/workflows/[A-Za-z0-9_.-]{1,100}\.ya?ml$")]


class SignerWorkflows(Record):
    """GitHub mode: the one workflow file whose certificate may speak for each platform and for the aggregate.

    Each platform's producer is a reusable workflow of its own, called by the
    producer (build config) workflow; Fulcio writes the reusable file into the
    build signer URI (OID .9, also the SAN) and the caller into the build config
    URI (.18). A statement for one platform signed by another's file is refused
    (docs/design.md §3.4: a compromised job cannot speak for another platform).
    Under ``[producer.builder]`` the files are the builder's (desktop-qualify's) at
    its release tag, called from this repository's workflow.
    """

    linux: _WorkflowPath
    """The reusable workflow file whose certificate alone may sign the Linux platform statement."""
    macos: _WorkflowPath
    """The reusable workflow file whose certificate alone may sign the macOS platform statement."""
    windows: _WorkflowPath
    """The reusable workflow file whose certificate alone may sign the Windows platform statement."""
    aggregate: _WorkflowPath
    """The workflow file whose certificate alone may sign the aggregate statement; never a platform's."""

    @model_validator(mode="after")
    def _one_file_per_platform(self) -> SignerWorkflows:
        platforms = [self.linux, self.macos, self.windows]
        if len(set(platforms)) != len(platforms):
            raise ValueError("each platform needs a signer workflow of its own")
        if self.aggregate in platforms:
            raise ValueError("the aggregate cannot sign as a platform's producer workflow")
        return self


_Repository = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")]


class BuilderIdentity(Record):
    """GitHub mode, a team's policy: desktop-qualify's reusable workflows, called at one release tag.

    A team's repository holds its app, this policy and one small caller workflow
    that calls desktop-qualify's producers, aggregate and release gate at a tag
    (``uses: OWNER/REPO/.github/workflows/produce-linux.yml@vX.Y.Z``). Fulcio then
    writes desktop-qualify's file at that tag into each certificate's build signer
    URI (OID .9, also the SAN) and its commit into the build signer digest (.10),
    while the source repository, ref and commit (.12 to .14) stay the team's. With
    this section ``[producer.signers]`` names files of this repository, and a
    statement signed by them at another tag (or commit) is refused
    (``QE_BUILDER_REF_MISMATCH``), as is one whose source is another repository
    (``QE_WORKFLOW_IDENTITY_MISMATCH``). Without it the signers are the producer
    repository's own workflows on its own ref.
    """

    repository: _Repository
    """The repository (OWNER/REPO) whose reusable workflows sign: desktop-qualify's, not the team's."""
    ref: Annotated[str, Field(pattern=r"^refs/tags/v[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}$")]
    """The release tag the team's caller workflow calls them at, as ``refs/tags/vX.Y.Z``; a branch is refused
    (a branch moves under the team without its review)."""
    commit: Annotated[str, Field(pattern=GIT_SHA_PATTERN)] | None = None
    """Optional: the commit that tag named when the team adopted it (the certificates' build signer digest, .10).
    A tag can be moved; with this pin a statement signed by the workflows at any other commit is refused."""


class ProducerIdentity(Record):
    repository: _Repository
    """The GitHub repository (OWNER/REPO) the producer runs in; the certificates' and statements' source."""
    workflow: _WorkflowPath
    """The top-level workflow the run belongs to (GITHUB_WORKFLOW_REF; certificate OID .18)."""
    ref: Literal["refs/heads/main"]
    """The only ref a qualified run may build from."""
    allowed_triggers: list[_Name] = Field(min_length=1, max_length=8)
    """The events that may start a qualifying run (``push``, ``workflow_dispatch``...); any other is refused."""
    runner_environment: Literal["github-hosted", "local"]
    """Where the producer must have run: GitHub's hosted runners (GitHub mode) or this machine (local mode)."""
    repository_id: Annotated[int, Field(ge=1, le=2**63)] | None = None
    """GitHub's numeric repository id, pinned against a renamed or re-registered OWNER/REPO (GitHub mode)."""
    owner_id: Annotated[int, Field(ge=1, le=2**63)] | None = None
    """GitHub's numeric id of the repository's owner, pinned likewise (GitHub mode)."""
    signers: SignerWorkflows | None = None
    """GitHub mode only (required there): who signs for each platform and for the aggregate."""
    builder: BuilderIdentity | None = None
    """GitHub mode, optional: the signers are desktop-qualify's reusable workflows at a release tag, called from
    this repository (a team's policy); absent, they are this repository's own workflows on ``ref``."""

    @model_validator(mode="after")
    def _callers_are_not_platform_signers(self) -> ProducerIdentity:
        # The caller's own identity (.9 = .18) must never pass for a platform's reusable producer.
        if self.signers is not None and self.workflow in (self.signers.linux, self.signers.macos,
                                                          self.signers.windows):
            raise ValueError("the build config workflow cannot also be a platform's signer workflow")
        return self


class Ed25519Trust(Record):
    mode: Literal["ed25519"]
    """Local mode: statements are signed with Ed25519 keys from the committed keyring."""
    keyring: _RelPath
    """The committed keyring (public keys and their roles), relative to the policy file."""
    platform_key: _RelPath
    """Where this machine keeps the private key its local producer signs with; generated by ``qualify keygen``,
    git-ignored."""
    aggregate_key: _RelPath
    """Where this machine keeps the private key the aggregate signs with; generated by ``qualify keygen``,
    git-ignored."""
    verifier_key: _RelPath | None = None
    """The release gate's key for its Verification Summary Attestations (``qualify verify --vsa``), in the keyring
    under the role 'verifier' only. Optional: a policy without it writes no VSA."""


class SigstoreTrust(Record):
    mode: Literal["sigstore"]
    """GitHub mode: statements are signed keylessly by Sigstore with the workflows' OIDC identity."""
    issuer: Literal["https://token.actions.githubusercontent.com"]
    """The only OIDC issuer whose certificates are accepted: GitHub Actions'."""
    trusted_root: _RelPath
    """The committed Sigstore trusted root (Fulcio, Rekor, CT logs), relative to the policy file."""
    trusted_root_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """The SHA-256 of the trusted root file; a root with another digest is refused."""


class VerifierIdentity(Record):
    """GitHub mode: the workflow whose certificate signs the release gate's Verification Summary Attestations.

    ``qualify verify-vsa`` accepts a summary only from this workflow, on main, in
    the policy's repository, started by one of these triggers; nothing else the
    summary or a flag says can name another signer.
    """

    workflow: _WorkflowPath
    """The workflow file whose certificate alone may sign the gate's VSAs; never a producer signer. Under
    ``[producer.builder]`` a file of the builder's repository, at its tag (desktop-qualify's release gate)."""
    allowed_triggers: list[_Name] = Field(min_length=1, max_length=8)
    """The events that may start the run signing a VSA; any other is refused."""
    caller: _WorkflowPath | None = None
    """The workflow of the producer's repository that calls the gate as a reusable workflow: the VSAs' build
    config (OID .18). Required under ``[producer.builder]`` (the team's release workflow); absent, the gate
    workflow is its own caller (.9 = .18)."""


class SourcePolicy(Record):
    require_clean_worktree: bool
    """Whether the source gate refuses a working tree with uncommitted or untracked changes."""


class PlatformPolicy(Record):
    required: list[PlatformChoice] = Field(min_length=1, max_length=3)
    """The platforms a release must be qualified on; ``host`` is this machine's platform (local mode)."""


class StepLayers(Record):
    """The isolation layer that must refuse a kernel-refusal step, per platform (a platform left out is not
    held to one). Each must be one of that platform's ``[isolation]`` layers."""

    linux: LayerName | None = None
    """The ``[isolation] linux`` layer that must refuse the step on Linux; absent: none required."""
    macos: LayerName | None = None
    """The ``[isolation] macos`` layer that must refuse the step on macOS; absent: none required."""
    windows: LayerName | None = None
    """The ``[isolation] windows`` layer that must refuse the step on Windows; absent: none required."""

    def for_platform(self, platform: str) -> str | None:
        """The layer that must refuse the step on ``platform``; None where the policy names none."""
        return {"linux": self.linux, "macos": self.macos, "windows": self.windows}.get(platform)


class ReproduciblePolicy(Record):
    """Platforms whose build must reproduce: the producer builds twice under varied conditions (another folder,
    ``TMPDIR``, ``HOME``, umask, locale, time zone, a later time) and both builds must give one digest."""

    required: list[PlatformChoice] = Field(default_factory=list, max_length=3)
    """The platforms whose build must reproduce; empty: none."""


class StepExpectation(Record):
    """What one required journey step must show: the policy's, never the app's, idea of the step.

    A step that must refuse names the exact refusal code (matching the policy's
    ``[app.codes] pattern``); an allow path names none. The app's journey cannot weaken this: the verifier compares the
    observed outcome with this, whatever the record says it expected.
    """

    expect: Literal["allow", "reject"]
    """Whether the step must be allowed or refused."""
    code: AppCode | None = None
    """The refusal code a ``reject`` step must show (matching ``[app.codes] pattern``); an ``allow`` step names
    none."""
    errno: list[ErrnoName] | None = Field(default=None, min_length=1, max_length=4)
    """For a step the operating system must refuse: the errno names it may refuse with; the step's recorded errno
    must be one of them. A step without this list must record no errno."""
    layer: StepLayers | None = None
    """Which layer must refuse the step on each platform: a refusal by another layer (the language guard, a file's
    own permissions, a layer the policy does not name) fails the step (QE_STEP_WRONG_LAYER). Only a step with
    ``errno`` names one."""

    @model_validator(mode="after")
    def _code_iff_reject(self) -> StepExpectation:
        if self.expect == "reject" and self.code is None:
            raise ValueError("a step that must refuse names the code it must refuse with")
        if self.expect == "allow" and (self.code is not None or self.errno is not None):
            raise ValueError("an allow step names no refusal code and no errno")
        if self.layer is not None and self.errno is None:
            raise ValueError("only a step the operating system refuses (one with errno) names a refusing layer")
        return self


class JourneyPolicy(Record):
    # 128: room beside the reference app's 71 steps; a record lists at most MAX_LIST (256) steps.
    steps: dict[_StepId, StepExpectation] = Field(min_length=1, max_length=128)
    """Step id -> what the step must show. Insertion order is the policy's order (TOML tables keep it); the records
    list steps in it."""


class DowngradeRefusal(Record):
    refuse: AppCode
    """The code the previous version must refuse the candidate's state with (matching ``[app.codes] pattern``)."""


class UpdatePolicy(Record):
    """The update journey (README, "The update journey"): required when this section is present.

    The producer starts from the last qualified release, given as its bundle and artifact, audited as
    ``qualify audit --bundle`` would under ``previous_policy`` (default: this policy file).
    """

    previous_policy: _RelPath | None = None
    """The policy the last qualified release is audited under, relative to this file; absent: this policy file."""
    downgrade: Literal["allow"] | DowngradeRefusal
    """What the previous version does with the state the candidate left: opens it (``"allow"``), or refuses it with
    a code (``{ refuse = "CODE" }``)."""

    @property
    def downgrade_code(self) -> str | None:
        return None if self.downgrade == "allow" else self.downgrade.refuse


class IsolationPolicy(Record):
    """The worker sandbox layers each platform's probe and journey must report as applied (fail closed)."""

    linux: list[LayerName] = Field(min_length=1, max_length=16)
    """The sandbox layers the Linux worker must report applied, in order."""
    macos: list[LayerName] = Field(min_length=1, max_length=16)
    """The sandbox layers the macOS worker must report applied, in order."""
    windows: list[LayerName] = Field(min_length=1, max_length=16)
    """The sandbox layers the Windows worker must report applied, in order."""
    refuses_with: dict[LayerName, list[ErrnoName]] | None = Field(default=None, max_length=32)
    """Layer -> the errno names it refuses with (seccomp's filter answers EPERM, Landlock EACCES...): a kernel step
    recorded as refused by a layer with an errno that layer never gives was refused by something else."""

    @model_validator(mode="after")
    def _refusals_are_listed_layers(self) -> IsolationPolicy:
        listed = {*self.linux, *self.macos, *self.windows}
        for name, errnos in (self.refuses_with or {}).items():
            if name not in listed:
                raise ValueError(f"[isolation.refuses_with] names {name!r}, which no platform's layers list")
            if not 1 <= len(errnos) <= 4:
                raise ValueError(f"[isolation.refuses_with] {name}: one to four errno names")
        return self

    def of(self, platform: Platform) -> tuple[LayerName, ...]:
        """The layers ``platform``'s worker must report, in the policy's order."""
        return tuple({"linux": self.linux, "macos": self.macos, "windows": self.windows}[platform])


# The stages that keep the machine's network when the policy does not say: the build fetches its dependencies.
DEFAULT_NETWORK_STAGES: tuple[AppStage, ...] = ("build",)


class ConfinementPolicy(Record):
    """The confinement every run of app-controlled code must have had, per platform (docs/policy.md).

    A platform listed here requires a confinement record for each app stage that ran (build, its tools, a second
    build, probe, journey, update verbs), by the platform's mechanism, with every layer listed; a platform left out
    requires none. ``network-namespace`` applies only to the stages without the network: a stage ``network`` names
    keeps the machine's network, so it is held to every other layer listed.
    """

    linux: list[LayerName] | None = Field(default=None, min_length=1, max_length=16)
    """The layers every app stage on Linux must have run under (bubblewrap); None: none required."""
    macos: list[LayerName] | None = Field(default=None, min_length=1, max_length=16)
    """The layers every app stage on macOS must have run under (sandbox-exec); None: none required."""
    windows: list[LayerName] | None = Field(default=None, min_length=1, max_length=16)
    """The layers every app stage on Windows must have run under (a job object); None: none required."""
    network: list[AppStage] = Field(default_factory=lambda: list(DEFAULT_NETWORK_STAGES), max_length=len(APP_STAGES))
    """The app stages that keep the machine's network; every other stage must have run without it."""

    @model_validator(mode="after")
    def _layers_are_the_platforms_own(self) -> ConfinementPolicy:
        for platform in PLATFORMS:
            layers = self.of(platform) or ()
            for layer in layers:
                if layer not in CONFINEMENT_LAYERS:
                    raise ValueError(f"[confinement] {platform} names {layer!r}, which is no confinement layer "
                                     f"(known: {', '.join(CONFINEMENT_LAYERS)})")
                if layer not in CONFINEMENT_LAYERS_BY_PLATFORM[platform]:
                    raise ValueError(f"[confinement] {platform} names {layer!r}, which is not a {platform} layer "
                                     f"({platform}'s: {', '.join(CONFINEMENT_LAYERS_BY_PLATFORM[platform])})")
            repeated = sorted({layer for layer in layers if layers.count(layer) > 1})
            if repeated:
                raise ValueError(f"[confinement] {platform} lists {', '.join(repeated)} more than once")
        repeated_stages = sorted({stage for stage in self.network if self.network.count(stage) > 1})
        if repeated_stages:
            raise ValueError(f"[confinement] network lists {', '.join(repeated_stages)} more than once")
        return self

    def of(self, platform: Platform) -> tuple[str, ...] | None:
        """The layers every app stage on ``platform`` must have run under, in the policy's order; None: none."""
        layers = {"linux": self.linux, "macos": self.macos, "windows": self.windows}[platform]
        return None if layers is None else tuple(layers)


class SigningPolicy(Record):
    linux: list[SigningState] = Field(min_length=1, max_length=3)
    """The OS-signing states accepted for the Linux artifact (never ``notarized``)."""
    macos: list[SigningState] = Field(min_length=1, max_length=3)
    """The OS-signing states accepted for the macOS artifact."""
    windows: list[SigningState] = Field(min_length=1, max_length=3)
    """The OS-signing states accepted for the Windows artifact (never ``notarized``)."""

    def of(self, platform: Platform) -> frozenset[SigningState]:
        """The signing states the policy accepts for ``platform``'s artifact."""
        return frozenset({"linux": self.linux, "macos": self.macos, "windows": self.windows}[platform])

    @model_validator(mode="after")
    def _notarization_is_apple_only(self) -> SigningPolicy:
        # Notarization is Apple's service: no Linux or Windows job can ever observe it.
        not_apple: tuple[Platform, ...] = ("linux", "windows")
        for platform in not_apple:
            if "notarized" in self.of(platform):
                raise ValueError(f"{platform} cannot be notarized (notarization is macOS only)")
        return self


# A candidate larger than this is refused before it is hashed: an app bundle is tens of MiB, and a sparse file
# of many GiB would otherwise be read in full. Generous, so a policy rarely needs to raise it.
DEFAULT_MAX_CANDIDATE_BYTES = 8 * 1024**3


class LimitsPolicy(Record):
    max_statement_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)]
    """The largest evidence statement the producer writes and the verifier reads, in bytes."""
    max_candidate_bytes: Annotated[int, Field(ge=1024 * 1024, le=1024**4)] = DEFAULT_MAX_CANDIDATE_BYTES
    """A candidate larger than this is refused before it is hashed (8 GiB by default): an app bundle is tens of MiB,
    and a sparse file of many GiB would otherwise be read in full."""
    build_timeout_seconds: Annotated[int, Field(ge=10, le=7200)]
    """How long the app's build may run."""
    probe_timeout_seconds: Annotated[int, Field(ge=1, le=600)]
    """How long the launch probe may run."""
    journey_timeout_seconds: Annotated[int, Field(ge=1, le=3600)]
    """How long the journey (and each update-journey verb) may run."""


class PolicyFile(Record):
    """A policy file as committed (TOML), validated strictly: every section the chain reads."""

    version: Literal[2]
    """The policy format: 2, the app contract version 2 (docs/app-contract.md), in which ``[app]`` replaces
    ``[artifact]``."""
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
    """The policy's name, by which messages and reports name it."""
    producer: ProducerIdentity
    """The producer identity: no command-line flag can replace it."""
    trust: Ed25519Trust | SigstoreTrust = Field(discriminator="mode")
    """How statements are signed and checked: an Ed25519 keyring (local mode) or Sigstore (GitHub mode), chosen by
    ``mode``."""
    verifier: VerifierIdentity | None = None
    """GitHub mode: who signs the gate's VSAs (local mode: the keyring's verifier key, ``[trust] verifier_key``)."""
    source: SourcePolicy
    """The source gate's rules."""
    app: AppPolicy
    """The app under qualification: how it is built, installed, probed and walked (docs/app-contract.md)."""
    platforms: PlatformPolicy
    """The platforms a release must cover."""
    journey: JourneyPolicy
    """The journey steps the app must walk, each with the outcome (and code) it must show."""
    isolation: IsolationPolicy | None = None
    """Optional: the worker sandbox layers each platform must report; an app with no sandbox of its own names none;
    where present it fails closed."""
    confinement: ConfinementPolicy | None = None
    """Optional: the confinement each run of app code must have had, per platform; absent, none is required."""
    signing: SigningPolicy
    """The OS-signing states accepted per platform."""
    limits: LimitsPolicy
    """Size limits and timeouts."""
    reproducible: ReproduciblePolicy = Field(default_factory=ReproduciblePolicy)
    """Optional: the platforms whose build must reproduce; without it none is required to."""
    update: UpdatePolicy | None = None
    """Optional: the update journey from the last qualified release; needs ``[app.state]``."""

    @model_validator(mode="after")
    def _codes_match_the_apps_pattern(self) -> PolicyFile:
        pattern = self.app.codes.compiled
        wrong = [step for step, want in self.journey.steps.items()
                 if want.code is not None and not pattern.fullmatch(want.code)]
        if wrong:
            raise ValueError(f"step(s) {', '.join(wrong[:5])} name a code outside [app.codes] pattern "
                             f"{self.app.codes.pattern!r}")
        return self

    @model_validator(mode="after")
    def _step_layers_are_isolation_layers(self) -> PolicyFile:
        # A step cannot be owned by a layer the worker is not required to report applied: the verifier could
        # then never see it applied, and the policy would contradict itself.
        for step, want in self.journey.steps.items():
            if want.layer is None:
                continue
            for platform in PLATFORMS:
                name = want.layer.for_platform(platform)
                if name is None:
                    continue
                required = self.isolation.of(platform) if self.isolation is not None else ()
                if name not in required:
                    raise ValueError(f"step {step} must be refused by {name!r} on {platform}, which is not one "
                                     f"of [isolation] {platform}'s layers")
                refusals = self.isolation.refuses_with if self.isolation is not None else None
                if refusals is not None and not set(refusals.get(name, ())) & set(want.errno or ()):
                    raise ValueError(f"step {step} must be refused by {name!r} on {platform}, which refuses with "
                                     f"none of the step's errno names")
        return self

    @model_validator(mode="after")
    def _update_needs_state_verbs(self) -> PolicyFile:
        if self.update is None:
            return self
        if self.app.state is None:
            raise ValueError("[update] needs the app's state verbs: [app.state] write and check")
        code = self.update.downgrade_code
        if code is not None and not self.app.codes.compiled.fullmatch(code):
            raise ValueError(f"[update] downgrade refuse code {code!r} is outside [app.codes] pattern "
                             f"{self.app.codes.pattern!r}")
        return self

    @model_validator(mode="after")
    def _signers_iff_sigstore(self) -> PolicyFile:
        if isinstance(self.trust, SigstoreTrust) and self.producer.signers is None:
            raise ValueError("a sigstore policy names [producer.signers]: the signer workflow of each platform "
                             "and of the aggregate")
        if isinstance(self.trust, Ed25519Trust) and self.producer.signers is not None:
            raise ValueError("[producer.signers] are certificate identities; an ed25519 policy signs with its keyring")
        if isinstance(self.trust, Ed25519Trust) and self.verifier is not None:
            raise ValueError("[verifier] is a certificate identity; an ed25519 policy names trust.verifier_key")
        if self.producer.builder is not None and self.producer.signers is None:
            raise ValueError("[producer.builder] names the repository of the signer workflows: it needs "
                             "[producer.signers]")
        if self.verifier is not None and self.producer.builder is not None and self.verifier.caller is None:
            # The gate's certificate names its caller (.18) and its own file (.9): under a builder they differ.
            raise ValueError("[verifier] caller is required with [producer.builder]: the team's workflow that calls "
                             "the release gate")
        if self.verifier is not None and self.verifier.caller is not None and self.producer.signers is not None \
                and self.verifier.caller in (self.producer.signers.linux, self.producer.signers.macos,
                                             self.producer.signers.windows, self.producer.signers.aggregate):
            raise ValueError("[verifier] caller must not be a producer signer workflow")
        if self.verifier is not None and self.producer.signers is not None and self.verifier.workflow in (
                self.producer.signers.linux, self.producer.signers.macos, self.producer.signers.windows,
                self.producer.signers.aggregate):
            # The gate judges the producers' evidence: a producer that could sign its verdict would judge itself.
            raise ValueError("[verifier] workflow must not be a producer signer workflow")
        return self
