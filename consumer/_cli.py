"""`qualify verify` (the release gate) and `qualify audit` (historical runs, offline)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from desktop_qualify.evidence_schemas import (
    GIT_SHA_PATTERN,
    AuditRun,
    Code,
    QualificationError,
)
from desktop_qualify.qualify_bundle import write_bundle
from desktop_qualify.qualify_files import write_output
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_runtime import (
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    ArgumentParser,
    check_outputs,
    guarded,
    refuse_repeats,
    require_inputs,
    terminal_safe,
    text_stream,
)
from desktop_qualify.qualify_trust import verifier_for
from desktop_qualify.qualify_verify import EvidenceSource, Expectations, Findings, Verdict, verify_release

from ._args import build_audit_parser, build_verify_parser
from ._audit import audit_report, audit_run
from ._bundles import audit_bundles, terminal_progress
from ._decide import Mode, decide
from ._freshness import check_candidate_is_main_head
from ._html import render_audit_html
from ._markdown import render_audit_markdown
from ._rebuilds import RebuildTarget, attach_rebuilds, rebuild_targets
from ._render import render_audit_text, render_markdown, render_text
from ._source_digest import check_source_digest
from ._update_rows import verdict_update_rows
from ._vsa import SummaryWriter, check_release_tag, summary_statements

_SHA = re.compile(GIT_SHA_PATTERN)
# A keyring made now holds new keys: it can never verify evidence signed earlier, so keygen is no advice here.
_KEYRING_HINT = ("the evidence verifies only under the keyring that signed it: use the policy (and --root) of the "
                 "checkout that made it; keys created now cannot verify evidence signed earlier")


def _load(policy: Path, root: Path | None) -> Policy:
    require_inputs("--root", [root], "folder")
    return load_policy(policy, root)


def trust_inputs(policy: Policy) -> list[tuple[str, Path | None]]:
    """The files the policy makes a command read (its trust root or keyring, local keys): inputs an output may not
    overwrite either."""
    sigstore = policy.sigstore
    if sigstore is not None:
        return [("the policy's trusted root", policy.resolve_pinned(sigstore.trusted_root))]
    trust = policy.ed25519
    return [(f"the policy's {what}", policy.resolve(relative)) for what, relative in
            (("keyring", trust.keyring), ("platform key", trust.platform_key),
             ("aggregate key", trust.aggregate_key), ("verifier key", trust.verifier_key)) if relative is not None]


def _verify(policy: Policy, evidence: Sequence[EvidenceSource], artifacts: list[Path] | None, sha: str | None,
            findings: Findings | None = None) -> Verdict:
    try:
        return verify_release(policy, evidence, artifacts, candidate_sha=sha, findings=findings)
    except QualificationError as exc:
        if exc.code == Code.KEY_INVALID:
            raise QualificationError(exc.code, exc.message, hint=_KEYRING_HINT) from exc
        raise


def run_verify(args: argparse.Namespace) -> int:
    """`qualify verify` on parsed arguments: decide on the candidate, write the outputs; 0 only when QUALIFIED."""
    def body() -> int:
        if not args.from_attestations:
            require_inputs("--evidence", [args.evidence], "folder")
        refuse_repeats("--artifact", args.artifact)
        check_outputs([("--json", args.json), ("--summary", args.summary), ("--vsa", args.vsa)],
                      [("--policy", args.policy), ("--evidence", args.evidence),
                       *(("--artifact", path) for path in args.artifact)])
        if args.sha is not None and not _SHA.match(args.sha):
            raise QualificationError(Code.USAGE, f"--sha {args.sha[:80]!r} is not a full lowercase commit id")
        policy = _load(args.policy, args.root)
        check_outputs([("--json", args.json), ("--summary", args.summary), ("--vsa", args.vsa)], trust_inputs(policy))
        # Who signs the summaries is settled before anything is verified: a missing key is exit 2, not a verdict.
        summaries = _summary_writer(policy, args.vsa, args.release_tag)
        if args.from_attestations:
            # PyGithub loads only for this gate: local verification never imports it.
            from ._attested import verify_attested

            verdict, notes = verify_attested(policy, list(args.artifact), args.sha, os.environ)
        else:
            verdict, notes = _verify(policy, [args.evidence], list(args.artifact), args.sha), []
        notes.append(check_source_digest(policy, verdict))
        notes.append(check_candidate_is_main_head(policy, verdict.sha, os.environ, verdict.findings))
        mode: Mode = "release-gate" if policy.sigstore is not None else "local-check"
        decision = decide(verdict, policy, policy_path=str(args.policy), mode=mode, notes=notes)
        # Outputs first: a verdict is printed only once everything it reports has been written.
        if args.json:
            write_output(args.json, decision.model_dump_json(indent=2).encode() + b"\n", option="--json")
        if args.summary:
            summary = render_markdown(decision, verdict_update_rows(verdict))
            write_output(args.summary, summary.encode(), append=True, option="--summary")
        if summaries is not None:
            _write_summaries(summaries, summary_statements(verdict, policy, decision, release_tag=args.release_tag))
        text_stream(args.json, args.summary, args.vsa).write(terminal_safe(render_text(decision)))
        return EXIT_OK if decision.decision == "QUALIFIED" else EXIT_REJECTED

    return guarded(body)


def _summary_writer(policy: Policy, path: Path | None, release_tag: str | None) -> SummaryWriter | None:
    if release_tag is not None and path is None:
        raise QualificationError(Code.USAGE, "--release-tag names the resource of each summary: it needs --vsa FILE")
    check_release_tag(release_tag)
    return None if path is None else SummaryWriter.for_policy(policy, path)


def _write_summaries(writer: SummaryWriter, statements: list[bytes]) -> None:
    count = writer.write(statements)
    print(f"wrote {writer.path}: {count} Verification Summary Attestation(s)", file=sys.stderr)


def _audit_one(policy: Policy, policy_path: str, folder: Path,
               summaries: list[bytes] | None = None, targets: list[RebuildTarget] | None = None) -> AuditRun:
    """One historical run; a folder that cannot be read is a rejected run, not the end of the audit."""
    notes = ["audit: candidate files not checked; head of main not required"]
    try:
        verdict = _verify(policy, [folder], None, None)
    except QualificationError as exc:
        if exc.exit_status != EXIT_USAGE or exc.code in (Code.POLICY_INVALID, Code.KEY_INVALID):
            raise
        verdict = Verdict(Expectations.from_policy(policy), verifier_for(policy))
        verdict.findings.add(Code.EVIDENCE_MISSING, f"{folder}: {exc.message}")
    notes.append(check_source_digest(policy, verdict))
    decision = decide(verdict, policy, policy_path=policy_path, mode="audit", notes=notes)
    if summaries is not None:
        summaries += summary_statements(verdict, policy, decision)
    run = audit_run(folder, verdict, decision)
    if targets is not None:
        targets += rebuild_targets(run.evidence, verdict)
    return run


def run_audit(args: argparse.Namespace) -> int:
    """`qualify audit` on parsed arguments: check each run and bundle, write the report; 0 only when QUALIFIED."""
    def body() -> int:
        # Every folder is checked to exist before any is audited: a missing one is a usage error, as in verify.
        if not args.evidence and not args.bundle:
            raise QualificationError(Code.USAGE, "nothing to audit: name --evidence folders, --bundle files, or both")
        require_inputs("--evidence", args.evidence, "folder")
        require_inputs("--bundle", args.bundle, "file")
        require_inputs("--rebuild", args.rebuild, "file")
        check_outputs([("--json", args.json), ("--html", args.html), ("--markdown", args.markdown),
                       ("--vsa", args.vsa)],
                      [("--policy", args.policy), *(("--evidence", path) for path in args.evidence),
                       *(("--bundle", path) for path in args.bundle),
                       *(("--rebuild", path) for path in args.rebuild)])
        policy = _load(args.policy, args.root)
        check_outputs([("--json", args.json), ("--html", args.html), ("--markdown", args.markdown),
                       ("--vsa", args.vsa)], trust_inputs(policy))
        writer = _summary_writer(policy, args.vsa, None)
        statements: list[bytes] | None = [] if writer is not None else None
        # What each run's verified statements say a rebuild must give: the attestations' claims are checked by it.
        targets: list[RebuildTarget] = []
        runs = [_audit_one(policy, str(args.policy), folder, statements, targets) for folder in args.evidence]
        if args.bundle:
            runs += audit_bundles(list(args.bundle), policy, progress=terminal_progress(), summaries=statements,
                                  rebuild_targets=targets)
        runs, rebuild_notes = attach_rebuilds(runs, list(args.rebuild), targets)
        report = audit_report(policy, str(args.policy), runs)
        if rebuild_notes:
            report = report.model_copy(update={"notes": [*report.notes, *rebuild_notes]})
        if args.json:
            write_output(args.json, report.model_dump_json(indent=2).encode() + b"\n", option="--json")
        if args.html:
            write_output(args.html, render_audit_html(report).encode(), option="--html")
        if args.markdown:
            write_output(args.markdown, render_audit_markdown(report).encode(), option="--markdown")
        if writer is not None and statements is not None:
            _write_summaries(writer, statements)
        text_stream(args.json, args.html, args.markdown, args.vsa).write(terminal_safe(render_audit_text(report)))
        return EXIT_OK if report.decision == "QUALIFIED" else EXIT_REJECTED

    return guarded(body)


def run_bundle(args: argparse.Namespace) -> int:
    """`qualify bundle` on parsed arguments: pack the run's evidence, policy and trust root into one bundle."""
    def body() -> int:
        require_inputs("--evidence", [args.evidence], "folder")
        check_outputs([("--out", args.out)], [("--policy", args.policy), ("--evidence", args.evidence)])
        policy = _load(args.policy, args.root)
        check_outputs([("--out", args.out)], trust_inputs(policy))
        manifest = write_bundle(policy, args.evidence, args.out)
        print(f"wrote {args.out}: {len(manifest.evidence)} statements, policy {manifest.policy} "
              f"({manifest.policy_sha256[:12]}), trust {', '.join(manifest.trust)}")
        return EXIT_OK

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m desktop_qualify.consumer verify|audit ...`."""
    parser = ArgumentParser(prog="python -m desktop_qualify.consumer")
    sub = parser.add_subparsers(dest="command", required=True)
    build_verify_parser(sub.add_parser("verify", help="the release gate"))
    build_audit_parser(sub.add_parser("audit", help="historical runs"))
    args = parser.parse_args(argv)
    return run_verify(args) if args.command == "verify" else run_audit(args)
