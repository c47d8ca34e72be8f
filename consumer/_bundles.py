"""Auditing qualification bundles: each judged under its own policy and trust root, anchored to the auditor's.

A bundle carries the policy and trust root of its run, so an old run is judged
under its own rules; but a bundle alone proves nothing, since whoever made it
chose what it carries. The auditor's policy (``--policy``, with its checkout)
is the anchor:

- the bundle's policy must be the auditor's, byte for byte, or a version of the
  same policy file in the checkout's git history (``git log`` of that file);
- in local mode, every key in the bundle's keyring must be in the auditor's
  keyring, since local evidence proves what one machine's keys signed.

In GitHub mode the anchored policy pins the trusted root by digest and names the
workflow identity, so anchoring the policy anchors the rest. Certificates are
judged at the time the transparency log proves, as sigstore-python does.

Bundles are checked in parallel, one process per core; one that cannot be
read is a rejected run, never the end of the audit.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from desktop_qualify.evidence_schemas import AuditRun, Code, QualificationError
from desktop_qualify.qualify_bundle import open_bundle
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_trust import Keyring, verifier_for
from desktop_qualify.qualify_verify import Expectations, Verdict, verify_release

from ._audit import audit_run
from ._decide import decide

# How far back the anchor looks for earlier versions of the policy file.
MAX_POLICY_VERSIONS = 2000
_GIT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Anchor:
    """What a bundle's policy and keys must match: picklable, so each worker process gets a copy."""

    policy_digests: frozenset[str]
    # Local mode: the auditor's keyring key ids; None in GitHub mode.
    keyids: frozenset[str] | None


def _git(root: Path, *args: str, stdin: bytes = b"") -> bytes | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True,
                              timeout=_GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _blobs(batch: bytes) -> list[bytes]:
    """The contents ``git cat-file --batch`` printed: each ``<id> blob <size>`` header, the bytes, a newline."""
    out, at = [], 0
    while at < len(batch):
        end = batch.index(b"\n", at)
        header = batch[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            out.append(batch[at:at + size])
            at += size + 1
    return out


def _history_digests(policy: Policy) -> set[str]:
    """SHA-256 of every committed version of the policy file, where the policy stands in a git checkout."""
    root = policy.repository_root()
    if root is None:
        return set()
    try:
        relative = policy.path.relative_to(root).as_posix()
    except ValueError:
        relative = f"policies/{policy.path.name}"  # a copy taken out of its checkout (--root)
    commits = (_git(root, "log", f"--max-count={MAX_POLICY_VERSIONS}", "--format=%H", "--", relative) or b"").split()
    if not commits:
        return set()
    # Every version in one process: one `<commit>:<path>` request per line (a deleted file answers "missing").
    batch = _git(root, "cat-file", "--batch", stdin=b"".join(c + b":" + relative.encode() + b"\n" for c in commits))
    return {hashlib.sha256(blob).hexdigest() for blob in _blobs(batch or b"")}


def anchor_for(policy: Policy) -> Anchor:
    keyids = None
    if policy.sigstore is None:
        keyids = frozenset(Keyring.load(policy.resolve(policy.ed25519.keyring)).keys)
    return Anchor(frozenset({policy.sha256, *_history_digests(policy)}), keyids)


def _check_anchored(bundled: Policy, anchor: Anchor, source: Path) -> None:
    if bundled.sha256 not in anchor.policy_digests:
        raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its policy ({bundled.sha256[:12]}) is "
                                                         "neither the auditor's policy nor a committed version of it")
    if anchor.keyids is not None:
        if bundled.sigstore is not None:
            raise QualificationError(Code.MODE_MISMATCH, f"bundle {source}: a GitHub-mode bundle audited under a "
                                                         "local-mode policy")
        foreign = set(Keyring.load(bundled.resolve(bundled.ed25519.keyring)).keys) - anchor.keyids
        if foreign:
            raise QualificationError(Code.BUNDLE_UNANCHORED, f"bundle {source}: its keyring holds keys the auditor's "
                                                             f"keyring does not ({', '.join(sorted(foreign))[:200]})")


