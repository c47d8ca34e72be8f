"""SLSA Provenance v1 for each artifact, beside its platform statement (docs/design.md §4.6).

The platform predicate is this project's own; tools that release engineers
already run (`gh attestation verify`, policy-controller, slsa-verifier) look
for SLSA provenance first. Each producer job therefore also signs one standard
statement (``predicateType: https://slsa.dev/provenance/v1``) for its artifact.

Every field of it is a fact the platform statement or the signature already
holds, so :func:`provenance_statement` derives the whole statement from them:
the producer signs what it returns, and the verifier builds it again from the
verified platform statement and the provenance's own signer, and refuses any
difference. Field names are SLSA's (camelCase).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from ._predicates import _REF_FORBIDDEN, PlatformPredicate, RunIdentity
from ._statement import IN_TOTO_STATEMENT_TYPE, DigestSet, Subject, _StatementHead
from ._types import FileName, GitSha, Platform, Record, Sha256Hex, ShortText, _no_parent_segment

SlsaProvenancePredicateType = Literal["https://slsa.dev/provenance/v1"]
SLSA_PROVENANCE_PREDICATE_TYPE: Final[SlsaProvenancePredicateType] = "https://slsa.dev/provenance/v1"
# The build type names this project's producer job: what its external parameters mean (SLSA's buildType).
ProvenanceBuildType = Literal["https://desktop-qualify.invalid/build-types/producer/v1"]
PROVENANCE_BUILD_TYPE: Final[ProvenanceBuildType] = "https://desktop-qualify.invalid/build-types/producer/v1"
# Local mode has no workflow URIs: the builder is the platform key (by key id), the run a local run id.
LOCAL_URI_PREFIX = "https://desktop-qualify.invalid/local/"

# A URI as the run identity's fields make it: a ref may hold any letter (a look-alike "main" is the verifier's
# to name, from the platform statement), never a space or a control, format or separator character.
_Uri = Annotated[str, Field(pattern=rf"^(git\+)?https://[^{_REF_FORBIDDEN}]{{1,500}}$")]
# The policy's path inside its repository, as the producer found it: POSIX, relative, no "..", no spaces.
_PolicyPath = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-][A-Za-z0-9_./-]{0,255}$"),
                        AfterValidator(_no_parent_segment)]
_Repository = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")]


class ProducerWorkflow(Record):
    """The producer workflow that ran: its repository, file path and ref."""

    repository: _Repository
    """OWNER/REPO of the workflow."""
    path: ShortText
    """The workflow file's path in the repository."""
    ref: ShortText
    """The git ref the workflow ran from."""


class PolicyReference(Record):
    """The committed policy the job ran under: its path in the repository and its SHA-256."""

    path: _PolicyPath
    """The policy's path inside its repository."""
    sha256: Sha256Hex
    """The SHA-256 of the policy file's bytes."""


class ExternalParameters(Record):
    """What the caller chose: the workflow (repository, file, ref), the committed policy, the platform."""

    workflow: ProducerWorkflow
    """The producer workflow that ran."""
    policy: PolicyReference
    """The committed policy the job ran under."""
    platform: Platform
    """The platform the job built and qualified."""


class InternalParameters(Record):
    """What the build platform chose: the machine's architecture."""

    arch: ShortText
    """The architecture of the machine the job built on."""


class GitCommit(Record):
    """A git commit as an in-toto digest set."""

    gitCommit: GitSha  # noqa: N815 - SLSA's digest algorithm name
    """The full commit SHA."""


class ResolvedDependency(Record):
    """The one input the build resolved: the gated commit of the repository."""

    uri: _Uri
    """The repository and ref the commit came from (git+https)."""
    digest: GitCommit
    """The gated commit."""


class BuildDefinition(Record):
    """SLSA's build definition: the build type, what the caller chose, what the platform chose, and the source."""

    buildType: ProvenanceBuildType  # noqa: N815 - SLSA field name
    """This project's producer build type, which says what the parameters mean."""
    externalParameters: ExternalParameters  # noqa: N815
    """What the caller chose: workflow, policy, platform."""
    internalParameters: InternalParameters  # noqa: N815
    """What the build platform chose."""
    # The gated commit, and nothing else: the build runs on `git archive` of it (docs/design.md §2.1).
    resolvedDependencies: list[ResolvedDependency] = Field(min_length=1, max_length=1)  # noqa: N815
    """The gated commit, and nothing else (the build runs on git archive of it)."""


