"""The build stage: the committed app source, the team's own build command, OS signing, one artifact.

The app is built from ``git archive`` of the gated commit, never from the work
tree, so the artifact's bytes come from exactly the SHA the evidence names. The
build is the policy's argv (no shell), run in the exported app folder with an
allow-listed environment; its output is the one file the platform's glob
matches under an empty folder of the producer's (docs/app-contract.md).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform as _platform
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    BuildInfo,
    BuildRecord,
    Code,
    InstallerKind,
    Platform,
    QualificationError,
    artifact_file_name,
    installer_suffix,
    utc_now,
)
from desktop_qualify.qualify_archive import app_relative_path, commit_epoch, export_committed_tree, tree_sha256
from desktop_qualify.qualify_files import file_sha256, write_atomic

from ._build_run import BuildRun
from ._reproduce import SecondBuild
from .confinement import AppStage, StageRunner, StageSandbox, producer_python
from .os_signing import PlatformSigner, SigningOutcome, sign_output
from .processes import excerpt

_TOOL_TIMEOUT = 30
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")

# What the build may see of the job's environment. The build command is code of the artifact under
# qualification: given ACTIONS_ID_TOKEN_REQUEST_* it could mint the job's OIDC token and sign as the
# producer; given GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN or QUALIFY_* signing secrets, it could push or sign.
# So nothing passes but what a build needs to find its tools and folders, and the names the policy adds
# (which its loader refuses when they look like secrets).
BUILD_ENV_ALLOWED = (
    "PATH", "HOME", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "TMPDIR", "TEMP", "TMP",
    "SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "LANG", "LC_ALL", "LC_CTYPE", "VIRTUAL_ENV",
    "PYTHONHASHSEED", "SOURCE_DATE_EPOCH",
)


@dataclass(frozen=True)
class BuildOutput:
    record: BuildRecord
    archive: Path
    signing: SigningOutcome
    # Where a reproducibility check's two builds differ, for people (None when they did not, or no check ran).
    difference: str | None = None


@dataclass(frozen=True)
class BuildPlan:
    """What the policy says about this platform's build (the producer's only input besides the source)."""

    argv: Sequence[str]
    env_names: Sequence[str]
    tools: Mapping[str, Sequence[str]]
    output_glob: str
    kind: InstallerKind
    executable: str


def expand(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The argv with each ``{name}`` replaced; the policy's loader already refused unknown names."""
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise QualificationError(Code.POLICY_INVALID, f"placeholder {{{name}}} has no value in this command")
        return values[name]
    return [_PLACEHOLDER.sub(one, item) for item in argv]


def export_committed_source(repo: Path, sha: str, app_source: Path, dest: Path) -> Path:
    """Extract the app folder as committed at ``sha`` into ``dest``; return the app folder there."""
    try:
        relative = app_relative_path(repo, app_source)
    except QualificationError as exc:
        raise QualificationError(Code.BUILD_FAILED, exc.message) from exc
    return export_committed_tree(repo, sha, relative, dest, code=Code.BUILD_FAILED)


def build_environment(job_env: Mapping[str, str], build_info: Path, extra: Sequence[str] = (),
                      temp: Path | None = None) -> dict[str, str]:
    """The allow-listed environment the build gets, the policy's extra names, and where the build info is.

    ``temp``: a temporary folder of the build's own, inside the job's work folder, so that what a killed
    build leaves there goes with the work folder on the rerun instead of piling up in the system's.
    """
    env = {name: job_env[name] for name in (*BUILD_ENV_ALLOWED, *extra) if name in job_env}
    if temp is not None:
        env.update(TMPDIR=str(temp), TEMP=str(temp), TMP=str(temp))
    env["QUALIFY_BUILD_INFO"] = str(build_info)
    return env


