"""One producer job: gate -> build -> install -> launch probe -> journey [-> update] -> sign -> emit.

Every command of the app (its build and tool versions, its probe, its journey, its state verbs) runs
confined through the job's ``StageRunner`` (docs/design.md §3.11), and the installed tree and the artifact
are re-hashed after each of them. Nothing reads a private key until every app process of the run has ended:
the pipeline's own signature over the artifact and the statement are made last (``_sign_run``), in this
process locally, and in a job of its own in GitHub mode, which reads the unsigned run this job writes with
``sign=False`` (``qualify produce --unsigned``).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    Code,
    InstallRecord,
    JourneyRecord,
    LaunchProbeRecord,
    OsSigning,
    Platform,
    QualificationError,
    RunIdentity,
    SourceGateRecord,
    StageConfinement,
    ToolchainRecord,
    UnsignedRun,
    UpdateRecord,
    aggregate_file_name,
    canonical_bytes,
    unsigned_run_file_name,
    utc_now,
    validate_model,
)
from desktop_qualify.qualify_files import file_sha256, write_atomic
from desktop_qualify.qualify_policy import InstallTarget, Policy, host_arch, host_platform, load_policy
from desktop_qualify.qualify_trust import StatementSigner, StatementVerifier, verifier_for
from desktop_qualify.qualify_trust import signer_for as statement_signer_for
from desktop_qualify.qualify_verify import UpdateRules
from pydantic import BaseModel

from ._build import BuildOutput, BuildPlan, build, export_committed_source
from ._launch import RunPlan, journey, launch_probe
from ._progress import Progress
from ._publish import Staged, publish, staging_folder
from ._reproduce import SUMMARY_NAME
from ._result import ProduceResult, failed_stages
from ._sign_run import UNSIGNED_FOLDER, sign_checked_run
from ._toolchains import Toolchains, query_versions, resolve_toolchains
from ._update import UpdatePlan, run_update
from .confinement import APP_STAGES, AppStage, StageRunner, choose_confinement
from .installers import SignatureRequirement, install, prefix_grant
from .os_signing import platform_signer_from_env
from .previous import AuditedPrevious, PreviousInput, audit_previous
from .source import GitHubGate, LocalGitGate, SourceGate, github_run_identity, repository_root

_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class _Job:
    """Everything a producer job knows before its first stage runs."""

    policy: Policy
    platform: Platform
    arch: str
    run_id: str | None
    env: Mapping[str, str]
    # The signer is made only when the job signs, after every app process has ended: the key is read then.
    signer: StatementSigner | None
    verifier: StatementVerifier
    runner: StageRunner
    # The job writes its evidence, artifact and records under ``staging``; ``out`` changes only at publish.
    out: Path
    staging: Path
    evidence_dir: Path
    artifacts_dir: Path
    records_dir: Path
    work_dir: Path
    progress: Progress
    # The probe's, journey's and state verbs' tools, resolved before any app code runs (``_toolchains``).
    toolchains: Toolchains

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


def protected_paths(policy: Policy, out: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
    """What no app stage may see: the checkout, the key folders, the output folder, HOME, the runner's files.

    ``RUNNER_TEMP`` holds the files through which a GitHub Actions step sets the next steps' environment.
    """
    found: list[Path] = [out, Path.home()]
    root = policy.repository_root()
    found.append(root if root is not None else policy.path.resolve().parent)
    app_source = policy.resolve(policy.file.app.source)
    with contextlib.suppress(QualificationError):
        found.append(repository_root(app_source))
    if policy.sigstore is None:
        trust = policy.ed25519
        for named in (trust.keyring, trust.platform_key, trust.aggregate_key, trust.verifier_key):
            if named is not None:
                found.append(policy.resolve(named).parent)
    for name in ("GITHUB_WORKSPACE", "RUNNER_TEMP"):
        if env.get(name):
            found.append(Path(env[name]))
    return tuple(dict.fromkeys(path.resolve() for path in found))


def stage_runner(policy: Policy, platform: Platform, out: Path, env: Mapping[str, str],
                 also_protected: Sequence[Path] = ()) -> StageRunner:
    """The job's runner for app code: the platform's confinement, refused here when the policy requires it
    and it cannot run (``QE_CONFINEMENT_UNAVAILABLE``), before any app code starts.

    ``also_protected``: what no stage may see beyond the job's own protected paths (a rebuilder's key folder).
    """
    required = policy.confinement_layers(platform) is not None
    network = frozenset(stage for stage in APP_STAGES if policy.stage_has_network(stage))
    protected = (*protected_paths(policy, out, env), *(path.resolve() for path in also_protected))
    return StageRunner(choose_confinement(platform, required=required), protected, network)


def _check_keys(policy: Policy) -> None:
    """Refuse early a local policy whose platform key is missing, without reading it (it is read at signing)."""
    if policy.sigstore is not None:
        return
    key = policy.ed25519.platform_key
    if not policy.resolve(key).is_file():
        raise QualificationError(Code.KEY_INVALID, f"{policy.resolve(key)}: the platform key is missing",
                                 hint="run 'qualify keygen --policy FILE'")


def _prepare(policy: Policy, platform: Platform, out: Path, *, run_id: str | None, env: Mapping[str, str],
             signer: StatementSigner | None, sign: bool = True) -> _Job:
    if platform != host_platform():
        raise QualificationError(Code.USAGE, f"a producer job qualifies its own platform; this host is "
                                             f"{host_platform()}, not {platform}")
    if platform not in policy.required_platforms:
        raise QualificationError(Code.USAGE, f"policy {policy.file.name!r} does not require platform {platform!r}")
    if sign and signer is None:
        _check_keys(policy)
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
    runner = stage_runner(policy, platform, out, env)
    # Resolved once, here, so that a missing tool stops the job before the build rather than after it.
    toolchains = resolve_toolchains(policy.file.app.toolchains, policy.file.app.run_commands(),
                                    path_variable=env.get("PATH"), protected=runner.protected, out=out)
    progress = Progress(f"produce {platform}")
    # The live line (a terminal) and the heartbeat (a log) say which command a long stage is running.
    runner.observer = progress.running
    return _Job(policy, platform, host_arch(), run_id, env, signer, verifier, runner, out, staging,
                staging / "evidence", staging / "artifacts", staging / "records" / platform, out / "work" / platform,
                progress, toolchains)


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
                      timeout=job.policy.file.limits.build_timeout_seconds, runner=job.runner,
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


def _signatures(job: _Job) -> SignatureRequirement:
    """What a package's own signature must show: "signed" where the policy accepts only signed builds here."""
    return SignatureRequirement.of(job.policy.accepted_signing(job.platform), job.env)


