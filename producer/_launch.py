"""The launch probe and the journey: the installed app, run as installed (docs/app-contract.md).

Both run the policy's argv against the installed executable (never the build
tree), re-hashing the executable and the whole installed tree right before the
command starts, with a minimal environment, the policy's display, a timeout and
bounded capture. The command is the app's own subcommand (argv[0] is
``{executable}``) or a runner from a fresh export of the committed source that
drives the installed app from outside. Either writes its record to the file the
producer names; stdout and stderr are logs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from desktop_qualify.evidence_schemas import (
    AppJourneyRecord,
    AppProbeRecord,
    AppStateRecord,
    Code,
    DisplayKind,
    InstallRecord,
    JourneyRecord,
    JourneyStep,
    LaunchProbeRecord,
    Platform,
    ProbeReport,
    QualificationError,
    StateStep,
)
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import StepExpectation
from desktop_qualify.qualify_verify import journey_facts, probe_facts
from pydantic import ValidationError

from ._app_output import load_app_record
from ._build import expand
from ._toolchains import Toolchains
from .confinement import AppStage, StageRunner, producer_python
from .processes import ProcessResult, display_env, excerpt, minimal_environment

Stage = Literal["probe", "journey", "state"]
_RECORD_NAME = "record.json"


@dataclass(frozen=True)
class RunPlan:
    """The policy's command for one stage and what it runs under."""

    argv: Sequence[str]
    display: DisplayKind
    timeout: int
    # Exports the committed app folder into the given (non-existent) folder and returns it: a runner's source.
    export_source: Callable[[Path], Path]
    # Runs the command confined, and the app stage it is recorded as (the update journey's runs are "update").
    runner: StageRunner
    stage: AppStage
    # The tools the command names by placeholder, resolved once for the job (``_toolchains``).
    toolchains: Toolchains = field(default_factory=Toolchains)

    @property
    def is_runner(self) -> bool:
        return self.argv[0] != "{executable}"

    @property
    def needs_source(self) -> bool:
        """A runner runs in the exported source; the app's own subcommand only when its argv names {source}."""
        return self.is_runner or any("{source}" in item for item in self.argv)


@dataclass(frozen=True)
class _Ran:
    result: ProcessResult
    record: Path


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _installed_problem(prefix: Path, install: InstallRecord) -> str | None:
    if not install.passed:
        return "not run: the install stage failed"
    exe = prefix / install.executable
    # Re-read the bytes right before executing them: what runs is what was installed, the executable and
    # every library and data file beside it (the whole tree against the install's manifest).
    if not exe.is_file() or exe.is_symlink() or file_sha256(exe) != install.executable_sha256:
        return "installed executable changed or vanished after install"
    try:
        unchanged = manifest_sha256(tree_manifest(prefix)) == install.manifest_sha256
    except (OSError, ValidationError):
        unchanged = False
    if not unchanged:
        return "the installed tree changed after install (its manifest differs from the install record's)"
    return None