def tool_versions(tools: Mapping[str, Sequence[str]], *, values: Mapping[str, str], run: BuildRun,
                  runner: StageRunner) -> dict[str, str]:
    """The versions of the tools the build ran: the producer's own facts plus each policy command's answer.

    Each version command is app-controlled (the policy's argv, often the app's own tool): it runs confined
    as the build did, in the build's folders (the ``build-tools`` stage).
    """
    found = {
        "python": _platform.python_version(),
        "os": f"{_platform.system()} {_platform.release()}"[:200],
        "machine": _platform.machine() or "unknown",
    }
    for name, argv in tools.items():
        result = runner.run(expand(argv, values), build_sandbox(runner, "build-tools", run.root, env=run.env,
                                                               app_dir=run.app_dir, build_info=run.build_info),
                            timeout=_TOOL_TIMEOUT, env=run.env, stdout_cap=4096, stderr_cap=4096)
        lines = result.stdout.decode("utf-8", errors="replace").strip().splitlines()
        if result.timed_out or result.exit_code != 0 or not lines or not lines[0].strip():
            why = "timed out" if result.timed_out else f"exit {result.exit_code}, {len(lines)} line(s)"
            raise QualificationError(Code.BUILD_FAILED, f"the version command of tool {name!r} failed ({why}): "
                                                        f"{excerpt(result.stderr, 300)}")
        found[name] = lines[0].strip()[:200]
    return found


def find_output(out: Path, glob: str, kind: InstallerKind) -> tuple[Path, str]:
    """The one regular file ``glob`` matches under ``out``, and its installer kind's ending."""
    matches = sorted(out.glob(glob))
    if len(matches) != 1:
        listed = ", ".join(p.name for p in matches[:5]) or "nothing"
        raise QualificationError(Code.BUILD_FAILED, f"the build output glob {glob!r} must match exactly one file "
                                                    f"under the output folder; it matched {listed}")
    output = matches[0]
    if output.is_symlink() or not output.is_file():
        raise QualificationError(Code.BUILD_FAILED, f"the build output {output.name} is not a regular file")
    suffix = installer_suffix(kind, output.name)
    if suffix is None:
        raise QualificationError(Code.BUILD_FAILED, f"the build output {output.name} has no ending an installer of "
                                                    f"kind {kind!r} takes")
    return output, suffix


