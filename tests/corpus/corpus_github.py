"""GitHub-mode evidence without a build: a platform statement and an aggregate signed by the test Sigstore instance.

`github_evidence` writes what the GitHub-mode chain leaves behind (see
tests/e2e_github): ``platform-linux.sigstore.json``, its SLSA provenance
``provenance-linux.sigstore.json`` (signed by the same job) and ``aggregate.sigstore.json``,
Sigstore bundles whose Fulcio certificates carry the identities the release
policy names (the linux statement and the artifact signature: produce-linux.yml
called by qualify.yml; the aggregate: aggregate.yml called by qualify.yml), over a github-mode
predicate (run identity, a source gate that saw a ruleset on main through the
API, a Sigstore-bundle artifact signature) whose journey shows every step of the release policy's table. The policy is
policies/release.toml re-pointed at the test instance's trusted root, linux
only, as `support.github_chain.github_policy` makes it. Untouched, the evidence
is QUALIFIED (``test_untouched_github_evidence_qualifies``); a row changes one
knob.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding
from desktop_qualify.evidence_schemas import (
    AGGREGATE_PREDICATE_TYPE,
    IN_TOTO_STATEMENT_TYPE,
    AggregateStatement,
    Platform,
    PlatformPredicate,
    ProvenanceStatement,
    canonical_bytes,
    provenance_statement,
)
from desktop_qualify.qualify_policy import StepExpectation, load_policy
from desktop_qualify.qualify_trust._github_mode import SigstoreSigner
from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate
from sigstore.models import Bundle
from support.confinement import passing_confinement
from support.evidence_factory import DEFAULT_SHA, OTHER_SHA, platform_payload, predicate_data, utc_now, write_artifact
from support.github_chain import REPOSITORY, WORKFLOW, aggregate_identity, github_policy, platform_identity
from support.github_emulator import Branch, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

GH_RUN_ID = 4242
# The linux producer job's certificate identity, and the aggregate job's (aggregate.yml called by qualify.yml).
IDENTITY = platform_identity(GitHubIdentity(repository=REPOSITORY, workflow=WORKFLOW, sha=DEFAULT_SHA,
                                            run_id=GH_RUN_ID, attempt=1), "linux")
AGGREGATE_IDENTITY = aggregate_identity(IDENTITY)
Edit = Callable[[dict[str, Any]], None]


@dataclass
class GitHubWorld:
    """Shared by a module's GitHub rows: the instances, the emulator, the policy pinning the instance's root."""

    root: Path
    instance: TestSigstoreInstance
    # A complete Sigstore instance of its own, which the policy's trusted root does not name.
    stranger: TestSigstoreInstance
    emulator: GitHubEmulator
    policy_path: Path


def make_world(root: Path) -> GitHubWorld:
    instance = TestSigstoreInstance(root / "sigstore")
    stranger = TestSigstoreInstance(root / "stranger-sigstore", name="sigstore-stranger")
    emulator = GitHubEmulator().start()
    policy = github_policy(root, instance, root)
    return GitHubWorld(root, instance, stranger, emulator, policy)


@dataclass
class GitHubSite:
    """One row's GitHub world and its own temporary folder."""

    world: GitHubWorld
    tmp_path: Path
    sha: str = DEFAULT_SHA

    def main_at(self, sha: str, *, protected: bool = True) -> None:
        """What the emulator answers for main: its head (and classic protection with enforced checks)."""
        self.world.emulator.repo(REPOSITORY).branches["main"] = Branch(sha=sha, protected=protected,
                                                                       required_checks=protected)


@dataclass(frozen=True)
class Signing:
    """Who signs one bundle: the certificate's identity, OID overrides, the instance, the times."""

    identity: GitHubIdentity = IDENTITY
    # Dotted Fulcio OID -> value, over the identity's own extensions.
    extensions: Mapping[str, str] = field(default_factory=dict)
    san_uri: str | None = None
    by_stranger: bool = False
    issued_at: datetime | None = None
    integrated_at: datetime | None = None

    def signer(self, world: GitHubWorld) -> SigstoreSigner:
        instance = world.stranger if self.by_stranger else world.instance
        extensions = {**self.identity.extensions, **self.extensions}
        san = self.san_uri or self.identity.san_uri
        return SigstoreSigner(lambda payload: instance.issue_dsse_bundle(
            payload, extensions=extensions, san_uri=san, issued_at=self.issued_at, integrated_at=self.integrated_at))


def cert(**changes: Any) -> Signing:
    """A certificate for the linux job's identity with ``changes`` (repository, ref, sha, run_id, attempt, ...)."""
    return Signing(identity=replace(IDENTITY, **changes))


def aggregate_cert(**changes: Any) -> Signing:
    """A certificate for the aggregate job's identity with ``changes``."""
    return Signing(identity=replace(AGGREGATE_IDENTITY, **changes))


