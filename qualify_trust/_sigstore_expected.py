"""Which workflow identity is trusted, and the exact checks against it.

The expected identity is built from the committed policy only (docs/design.md
§3.6: no CLI flag or workflow_dispatch input can replace it). Every
comparison is exact string equality against a URI rebuilt from the policy:
no regexes, no prefixes, so `owner/repo-evil`, `release.yml.attacker.yml` or
`main@refs/heads/attacker` cannot pass for the real thing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from desktop_qualify.evidence_schemas import GIT_SHA_PATTERN, Code, QualificationError, RunIdentity
from desktop_qualify.qualify_policy import Policy

from ._github_identity import GitHubIdentity

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
MAIN_REF = "refs/heads/main"
TAG_PREFIX = "refs/tags/"
GITHUB_HOSTED = "github-hosted"
# Git object names: SHA-1 (40 hex) or SHA-256 (64 hex) repositories.
_GIT_SHA = re.compile(GIT_SHA_PATTERN)
PLATFORM_SIGNERS = ("linux", "macos", "windows")
#: which kind of statement a certificate is asked to sign: a platform's, the aggregate's, or the gate's VSA
SignerRole = Literal["platform", "aggregate", "verifier"]


@dataclass(frozen=True)
class ExpectedWorkflow:
    """The producer workflow a policy trusts; ``candidate_sha`` binds it to one commit when given.

    ``workflow`` is the build config (top-level) workflow every signer runs under
    (OID .18); ``signers`` maps each platform, and ``aggregate``, to the one
    workflow file that may sign for it (OID .9 and the SAN): a file of
    ``repository`` on ``ref``, or, for a team's policy, of ``builder_repository``
    at the release tag ``builder_ref`` (desktop-qualify's reusable workflows).
    """

    issuer: str
    repository: str
    workflow: str
    ref: str
    allowed_triggers: frozenset[str]
    runner_environment: str
    candidate_sha: str | None = None
    repository_id: str | None = None
    owner_id: str | None = None
    # None: one top-level workflow signs everything (a foreign bundle's identity). A policy always names them.
    signers: Mapping[str, str] | None = None
    # A team's policy ([producer.builder]): the signer files are desktop-qualify's, in this repository at this tag
    # (and, when pinned, this commit); the source, ref, commit and build config stay the team's.
    builder_repository: str | None = None
    builder_ref: str | None = None
    builder_commit: str | None = None
    # A called release gate ([verifier] caller): its own file signs (.9), ``workflow`` is its caller (.18).
    gate_workflow: str | None = None

    def __post_init__(self) -> None:
        if self.signers is not None and set(self.signers) != {*PLATFORM_SIGNERS, "aggregate"}:
            raise QualificationError(Code.POLICY_INVALID, "the policy names no signer workflow for each of "
                                                          f"{', '.join(PLATFORM_SIGNERS)} and the aggregate")
        # Refs other than main are refused by design, even when they point at the same commit.
        if self.ref != MAIN_REF:
            raise QualificationError(Code.POLICY_INVALID, f"the producer ref must be {MAIN_REF}, not {self.ref!r}")
        if not self.allowed_triggers:
            raise QualificationError(Code.POLICY_INVALID, "the policy allows no workflow trigger")
        if (self.builder_repository is None) != (self.builder_ref is None) or (
                self.builder_commit is not None and self.builder_repository is None):
            raise QualificationError(Code.POLICY_INVALID, "a builder needs both its repository and its tag")
        if self.builder_ref is not None and not self.builder_ref.startswith(TAG_PREFIX):
            raise QualificationError(Code.POLICY_INVALID, f"the builder ref must be a release tag "
                                                          f"({TAG_PREFIX}vX.Y.Z), not {self.builder_ref!r}")
        if self.candidate_sha is not None and _GIT_SHA.fullmatch(self.candidate_sha) is None:
            raise QualificationError(
                Code.USAGE, f"candidate SHA {self.candidate_sha[:80]!r} is not a lowercase hex commit SHA"
            )

    @classmethod
    def from_policy(cls, policy: Policy, *, candidate_sha: str | None = None) -> ExpectedWorkflow:
        trust = policy.sigstore
        if trust is None:
            raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: trust mode is not 'sigstore'")
        producer = policy.file.producer
        if producer.signers is None:
            raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: [producer.signers] is missing")
        if producer.runner_environment != GITHUB_HOSTED:
            raise QualificationError(
                Code.POLICY_INVALID, f"{policy.path}: sigstore trust requires runner_environment = {GITHUB_HOSTED!r}"
            )
        builder = producer.builder
        return cls(
            issuer=trust.issuer,
            repository=producer.repository,
            workflow=producer.workflow,
            ref=producer.ref,
            allowed_triggers=frozenset(producer.allowed_triggers),
            runner_environment=producer.runner_environment,
            signers=MappingProxyType(producer.signers.model_dump()),
            candidate_sha=candidate_sha,
            repository_id=None if producer.repository_id is None else str(producer.repository_id),
            owner_id=None if producer.owner_id is None else str(producer.owner_id),
            builder_repository=None if builder is None else builder.repository,
            builder_ref=None if builder is None else builder.ref,
            builder_commit=None if builder is None else builder.commit,
        )

    @classmethod
    def verifier_from_policy(cls, policy: Policy) -> ExpectedWorkflow:
        """The release gate's identity for its VSAs: the policy's [verifier] workflow, on main, in its repository.

        The workflow is both the build config (.18) and the build signer (.9): no other workflow may call it.
        """
        producer = cls.from_policy(policy)
        verifier = policy.file.verifier
        if verifier is None:
            raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: names no [verifier] workflow, so no "
                                                          "Verification Summary Attestation can be signed or checked")
        if verifier.caller is not None:
            # A called gate: the reusable gate file (.9; the builder's at its tag, for a team) and the producer
            # repository's workflow that calls it (.18).
            return cls(issuer=producer.issuer, repository=producer.repository, workflow=verifier.caller,
                       ref=producer.ref, allowed_triggers=frozenset(verifier.allowed_triggers),
                       runner_environment=producer.runner_environment, repository_id=producer.repository_id,
                       owner_id=producer.owner_id, builder_repository=producer.builder_repository,
                       builder_ref=producer.builder_ref, builder_commit=producer.builder_commit,
                       gate_workflow=verifier.workflow)
        if producer.builder_repository is not None:
            raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: [verifier] names no caller")
        return cls(issuer=producer.issuer, repository=producer.repository, workflow=verifier.workflow,
                   ref=producer.ref, allowed_triggers=frozenset(verifier.allowed_triggers),
                   runner_environment=producer.runner_environment, repository_id=producer.repository_id,
                   owner_id=producer.owner_id)

    @property
    def repository_uri(self) -> str:
        return f"https://github.com/{self.repository}"

    def _uri(self, workflow: str) -> str:
        return f"https://github.com/{self.repository}/{workflow}@{self.ref}"

    @property
    def workflow_uri(self) -> str:
        """The build config URI (OID .18) every certificate must carry: the top-level producer workflow."""
        return self._uri(self.workflow)

    def _signer(self, workflow: str) -> str:
        """``workflow`` as a build signer URI: this repository's file on its ref, or the builder's at its tag."""
        if self.builder_repository is None:
            return self._uri(workflow)
        return f"https://github.com/{self.builder_repository}/{workflow}@{self.builder_ref}"

    def signer_uri(self, key: str) -> str:
        """The build signer URI (OID .9) that may sign for ``key``: a platform, or ``aggregate``."""
        return self._signer(self.workflow if self.signers is None else self.signers[key])

    def signer_uris(self, role: SignerRole) -> frozenset[str]:
        """Every build signer URI a statement of ``role`` may carry before its payload says which platform."""
        if role == "verifier":
            # Only an identity built by verifier_from_policy (no producer signers) may sign a VSA.
            if self.signers is not None:
                return frozenset()
            return frozenset({self._signer(self.gate_workflow or self.workflow)})
        if role == "aggregate":
            return frozenset({self.signer_uri("aggregate")})
        return frozenset(self.signer_uri(p) for p in PLATFORM_SIGNERS)


@dataclass(frozen=True)
class CertificateIdentity:
    """A plain SAN + issuer identity (sigstore's ``--certificate-identity``), for foreign bundles."""

    san: str
    issuer: str


def _require(ok: bool, code: Code, message: str) -> None:
    if not ok:
        raise QualificationError(code, message)


def check_identity(identity: GitHubIdentity, expected: ExpectedWorkflow, role: SignerRole) -> None:
    """Refuse a certificate identity that is not exactly one of the policy's signers for ``role``.

    Which platform a platform statement speaks for is in its payload: the exact
    per-platform signer is checked once that is read (``check_platform_signer``).
    """
    got, wim = identity, Code.WORKFLOW_IDENTITY_MISMATCH
    _require(got.issuer == expected.issuer, Code.SIGNER_UNTRUSTED,
             f"certificate issuer {got.issuer!r} is not the policy's {expected.issuer!r}")
    _require(got.source_repository_uri == expected.repository_uri, wim,
             f"signed from repository {got.source_repository_uri!r}, expected {expected.repository_uri!r}")
    _require(got.source_repository_ref == expected.ref, Code.REF_NOT_MAIN,
             f"signed from ref {got.source_repository_ref!r}; only {expected.ref} may produce evidence")
    allowed = expected.signer_uris(role)
    if got.build_signer_uri not in allowed:
        # The right file of the right builder at another tag is a version the policy does not pin: named apart.
        # The file is what comes before the first "@" (a repository or path holds none; a git tag may).
        other_version = expected.builder_repository is not None and \
            got.build_signer_uri.partition("@")[0] in {uri.partition("@")[0] for uri in allowed}
        _require(not other_version, Code.BUILDER_REF_MISMATCH,
                 f"signed by {got.build_signer_uri!r}: desktop-qualify's workflow at another version than the "
                 f"policy's {expected.builder_ref}")
        raise QualificationError(wim, f"signed by workflow {got.build_signer_uri!r}, not by one of the policy's "
                                      f"{role} signers ({', '.join(sorted(allowed))})")
    # Fulcio derives both from the same claim (job_workflow_ref); a difference means a non-GitHub profile.
    _require(got.san_uri == got.build_signer_uri, wim,
             f"certificate SAN {got.san_uri!r} differs from its build signer URI")
    # The build config is the top-level workflow on every certificate: a different one means another
    # workflow called the signer as a reusable workflow, with its own triggers and inputs.
    _require(got.build_config_uri == expected.workflow_uri, wim,
             f"run started by workflow {got.build_config_uri!r}, not by {expected.workflow_uri!r}")
    _require(got.run_repository == expected.repository, wim,
             f"run {got.run_invocation_uri!r} belongs to another repository")
    _require(got.runner_environment == expected.runner_environment, wim,
             f"runner environment {got.runner_environment!r}, expected {expected.runner_environment!r}")
    triggers = ", ".join(sorted(expected.allowed_triggers))
    _require(got.build_trigger in expected.allowed_triggers, wim,
             f"trigger {got.build_trigger!r} is not one the policy allows ({triggers})")
    if expected.candidate_sha is not None:
        _require(got.source_repository_digest == expected.candidate_sha, Code.SHA_MISMATCH,
                 f"signed at commit {got.source_repository_digest!r}, the candidate is {expected.candidate_sha!r}")
    # When the policy pins the numeric ids, a repository that merely took over the name is refused.
    if expected.repository_id is not None:
        _require(got.source_repository_identifier == expected.repository_id, wim,
                 f"repository id {got.source_repository_identifier!r} is not the policy's {expected.repository_id}")
    if expected.owner_id is not None:
        _require(got.source_repository_owner_identifier == expected.owner_id, wim,
                 f"owner id {got.source_repository_owner_identifier!r} is not the policy's {expected.owner_id}")
    if expected.builder_repository is None:
        # The signer is a local reusable workflow (or the caller itself): its file comes from the triggering
        # commit, and so does the caller's (.19, when the certificate carries it).
        _require(got.build_signer_digest == got.source_repository_digest, wim,
                 f"workflow file from commit {got.build_signer_digest!r}, source commit "
                 f"{got.source_repository_digest!r}")
    elif expected.builder_commit is not None:
        # The builder's file comes from its own repository at the tag: a moved tag names another commit.
        _require(got.build_signer_digest == expected.builder_commit, Code.BUILDER_REF_MISMATCH,
                 f"{expected.builder_ref} signed from commit {got.build_signer_digest!r}; the policy pins "
                 f"{expected.builder_commit}")
    if got.build_config_digest is not None:
        _require(got.build_config_digest == got.source_repository_digest, wim,
                 f"build config from commit {got.build_config_digest!r}, source commit "
                 f"{got.source_repository_digest!r}")


def check_platform_signer(identity: GitHubIdentity, expected: ExpectedWorkflow, platform: str) -> None:
    """A platform statement's certificate is exactly that platform's signer workflow (OID .9)."""
    if platform not in PLATFORM_SIGNERS:
        raise QualificationError(Code.PLATFORM_UNKNOWN, f"no signer workflow for platform {platform[:40]!r}")
    want = expected.signer_uri(platform)
    _require(identity.build_signer_uri == want, Code.WORKFLOW_IDENTITY_MISMATCH,
             f"a {platform} statement signed by {identity.build_signer_uri!r}; only {want!r} speaks for {platform}")


def cross_check_claims(identity: GitHubIdentity, run: RunIdentity) -> None:
    """Every claim the predicate shares with the certificate must equal the certificate's value."""
    cert, wim = identity, Code.WORKFLOW_IDENTITY_MISMATCH
    said = "the certificate says"
    _require(run.mode == "github", wim, f"predicate claims {run.mode!r} mode but carries a Sigstore signature")
    _require(f"https://github.com/{run.repository}" == cert.source_repository_uri, wim,
             f"predicate claims repository {run.repository!r}; {said} {cert.source_repository_uri!r}")
    # The run's workflow (GITHUB_WORKFLOW_REF) is the top-level one, even inside a reusable workflow: .18.
    _require(f"https://github.com/{run.repository}/{run.workflow}@{run.ref}" == cert.build_config_uri, wim,
             f"predicate claims workflow {run.workflow!r}@{run.ref!r}; {said} {cert.build_config_uri!r}")
    _require(run.ref == cert.source_repository_ref, wim,
             f"predicate claims ref {run.ref!r}; {said} {cert.source_repository_ref!r}")
    _require(run.sha == cert.source_repository_digest, Code.SHA_MISMATCH,
             f"predicate claims commit {run.sha!r}; {said} {cert.source_repository_digest!r}")
    _require(run.run_id == cert.run_id and run.attempt == cert.run_attempt, Code.RUN_MISMATCH,
             f"predicate claims run {run.run_id!r} attempt {run.attempt}; "
             f"{said} run {cert.run_id!r} attempt {cert.run_attempt}")
    _require(run.trigger == cert.build_trigger, wim,
             f"predicate claims trigger {run.trigger!r}; {said} {cert.build_trigger!r}")
    _require(run.runner_environment == cert.runner_environment, wim,
             f"predicate claims runner {run.runner_environment!r}; {said} {cert.runner_environment!r}")


def same_run(identities: Sequence[GitHubIdentity]) -> tuple[str, int]:
    """The one (run id, attempt) every certificate comes from; evidence of two runs is refused."""
    if not identities:
        # Like sigstore's empty AllOf: vacuous agreement is API misuse, never a pass.
        raise QualificationError(Code.USAGE, "same_run() needs at least one identity")
    first = identities[0]
    for other in identities[1:]:
        if (other.run_repository, other.run_id, other.run_attempt) != (
            first.run_repository, first.run_id, first.run_attempt
        ):
            raise QualificationError(
                Code.RUN_MISMATCH,
                f"evidence from two runs: {first.run_invocation_uri!r} and {other.run_invocation_uri!r}",
                hint="all platform statements and the aggregate must come from one run attempt",
            )
    return first.run_id, first.run_attempt