def _run_installed(prefix: Path, install: InstallRecord, stage: Stage, plan: RunPlan,
                   kept_home: Path | None = None) -> _Ran | str:
    """Run the stage's command on the installed app; ``kept_home`` is a user home that outlives the run
    (the update journey's, holding the user state), else the run gets a fresh one that is removed after."""
    work = prefix.parent
    # The app's home, the record's folder and a runner's source live in the job's work folder, beside the
    # prefix: a killed job's rerun removes them.
    home, records, source = kept_home or work / f"home-{stage}", work / f"record-{stage}", work / f"source-{stage}"
    try:
        cwd = exported = home
        if kept_home is None:
            _fresh(home)
        _fresh(records)
        if plan.needs_source:
            shutil.rmtree(source, ignore_errors=True)
            exported = plan.export_source(source)
            cwd = exported if plan.is_runner else home
        # The last look before the command starts: nothing may change the installed tree after this.
        problem = _installed_problem(prefix, install)
        if problem is not None:
            return problem
        exe, record = prefix / install.executable, records / _RECORD_NAME
        argv = expand(plan.argv, {"python": producer_python(), **plan.toolchains.values(), "executable": str(exe),
                                  "record": str(record), "source": str(exported)})
        writable = [home, records] + ([source] if plan.needs_source else [])
        with display_env(plan.display) as shown:
            env = {**minimal_environment(home), **shown, "QUALIFY_RECORD": str(record),
                   "QUALIFY_EXECUTABLE": str(exe)}
            # The app sees its installed tree read-only, its own home, record and source folders, the toolchain,
            # and the display's socket: nothing of the producer (docs/design.md §3.11).
            sandbox = plan.runner.sandbox(plan.stage, home=home, tmp=home, writable=writable, readable=[prefix],
                                          toolchain=plan.runner.toolchain(extra=plan.toolchains.folders()),
                                          sockets=display_sockets(shown),
                                          cwd=cwd)
            result = plan.runner.run(argv, sandbox, timeout=plan.timeout, env=env)
    except QualificationError as exc:
        if exc.code == Code.CONFINEMENT_UNAVAILABLE:
            raise
        return f"not run: {exc.message}"[:2000]
    finally:
        if kept_home is None:
            shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(source, ignore_errors=True)
    # The first look after it: every process of the stage has ended, and what it ran must be unchanged.
    problem = _installed_problem(prefix, install)
    if problem is not None:
        raise QualificationError(Code.APP_STAGE_TAMPERED, f"the {plan.stage} stage changed what it ran: {problem}")
    return _Ran(result, record)


def display_sockets(shown: dict[str, str]) -> list[Path]:
    """The X server's local socket a display names (``:N`` -> ``/tmp/.X11-unix/XN``), to bind into the sandbox.

    A confined stage has a network namespace of its own, where the server's abstract socket does not exist:
    the client falls back to this path.
    """
    display = shown.get("DISPLAY", "")
    number = display[1:].split(".", 1)[0] if display.startswith(":") else ""
    socket = Path("/tmp/.X11-unix") / f"X{number}"  # noqa: S108 - the X server's fixed socket folder
    return [socket] if number.isdigit() and socket.exists() else []


def _logs(result: ProcessResult) -> str:
    """Bounded tails of the command's own output, for the record's excerpt (logs are never evidence)."""
    parts = [excerpt(result.stderr, 1200).strip(), excerpt(result.stdout, 600).strip()]
    return "\n".join(part for part in parts if part)


def _excerpt(*parts: str) -> str:
    return "\n".join(part for part in parts if part).strip()[:2000]


def launch_probe(*, prefix: Path, install: InstallRecord, platform: Platform, gate_sha: str, plan: RunPlan,
                 required_checks: Sequence[str], required_layers: Sequence[str] | None,
                 kept_home: Path | None = None) -> LaunchProbeRecord:
    ran = _run_installed(prefix, install, "probe", plan, kept_home)
    if isinstance(ran, str):
        return LaunchProbeRecord(command=list(plan.argv), display=plan.display, exit_code=None, timed_out=False,
                                 duration_ms=0, report=None, build_sha_matches=False,
                                 executable_matches_install=False, stderr_excerpt=ran, passed=False)
    result = ran.result
    report: ProbeReport | None = None
    problem = ""
    if not result.timed_out:
        try:
            app = load_app_record(AppProbeRecord, ran.record, what="probe record")
            report = ProbeReport(app_version=app.app_version, build_sha=app.build_sha, platform=app.platform,
                                 executable_sha256=app.executable_sha256, checks=list(app.checks),
                                 isolation_layers=list(app.isolation_layers))
        except QualificationError as exc:
            problem = exc.diagnostics()
    facts = probe_facts(report=report, exit_code=result.exit_code, timed_out=result.timed_out, platform=platform,
                        sha=gate_sha, installed_executable_sha256=install.executable_sha256,
                        required_checks=required_checks, required_layers=required_layers)
    return LaunchProbeRecord(
        command=list(plan.argv), display=plan.display, exit_code=result.exit_code, timed_out=result.timed_out,
        duration_ms=result.duration_ms, report=report, build_sha_matches=facts.build_sha_matches,
        executable_matches_install=facts.executable_matches_install,
        stderr_excerpt=_excerpt(problem, *facts.problems, _logs(result)), passed=facts.passed,
    )