@dataclass(frozen=True)
class GitHubEvidence:
    policy_path: Path
    evidence_dir: Path
    artifact: Path
    platform_file: Path
    aggregate_file: Path
    provenance_file: Path

    def verify_argv(self, *extra: str) -> list[str]:
        return ["verify", "--policy", str(self.policy_path), "--evidence", str(self.evidence_dir),
                "--artifact", str(self.artifact), *extra]


def github_predicate(site: GitHubSite, artifact: Path, sha: str, artifact_signing: Signing, *,
                     platform: Platform = "linux") -> dict[str, Any]:
    policy = load_policy(site.world.policy_path)
    steps = policy.file.journey.steps
    # The factory's predicate, re-cast as a GitHub Actions job's.
    data = predicate_data(platform=platform, artifact=artifact, sha=sha, run_id=str(GH_RUN_ID), attempt=1,
                          key=Ed25519PrivateKey.generate(), required_steps=list(steps))
    data["run"].update(mode="github", repository=REPOSITORY, trigger="push", runner_environment="github-hosted")
    now = data["produced_at"]
    endpoint = f"GET /repos/{REPOSITORY}/branches/main"
    data["source_gate"].update(mode="github", repository=REPOSITORY, protection="ruleset", observations=[
        {"source": "env GITHUB_SHA", "value": sha, "observed_at": now},
        {"source": f"{endpoint} .commit.sha", "value": sha, "observed_at": now},
        {"source": f"GET /repos/{REPOSITORY}/rules/branches/main", "value": "pull_request (ruleset 1)",
         "observed_at": now},
    ])
    refusals = policy.file.isolation.refuses_with if policy.file.isolation else None

    def errno_of(want: StepExpectation) -> str | None:
        # One the policy accepts for the step and, where the policy says which errno each layer gives, its layer's.
        layer = want.layer.for_platform(platform) if want.layer else None
        gives = refusals.get(layer, []) if refusals is not None and layer is not None else want.errno or []
        return next((e for e in want.errno or [] if e in gives), None)

    data["journey"]["steps"] = [
        {"id": step, "observed": want.expect, "code": want.code, "errno": errno_of(want),
         "layer": want.layer.for_platform(platform) if want.layer else None, "detail": f"{step}: as expected",
         "passed": True}
        for step, want in steps.items()
    ]
    # Each app stage confined as the policy's [confinement] requires (policies/release.toml's).
    data["confinement"] = passing_confinement(data, tools=bool(policy.file.app.build.tools))
    build = data["build"]["artifact"]
    signature = artifact_signing.signer(site.world).sign_artifact_digest(build["name"], build["sha256"])
    data["signature"].update(method=signature.method, keyid=signature.keyid, signature=signature.signature)
    return data


def signer_of(bundle: bytes) -> tuple[str, str]:
    """(leaf certificate SHA-256, build signer URI): what the aggregate records for a verified statement."""
    certificate = Bundle.from_json(bundle).signing_certificate
    keyid = hashlib.sha256(certificate.public_bytes(Encoding.DER)).hexdigest()
    return keyid, identity_from_certificate(certificate).build_signer_uri


