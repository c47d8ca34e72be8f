"""One producer job: gate -> build -> sign -> install -> launch probe -> journey -> emit.

A gate or build failure produces no statement (there is nothing to vouch for).
A later stage's failure is recorded, signed and emitted, so that the evidence
of a failed qualification survives; the job still exits 1.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from evidence_schemas import Code, Platform, PlatformPredicate, QualificationError, RunIdentity, write_atomic
from qualify_policy import Policy, host_arch, host_platform
from qualify_trust import Keyring, keyid_of, load_private_key

from ._build import build, executable_name
from ._clock import utc_now
from ._emit import emit
from ._gate import LocalGitGate
from ._install import install
from ._launch import journey, launch_probe
from ._platform_signing import signer_for
from ._progress import Progress
from ._sign import sign_artifact

_RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class ProduceResult:
    statement: Path
    archive: Path
    passed: bool
    failures: list[str]


def new_local_run_id() -> str:
    return f"local-{utc_now()[:19].replace(':', '').replace('-', '')}-{secrets.token_hex(4)}"


def _write_record(records: Path, name: str, record: BaseModel) -> None:
    # Unsigned copies for people; the evidence is the signed statement.
    write_atomic(records / f"{name}.json", record.model_dump_json(indent=2).encode() + b"\n")


def produce(policy: Policy, platform: Platform, out: Path, *, run_id: str | None) -> ProduceResult:
    if platform != host_platform():
        raise QualificationError(Code.USAGE, f"a producer job qualifies its own platform; this host is "
                                             f"{host_platform()}, not {platform}")
    if platform not in policy.required_platforms:
        raise QualificationError(Code.USAGE, f"policy {policy.file.name!r} does not require platform {platform!r}")
    trust = policy.ed25519
    keyring = Keyring.load(policy.resolve(trust.keyring))
    key = load_private_key(policy.resolve(trust.platform_key))
    trusted = keyring.lookup(keyid_of(key.public_key()))
    if trusted is None or "platform" not in trusted.roles:
        raise QualificationError(Code.KEY_INVALID, "the platform signing key is not in the policy's keyring")
    run_id = run_id or os.environ.get("QUALIFY_RUN_ID") or new_local_run_id()
    if not _RUN_ID.match(run_id):
        raise QualificationError(Code.USAGE, f"run id {run_id[:80]!r} must match {_RUN_ID.pattern}")

    out = out.resolve()
    progress = Progress(f"produce {platform}")
    app = policy.file.artifact
    limits = policy.file.limits
    evidence_dir, artifacts_dir = out / "evidence", out / "artifacts"
    records, work = out / "records" / platform, out / "work" / platform
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    arch = host_arch()

    gate = LocalGitGate(policy.resolve(app.app_source), require_clean=policy.file.source.require_clean_worktree,
                        repository=policy.file.producer.repository)
    with progress.stage("source gate") as said:
        gate_record = gate.observe()
        said.append(f"sha={gate_record.sha[:12]} ref={gate_record.ref} clean={gate_record.worktree_clean}")
    _write_record(records, "source-gate", gate_record)
    run = RunIdentity(mode="local", repository=policy.file.producer.repository,
                      workflow=policy.file.producer.workflow, ref=gate_record.ref, sha=gate_record.sha,
                      run_id=run_id, attempt=1, trigger="local", runner_environment="local")

    with progress.stage("build") as said:
        built = build(repo=gate.toplevel, sha=gate_record.sha, ref=gate_record.ref,
                      app_source=policy.resolve(app.app_source), spec=app.spec, app_name=app.name,
                      platform=platform, arch=arch, work=work, artifacts=artifacts_dir,
                      signer=signer_for(platform, identity=None, entitlements=None, timestamp_url=None),
                      timeout=limits.build_timeout_seconds)
        said.append(f"{built.record.artifact.name} {built.record.artifact.size} bytes "
                    f"sha256={built.record.artifact.sha256[:16]}")
    _write_record(records, "build", built.record)

    with progress.stage("sign") as said:
        accepted = list(getattr(policy.file.signing, platform))
        signature = sign_artifact(archive=built.archive, build=built.record, signing=built.signing, key=key,
                                  keyring=keyring, accepted_states=accepted)
        said.append(f"keyid={signature.keyid[:16]} readback={signature.readback_verified} "
                    f"os-signing={signature.platform_signing_state}")
    _write_record(records, "signature", signature)

    prefix = work / "install"
    with progress.stage("install") as said:
        installed = install(archive=built.archive, build=built.record, prefix=prefix,
                            executable=f"{app.name}/{executable_name(app.name, platform)}")
        said.append(f"{installed.file_count} files passed={installed.passed}")
    _write_record(records, "install", installed)

    with progress.stage("launch probe") as said:
        probe = launch_probe(prefix=prefix, install=installed, platform=platform, gate_sha=gate_record.sha,
                             timeout=limits.probe_timeout_seconds)
        said.append(f"exit={probe.exit_code} passed={probe.passed}")
    _write_record(records, "launch-probe", probe)

    required = list(policy.file.journey.required_steps)
    with progress.stage("journey") as said:
        walked = journey(prefix=prefix, install=installed,
                         gate_sha=gate_record.sha, required_steps=required,
                         timeout=limits.journey_timeout_seconds)
        said.append(f"{sum(s.passed for s in walked.steps)}/{len(walked.steps)} steps passed, "
                    f"missing={len(walked.missing_steps)} passed={walked.passed}")
    _write_record(records, "journey", walked)

    predicate = PlatformPredicate(platform=platform, arch=arch, run=run, produced_at=utc_now(),
                                  source_gate=gate_record, build=built.record, signature=signature,
                                  install=installed, launch_probe=probe, journey=walked)
    with progress.stage("emit") as said:
        statement = emit(predicate=predicate, archive=built.archive, gate=gate, key=key,
                         evidence_dir=evidence_dir, max_bytes=limits.max_statement_bytes)
        said.append(str(statement))
    failures = [name for name, ok in (("signature", signature.passed), ("install", installed.passed),
                                      ("launch probe", probe.passed), ("journey", walked.passed)) if not ok]
    return ProduceResult(statement, built.archive, not failures, failures)
