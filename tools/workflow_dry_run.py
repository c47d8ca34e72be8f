"""The workflows' own `qualify` commands, in order, on this machine: `nox -s workflow-dry-run`.

The commands are read from the workflow files themselves (the producer of this
machine's platform, its run job then its sign job, then the aggregate job, then
the release gate's verify and read-back), and run with what a runner would give
filled from the local state: the local policy instead of the release policy,
this checkout's HEAD as the commit, one run id for all jobs, and local folders
for the artifacts the jobs hand on. The run job writes into OUT/run-job; what
its upload step names (read from the YAML: out/unsigned/ and out/artifacts/) is
copied, as the upload and download would carry it, into the folder the sign
job reads with `--run` (OUT/sign-job/run), and nothing else of the run job's
folder is there; the sign job writes OUT/evidence and OUT/artifacts, which the
aggregate and the gates read as the downloaded evidence. Only those values
change; the subcommands and flags are the YAML's
(tests/workflows/test_dry_run.py compares the two lists). A token this file
does not know how to fill (a new `$VARIABLE` in a workflow) stops the dry run,
so the YAML cannot drift away from what is run here unnoticed.

Producers of other platforms are reported as skipped: each builds only on its
own platform. Exits with the first failing command's status.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE_POLICY, LOCAL_POLICY = "policies/release.toml", "policies/local.toml"
PLATFORMS = ("linux", "macos", "windows")
# The jobs that run `qualify`, in the order a release runs them: each producer's run job, then its sign job.
JOBS = (*((f"produce-{p}.yml", job) for p in PLATFORMS for job in ("run", "sign")),
        ("aggregate.yml", "aggregate"), ("release-gate.yml", "gate"))
# The folder a workflow step's relative paths name: the runner's workspace, the checkout.
_WORKSPACE_OUT = "out/"
_EVIDENCE = {"downloaded/evidence", "evidence-bundle/downloaded/evidence"}


@dataclass(frozen=True)
class WorkflowCommand:
    """One `qualify` command as a workflow job runs it: the workflow, the job, the argv."""

    workflow: str
    job: str
    argv: tuple[str, ...]

    @property
    def platform(self) -> str | None:
        """The platform the command names with ``--platform``, if any."""
        return self.argv[self.argv.index("--platform") + 1] if "--platform" in self.argv else None


@dataclass(frozen=True)
class Local:
    """The local state that stands in for a runner's.

    ``out`` is the sign job's output and the aggregate's download (evidence/, artifacts/); the run job writes
    into ``run_out``, and the sign job reads the run job's handed-on files from ``run_in``.
    """

    out: Path
    sha: str
    host: str
    artifacts: Callable[[], list[Path]]

    @property
    def run_out(self) -> Path:
        """The run job's ``--out``: its own runner's folder, apart from the sign job's."""
        return self.out / "run-job"

    @property
    def run_in(self) -> Path:
        """The sign job's ``--run``: what the run job's artifact holds once downloaded."""
        return self.out / "sign-job" / "run"


def workflow_commands(folder: Path = WORKFLOWS) -> list[WorkflowCommand]:
    """Every `qualify ...` line of the release jobs' run: scripts, in job order and step order."""
    found = []
    for name, job in JOBS:
        data: dict[Any, Any] = yaml.safe_load((folder / name).read_text(encoding="utf-8"))
        for step in data["jobs"][job]["steps"]:
            script = str(step.get("run", "")).replace("\\\n", " ")
            for line in script.splitlines():
                if line.strip().startswith("qualify "):
                    found.append(WorkflowCommand(name, job, tuple(shlex.split(line))))
    return found


def _fill(word: str, previous: str, local: Local, job: str = "") -> list[str]:
    values = {
        ("--policy", RELEASE_POLICY): [LOCAL_POLICY],
        # The run job's folder is its own runner's; the sign job's is the one the aggregate downloads.
        ("--out", "out"): [str(local.run_out if job == "run" else local.out)],
        ("--run", "run"): [str(local.run_in)],
        ("--json", "decision.json"): [str(local.out / "decision.json")],
        ("--sha", "$GITHUB_SHA"): [local.sha],
        ("--sha", "$CANDIDATE_SHA"): [local.sha],
        ("--summary", "$GITHUB_STEP_SUMMARY"): [str(local.out / "summary.md")],
        ("--vsa", "verification-summary.intoto.jsonl"): [str(local.out / "verification-summary.intoto.jsonl")],
        ("--release-tag", "$TAG"): ["dry-run"],
    }
    if (previous, word) in values:
        return values[(previous, word)]
    if previous == "--out" and word == "qualification-$GITHUB_SHA.qualify-bundle.zip":
        return [str(local.out / f"qualification-{local.sha}.qualify-bundle.zip")]
    if previous in ("--evidence", "--out") and word in _EVIDENCE:
        return [str(local.out / "evidence")]
    if word == "${args[@]}":  # the candidate files the job found
        return [arg for path in local.artifacts() for arg in ("--artifact", str(path))]
    if "$" in word or ("/" in word and not word.startswith("--")):
        raise SystemExit(f"workflow-dry-run: no local value for {word!r} (after {previous!r}); teach "
                         "tools/workflow_dry_run.py what a runner would give here")
    return [word]


