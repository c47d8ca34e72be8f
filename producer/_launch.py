"""The launch probe and the journey: the installed app, run as installed.

Both run the installed executable (never the build tree, never the source),
re-hashing it right before it runs, with a minimal environment, a fresh
working folder, a timeout and bounded capture.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    InstallRecord,
    IsolationLayer,
    JourneyRecord,
    JourneyStep,
    LaunchProbeRecord,
    ProbeReport,
    QualificationError,
)
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify import journey_facts, probe_facts
from pydantic import ValidationError

from ._app_output import AppError, AppJourney, AppProbe, parse_app_output
from ._process import ProcessResult, excerpt, minimal_environment, run_bounded


def _run_installed(prefix: Path, install: InstallRecord, command: str, timeout: int) -> ProcessResult | str:
    if not install.passed:
        return "not run: the install stage failed"
    exe = prefix / install.executable
    # Re-read the bytes right before executing them: what runs is what was installed, the executable and
    # every library and data file beside it (the whole tree against the install's manifest).
    if not exe.is_file() or file_sha256(exe) != install.executable_sha256:
        return "installed executable changed or vanished after install"
    try:
        unchanged = manifest_sha256(tree_manifest(prefix)) == install.manifest_sha256
    except (OSError, ValidationError):
        unchanged = False
    if not unchanged:
        return "the installed tree changed after install (its manifest differs from the install record's)"
    # The app's home lives in the job's work folder, beside the prefix: a killed job's rerun removes it.
    home = prefix.parent / f"home-{command}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    try:
        return run_bounded([str(exe), command], timeout=timeout, cwd=home, env=minimal_environment(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _refusal(stdout: bytes) -> str:
    """The app's own refusal (its ``CC_SKILL_*`` code and message), for the record's excerpt; else ''."""
    try:
        said = parse_app_output(AppError, stdout, what="probe refusal")
    except QualificationError:
        return ""
    return f"the app refused: {said.code}: {said.message}"


def launch_probe(*, prefix: Path, install: InstallRecord, platform: str, gate_sha: str, timeout: int,
                 required_layers: Sequence[str]) -> LaunchProbeRecord:
    result = _run_installed(prefix, install, "probe", timeout)
    if isinstance(result, str):
        return LaunchProbeRecord(exit_code=None, timed_out=False, duration_ms=0, report=None,
                                 build_sha_matches=False, executable_matches_install=False,
                                 stderr_excerpt=result, passed=False)
    report: ProbeReport | None = None
    problem = ""
    if result.exit_code == 0 and not result.timed_out:
        try:
            app = parse_app_output(AppProbe, result.stdout, what="probe output")
            report = ProbeReport(
                app_version=app.app_version, build_sha=app.build_sha, platform=app.platform,
                executable_sha256=app.executable_sha256, worker_entry_resolvable=app.worker_entry_resolvable,
                catalog_verified=app.catalog_verified, isolation_available=app.isolation_available,
                isolation_layers=[IsolationLayer(**entry.model_dump()) for entry in app.isolation_layers],
            )
        except QualificationError as exc:
            problem = exc.diagnostics()
    elif not result.timed_out:
        problem = _refusal(result.stdout)
    facts = probe_facts(report=report, exit_code=result.exit_code, timed_out=result.timed_out, platform=platform,
                        sha=gate_sha, installed_executable_sha256=install.executable_sha256,
                        required_layers=required_layers)
    problem = "\n".join([problem, *facts.layer_problems]).strip()
    return LaunchProbeRecord(
        exit_code=result.exit_code, timed_out=result.timed_out, duration_ms=result.duration_ms, report=report,
        build_sha_matches=facts.build_sha_matches, executable_matches_install=facts.executable_matches_install,
        stderr_excerpt=(problem + "\n" + excerpt(result.stderr, 1500)).strip()[:2000], passed=facts.passed,
    )


def journey(*, prefix: Path, install: InstallRecord, gate_sha: str, expected: Mapping[str, StepExpectation],
            timeout: int, required_layers: Sequence[str], probe: LaunchProbeRecord) -> JourneyRecord:
    """The installed app's journey, judged against the policy's step table (never the app's own expectations)."""
    result = _run_installed(prefix, install, "journey", timeout)
    if isinstance(result, str):
        return JourneyRecord(exit_code=None, timed_out=False, duration_ms=0, app_build_sha=None, host_pid=None,
                             steps=[], required_steps=list(expected), missing_steps=list(expected),
                             failed_steps=[], isolation_layers=[], stderr_excerpt=result, passed=False)
    app: AppJourney | None = None
    problem = ""
    if not result.timed_out:
        try:
            app = parse_app_output(AppJourney, result.stdout, what="journey output")
        except QualificationError as exc:
            problem = exc.diagnostics()
    steps = [JourneyStep(**step.model_dump()) for step in app.steps] if app else []
    layers = [IsolationLayer(**entry.model_dump()) for entry in app.isolation_layers] if app else []
    facts = journey_facts(steps=steps, expected=expected, exit_code=result.exit_code, timed_out=result.timed_out,
                          app_build_sha=app.build_sha if app else None, sha=gate_sha, layers=layers,
                          required_layers=required_layers,
                          probe_layers=probe.report.isolation_layers if probe.report else None)
    return JourneyRecord(
        exit_code=result.exit_code, timed_out=result.timed_out, duration_ms=result.duration_ms,
        app_build_sha=app.build_sha if app else None, host_pid=app.host_pid if app else None, steps=steps,
        required_steps=list(facts.required), missing_steps=list(facts.missing), failed_steps=list(facts.failed),
        isolation_layers=layers, stderr_excerpt=(problem + "\n" + excerpt(result.stderr, 1500)).strip()[:2000],
        passed=facts.passed,
    )
