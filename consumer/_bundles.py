"""Auditing qualification bundles: each judged under its own policy, anchored to the auditor's policy and keys.

What anchors a bundle is ``consumer._anchor``: the bundle's policy is the
auditor's ``--policy`` or the policy file as committed at the run's own
commit; in local mode its keys, names and roles are the auditor's. In GitHub
mode the anchored policy pins the trusted root by digest and names the
workflow identities, so anchoring the policy anchors the rest. Certificates are
judged at the time the transparency log proves, as sigstore-python does.

Bundles are checked in parallel, one process per core; one that cannot be
read is a rejected run, never the end of the audit.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import posixpath
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from desktop_qualify.evidence_schemas import AuditRun, Code, QualificationError
from desktop_qualify.qualify_bundle import OpenedBundle, open_bundle
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_trust import Keyring, verifier_for
from desktop_qualify.qualify_verify import Expectations, Verdict, verify_release

from ._anchor import Anchor, anchor_for, check_keys, check_policy_at, differences, is_auditors, precheck_policy
from ._audit import audit_run
from ._decide import decide
from ._rebuilds import RebuildTarget, rebuild_targets
from ._source_digest import check_source_digest_at
from ._vsa import summary_statements

__all__ = ["Anchor", "anchor_for", "audit_bundle", "audit_bundles", "terminal_progress", "verified_bundle"]


def _run_commit(verdict: Verdict) -> str | None:
    """The commit the verified statements name: the platforms' one commit, else the verified aggregate's."""
    if verdict.sha is not None:
        return verdict.sha
    return verdict.aggregate.predicate.run.sha if verdict.aggregate is not None else None


# What a bundle's own policy or keyring can raise: the bundle's fault (a rejection), never the caller's (exit 2).
_BUNDLE_FAULTS = frozenset({Code.POLICY_INVALID, Code.KEY_INVALID, Code.USAGE})


def audit_bundle(source: Path, anchor: Anchor, workspace: Path) -> AuditRun:
    """One bundle's decision under its own anchored policy; the policy path reported is where the bundle holds it."""
    return audit_bundle_summarised(source, anchor, workspace, summarise=False)[0]


def audit_bundle_summarised(source: Path, anchor: Anchor, workspace: Path, *,
                            summarise: bool) -> tuple[AuditRun, list[bytes]]:
    """``audit_bundle``, with the run's unsigned VSA statements when ``summarise`` (signed by the caller)."""
    run, statements, _ = _audit_bundle_summarised(source, anchor, workspace, summarise)
    return run, statements


def _audit_bundle_summarised(source: Path, anchor: Anchor, workspace: Path,
                             summarise: bool) -> tuple[AuditRun, list[bytes], list[RebuildTarget]]:
    try:
        return _audit_bundle(source, anchor, workspace, summarise)
    except QualificationError as exc:
        if exc.code in _BUNDLE_FAULTS:
            raise QualificationError(Code.BUNDLE_INVALID, f"bundle {source}: {exc.message}") from exc
        raise


@contextlib.contextmanager
def verified_bundle(source: Path, anchor: Anchor, workspace: Path) -> Iterator[tuple[OpenedBundle, Policy, Verdict,
                                                                                      list[str]]]:
    """The bundle opened, its own policy anchored to the auditor's, its evidence verified under it, and notes.

    Shared by the audit and ``qualify rebuild``: a bundle is believed no further than this anchors it.
    """
    notes = [f"audit of bundle {source}: its own policy and trust root, anchored to the auditor's; "
             "candidate files not checked; head of main not required"]
    with open_bundle(source, workspace) as opened:
        policy = load_policy(opened.policy_path, opened.root)
        precheck_policy(policy, anchor, source)
        check_keys(policy, anchor, source)
        if policy.file.trust.mode != opened.manifest.trust_mode:
            raise QualificationError(Code.BUNDLE_MANIFEST_MISMATCH, f"bundle {source}: its manifest says "
                                                                    f"{opened.manifest.trust_mode}, its policy "
                                                                    f"{policy.file.trust.mode}")
        verdict = verify_release(policy, [opened.evidence_dir], None)
        # Anchored only now: the commit whose policy counts is the one the verified statements name.
        if is_auditors(policy, anchor):
            notes.append("policy anchored: byte-identical to the auditor's --policy")
        else:
            notes.append(check_policy_at(policy, anchor, source, _run_commit(verdict)))
        keyids = (frozenset(Keyring.load(policy.resolve(policy.ed25519.keyring)).keys)
                  if policy.sigstore is None else None)
        notes.append(differences(policy, anchor, keyids))
        notes.append(f"bundle sha256 {opened.sha256}")
        yield opened, policy, verdict, notes


