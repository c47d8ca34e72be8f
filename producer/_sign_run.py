"""The signing step: an unsigned run, re-checked, becomes a signed platform statement (docs/design.md §3.11).

In GitHub mode this is a job of its own (``qualify sign``), the only one that holds ``id-token: write``; it
runs no app code. It downloads the run job's unsigned run document and artifact and, before it signs:

1. reads the document bounded and validates it strictly (``QE_UNSIGNED_RUN_INVALID`` otherwise);
2. hashes the artifact it received: its name, size and SHA-256 must be the build record's;
3. compares every claim it can with its own context: the platform it signs for, the run identity (GitHub:
   repository, workflow, ref, commit, run id, attempt, trigger and runner, all read from its own
   environment; locally: the policy's producer and this checkout's commit), the commit of the gate, build
   and run being one;
4. reads main's head again (the gate's re-check "just before signing");
5. signs the artifact's digest, reads the signature back with the policy's verifier, and signs the
   statement and its provenance.

It never executes, installs or unpacks the artifact: what the stages observed is the run job's word, which
the verifier re-derives every verdict from but cannot re-observe (docs/trust-modes.md).

In local mode ``qualify produce`` runs the same step in-process once every app process of the run has
ended; the private key is read only here, on first use.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    Code,
    JsonBounds,
    Platform,
    PlatformPredicate,
    QualificationError,
    RunIdentity,
    UnsignedRun,
    aggregate_file_name,
    load_json,
    predicate_from_run,
    read_bounded,
    unsigned_run_file_name,
    utc_now,
    validate_model,
)
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust import StatementSigner, StatementVerifier, verifier_for
from desktop_qualify.qualify_trust import signer_for as statement_signer_for

from ._emit import emit
from ._publish import Staged, publish, staging_folder
from ._result import ProduceResult, failed_stages
from ._sign import sign_artifact
from .os_signing import SigningOutcome
from .source import GitHubGate, LocalGitGate, SourceGate, github_run_identity, repository_root

UNSIGNED_FOLDER = "unsigned"


def _invalid(message: str) -> QualificationError:
    return QualificationError(Code.UNSIGNED_RUN_INVALID, message)


def read_unsigned_run(policy: Policy, platform: Platform, run_dir: Path) -> tuple[UnsignedRun, Path]:
    """The run document and the artifact file it names, both checked (steps 1 and 2)."""
    path = run_dir / UNSIGNED_FOLDER / unsigned_run_file_name(platform)
    limit = policy.file.limits.max_statement_bytes
    data = read_bounded(path, max_bytes=limit, what=str(path))
    try:
        run = validate_model(UnsignedRun, load_json(data, what=str(path), bounds=JsonBounds(max_bytes=limit)),
                             what=str(path))
    except QualificationError as exc:
        raise _invalid(exc.message) from exc
    if run.platform != platform:
        raise _invalid(f"{path.name} is {run.platform}'s run; this step signs {platform}")
    ref = run.build.artifact
    archive = run_dir / "artifacts" / ref.name
    if archive.is_symlink() or not archive.is_file():
        raise _invalid(f"the run's artifact {ref.name} is not a regular file in {run_dir / 'artifacts'}")
    if archive.stat().st_size != ref.size or file_sha256(archive) != ref.sha256:
        raise QualificationError(Code.ARTIFACT_DIGEST_MISMATCH, f"{ref.name}: its bytes are not the ones the run "
                                                                "built (size or SHA-256 differs)")
    return run, archive


def _own_identity(policy: Policy, run: UnsignedRun, env: Mapping[str, str]) -> RunIdentity:
    """This step's own view of the run (step 3): GitHub's environment, or the policy and this checkout."""
    if policy.sigstore is not None:
        return github_run_identity(env, policy)
    producer = policy.file.producer
    return RunIdentity(mode="local", repository=producer.repository, workflow=producer.workflow,
                       ref=run.source_gate.ref, sha=run.source_gate.sha,
                       run_id=env.get("QUALIFY_RUN_ID") or run.run.run_id, attempt=1, trigger="local",
                       runner_environment="local")


def check_claims(policy: Policy, run: UnsignedRun, env: Mapping[str, str]) -> None:
    """Every claim of the run this step can check against its own context, or ``QE_UNSIGNED_RUN_INVALID``."""
    own = _own_identity(policy, run, env)
    if run.run != own:
        differing = [name for name in type(own).model_fields if getattr(run.run, name) != getattr(own, name)]
        raise _invalid(f"the run's identity differs from this job's in {', '.join(differing)}")
    shas = {run.run.sha, run.source_gate.sha, run.build.build_sha}
    if len(shas) != 1:
        raise _invalid("the run's identity, source gate and build name different commits")
    if run.source_gate.ref != "refs/heads/main" or run.run.ref != "refs/heads/main":
        raise _invalid("the run is not from refs/heads/main")


def _gate(policy: Policy, env: Mapping[str, str]) -> SourceGate:
    app_source = policy.resolve(policy.file.app.source)
    if policy.sigstore is not None:
        return GitHubGate(policy, env, checkout=app_source)
    return LocalGitGate(repository_root(app_source), require_clean=policy.file.source.require_clean_worktree,
                        repository=policy.file.producer.repository)


@dataclass(frozen=True)
class Signed:
    """The signed platform statement and provenance, and the predicate they carry, in ``evidence``."""

    statement: Path
    provenance: Path
    predicate: PlatformPredicate
    # The signer's file suffix (``.dsse.json``, ``.sigstore.json``): the aggregate's name follows it.
    file_suffix: str


def sign_checked_run(policy: Policy, run: UnsignedRun, archive: Path, *, gate: SourceGate,
                     signer: Callable[[], StatementSigner], verifier: StatementVerifier, evidence: Path) -> Signed:
    """Steps 4 and 5 on a run already checked: the signature over the artifact, then the statement."""
    statement_signer = signer()  # the private key is read here, once no app process of the run is left
    accepted: list[str] = sorted(policy.accepted_signing(run.platform))
    os_signing = SigningOutcome(run.os_signing.tool, run.os_signing.state, run.os_signing.notarization)
    signature = sign_artifact(archive=archive, build=run.build, signing=os_signing, signer=statement_signer,
                              verifier=verifier, accepted_states=accepted)
    predicate = predicate_from_run(run, signature, utc_now())
    emitted = emit(predicate=predicate, archive=archive, gate=gate, signer=statement_signer, verifier=verifier,
                   policy=policy, evidence_dir=evidence)
    return Signed(emitted.statement, emitted.provenance, predicate, statement_signer.file_suffix)


def sign_run(policy: Policy, platform: Platform, run_dir: Path, out: Path, *, env: Mapping[str, str] | None = None,
             signer: StatementSigner | None = None) -> ProduceResult:
    """`qualify sign`: check the unsigned run in ``run_dir`` and sign it into ``out`` (evidence/, artifacts/).

    ``out`` changes only once the statement is signed; a refused run leaves it as it was.
    """
    env = os.environ if env is None else env
    run, archive = read_unsigned_run(policy, platform, run_dir)
    check_claims(policy, run, env)
    out = out.resolve()
    staging = staging_folder(out, platform)
    shutil.rmtree(staging, ignore_errors=True)
    staged_archive = staging / "artifacts" / archive.name
    staged_archive.parent.mkdir(parents=True)
    shutil.copyfile(archive, staged_archive)
    signed = sign_checked_run(policy, run, staged_archive, gate=_gate(policy, env),
                              signer=lambda: signer or statement_signer_for(policy, "platform"),
                              verifier=verifier_for(policy), evidence=staging / "evidence")
    statement, published = publish(Staged(out, staging, platform, policy.file.app.name, signed.statement,
                                          staged_archive, aggregate_file_name(signed.file_suffix),
                                          signed.provenance))
    failures = failed_stages(signed.predicate)
    return ProduceResult(statement, published, not failures, failures)


__all__ = ["UNSIGNED_FOLDER", "Signed", "check_claims", "read_unsigned_run", "sign_checked_run", "sign_run"]