def handed_on(platform: str, folder: Path = WORKFLOWS) -> list[str]:
    """What produce-PLATFORM.yml's run job uploads for its sign job, relative to the run job's ``out/``.

    upload-artifact keeps the paths below their common folder (``out/``), and the sign job downloads them
    into ``run/``: ``out/unsigned/`` arrives as ``run/unsigned/``.
    """
    data: dict[Any, Any] = yaml.safe_load((folder / f"produce-{platform}.yml").read_text(encoding="utf-8"))
    uploads = [step["with"] for step in data["jobs"]["run"]["steps"]
               if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    paths = [line.strip() for spec in uploads for line in str(spec.get("path", "")).splitlines() if line.strip()]
    if len(uploads) != 1 or not paths or not all(p.startswith(_WORKSPACE_OUT) for p in paths):
        raise SystemExit(f"workflow-dry-run: produce-{platform}.yml's run job uploads {paths}: teach "
                         "tools/workflow_dry_run.py how the sign job receives them")
    return [p.removeprefix(_WORKSPACE_OUT).rstrip("/") for p in paths]


def hand_on(local: Local, platform: str) -> list[Path]:
    """Copy what the run job uploads into the sign job's ``--run`` folder, and nothing else; what was copied."""
    shutil.rmtree(local.run_in, ignore_errors=True)
    local.run_in.mkdir(parents=True)
    copied = []
    for relative in handed_on(platform):
        source, target = local.run_out / relative, local.run_in / relative
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        else:
            raise SystemExit(f"workflow-dry-run: the run job wrote no {source} (its upload would fail: "
                             "if-no-files-found: error)")
        copied.append(target)
    return copied


def skip_reason(command: WorkflowCommand, local: Local) -> str | None:
    """Why this machine cannot run the command at all, or None."""
    if command.platform is not None and command.platform != local.host:
        return f"it builds on {command.platform}"
    if command.argv[1:2] == ("readback",):
        # It reads a *published* GitHub release; tests/unit/test_readback.py runs it against the loopback emulator.
        return "it reads back a published GitHub release"
    if "--from-attestations" in command.argv:
        # GitHub's attestation store; tests/e2e_github/test_github_attested_gate.py runs it against the emulator.
        return "it reads GitHub's attestation store"
    return None


def localize(command: WorkflowCommand, local: Local) -> list[str] | None:
    """The command as this machine runs it, or None when it cannot run here (see ``skip_reason``)."""
    if skip_reason(command, local) is not None:
        return None
    argv: list[str] = []
    for index, token in enumerate(command.argv):
        argv += _fill(token, command.argv[index - 1] if index else "", local, command.job)
    return argv


def plan(local: Local, commands: Sequence[WorkflowCommand] | None = None) -> list[tuple[WorkflowCommand, list[str]]]:
    """The commands this machine can run, each with its argv filled from the local state, in order."""
    return [(c, argv) for c in (commands or workflow_commands())
            if (argv := localize(c, local)) is not None]


def _host() -> str:
    return {"darwin": "macos", "win32": "windows"}.get(sys.platform, "linux")


def main(argv: list[str] | None = None) -> int:
    """Run the workflows' commands here, in order; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "qualification-out-dry-run")
    options = parser.parse_args(argv)
    out: Path = options.out.resolve()
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    local = Local(out, sha, _host(), lambda: sorted((out / "artifacts").iterdir()))
    run_id = f"local-dry-run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
    env = {**os.environ, "QUALIFY_RUN_ID": run_id, "GITHUB_SHA": sha}
    subprocess.run(["qualify", "keygen", "--policy", LOCAL_POLICY], cwd=ROOT, env=env, check=False)
    for command in workflow_commands():
        local_argv = localize(command, local)
        where = f"{command.workflow} job {command.job}"
        if local_argv is None:
            print(f"workflow-dry-run: {where}: skipped, {skip_reason(command, local)}", flush=True)
            continue
        if command.argv[1:2] == ("sign",) and command.platform is not None:
            copied = hand_on(local, command.platform)
            print(f"workflow-dry-run: {command.workflow}: the run job's artifact, as the sign job downloads it: "
                  + ", ".join(str(p.relative_to(out)) for p in copied), flush=True)
        print(f"workflow-dry-run: {where}: {shlex.join(local_argv)}", flush=True)
        code = subprocess.run(local_argv, cwd=ROOT, env=env, check=False).returncode
        if code != 0:
            print(f"workflow-dry-run: {where} exited {code}", flush=True)
            return code
    print(f"workflow-dry-run: every workflow command passed; evidence in {out / 'evidence'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
