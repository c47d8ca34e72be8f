"""One producer job: gate -> build -> sign -> install -> launch probe -> journey -> emit.

A gate or build failure produces no statement (there is nothing to vouch for).
A later stage's failure is recorded, signed and emitted, so that the evidence
of a failed qualification survives; the job still exits 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    Code,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    Platform,
    PlatformPredicate,
    QualificationError,
    RunIdentity,
    SignatureRecord,
    SourceGateRecord,
    UpdateRecord,
    aggregate_file_name,
    utc_now,
)
from desktop_qualify.qualify_files import write_atomic
from desktop_qualify.qualify_policy import InstallTarget, Policy, host_arch, host_platform, load_policy
from desktop_qualify.qualify_trust import StatementSigner, StatementVerifier, verifier_for
from desktop_qualify.qualify_trust import signer_for as statement_signer_for
from desktop_qualify.qualify_verify import UpdateRules
from pydantic import BaseModel

from ._build import BuildOutput, BuildPlan, build, export_committed_source
from ._emit import emit
from ._gate import LocalGitGate, SourceGate, repository_root
from ._gate_github import GitHubGate, github_run_identity
from ._install import install
from ._launch import RunPlan, journey, launch_probe
from ._platform_signing import platform_signer_from_env
from ._previous import AuditedPrevious, PreviousInput, audit_previous
from ._progress import Progress
from ._publish import Staged, publish, staging_folder
from ._reproduce import SUMMARY_NAME
from ._sign import sign_artifact
from ._update import UpdatePlan, run_update

_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class ProduceResult:
    """What a producer job wrote: its statement and artifact, whether every stage passed, and which did not."""

    statement: Path
    archive: Path
    passed: bool
    failures: list[str]


@dataclass(frozen=True)
class _Job:
    """Everything a producer job knows before its first stage runs."""

    policy: Policy
    platform: Platform
    arch: str
    run_id: str | None
    env: Mapping[str, str]
    signer: StatementSigner
    verifier: StatementVerifier
    # The job writes its evidence, artifact and records under ``staging``; ``out`` changes only at publish.
    out: Path
    staging: Path
    evidence_dir: Path
    artifacts_dir: Path
    records_dir: Path
    work_dir: Path
    progress: Progress

    @property
    def install_prefix(self) -> Path:
        return self.work_dir / "install"

    def start_clean(self) -> None:
        """Start from an empty staging folder and work folder; only once the gate passed.

        An earlier run may have been killed at any point (SIGKILL, a cancelled
        runner, a full disk): whatever it left in its staging folder (a
        statement, the temporary file of an interrupted write, a partial
        archive, records) and its work folder (half a PyInstaller tree, half an
        install) is removed here. The output folder itself keeps the last run's
        evidence until this run has emitted (``_publish``).
        """
        _remove_tree(self.staging, "staging folder")
        _remove_tree(self.work_dir, "work folder")
        try:
            self.work_dir.mkdir(parents=True)
        except OSError as exc:
            raise QualificationError(Code.ENVIRONMENT, f"{self.work_dir}: cannot create the work folder "
                                                       f"({exc.strerror})") from exc

    def record(self, name: str, record: BaseModel) -> None:
        # Unsigned copies for people; the evidence is the signed statement.
        write_atomic(self.records_dir / f"{name}.json", record.model_dump_json(indent=2).encode() + b"\n")


def _remove_tree(folder: Path, what: str) -> None:
    """Remove ``folder`` whole, or say why not: a half-removed folder must not pass for a fresh one."""
    if folder.is_symlink():
        # rmtree refuses a link; the link itself is the earlier run's, not what it points at.
        with contextlib.suppress(OSError):
            folder.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists() or folder.is_symlink():
        raise QualificationError(Code.ENVIRONMENT, f"{folder}: cannot remove the earlier run's {what}",
                                 hint="is an earlier producer (or a process it started) still running?")


def new_local_run_id() -> str:
    return f"local-{utc_now()[:19].replace(':', '').replace('-', '')}-{secrets.token_hex(4)}"


def _prepare(policy: Policy, platform: Platform, out: Path, *, run_id: str | None, env: Mapping[str, str],
             signer: StatementSigner | None) -> _Job:
    if platform != host_platform():
        raise QualificationError(Code.USAGE, f"a producer job qualifies its own platform; this host is "
                                             f"{host_platform()}, not {platform}")
    if platform not in policy.required_platforms:
        raise QualificationError(Code.USAGE, f"policy {policy.file.name!r} does not require platform {platform!r}")
    signer = signer or statement_signer_for(policy, "platform")
    verifier = verifier_for(policy)
    if policy.sigstore is not None:
        # GitHub mode: the run is GitHub's, named by its environment and later by the certificate.
        if run_id is not None:
            raise QualificationError(Code.USAGE, "--run-id is for local mode; GitHub mode takes the run from "
                                                 "GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT")
    else:
        run_id = run_id or env.get("QUALIFY_RUN_ID") or new_local_run_id()
        if not _RUN_ID.match(run_id):
            raise QualificationError(Code.USAGE, f"run id {run_id[:80]!r} must match {_RUN_ID.pattern}")
    out = out.resolve()
    staging = staging_folder(out, platform)
    return _Job(policy, platform, host_arch(), run_id, env, signer, verifier, out, staging, staging / "evidence",
                staging / "artifacts", staging / "records" / platform, out / "work" / platform,
                Progress(f"produce {platform}"))


def _gate(job: _Job) -> tuple[SourceGate, SourceGateRecord]:
    app_source = job.policy.resolve(job.policy.file.app.source)
    gate: SourceGate
    if job.policy.sigstore is not None:
        gate = GitHubGate(job.policy, job.env, checkout=app_source)
    else:
        gate = LocalGitGate(app_source, require_clean=job.policy.file.source.require_clean_worktree,
                            repository=job.policy.file.producer.repository)
    with job.progress.stage("source gate") as said:
        record = gate.observe()
        said.append(f"sha={record.sha[:12]} ref={record.ref} clean={record.worktree_clean}")
    return gate, record


def _run_identity(job: _Job, gate_record: SourceGateRecord) -> RunIdentity:
    if job.policy.sigstore is not None:
        return github_run_identity(job.env, job.policy)
    producer = job.policy.file.producer
    return RunIdentity(mode="local", repository=producer.repository, workflow=producer.workflow,
                       ref=gate_record.ref, sha=gate_record.sha, run_id=job.run_id or new_local_run_id(),
                       attempt=1, trigger="local", runner_environment="local")


def _target(job: _Job) -> tuple[str, InstallTarget]:
    """This platform's output glob and installer (the policy's loader made sure a required platform has both)."""
    app = job.policy.file.app
    glob, target = app.build.outputs.get(job.platform), app.install.get(job.platform)
    if glob is None or target is None:
        raise QualificationError(Code.POLICY_INVALID, f"policy {job.policy.file.name!r} names no build output or "
                                                      f"installer for {job.platform}")
    return glob, target


def _build(job: _Job, gate_record: SourceGateRecord) -> BuildOutput:
    app = job.policy.file.app
    glob, target = _target(job)
    plan = BuildPlan(argv=app.build.argv, env_names=app.build.env, tools=app.build.tools, output_glob=glob,
                     kind=target.kind, executable=target.executable)
    app_source = job.policy.resolve(app.source)
    with job.progress.stage("build") as said:
        built = build(repo=repository_root(app_source), sha=gate_record.sha, ref=gate_record.ref,
                      app_source=app_source, plan=plan, app_name=app.name, platform=job.platform, arch=job.arch,
                      work=job.work_dir, artifacts=job.artifacts_dir,
                      signer=platform_signer_from_env(job.platform, job.env), environ=job.env,
                      timeout=job.policy.file.limits.build_timeout_seconds,
                      reproduce=job.platform in job.policy.reproducible_platforms)
        artifact = built.record.artifact
        said.append(f"{artifact.name} {artifact.size} bytes sha256={artifact.sha256[:16]}")
        repro = built.record.reproduction
        if repro is not None:
            said.append(f"second build {'reproduced' if repro.reproduced else 'DIFFERS'} "
                        f"({len(repro.variations)} variations, {repro.duration_ms / 1000:.1f}s)")
    job.record("build", built.record)
    if built.difference is not None:
        # For people, beside the records: where the two builds differ. The verifier decides from the digests.
        write_atomic(job.records_dir / SUMMARY_NAME, built.difference.encode("utf-8"))
    return built


def _sign(job: _Job, built: BuildOutput) -> SignatureRecord:
    with job.progress.stage("sign") as said:
        accepted: list[str] = sorted(job.policy.accepted_signing(job.platform))
        record = sign_artifact(archive=built.archive, build=built.record, signing=built.signing,
                               signer=job.signer, verifier=job.verifier, accepted_states=accepted)
        said.append(f"keyid={record.keyid[:16]} readback={record.readback_verified} "
                    f"os-signing={record.platform_signing_state}")
    job.record("signature", record)
    return record


def _install(job: _Job, built: BuildOutput) -> InstallRecord:
    _, target = _target(job)
    with job.progress.stage("install") as said:
        record = install(archive=built.archive, build=built.record, prefix=job.install_prefix, kind=target.kind,
                         executable=target.executable)
        said.append(f"{record.method}: {record.file_count} files passed={record.passed}")
    job.record("install", record)
    return record


def _run_plan(job: _Job, sha: str, argv: list[str], timeout: int) -> RunPlan:
    app = job.policy.file.app
    app_source = job.policy.resolve(app.source)

    def export(dest: Path) -> Path:
        # A runner comes from the gated commit, exported afresh: the build may have changed its own copy.
        return export_committed_source(repository_root(app_source), sha, app_source, dest)

    return RunPlan(argv=argv, display=job.policy.display(job.platform), timeout=timeout, export_source=export)


def _layers(job: _Job) -> list[str] | None:
    layers = job.policy.isolation_layers(job.platform)
    return None if layers is None else list(layers)


def _refusals(job: _Job) -> dict[str, list[str]] | None:
    isolation = job.policy.file.isolation
    return None if isolation is None else isolation.refuses_with


def _probe(job: _Job, installed: InstallRecord, sha: str) -> LaunchProbeRecord:
    app = job.policy.file.app
    with job.progress.stage("launch probe") as said:
        plan = _run_plan(job, sha, app.probe.argv, job.policy.file.limits.probe_timeout_seconds)
        record = launch_probe(prefix=job.install_prefix, install=installed, platform=job.platform, gate_sha=sha,
                              plan=plan, required_checks=app.probe.require, required_layers=_layers(job))
        said.append(f"exit={record.exit_code} passed={record.passed}")
    job.record("launch-probe", record)
    return record


def _journey(job: _Job, installed: InstallRecord, sha: str, probe: LaunchProbeRecord) -> JourneyRecord:
    app = job.policy.file.app
    with job.progress.stage("journey") as said:
        plan = _run_plan(job, sha, app.journey.argv, job.policy.file.limits.journey_timeout_seconds)
        record = journey(prefix=job.install_prefix, install=installed, platform=job.platform, gate_sha=sha,
                         plan=plan, expected=job.policy.file.journey.steps, code_pattern=app.codes.pattern,
                         required_layers=_layers(job), refuses_with=_refusals(job), probe=probe)
        said.append(f"{sum(s.passed for s in record.steps)}/{len(record.steps)} steps passed, "
                    f"missing={len(record.missing_steps)} passed={record.passed}")
    job.record("journey", record)
    return record


def _audited_previous(job: _Job, given: PreviousInput | None, downloads: Path | None) -> AuditedPrevious | None:
    """The previous release, audited before the gate: a release that does not audit changes nothing.

    Given by path (``given``), or in GitHub mode without one, read from the repository's newest published
    release into ``downloads`` (a folder that lives as long as the job).
    """
    update = job.policy.file.update
    if update is None:
        if given is not None:
            raise QualificationError(Code.USAGE, f"policy {job.policy.file.name!r} asks for no update journey "
                                                 "([update]); --previous-bundle/--previous-artifact are for one")
        return None
    if given is None and job.policy.sigstore is None:
        raise QualificationError(Code.USAGE, f"policy {job.policy.file.name!r} requires the update journey: give "
                                             "the last qualified release as --previous-bundle and --previous-artifact")
    anchor = job.policy
    if update.previous_policy is not None:
        anchor = load_policy(job.policy.resolve(update.previous_policy), job.policy.root)
    with job.progress.stage("previous release") as said:
        if given is not None:
            audited = audit_previous(job.policy, anchor, given, job.platform)
        else:
            # PyGithub loads only for this path (as for the GitHub gate).
            from desktop_qualify.qualify_github import GitHubClient  # noqa: PLC0415

            from ._previous_github import previous_from_release  # noqa: PLC0415

            if downloads is None:
                raise QualificationError(Code.ENVIRONMENT, "no folder for the previous release's downloads")
            try:
                downloads.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise QualificationError(Code.ENVIRONMENT, f"{downloads}: cannot create it ({exc})") from exc
            with GitHubClient.from_env(job.env) as client:
                audited = previous_from_release(job.policy, anchor, client, job.platform, downloads)
        said.append(f"{audited.facts.artifact.name} of {audited.facts.sha[:12]} audits QUALIFIED")
    return audited


def _update(job: _Job, previous: AuditedPrevious, *, built: BuildOutput, installed: InstallRecord,
            probed: LaunchProbeRecord, sha: str) -> UpdateRecord:
    app, policy = job.policy.file.app, job.policy.file
    _, target = _target(job)
    if app.state is None or policy.update is None:
        # The policy's loader requires both together; a hand-built policy object may not.
        raise QualificationError(Code.POLICY_INVALID, "[update] needs [app.state] write and check")
    layers = _layers(job)
    rules = UpdateRules(
        platform=job.platform, candidate_sha=sha, candidate_artifact_sha256=built.record.artifact.sha256,
        candidate_executable_sha256=installed.executable_sha256, installer=target.kind,
        executable=target.executable, state_write=tuple(app.state.write), state_check=tuple(app.state.check),
        downgrade="allow" if policy.update.downgrade == "allow" else "refuse",
        downgrade_code=policy.update.downgrade_code, probe_command=tuple(app.probe.argv),
        display=job.policy.display(job.platform), probe_checks=tuple(app.probe.require),
        layers=None if layers is None else tuple(layers),
        candidate_layers=None if probed.report is None else
        tuple((layer.name, layer.applied) for layer in probed.report.isolation_layers))

    def probe(prefix: Path, upgraded: InstallRecord, home: Path) -> LaunchProbeRecord:
        return launch_probe(prefix=prefix, install=upgraded, platform=job.platform, gate_sha=sha,
                            plan=_run_plan(job, sha, app.probe.argv, policy.limits.probe_timeout_seconds),
                            required_checks=app.probe.require, required_layers=_layers(job), kept_home=home)

    plan = UpdatePlan(previous=previous, candidate_archive=built.archive, rules=rules,
                      plan_for=lambda argv, timeout: _run_plan(job, sha, argv, timeout), probe=probe,
                      state_timeout=policy.limits.probe_timeout_seconds)
    with job.progress.stage("update journey") as said:
        record = run_update(plan, job.work_dir / "update")
        said.append(f"failed={','.join(record.failed_steps) or 'none'} passed={record.passed}")
    job.record("update", record)
    return record


def produce(policy: Policy, platform: Platform, out: Path, *, run_id: str | None = None,
            env: Mapping[str, str] | None = None, signer: StatementSigner | None = None,
            previous: PreviousInput | None = None) -> ProduceResult:
    """Run one producer job. ``env`` defaults to the process environment; ``signer`` to the policy's.

    ``previous`` is the last qualified release (bundle and artifact) when the policy requires the update journey.
    """
    job = _prepare(policy, platform, out, run_id=run_id, env=os.environ if env is None else env, signer=signer)
    if policy.file.update is None:
        return _produce(job, _audited_previous(job, previous, None))
    # The previous release's downloads live inside --out, never in the system's temporary folder: a killed job
    # leaves nothing outside its named output, and the next job removes what it left before it starts.
    # The folder is made only when a release is downloaded (GitHub mode); a refused release leaves --out as it was.
    downloads = out / f".previous-{platform}"
    _remove_tree(downloads, "previous-release folder")
    out_existed = out.exists()
    try:
        return _produce(job, _audited_previous(job, previous, downloads))
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
        if not out_existed:
            with contextlib.suppress(OSError):
                out.rmdir()  # only while empty: a job that got further keeps its output


def _produce(job: _Job, audited: AuditedPrevious | None) -> ProduceResult:
    policy, platform = job.policy, job.platform
    gate, gate_record = _gate(job)
    run = _run_identity(job, gate_record)
    # Nothing on disk changes before the gate and the run identity were accepted (so the gate's own record
    # is written only now); from here on, nothing an earlier run left may pass for this run's.
    job.start_clean()
    job.record("source-gate", gate_record)
    built = _build(job, gate_record)
    signature = _sign(job, built)
    installed = _install(job, built)
    probe = _probe(job, installed, gate_record.sha)
    walked = _journey(job, installed, gate_record.sha, probe)
    updated = None if audited is None else _update(job, audited, built=built, installed=installed, probed=probe,
                                                   sha=gate_record.sha)
    predicate = PlatformPredicate(platform=platform, arch=job.arch, run=run, produced_at=utc_now(),
                                  source_gate=gate_record, build=built.record, signature=signature,
                                  install=installed, launch_probe=probe, journey=walked, update=updated)
    with job.progress.stage("emit") as said:
        emitted = emit(predicate=predicate, archive=built.archive, gate=gate, signer=job.signer,
                       verifier=job.verifier, policy=policy, evidence_dir=job.evidence_dir)
        said.append(f"{emitted.statement} + {emitted.provenance.name}")
    # Emitted: only now does this run's output replace the earlier one's.
    statement, archive = publish(Staged(job.out, job.staging, platform, policy.file.app.name, emitted.statement,
                                        built.archive, aggregate_file_name(job.signer.file_suffix),
                                        emitted.provenance))
    repro = built.record.reproduction
    reproduced = repro is None or repro.reproduced  # None: the policy did not ask for a second build
    failures = [name for name, ok in (("build reproduction", reproduced),
                                      ("signature", signature.passed), ("install", installed.passed),
                                      ("launch probe", probe.passed), ("journey", walked.passed),
                                      ("update", updated is None or updated.passed)) if not ok]
    return ProduceResult(statement, archive, not failures, failures)