def audit_bundle(source: Path, anchor: Anchor, workspace: Path) -> AuditRun:
    """One bundle's decision, under its own policy; the policy path reported is where it stood in the bundle."""
    notes = [f"audit of bundle {source}: its own policy and trust root, anchored to the auditor's; "
             "candidate files not checked; head of main not required"]
    with open_bundle(source, workspace) as opened:
        policy = load_policy(opened.policy_path, opened.root)
        _check_anchored(policy, anchor, source)
        if policy.file.trust.mode != opened.manifest.trust_mode:
            raise QualificationError(Code.BUNDLE_MANIFEST_MISMATCH, f"bundle {source}: its manifest says "
                                                                    f"{opened.manifest.trust_mode}, its policy "
                                                                    f"{policy.file.trust.mode}")
        verdict = verify_release(policy, [opened.evidence_dir], None)
        notes.append(f"bundle sha256 {opened.sha256}")
        # Resolved as policy.resolve() resolves: a temp folder behind a symlink (macOS /var) must still match.
        root = opened.root.resolve()

        def in_bundle(path: Path) -> str:
            # The keyring as the bundle holds it, not the temporary folder it was unpacked into for this audit.
            return f"{source}:{path.relative_to(root).as_posix()}" if path.is_relative_to(root) else str(path)

        decision = decide(verdict, policy, policy_path=f"{source}:{opened.manifest.policy}", mode="audit",
                          notes=notes, show=in_bundle)
        return audit_run(source, verdict, decision)


def _refused(source: Path, policy: Policy, exc: QualificationError) -> AuditRun:
    """A bundle that could not be opened or anchored: a rejected run with the reason, under the auditor's policy."""
    verdict = Verdict(Expectations.from_policy(policy), verifier_for(policy))
    verdict.findings.add(exc.code, exc.message)
    decision = decide(verdict, policy, policy_path=str(policy.path), mode="audit",
                      notes=[f"audit of bundle {source}: refused before any evidence was read"])
    return audit_run(source, verdict, decision)


# (source, audit-run JSON, or the refusal's code and message): plain strings cross the process boundary.
Outcome = tuple[str, str | None, str | None]


def _audit_in_worker(source: str, anchor: Anchor, workspace: str) -> Outcome:
    try:
        return source, audit_bundle(Path(source), anchor, Path(workspace)).model_dump_json(), None
    except QualificationError as exc:
        return source, None, f"{exc.code.value}\n{exc.message}"


Progress = Callable[[int, int], None]


def audit_bundles(sources: list[Path], policy: Policy, *, progress: Progress | None = None,
                  workers: int | None = None) -> list[AuditRun]:
    """Decisions in the order of ``sources``; bundles are checked across the machine's cores."""
    anchor = anchor_for(policy)
    count = workers or min(len(sources), os.cpu_count() or 1)
    results: dict[str, AuditRun] = {}
    with tempfile.TemporaryDirectory(prefix="qualify-audit-") as workspace:
        if count <= 1:
            outcomes = (_audit_in_worker(str(s), anchor, workspace) for s in sources)
            results = _collect(outcomes, policy, len(sources), progress)
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=count) as pool:
                futures = [pool.submit(_audit_in_worker, str(s), anchor, workspace) for s in sources]
                results = _collect((f.result() for f in concurrent.futures.as_completed(futures)), policy,
                                   len(sources), progress)
    return [results[str(s)] for s in sources]


def _collect(outcomes: Iterable[Outcome], policy: Policy, total: int,
             progress: Progress | None) -> dict[str, AuditRun]:
    results: dict[str, AuditRun] = {}
    for done, (source, decision, refusal) in enumerate(outcomes, start=1):
        if decision is not None:
            results[source] = AuditRun.model_validate_json(decision)
        else:
            code, _, message = (refusal or "").partition("\n")
            results[source] = _refused(Path(source), policy, QualificationError(Code(code), message))
        if progress is not None:
            progress(done, total)
    return results


def terminal_progress(stream: TextIO | None = None) -> Progress:
    """A bar on a terminal; on anything else (CI logs) a plain line every tenth of the way."""
    out = stream or sys.stderr
    tty = out.isatty()
    step = 0

    def show(done: int, total: int) -> None:
        nonlocal step
        if tty:
            filled = done * 30 // max(total, 1)
            out.write(f"\raudit [{'#' * filled}{' ' * (30 - filled)}] {done}/{total}")
            if done == total:
                out.write("\n")
        elif done == total or done * 10 // max(total, 1) > step:
            step = done * 10 // max(total, 1)
            out.write(f"audit: {done}/{total} bundles checked\n")
        out.flush()

    return show