def _install(job: _Job, built: BuildOutput) -> InstallRecord:
    _, target = _target(job)
    with job.progress.stage("install") as said:
        record = install(archive=built.archive, build=built.record, prefix=job.install_prefix, kind=target.kind,
                         executable=target.executable, signatures=_signatures(job),
                         grant=prefix_grant(job.platform, job.policy.file.app.name))
        said.append(f"{record.method}: {record.file_count} files passed={record.passed}")
    job.record("install", record)
    return record


def _run_plan(job: _Job, sha: str, argv: list[str], timeout: int, stage: AppStage) -> RunPlan:
    app = job.policy.file.app
    app_source = job.policy.resolve(app.source)

    def export(dest: Path) -> Path:
        # A runner comes from the gated commit, exported afresh: the build may have changed its own copy.
        return export_committed_source(repository_root(app_source), sha, app_source, dest)

    return RunPlan(argv=argv, display=job.policy.display(job.platform), timeout=timeout, export_source=export,
                   runner=job.runner, stage=stage, toolchains=job.toolchains)


def _toolchain_versions(job: _Job) -> list[ToolchainRecord] | None:
    """Each resolved tool's version, asked confined; None when the commands name none (older evidence's shape)."""
    if not job.toolchains.chosen:
        return None
    with job.progress.stage("toolchains") as said:
        records = query_versions(job.toolchains, job.runner, job.work_dir)
        said.append(", ".join(f"{{{r.name}}}={r.version[:40]}" for r in records))
    return records


def _layers(job: _Job) -> list[str] | None:
    layers = job.policy.isolation_layers(job.platform)
    return None if layers is None else list(layers)


def _refusals(job: _Job) -> dict[str, list[str]] | None:
    isolation = job.policy.file.isolation
    return None if isolation is None else isolation.refuses_with


def _probe(job: _Job, installed: InstallRecord, sha: str) -> LaunchProbeRecord:
    app = job.policy.file.app
    with job.progress.stage("launch probe") as said:
        plan = _run_plan(job, sha, app.probe.argv, job.policy.file.limits.probe_timeout_seconds, "probe")
        record = launch_probe(prefix=job.install_prefix, install=installed, platform=job.platform, gate_sha=sha,
                              plan=plan, required_checks=app.probe.require, required_layers=_layers(job))
        said.append(f"exit={record.exit_code} passed={record.passed}")
    job.record("launch-probe", record)
    return record


