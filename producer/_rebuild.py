"""The producer's build, run again for ``qualify rebuild``: the qualified commit's output on this machine.

It is the same export (``git archive`` of the commit), the same build
information (the commit's time, the gate's ref, this platform), the same
``SOURCE_DATE_EPOCH`` and the same allow-listed environment as the producer's
first build, so a reproducible build gives the qualified bytes here too. The
output is the build's own file, before any operating-system code signing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from desktop_qualify.evidence_schemas import BuildInfo, Code, Platform, QualificationError
from desktop_qualify.qualify_archive import commit_epoch, tree_sha256
from desktop_qualify.qualify_files import file_sha256
from desktop_qualify.qualify_policy import Policy, host_platform

from ._build import BuildPlan, epoch_timestamp, run_build, tool_versions
from ._pipeline import stage_runner
from .source import repository_root


@dataclass(frozen=True)
class Rebuilt:
    """The output of a rebuild: its file, SHA-256 and size, and the digest of the source it was built from."""

    output: Path
    sha256: str
    size: int
    source_digest: str
    tools: dict[str, str]


def rebuild(policy: Policy, *, app_source: Path, sha: str, ref: str, platform: Platform, work: Path,
            protected: Sequence[Path] = (), observer: Callable[[str], None] | None = None) -> Rebuilt:
    """Build ``sha`` of the app folder ``app_source`` (in a checkout) as the policy's build command does.

    The output stays under ``work``. The build is app code and runs confined as the producer's does; beyond
    what the producer protects, ``protected`` names what it must not see either (the folder of the
    rebuilder's own key, which the caller reads only once this returns). ``observer`` is told each command the
    build starts (``Progress.running``: the live line or the heartbeat says what is running).

    Raises ``QE_ENVIRONMENT`` (exit 2) when the build cannot run here: another platform's build, a tool the
    policy names that does not answer, a build that fails on this machine.
    """
    if platform != host_platform():
        raise QualificationError(Code.ENVIRONMENT, f"the qualified build is {platform}'s; this machine is "
                                                   f"{host_platform()}: rebuild it on {platform}")
    app = policy.file.app
    glob, target = app.build.outputs.get(platform), app.install.get(platform)
    if glob is None or target is None:
        raise QualificationError(Code.POLICY_INVALID, f"the policy names no build output or installer for {platform}")
    plan = BuildPlan(argv=app.build.argv, env_names=app.build.env, tools=app.build.tools, output_glob=glob,
                     kind=target.kind, executable=target.executable)
    try:
        repo = repository_root(app_source)
    except QualificationError as exc:
        raise QualificationError(Code.ENVIRONMENT, exc.message, hint="give --root: a checkout holding the "
                                                                     "qualified commit") from exc
    epoch = commit_epoch(repo, sha)
    info = work / "build_info.json"
    info.write_text(BuildInfo(build_sha=sha, built_at=epoch_timestamp(epoch), source_ref=ref,
                              platform=platform).model_dump_json() + "\n", encoding="utf-8")
    runner = stage_runner(policy, platform, work, os.environ, also_protected=protected)
    runner.observer = observer
    try:
        run = run_build(repo=repo, sha=sha, app_source=app_source, plan=plan, root=work, build_info=info,
                        environ=os.environ, timeout=policy.file.limits.build_timeout_seconds, epoch=epoch,
                        runner=runner)
        tools = tool_versions(plan.tools, values=run.values, run=run, runner=runner)
    except QualificationError as exc:
        if exc.code != Code.BUILD_FAILED:
            raise
        raise QualificationError(Code.ENVIRONMENT, f"the build cannot run here: {exc.message}",
                                 hint="install the tools the policy's [app.build] names, as the producer had them "
                                      "(the build record's tools list their versions)") from exc
    return Rebuilt(run.output, file_sha256(run.output), run.output.stat().st_size, tree_sha256(run.app_dir), tools)
