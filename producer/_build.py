"""The build stage: the committed app source, PyInstaller, OS signing, one archive.

The app is built from ``git archive`` of the gated commit, never from the work
tree, so the artifact's bytes come from exactly the SHA the evidence names.
"""

from __future__ import annotations

import io
import json
import os
import platform as _platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    ArtifactRef,
    BuildRecord,
    Code,
    QualificationError,
    artifact_file_name,
    utc_now,
)
from desktop_qualify.qualify_archive import manifest_sha256, pack, tree_manifest
from desktop_qualify.qualify_files import file_sha256

from ._platform_signing import PlatformSigner, SigningOutcome
from ._process import excerpt, run_bounded

_MAX_SOURCE_ARCHIVE = 256 * 1024 * 1024

# What PyInstaller may see of the job's environment. The spec file and its hooks are code of the
# artifact under qualification: given ACTIONS_ID_TOKEN_REQUEST_* they could mint the job's OIDC token
# and sign as the producer; given GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN or QUALIFY_* signing secrets,
# they could push or sign. So nothing passes but what a build needs to find its tools and folders.
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


def executable_name(app: str, platform: str) -> str:
    return f"{app}.exe" if platform == "windows" else app


def export_committed_source(repo: Path, sha: str, app_source: Path, dest: Path) -> Path:
    """Extract the app folder as committed at ``sha`` into ``dest``; return the app folder there."""
    try:
        relative = app_source.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError as exc:
        raise QualificationError(Code.BUILD_FAILED, f"{app_source} is outside the repository {repo}") from exc
    done = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", sha, "--", relative],
        capture_output=True, timeout=300, check=False, shell=False,
    )
    if done.returncode != 0 or len(done.stdout) > _MAX_SOURCE_ARCHIVE:
        raise QualificationError(
            Code.BUILD_FAILED, f"git archive of {relative} at {sha[:12]} failed: {excerpt(done.stderr, 300)}",
            hint="the app source must be committed; the build never reads the work tree",
        )
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tf:
        tf.extractall(dest, filter="data")
    app_dir = dest / relative
    if not app_dir.is_dir():
        raise QualificationError(Code.BUILD_FAILED, f"{relative} is not in commit {sha[:12]}")
    return app_dir


def build_environment(job_env: Mapping[str, str], build_info: Path) -> dict[str, str]:
    """The allow-listed environment the PyInstaller run gets, plus where to find the build info."""
    env = {name: job_env[name] for name in BUILD_ENV_ALLOWED if name in job_env}
    env["SKILLHOST_BUILD_INFO"] = str(build_info)
    return env


def _tools() -> dict[str, str]:
    return {
        "python": _platform.python_version(),
        "pyinstaller": metadata.version("pyinstaller"),
        "os": f"{_platform.system()} {_platform.release()}"[:200],
        "machine": _platform.machine() or "unknown",
    }


def build(*, repo: Path, sha: str, ref: str, app_source: Path, spec: str, app_name: str, platform: str,
          arch: str, work: Path, artifacts: Path, signer: PlatformSigner, timeout: int,
          environ: Mapping[str, str] | None = None) -> BuildOutput:
    """Build, OS-sign and archive the app; ``environ`` (default: this process's) is filtered for the build."""
    started_at = utc_now()
    started = time.monotonic()
    source_root = work / "source"
    app_dir = export_committed_source(repo, sha, app_source, source_root)
    source_digest = manifest_sha256(tree_manifest(app_dir))
    build_info = work / "build_info.json"
    build_info.write_text(json.dumps({"build_sha": sha, "built_at": started_at, "source_ref": ref}),
                          encoding="utf-8")
    dist, pyi_work = work / "dist", work / "pyinstaller"
    env = build_environment(os.environ if environ is None else environ, build_info)
    result = run_bounded(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
         "--distpath", str(dist), "--workpath", str(pyi_work), str(app_dir / spec)],
        timeout=timeout, cwd=source_root, env=env, stdout_cap=16 * 1024, stderr_cap=32 * 1024,
    )
    bundle = dist / app_name
    exe = bundle / executable_name(app_name, platform)
    if result.timed_out or result.exit_code != 0 or not exe.is_file():
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        raise QualificationError(Code.BUILD_FAILED, f"PyInstaller {why}: {excerpt(result.stderr, 800)}")
    # OS code signing changes the bundle's bytes, so it happens before archiving; it runs here, in the
    # producer, after PyInstaller has exited, so the signing identity never reaches the build.
    signing = signer.sign(bundle, exe)
    artifacts.mkdir(parents=True, exist_ok=True)
    archive = artifacts / artifact_file_name(app_name, sha, platform, arch)
    partial = archive.with_name(f".{archive.name}.partial")
    pack(bundle, partial)
    partial.replace(archive)
    shutil.rmtree(pyi_work, ignore_errors=True)
    record = BuildRecord(
        artifact=ArtifactRef(name=archive.name, size=archive.stat().st_size, sha256=file_sha256(archive)),
        build_sha=sha,
        source_digest=source_digest,
        tools=_tools(),
        started_at=started_at,
        duration_ms=int((time.monotonic() - started) * 1000),
        passed=True,
    )
    return BuildOutput(record, archive, signing)