class Builder(Record):
    """Who built: the signer workflow in GitHub mode, the platform key (by key id) in local mode."""

    id: _Uri
    """The builder's URI."""


class BuildMetadata(Record):
    """The invocation: the run and its attempt."""

    invocationId: _Uri  # noqa: N815 - SLSA field name
    """The run and attempt as a URI."""


class Byproduct(Record):
    """The platform statement the same job signed, by the SHA-256 of its signed bytes."""

    name: FileName
    """The platform statement's file name."""
    mediaType: Literal["application/vnd.in-toto+json"]  # noqa: N815 - SLSA field name
    """The statement's media type (an in-toto statement)."""
    digest: DigestSet
    """The SHA-256 of the platform statement's signed bytes."""


class RunDetails(Record):
    """SLSA's run details: the builder, the invocation, and the platform statement as byproduct."""

    builder: Builder
    """Who built."""
    metadata: BuildMetadata
    """The invocation (run and attempt)."""
    byproducts: list[Byproduct] = Field(min_length=1, max_length=1)
    """The platform statement the same job signed."""


class ProvenancePredicate(Record):
    """SLSA Provenance v1: how the artifact was built."""

    buildDefinition: BuildDefinition  # noqa: N815 - SLSA field name
    """What was built, from what, under which parameters."""
    runDetails: RunDetails  # noqa: N815
    """Who built it, in which run, and the statement it signed with it."""


class ProvenanceStatement(_StatementHead):
    """An in-toto SLSA Provenance v1 statement for one platform's artifact, signed by its statement's signer."""

    predicateType: SlsaProvenancePredicateType  # noqa: N815
    predicate: ProvenancePredicate
    """The provenance."""


def local_builder_id(keyid: Sha256Hex) -> str:
    """The builder of a local-mode job: its platform signing key, named by key id (SHA-256 of the public key)."""
    return f"{LOCAL_URI_PREFIX}builders/ed25519/{keyid}"


def invocation_id(run: RunIdentity) -> str:
    """The run and attempt: GitHub's run attempt URL (the certificate's OID .21), or the local run id."""
    if run.mode == "github":
        return f"https://github.com/{run.repository}/actions/runs/{run.run_id}/attempts/{run.attempt}"
    return f"{LOCAL_URI_PREFIX}runs/{run.run_id}/attempts/{run.attempt}"


def source_uri(run: RunIdentity) -> str:
    """The gated source, as SLSA names a git dependency (``git+<repository>@<ref>``)."""
    base = f"https://github.com/{run.repository}" if run.mode == "github" else \
        f"{LOCAL_URI_PREFIX}repositories/{run.repository}"
    return f"git+{base}@{run.ref}"


def provenance_statement(predicate: PlatformPredicate, *, statement_name: str, statement_sha256: str,
                         policy_path: str, policy_sha256: str, builder_id: str) -> ProvenanceStatement:
    """The provenance of ``predicate``'s artifact: every field from the platform statement or the signer.

    ``statement_name`` and ``statement_sha256`` name the signed platform statement (its file name and the
    SHA-256 of its signed bytes); ``builder_id`` is the signer's (:func:`local_builder_id`, or the signer
    workflow's URI in GitHub mode).
    """
    run, artifact = predicate.run, predicate.build.artifact
    return ProvenanceStatement(
        type_=IN_TOTO_STATEMENT_TYPE,
        subject=[Subject(name=artifact.name, digest=DigestSet(sha256=artifact.sha256))],
        predicateType=SLSA_PROVENANCE_PREDICATE_TYPE,
        predicate=ProvenancePredicate(
            buildDefinition=BuildDefinition(
                buildType=PROVENANCE_BUILD_TYPE,
                externalParameters=ExternalParameters(
                    workflow=ProducerWorkflow(repository=run.repository, path=run.workflow, ref=run.ref),
                    policy=PolicyReference(path=policy_path, sha256=policy_sha256),
                    platform=predicate.platform),
                internalParameters=InternalParameters(arch=predicate.arch),
                resolvedDependencies=[ResolvedDependency(uri=source_uri(run), digest=GitCommit(gitCommit=run.sha))]),
            runDetails=RunDetails(
                builder=Builder(id=builder_id),
                metadata=BuildMetadata(invocationId=invocation_id(run)),
                byproducts=[Byproduct(name=statement_name, mediaType="application/vnd.in-toto+json",
                                      digest=DigestSet(sha256=statement_sha256))])),
    )