def _journey(job: _Job, installed: InstallRecord, sha: str, probe: LaunchProbeRecord) -> JourneyRecord:
    app = job.policy.file.app
    with job.progress.stage("journey") as said:
        plan = _run_plan(job, sha, app.journey.argv, job.policy.file.limits.journey_timeout_seconds, "journey")
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

            from .previous import previous_from_release  # noqa: PLC0415

            if downloads is None:
                raise QualificationError(Code.ENVIRONMENT, "no folder for the previous release's downloads")
            try:
                downloads.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise QualificationError(Code.ENVIRONMENT, f"{downloads}: cannot create it ({exc})") from exc
            with GitHubClient.from_env(job.env) as client:
                audited = previous_from_release(job.policy, anchor, client, job.platform, downloads,
                                                candidate_sha=job.env.get("GITHUB_SHA", ""))
        said.append(f"{audited.facts.artifact.name} of {audited.facts.sha[:12]} audits QUALIFIED")
    return audited


def _update(job: _Job, previous: AuditedPrevious, *, built: BuildOutput, installed: InstallRecord,
            probed: LaunchProbeRecord, sha: str) -> UpdateRecord:
    app, policy = job.policy.file.app, job.policy.file
    _, target = _target(job)
    if app.state is None or policy.update is None:
        # The policy's loader requires both together; a hand-built policy object may not.
        raise QualificationError(Code.POLICY_INVALID, "[update] needs [app.state] write and check")
    layers, signatures = _layers(job), _signatures(job)
    rules = UpdateRules(
        platform=job.platform, candidate_sha=sha, candidate_artifact_sha256=built.record.artifact.sha256,
        candidate_executable_sha256=installed.executable_sha256, installer=target.kind,
        executable=target.executable, state_write=tuple(app.state.write), state_check=tuple(app.state.check),
        downgrade="allow" if policy.update.downgrade == "allow" else "refuse",
        downgrade_code=policy.update.downgrade_code, probe_command=tuple(app.probe.argv),
        display=job.policy.display(job.platform), probe_checks=tuple(app.probe.require),
        layers=None if layers is None else tuple(layers),
        candidate_layers=None if probed.report is None else
        tuple((layer.name, layer.applied) for layer in probed.report.isolation_layers),
        signed_only=signatures.require_signed)  # the install stage's own requirement

    def probe(prefix: Path, upgraded: InstallRecord, home: Path) -> LaunchProbeRecord:
        return launch_probe(prefix=prefix, install=upgraded, platform=job.platform, gate_sha=sha,
                            plan=_run_plan(job, sha, app.probe.argv, policy.limits.probe_timeout_seconds, "update"),
                            required_checks=app.probe.require, required_layers=_layers(job), kept_home=home)

    plan = UpdatePlan(previous=previous, candidate_archive=built.archive, rules=rules,
                      plan_for=lambda argv, timeout: _run_plan(job, sha, argv, timeout, "update"), probe=probe,
                      state_timeout=policy.limits.probe_timeout_seconds,
                      grant=prefix_grant(job.platform, job.policy.file.app.name), signatures=signatures)
    with job.progress.stage("update journey") as said:
        record = run_update(plan, job.work_dir / "update")
        said.append(f"failed={','.join(record.failed_steps) or 'none'} passed={record.passed}")
    job.record("update", record)
    return record


def produce(policy: Policy, platform: Platform, out: Path, *, run_id: str | None = None,
            env: Mapping[str, str] | None = None, signer: StatementSigner | None = None,
            previous: PreviousInput | None = None, sign: bool = True) -> ProduceResult:
    """Run one producer job. ``env`` defaults to the process environment; ``signer`` to the policy's.

    ``previous`` is the last qualified release (bundle and artifact) when the policy requires the update journey.
    ``sign=False`` is GitHub mode's run job (``qualify produce --unsigned``): every stage runs, nothing is
    signed and no key is read; the unsigned run goes to ``out/unsigned/`` and the artifact to
    ``out/artifacts/``, for the signing job (``sign_run``).
    """
    job = _prepare(policy, platform, out, run_id=run_id, env=os.environ if env is None else env, signer=signer,
                   sign=sign)
    if policy.file.update is None:
        return _produce(job, _audited_previous(job, previous, None), sign=sign)
    # The previous release's downloads live inside --out, never in the system's temporary folder: a killed job
    # leaves nothing outside its named output, and the next job removes what it left before it starts.
    # The folder is made only when a release is downloaded (GitHub mode); a refused release leaves --out as it was.
    downloads = out / f".previous-{platform}"
    _remove_tree(downloads, "previous-release folder")
    out_existed = out.exists()
    try:
        return _produce(job, _audited_previous(job, previous, downloads), sign=sign)
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
        if not out_existed:
            with contextlib.suppress(OSError):
                out.rmdir()  # only while empty: a job that got further keeps its output