def journey(*, prefix: Path, install: InstallRecord, platform: Platform, gate_sha: str, plan: RunPlan,
            expected: Mapping[str, StepExpectation], code_pattern: str, required_layers: Sequence[str] | None,
            refuses_with: Mapping[str, Sequence[str]] | None,
            probe: LaunchProbeRecord) -> JourneyRecord:
    """The installed app's journey, judged against the policy's step table (the app never grades itself)."""
    ran = _run_installed(prefix, install, "journey", plan)
    if isinstance(ran, str):
        return JourneyRecord(command=list(plan.argv), display=plan.display, exit_code=None, timed_out=False,
                             duration_ms=0, app_build_sha=None, steps=[], required_steps=list(expected),
                             missing_steps=list(expected), failed_steps=[], isolation_layers=[],
                             stderr_excerpt=ran, passed=False)
    result = ran.result
    app: AppJourneyRecord | None = None
    problem = ""
    if not result.timed_out:
        try:
            app = load_app_record(AppJourneyRecord, ran.record, what="journey record")
            if app.platform != platform:
                problem, app = f"journey record: the record is for {app.platform}, the job for {platform}", None
        except QualificationError as exc:
            problem = exc.diagnostics()
    observed = list(app.steps) if app else []
    layers = list(app.isolation_layers) if app else []
    facts = journey_facts(steps=observed, expected=expected, code_pattern=code_pattern, exit_code=result.exit_code,
                          timed_out=result.timed_out, app_build_sha=app.build_sha if app else None, sha=gate_sha,
                          platform=platform, layers=layers, required_layers=required_layers, refuses_with=refuses_with,
                          probe_layers=probe.report.isolation_layers if probe.report else None)
    steps = [JourneyStep(id=s.id, observed=s.observed, code=s.code, errno=s.errno, layer=s.layer, detail=s.detail,
                         passed=s.id not in facts.failed) for s in observed]
    return JourneyRecord(
        command=list(plan.argv), display=plan.display, exit_code=result.exit_code, timed_out=result.timed_out,
        duration_ms=result.duration_ms, app_build_sha=app.build_sha if app else None, steps=steps,
        required_steps=list(facts.required), missing_steps=list(facts.missing), failed_steps=list(facts.failed),
        isolation_layers=layers, stderr_excerpt=_excerpt(problem, _logs(result)), passed=facts.passed,
    )


def state_verb(*, prefix: Path, install: InstallRecord, verb: Literal["write", "check"], plan: RunPlan,
               home: Path) -> StateStep:
    """One state verb of the installed app against the kept ``home``; its record read as untrusted input.

    ``passed`` is provisional here: only the whole update journey can judge a step (``update_facts``).
    """
    ran = _run_installed(prefix, install, "state", plan, home)
    if isinstance(ran, str):
        return StateStep(verb=verb, command=list(plan.argv), exit_code=None, timed_out=False, report=None,
                         stderr_excerpt=ran, passed=False)
    result, report, problem = ran.result, None, ""
    if not result.timed_out:
        try:
            report = load_app_record(AppStateRecord, ran.record, what=f"state {verb} record")
        except QualificationError as exc:
            problem = exc.diagnostics()
    return StateStep(verb=verb, command=list(plan.argv), exit_code=result.exit_code, timed_out=result.timed_out,
                     report=report, stderr_excerpt=_excerpt(problem, _logs(result)), passed=False)