def _bundle_source_digest(policy: Policy, anchor: Anchor, verdict: Verdict) -> str:
    """The source digest recomputed in the auditor's checkout (the one the policy history is read from)."""
    if anchor.repository is None or anchor.relative is None:
        return f"source digest not recomputed: no checkout at hand ({anchor.no_history or 'none given'})"
    relative = posixpath.normpath(posixpath.join(posixpath.dirname(anchor.relative), policy.file.app.source))
    if relative.startswith("..") or posixpath.isabs(relative):
        return f"source digest not recomputed: [app] source {policy.file.app.source!r} leaves the checkout"
    return check_source_digest_at(Path(anchor.repository), relative, verdict)


def _audit_bundle(source: Path, anchor: Anchor, workspace: Path,
                  summarise: bool) -> tuple[AuditRun, list[bytes], list[RebuildTarget]]:
    with verified_bundle(source, anchor, workspace) as (opened, policy, verdict, notes):
        notes.append(_bundle_source_digest(policy, anchor, verdict))
        # The commit whose history anchored the bundle's policy: the summary's policy URI may name it.
        committed_at = None if is_auditors(policy, anchor) else _run_commit(verdict)
        # Resolved as policy.resolve() resolves: a temp folder behind a symlink (macOS /var) must still match.
        root = opened.root.resolve()

        def in_bundle(path: Path) -> str:
            # The keyring as the bundle holds it, not the temporary folder it was unpacked into for this audit.
            return f"{source}:{path.relative_to(root).as_posix()}" if path.is_relative_to(root) else str(path)

        decision = decide(verdict, policy, policy_path=f"{source}:{opened.manifest.policy}", mode="audit",
                          notes=notes, show=in_bundle)
        statements = summary_statements(verdict, policy, decision, committed_at=committed_at) if summarise else []
        run = audit_run(source, verdict, decision)
        return run, statements, rebuild_targets(run.evidence, verdict)


def _refused(source: Path, policy: Policy, exc: QualificationError) -> AuditRun:
    """A bundle that could not be opened or anchored: a rejected run with the reason, under the auditor's policy."""
    verdict = Verdict(Expectations.from_policy(policy), verifier_for(policy))
    verdict.findings.add(exc.code, exc.message)
    decision = decide(verdict, policy, policy_path=str(policy.path), mode="audit",
                      notes=[f"audit of bundle {source}: refused before any evidence was read"])
    return audit_run(source, verdict, decision)


# (source, audit-run JSON, or the refusal's code and message, the run's unsigned VSA statements, what its
# verified statements say a rebuild must give): plain values cross the process boundary.
Outcome = tuple[str, str | None, str | None, list[str], list[RebuildTarget]]


def _audit_in_worker(source: str, anchor: Anchor, workspace: str, summarise: bool = False) -> Outcome:
    try:
        run, statements, targets = _audit_bundle_summarised(Path(source), anchor, Path(workspace), summarise)
    except QualificationError as exc:
        return source, None, f"{exc.code.value}\n{exc.message}", [], []
    return source, run.model_dump_json(), None, [statement.decode("utf-8") for statement in statements], targets


Progress = Callable[[int, int], None]


def audit_bundles(sources: list[Path], policy: Policy, *, progress: Progress | None = None,
                  workers: int | None = None, summaries: list[bytes] | None = None,
                  rebuild_targets: list[RebuildTarget] | None = None) -> list[AuditRun]:
    """Decisions in the order of ``sources``; bundles are checked across the machine's cores.

    ``summaries``, when given, receives each run's unsigned VSA statements, in the order of ``sources``;
    ``rebuild_targets`` what each run's verified statements say a rebuild must give.
    """
    summarise = summaries is not None
    statements: dict[str, list[str]] = {}
    targets: dict[str, list[RebuildTarget]] = {}
    anchor = anchor_for(policy)
    count = workers or min(len(sources), os.cpu_count() or 1)
    results: dict[str, AuditRun] = {}
    with tempfile.TemporaryDirectory(prefix="qualify-audit-") as workspace:
        if count <= 1:
            outcomes = (_audit_in_worker(str(s), anchor, workspace, summarise) for s in sources)
            results = _collect(outcomes, policy, len(sources), progress, statements, targets=targets)
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=count) as pool:
                futures = [pool.submit(_audit_in_worker, str(s), anchor, workspace, summarise) for s in sources]
                results = _collect((f.result() for f in concurrent.futures.as_completed(futures)), policy,
                                   len(sources), progress, statements, targets=targets)
    if summaries is not None:
        summaries += [line.encode("utf-8") for s in sources for line in statements.get(str(s), [])]
    if rebuild_targets is not None:
        rebuild_targets += [t for s in sources for t in targets.get(str(s), [])]
    return [results[str(s)] for s in sources]


def _collect(outcomes: Iterable[Outcome], policy: Policy, total: int,
             progress: Progress | None, statements: dict[str, list[str]], *,
             targets: dict[str, list[RebuildTarget]]) -> dict[str, AuditRun]:
    results: dict[str, AuditRun] = {}
    for done, (source, decision, refusal, summaries, run_targets) in enumerate(outcomes, start=1):
        statements[source] = summaries
        targets[source] = run_targets
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
