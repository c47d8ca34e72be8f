"""`qualify run`: the whole local chain on this machine's platform, in any git repository, in one command.

keygen (only when a key or the keyring is missing), produce, aggregate, verify (writing the decision, the job
summary and the Verification Summary Attestations) and verify-vsa for each artifact: the chain a release manager
would otherwise type step by step, and what `nox -s qualify` runs. Each step is a child process of this
interpreter (``python -m desktop_qualify.qualify_cli STEP``), exactly the command a person would type: a step
keeps its own output, its own stable code and its own exit status, which `qualify run` returns unchanged, and
no step shares memory, logging set-up or an open key with another. This module knows all three stages only by
their subcommand names (docs/design.md §6.2).

The whole run is written into ``.<out>.staging`` beside ``--out`` and swapped into place only once the run is
QUALIFIED, so a failed run loses nothing: the last good output stays as it was, and the failed run's output is
left in the staging folder for inspection. One run id (``$QUALIFY_RUN_ID``, else a new one) names every step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import staging_folder, swap_into_place
from desktop_qualify.qualify_policy import Policy, host_platform, load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, guarded, require_inputs, terminal_safe

# Where the output goes when --out is not given: beside the repository's other files, as `nox -s qualify` has it.
DEFAULT_OUT = "qualification-out"
VSA_NAME = "verification-summary.intoto.jsonl"
# A stage's diagnostics line ("QE_CODE: message"), or a verdict's reason line ("  - QE_CODE ..."): named again in
# the run's own last line, so the reader of a long log sees why it stopped without scrolling back.
_CODE_LINE = re.compile(r"^\s*(?:[-*]\s+)?(QE_[A-Z0-9_]+)\b")
# How long a step may take to end after Ctrl-C (it received the same interrupt) before it is killed.
_INTERRUPT_GRACE_SECONDS = 10


@dataclass
class _Step:
    name: str
    argv: list[str]
    seconds: float = 0.0
    codes: list[str] = field(default_factory=list)


def _say(text: str) -> None:
    # Progress goes to standard error, as each stage's own does; the result (where everything went) to stdout.
    print(f"qualify run: {text}", file=sys.stderr, flush=True)


def _shown(path: Path) -> str:
    return terminal_safe(str(path))


def _pump(stream: TextIO, sink: TextIO, codes: list[str]) -> None:
    """Copy a step's output line by line as it comes, noting the stable codes it names.

    The pipe is always read to its end, whatever happens to ``sink``: a step whose pipe is not drained would
    block on a full pipe and never end.
    """
    writable = True
    for line in stream:
        found = _CODE_LINE.match(line)
        if found and found[1] not in codes:
            codes.append(found[1])
        if not writable:
            continue
        try:
            try:
                sink.write(line)
            except UnicodeEncodeError:  # a terminal that cannot show a character: escaped, not lost
                sink.write(line.encode("ascii", "backslashreplace").decode("ascii"))
            sink.flush()
        except (OSError, ValueError):
            writable = False  # this command's own output is gone (a closed pipe): the step still runs to its end


def _run_step(step: _Step, run_id: str) -> int:
    """Run one step as a child process; its exit status (a signal's death as 128 + the signal's number)."""
    # Unbuffered: the step's stdout reaches this process line by line, in order with its progress on stderr.
    # UTF-8: the pipe is decoded as such whatever the platform's locale encoding is.
    env = {**os.environ, "QUALIFY_RUN_ID": run_id, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}
    argv = [sys.executable, "-m", "desktop_qualify.qualify_cli", *step.argv]
    started = time.monotonic()
    try:
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 encoding="utf-8", errors="replace")
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"cannot start {step.name} ({exc.strerror or exc})") from exc
    # Both are pipes (asked for above): copied by a thread each, so neither can fill up and stall the step.
    pumps = [threading.Thread(target=_pump, args=(stream, sink, step.codes), daemon=True)
             for stream, sink in ((child.stdout, sys.stdout), (child.stderr, sys.stderr)) if stream is not None]
    for pump in pumps:
        pump.start()
    try:
        status = child.wait()
    except KeyboardInterrupt:
        # The step got the same Ctrl-C (one process group): give it time to stop cleanly, then make sure.
        try:
            child.wait(timeout=_INTERRUPT_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise
    finally:
        for pump in pumps:
            pump.join(timeout=5)
        step.seconds = time.monotonic() - started
    return 128 - status if status < 0 else status


@dataclass(frozen=True)
class _Plan:
    policy: Policy
    policy_arg: Path
    root_args: tuple[str, ...]
    out: Path
    produce_extra: tuple[str, ...]


def _repository(policy: Policy, root: Path | None) -> Path:
    # produce and aggregate read the policy in place (they take no --root): the paths it names must
    # resolve the same way there as from ROOT/policies, where keygen and verify resolve them.
    if root is not None and policy.path.parent != policy.base.resolve():
        raise QualificationError(Code.USAGE, f"--root {root}: the policy {policy.path} is not in ROOT/policies, "
                                             "where the steps given --root resolve its paths",
                                 hint="run the policy from its checkout (ROOT/policies/NAME.toml), or drop --root")
    found = policy.repository_root()
    if found is None:
        raise QualificationError(Code.USAGE, f"{policy.path}: not inside a git checkout; qualify run qualifies a "
                                             "commit of the git repository that holds the policy",
                                 hint="commit the policy to the app's repository and run it from a clone on main")
    return found


def _output_folder(out: Path | None, repository: Path) -> Path:
    """``--out`` (default ``qualification-out`` at the repository's top), absolute, its parent's links resolved."""
    chosen = out if out is not None else repository / DEFAULT_OUT
    chosen = chosen.absolute()
    chosen = chosen.parent.resolve() / chosen.name
    if not chosen.name or chosen.name in (".", ".."):
        raise QualificationError(Code.USAGE, f"--out {out}: names no folder of its own")
    # The swap renames --out aside: a link would be replaced, not written through, so it is refused (as every
    # output of the CLI is), and a folder that holds the repository would take the repository with it.
    if chosen.is_symlink():
        raise QualificationError(Code.USAGE, f"--out {_shown(chosen)}: a symbolic link; name the folder itself")
    if chosen.exists() and not chosen.is_dir():
        raise QualificationError(Code.USAGE, f"--out {_shown(chosen)}: not a folder")
    if repository.resolve().is_relative_to(chosen):
        raise QualificationError(Code.USAGE, f"--out {_shown(chosen)}: holds the repository {repository}; the run "
                                             "replaces --out as a whole, so it names a folder of its own")
    return chosen


def _plan(args: argparse.Namespace) -> _Plan:
    require_inputs("--root", [args.root], "folder")
    policy = load_policy(args.policy, args.root)
    if policy.sigstore is not None:
        raise QualificationError(Code.POLICY_INVALID, f"{policy.path}: a GitHub-mode policy; qualify run runs the "
                                                      "local chain, signed by this machine's Ed25519 keys",
                                 hint="GitHub mode runs in the release workflows (docs/trust-modes.md); locally, "
                                      "use a policy whose [trust] mode is \"ed25519\"")
    repository = _repository(policy, args.root)
    previous = [("--previous-bundle", args.previous_bundle), ("--previous-artifact", args.previous_artifact)]
    extra = tuple(arg for option, path in previous if path is not None for arg in (option, str(path)))
    root_args = ("--root", str(args.root)) if args.root is not None else ()
    return _Plan(policy, args.policy, root_args, _output_folder(args.out, repository), extra)


def _keys_missing(policy: Policy) -> list[Path]:
    trust = policy.ed25519
    named = (trust.keyring, trust.platform_key, trust.aggregate_key, trust.verifier_key)
    return [path for path in (policy.resolve(n) for n in named if n is not None) if not path.is_file()]


def _new_run_id() -> str:
    # The producer's own form (local-<UTC time>-<random>): one id shared by every step of this run.
    return f"local-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}"


def _artifacts(folder: Path) -> list[Path]:
    try:
        return sorted(path for path in folder.iterdir() if path.is_file())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise QualificationError(Code.ENVIRONMENT, f"{folder}: cannot list ({exc.strerror or exc})") from exc


def _chain(plan: _Plan, staging: Path, run_id: str) -> tuple[list[_Step], int]:
    """Run the steps in order into ``staging``; the steps run and the first failing one's exit status (or 0)."""
    policy, platform = str(plan.policy_arg), host_platform()
    evidence, artifacts = staging / "evidence", staging / "artifacts"
    vsa = staging / VSA_NAME if plan.policy.ed25519.verifier_key is not None else None
    done: list[_Step] = []

    def run(name: str, *argv: str) -> int:
        step = _Step(name, list(argv))
        done.append(step)
        _say(f"{name} ...")
        status = _run_step(step, run_id)
        _say(f"{name} {'ok' if status == EXIT_OK else f'FAILED (exit {status})'} ({step.seconds:.1f}s)")
        return status

    missing = _keys_missing(plan.policy)
    if missing:
        _say(f"keygen: {len(missing)} of the policy's keys or keyring missing ({_shown(missing[0])} first)")
        if status := run("keygen", "keygen", "--policy", policy, *plan.root_args):
            return done, status
    else:
        _say("keygen: skipped, the keyring and every key the policy names are present")
    steps: list[tuple[str, list[str]]] = [
        (f"produce {platform}", ["produce", "--policy", policy, "--platform", platform, "--out", str(staging),
                                 *plan.produce_extra]),
        ("aggregate", ["aggregate", "--policy", policy, "--evidence", str(evidence), "--out", str(evidence)]),
    ]
    for name, argv in steps:
        if status := run(name, *argv):
            return done, status
    candidate = [arg for path in _artifacts(artifacts) for arg in ("--artifact", str(path))]
    outputs = ["--json", str(staging / "decision.json"), "--summary", str(staging / "summary.md")]
    if vsa is not None:
        outputs += ["--vsa", str(vsa)]
    if status := run("verify", "verify", "--policy", policy, *plan.root_args, "--evidence", str(evidence),
                     *candidate, *outputs):
        return done, status
    # What a downstream reader runs: each artifact's signed summary, checked offline against the policy.
    for path in _artifacts(artifacts) if vsa is not None else []:
        if status := run("verify-vsa", "verify-vsa", "--policy", policy, *plan.root_args, "--artifact", str(path),
                         str(vsa)):
            return done, status
    return done, EXIT_OK


def _report(plan: _Plan, steps: Sequence[_Step], run_id: str, total: float) -> None:
    out, trust = plan.out, plan.policy.ed25519
    lines = [f"QUALIFIED: run {run_id} on {host_platform()} in {total:.1f}s, under {_shown(plan.policy.path)}"]
    lines += [f"  {step.name:<16} {step.seconds:6.1f}s" for step in steps]
    lines += [
        f"  evidence   {_shown(out / 'evidence')}",
        *(f"  artifact   {_shown(path)}" for path in _artifacts(out / "artifacts")),
        f"  decision   {_shown(out / 'decision.json')}",
        f"  summary    {_shown(out / 'summary.md')}",
    ]
    if trust.verifier_key is not None:
        lines.append(f"  VSA        {_shown(out / VSA_NAME)}")
    else:
        lines.append("  VSA        none: the policy names no verifier_key in [trust]")
    named = (trust.platform_key, trust.aggregate_key, trust.verifier_key)
    keys = sorted({str(plan.policy.resolve(k).parent) for k in named if k is not None})
    lines += [
        f"  records    {_shown(out / 'records')} (unsigned copies of each stage's record, for people)",
        f"  work       {_shown(out / 'work')} (build and install work folders, no evidence; the next run removes it)",
        f"  keyring    {_shown(plan.policy.resolve(trust.keyring))}",
        f"  keys       {', '.join(terminal_safe(k) for k in keys)} (private: never commit them)",
    ]
    # The run is QUALIFIED and in place whether or not this can be shown (a reader that closed the pipe early).
    with contextlib.suppress(OSError):
        print("\n".join(lines), flush=True)


def run_chain(args: argparse.Namespace) -> int:
    """`qualify run` on parsed arguments: the exit status of the chain (a failing step's own)."""

    def body() -> int:
        plan = _plan(args)
        run_id = os.environ.get("QUALIFY_RUN_ID") or _new_run_id()
        try:
            staging = staging_folder(plan.out)
            staging.mkdir(parents=True)
        except OSError as exc:
            raise QualificationError(Code.ENVIRONMENT, f"{_shown(plan.out.parent)}: cannot make the staging folder "
                                                       f"beside --out ({exc.strerror or exc})") from exc
        _say(f"run {run_id}: writing into {_shown(staging)}; {_shown(plan.out)} is replaced only once QUALIFIED")
        started = time.monotonic()
        try:
            steps, status = _chain(plan, staging, run_id)
        except KeyboardInterrupt:
            _say(f"interrupted: {_shown(plan.out)} left as it was; this run's output is in {_shown(staging)}")
            raise
        if status != EXIT_OK:
            failed = steps[-1]
            codes = f", {', '.join(failed.codes)}" if failed.codes else ""
            _say(f"{failed.name} failed (exit {status}{codes}): {_shown(plan.out)} left as it was; this run's "
                 f"output is in {_shown(staging)}")
            return status
        try:
            swap_into_place(staging, plan.out)
        except OSError as exc:
            raise QualificationError(Code.ENVIRONMENT, f"{_shown(plan.out)}: cannot swap the new output into place "
                                                       f"({exc.strerror or exc}); it is in {_shown(staging)}") from exc
        _report(plan, steps, run_id, time.monotonic() - started)
        return EXIT_OK

    return guarded(body)