def _check_artifact(job: _Job, built: BuildOutput, *, before: str | None = None, after: str | None = None) -> None:
    """The artifact is the bytes the build produced, re-read around each app stage.

    Read before a stage starts, a change is not the stage's doing (``QE_ARTIFACT_DIGEST_MISMATCH``); read right
    after it, with nothing else run between the two reads, it is (``QE_APP_STAGE_TAMPERED``).
    """
    if file_sha256(built.archive) == built.record.artifact.sha256:
        return
    if after is not None:
        raise QualificationError(Code.APP_STAGE_TAMPERED, f"{built.archive.name} changed during the {after} stage")
    raise QualificationError(Code.ARTIFACT_DIGEST_MISMATCH, f"{built.archive.name} changed after it was built, "
                                                            f"before the {before} stage")


def _confinement(job: _Job) -> list[StageConfinement]:
    """Each run of app code, in order, as its adapter read it back."""
    # Validated, not cast: an adapter that reported a layer the evidence cannot name is a bug, said as one.
    return [validate_model(StageConfinement, {"stage": f.stage, "mechanism": f.mechanism, "layers": list(f.layers),
                                              "network": f.network, "detail": f.detail[:2000]},
                           what=f"the {f.stage} stage's confinement") for f in job.runner.facts]


def _produce(job: _Job, audited: AuditedPrevious | None, *, sign: bool) -> ProduceResult:
    policy, platform = job.policy, job.platform
    gate, gate_record = _gate(job)
    run = _run_identity(job, gate_record)
    # Nothing on disk changes before the gate and the run identity were accepted (so the gate's own record
    # is written only now); from here on, nothing an earlier run left may pass for this run's.
    job.start_clean()
    job.record("source-gate", gate_record)
    built = _build(job, gate_record)
    installed = _install(job, built)
    _check_artifact(job, built, before="launch probe")
    toolchains = _toolchain_versions(job)
    probe = _probe(job, installed, gate_record.sha)
    _check_artifact(job, built, after="launch probe")
    walked = _journey(job, installed, gate_record.sha, probe)
    _check_artifact(job, built, after="journey")
    updated = None if audited is None else _update(job, audited, built=built, installed=installed, probed=probe,
                                                   sha=gate_record.sha)
    if updated is not None:
        _check_artifact(job, built, after="update journey")
    unsigned = UnsignedRun(platform=platform, arch=job.arch, run=run, produced_at=utc_now(),
                           source_gate=gate_record, build=built.record,
                           os_signing=OsSigning(tool=built.signing.tool, state=built.signing.state,
                                                notarization=built.signing.notarization),
                           install=installed, launch_probe=probe, journey=walked, update=updated,
                           confinement=_confinement(job), toolchains=toolchains)
    if not sign:
        return _publish_unsigned(job, unsigned, built)
    # Every app process of the run has ended: only now is a key read, by this process alone.
    with job.progress.stage("sign and emit") as said:
        signed = sign_checked_run(policy, unsigned, built.archive, gate=gate,
                                  signer=lambda: job.signer or statement_signer_for(policy, "platform"),
                                  verifier=job.verifier, evidence=job.evidence_dir)
        signature = signed.predicate.signature
        said.append(f"keyid={signature.keyid[:16]} readback={signature.readback_verified} "
                    f"os-signing={signature.platform_signing_state}; {signed.statement.name} + "
                    f"{signed.provenance.name}")
    job.record("signature", signature)
    # Emitted: only now does this run's output replace the earlier one's.
    statement, archive = publish(Staged(job.out, job.staging, platform, policy.file.app.name, signed.statement,
                                        built.archive, aggregate_file_name(signed.file_suffix), signed.provenance))
    failures = failed_stages(signed.predicate)
    return ProduceResult(statement, archive, not failures, failures)


def _publish_unsigned(job: _Job, unsigned: UnsignedRun, built: BuildOutput) -> ProduceResult:
    """The run job's output: the unsigned run and the artifact, for the signing job; no key was read."""
    name = unsigned_run_file_name(job.platform)
    staged = job.staging / UNSIGNED_FOLDER / name
    write_atomic(staged, canonical_bytes(unsigned))
    job.record("unsigned-run", unsigned)
    statement, archive = publish(Staged(job.out, job.staging, job.platform, job.policy.file.app.name, staged,
                                        built.archive, aggregate_file_name(".dsse.json"), None,
                                        statement_folder=UNSIGNED_FOLDER))
    failures = failed_stages(unsigned, signature_passed=True)
    return ProduceResult(statement, archive, not failures, failures)