def github_evidence(site: GitHubSite, *, sha: str | None = None, statement: Signing | None = None,
                    aggregate: Signing | None = None, artifact_signing: Signing | None = None,
                    edit: Edit | None = None,
                    payload: Callable[[bytes], bytes] | None = None, aggregate_edit: Edit | None = None,
                    provenance: Signing | None = None, provenance_edit: Edit | None = None,
                    ) -> GitHubEvidence:
    """Write GitHub-mode evidence under the row's folder; every keyword left alone gives QUALIFIED evidence.

    ``edit`` changes the predicate (as JSON data) before it is validated and signed;
    ``payload`` the exact statement bytes; ``aggregate_edit`` the aggregate statement
    (as JSON data); ``provenance`` who signs the provenance (the statement's signer
    by default) and ``provenance_edit`` the provenance statement (as JSON data).
    The aggregate always binds the platform bundle and the provenance as written.
    """
    sha = sha or site.sha
    root = site.tmp_path / "github"
    evidence_dir = root / "evidence"
    evidence_dir.mkdir(parents=True)
    artifact = write_artifact(root / "artifacts", "linux", sha)
    data = github_predicate(site, artifact, sha, artifact_signing or Signing())
    if edit is not None:
        edit(data)
    predicate = PlatformPredicate.model_validate(data)
    statement_bytes = platform_payload(predicate)
    if payload is not None:
        statement_bytes = payload(statement_bytes)
    bundle = (statement or Signing()).signer(site.world).sign_statement(statement_bytes)
    platform_file = evidence_dir / "platform-linux.sigstore.json"
    platform_file.write_bytes(bundle)

    keyid, signer_uri = signer_of(bundle)
    policy = load_policy(site.world.policy_path)
    # The provenance as the producer makes it: its builder is the statement's signer workflow.
    provenance_data = provenance_statement(
        predicate, statement_name=platform_file.name, statement_sha256=hashlib.sha256(statement_bytes).hexdigest(),
        policy_path="policies/release.toml", policy_sha256=policy.sha256, builder_id=signer_uri,
    ).model_dump(mode="json", by_alias=True)
    if provenance_edit is not None:
        provenance_edit(provenance_data)
    provenance_bytes = canonical_bytes(ProvenanceStatement.model_validate(provenance_data))
    provenance_file = evidence_dir / "provenance-linux.sigstore.json"
    provenance_file.write_bytes((provenance or statement or Signing()).signer(site.world)
                                .sign_statement(provenance_bytes))
    entry = {"platform": "linux", "artifact": predicate.build.artifact.model_dump(mode="json"),
             "payload_sha256": hashlib.sha256(statement_bytes).hexdigest(), "signer_keyid": keyid,
             "signer_identity": signer_uri, "provenance_sha256": hashlib.sha256(provenance_bytes).hexdigest()}
    aggregate_data = {
        "_type": IN_TOTO_STATEMENT_TYPE,
        "subject": [{"name": entry["artifact"]["name"], "digest": {"sha256": entry["artifact"]["sha256"]}}],
        "predicateType": AGGREGATE_PREDICATE_TYPE,
        "predicate": {"version": 3, "run": predicate.run.model_dump(mode="json"), "required_platforms": ["linux"],
                      "platforms": [entry], "aggregated_at": utc_now(), "policy_sha256": policy.sha256},
    }
    if aggregate_edit is not None:
        aggregate_edit(aggregate_data)
    aggregate_bytes = canonical_bytes(AggregateStatement.model_validate(aggregate_data))
    aggregate_file = evidence_dir / "aggregate.sigstore.json"
    aggregate_signing = aggregate or Signing(identity=AGGREGATE_IDENTITY)
    aggregate_file.write_bytes(aggregate_signing.signer(site.world).sign_statement(aggregate_bytes))
    return GitHubEvidence(site.world.policy_path, evidence_dir, artifact, platform_file, aggregate_file,
                          provenance_file)


# -- builders for the table's GitHub rows -------------------------------------------------------------------

GitHubBuild = Callable[[GitHubSite], list[str]]
OID = "1.3.6.1.4.1.57264.1."


def gh(*extra: str, **knobs: Any) -> GitHubBuild:
    """GitHub-mode evidence with ``knobs`` (see ``github_evidence``), verified with ``extra`` arguments."""
    return lambda site: github_evidence(site, **knobs).verify_argv(*extra)


def gh_main_moved_on(site: GitHubSite) -> list[str]:
    ev = github_evidence(site)
    site.main_at("1" * 40)
    return ev.verify_argv()


def gh_claims_another_commit_throughout(site: GitHubSite) -> list[str]:
    """Every SHA in the predicate (and the artifact, and main's head) is another commit; only the certificate
    still names the commit the job really ran for."""
    ev = github_evidence(site, sha=OTHER_SHA)
    site.main_at(OTHER_SHA)
    return ev.verify_argv()


def gh_statement_renamed(name: str) -> GitHubBuild:
    def build(site: GitHubSite) -> list[str]:
        ev = github_evidence(site)
        ev.platform_file.rename(ev.evidence_dir / name)
        return ev.verify_argv()

    return build


def gh_other_statement_as_artifact_signature(site: GitHubSite) -> list[str]:
    """The artifact signature is a bundle by the right identity, but over a platform-type statement naming
    the artifact, not an artifact-signature statement."""
    from desktop_qualify.evidence_schemas import PLATFORM_PREDICATE_TYPE

    signer = Signing().signer(site.world)

    def edit(data: dict[str, Any]) -> None:
        artifact = data["build"]["artifact"]
        statement = {"_type": IN_TOTO_STATEMENT_TYPE,
                     "subject": [{"name": artifact["name"], "digest": {"sha256": artifact["sha256"]}}],
                     "predicateType": PLATFORM_PREDICATE_TYPE, "predicate": {}}
        bundle = signer.sign_statement(canonical_bytes(statement))
        data["signature"].update(signature=bundle.decode("utf-8"), keyid=signer_of(bundle)[0])

    return github_evidence(site, edit=edit).verify_argv()


def gh_aggregate_entry(**changes: Any) -> Edit:
    return lambda s: s["predicate"]["platforms"][0].update(changes)


def gh_aggregate_run(**changes: Any) -> Edit:
    return lambda s: s["predicate"]["run"].update(changes)


def gh_expired_certificate(site: GitHubSite) -> list[str]:
    """The statement's log entry was integrated half an hour after its ten-minute certificate expired."""
    issued = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    return github_evidence(site, statement=Signing(issued_at=issued, integrated_at=issued + timedelta(minutes=30))
                           ).verify_argv()


def gh_provenance_removed(site: GitHubSite) -> list[str]:
    ev = github_evidence(site)
    ev.provenance_file.unlink()
    return ev.verify_argv()