def _copy_into(source: Path, archive: Path) -> None:
    """Copy the build's output to the artifact's name, atomically (a partial file never passes for one)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.partial")
    try:
        shutil.copyfile(source, partial, follow_symlinks=False)
        partial.replace(archive)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise QualificationError(Code.ENVIRONMENT, f"cannot write the artifact {archive.name} "
                                                   f"({exc.strerror or exc})") from exc


def _build_env(environ: Mapping[str, str], build_info: Path, extra: Sequence[str], root: Path,
               epoch: int) -> dict[str, str]:
    env = build_environment(environ, build_info, extra, root / "build-tmp")
    # A HOME of the build's own, never the job's: the build is app code, and the job's HOME holds the runner's
    # credentials and caches another build could have poisoned.
    home = str(root / "home")
    env["HOME"] = home
    if sys.platform == "win32":
        env.update(USERPROFILE=home, APPDATA=str(root / "home" / "AppData" / "Roaming"),
                   LOCALAPPDATA=str(root / "home" / "AppData" / "Local"))
    # reproducible-builds.org's SOURCE_DATE_EPOCH: the commit's time, so every build of it embeds the same time.
    env["SOURCE_DATE_EPOCH"] = str(epoch)
    return env


def build_sandbox(runner: StageRunner, stage: AppStage, root: Path, *, env: Mapping[str, str], app_dir: Path,
                  build_info: Path) -> StageSandbox:
    """What the build sees: its exported source, output, HOME and TMPDIR writable; the build information and
    the toolchain read-only; nothing else (docs/design.md §3.11)."""
    home, temp = Path(env.get("HOME", str(root / "home"))), Path(env.get("TMPDIR", str(root / "build-tmp")))
    writable = dict.fromkeys((root / "source", root / "out", temp, home))
    return runner.sandbox(stage, home=home, tmp=temp, writable=list(writable), readable=[build_info],
                          toolchain=runner.toolchain(path_variable=env.get("PATH")), cwd=app_dir)


def run_build(*, repo: Path, sha: str, app_source: Path, plan: BuildPlan, root: Path, build_info: Path,
              environ: Mapping[str, str], timeout: int, epoch: int, runner: StageRunner,
              stage: AppStage = "build", overrides: Mapping[str, str] | None = None, umask: int | None = None,
              cancel: threading.Event | None = None) -> BuildRun:
    """Export the commit under ``root`` and run the build there, confined (source/, out/, build-tmp/, home/).

    ``overrides``, ``umask`` and ``cancel``: the varied conditions of a reproducibility check's second build
    (``stage`` "build-reproduction"), and the switch that ends it when the first fails.
    """
    app_dir = export_committed_source(repo, sha, app_source, root / "source")
    env = _build_env(environ, build_info, plan.env_names, root, epoch)
    env.update(overrides or {})
    out = root / "out"
    for folder in (out, Path(env["TMPDIR"]), Path(env["HOME"])):
        folder.mkdir(parents=True, exist_ok=folder != out)
    values = {"python": producer_python(), "out": str(out), "source": str(app_dir)}
    result = runner.run(expand(plan.argv, values), build_sandbox(runner, stage, root, env=env, app_dir=app_dir,
                                                                     build_info=build_info),
                        timeout=timeout, env=env, stdout_cap=16 * 1024, stderr_cap=32 * 1024, umask=umask,
                        cancel=cancel)
    if result.cancelled:
        raise QualificationError(Code.BUILD_FAILED, "the build command was stopped: the other build failed")
    if result.timed_out or result.exit_code != 0:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        raise QualificationError(Code.BUILD_FAILED, f"the build command {why}: {excerpt(result.stderr, 800)}")
    output, suffix = find_output(out, plan.output_glob, plan.kind)
    return BuildRun(app_dir, output, suffix, env, values, root, build_info)


def build(*, repo: Path, sha: str, ref: str, app_source: Path, plan: BuildPlan, app_name: str,
          platform: Platform, arch: str, work: Path, artifacts: Path, signer: PlatformSigner, timeout: int,
          runner: StageRunner, environ: Mapping[str, str] | None = None, reproduce: bool = False) -> BuildOutput:
    """Build, OS-sign and name the artifact; ``environ`` (default: this process's) is filtered for the build.

    ``reproduce``: build the commit a second time under varied conditions (``_reproduce``) and record both
    outputs' digests; the verifier decides from them whether the build reproduced.
    """
    started_at = utc_now()
    started = time.monotonic()
    job_env = os.environ if environ is None else environ
    epoch = commit_epoch(repo, sha, code=Code.BUILD_FAILED)
    build_info = work / "build_info.json"
    # built_at is the commit's time, not the clock's: the app embeds it, and a rebuild must embed the same bytes.
    info = BuildInfo(build_sha=sha, built_at=epoch_timestamp(epoch), source_ref=ref, platform=platform)
    write_atomic(build_info, info.model_dump_json().encode("utf-8") + b"\n")
    second = None
    if reproduce:
        # The second build runs beside the first (a machine's second core), from the first's environment varied.
        second = SecondBuild(
            first_env=_build_env(job_env, build_info, plan.env_names, work, epoch), work=work,
            run=lambda root, overrides, umask, cancel: run_build(
                repo=repo, sha=sha, app_source=app_source, plan=plan, root=root, build_info=build_info,
                environ=job_env, timeout=timeout, epoch=epoch, runner=runner, stage="build-reproduction",
                overrides=overrides, umask=umask, cancel=cancel))
    try:
        first = run_build(repo=repo, sha=sha, app_source=app_source, plan=plan, root=work, build_info=build_info,
                          environ=job_env, timeout=timeout, epoch=epoch, runner=runner)
        source_digest = tree_sha256(first.app_dir)
        tools = tool_versions(plan.tools, values=first.values, run=first, runner=runner)
        # Both builds have ended, their trees killed, before anything is signed or run.
        reproduction, difference = (None, None) if second is None else second.finish(
            first=first.output, first_started_at=started_at)
    except BaseException:
        if second is not None:
            second.abandon()
        raise
    # OS code signing runs here, in the producer, after the build has exited: the identity never reaches it.
    signed, signing = sign_output(plan.kind, first.output, signer, plan.executable, work / "signing")
    archive = artifacts / artifact_file_name(app_name, sha, platform, arch, first.suffix)
    _copy_into(signed, archive)
    shutil.rmtree(work / "signing", ignore_errors=True)
    record = BuildRecord(
        artifact=ArtifactRef(name=archive.name, size=archive.stat().st_size, sha256=file_sha256(archive)),
        build_sha=sha,
        source_digest=source_digest,
        command=list(plan.argv),
        tools=tools,
        started_at=started_at,
        duration_ms=int((time.monotonic() - started) * 1000),
        passed=True,
        reproduction=reproduction,
    )
    return BuildOutput(record, archive, signing, difference)


def epoch_timestamp(epoch: int) -> str:
    """Seconds since the epoch in the evidence's timestamp format."""
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
