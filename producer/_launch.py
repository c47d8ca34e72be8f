"""The launch probe and the journey: the installed app, run as installed.

Both run the installed executable (never the build tree, never the source),
re-hashing it right before it runs, with a minimal environment, a fresh
working folder, a timeout and bounded capture.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from evidence_schemas import (
    InstallRecord,
    JourneyRecord,
    JourneyStep,
    LaunchProbeRecord,
    ProbeReport,
    QualificationError,
    file_sha256,
)

from ._app_output import AppJourney, AppProbe, parse_app_output
from ._process import ProcessResult, excerpt, minimal_environment, run_bounded


def _run_installed(prefix: Path, install: InstallRecord, command: str, timeout: int) -> ProcessResult | str:
    if not install.passed:
        return "not run: the install stage failed"
    exe = prefix / install.executable
    # Re-read the bytes right before executing them: what runs is what was installed.
    if not exe.is_file() or file_sha256(exe) != install.executable_sha256:
        return "installed executable changed or vanished after install"
    with tempfile.TemporaryDirectory(prefix=f"qualify-{command}-") as home:
        return run_bounded([str(exe), command], timeout=timeout, cwd=Path(home),
                           env=minimal_environment(Path(home)))


def launch_probe(*, prefix: Path, install: InstallRecord, platform: str, gate_sha: str,
                 timeout: int) -> LaunchProbeRecord:
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
            )
        except QualificationError as exc:
            problem = exc.diagnostics()
    sha_ok = report is not None and report.build_sha == gate_sha
    exe_ok = report is not None and report.executable_sha256 == install.executable_sha256
    passed = (
        report is not None and sha_ok and exe_ok and report.platform == platform
        and report.worker_entry_resolvable and report.catalog_verified and report.isolation_available
    )
    return LaunchProbeRecord(
        exit_code=result.exit_code, timed_out=result.timed_out, duration_ms=result.duration_ms, report=report,
        build_sha_matches=sha_ok, executable_matches_install=exe_ok,
        stderr_excerpt=(problem + "\n" + excerpt(result.stderr, 1500)).strip()[:2000], passed=passed,
    )


def journey(*, prefix: Path, install: InstallRecord, gate_sha: str, required_steps: list[str],
            timeout: int) -> JourneyRecord:
    result = _run_installed(prefix, install, "journey", timeout)
    if isinstance(result, str):
        return JourneyRecord(exit_code=None, timed_out=False, duration_ms=0, app_build_sha=None, host_pid=None,
                             steps=[], required_steps=required_steps, missing_steps=required_steps,
                             failed_steps=[], stderr_excerpt=result, passed=False)
    app: AppJourney | None = None
    problem = ""
    if not result.timed_out:
        try:
            app = parse_app_output(AppJourney, result.stdout, what="journey output")
        except QualificationError as exc:
            problem = exc.diagnostics()
    steps = [JourneyStep(**step.model_dump()) for step in app.steps] if app else []
    seen = {step.id for step in steps}
    missing = [step for step in required_steps if step not in seen]
    failed = [step.id for step in steps if not step.passed]
    passed = (
        app is not None and result.exit_code == 0 and app.passed and not missing and not failed
        and app.build_sha == gate_sha
    )
    return JourneyRecord(
        exit_code=result.exit_code, timed_out=result.timed_out, duration_ms=result.duration_ms,
        app_build_sha=app.build_sha if app else None, host_pid=app.host_pid if app else None, steps=steps,
        required_steps=required_steps, missing_steps=missing, failed_steps=failed,
        stderr_excerpt=(problem + "\n" + excerpt(result.stderr, 1500)).strip()[:2000], passed=passed,
    )
