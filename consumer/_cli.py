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
    AuditReport,
    Code,
    ConsumerDecision,
    QualificationError,
    utc_now,
)
from desktop_qualify.qualify_files import append_text, write_atomic
from desktop_qualify.qualify_policy import Policy, load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, ArgumentParser, guarded
from desktop_qualify.qualify_trust import verifier_for
from desktop_qualify.qualify_verify import Expectations, Verdict, verify_release

from ._args import build_audit_parser, build_verify_parser
from ._decide import decide
from ._freshness import check_candidate_is_main_head
from ._render import render_audit_html, render_markdown, render_text

_SHA = re.compile(GIT_SHA_PATTERN)


def run_verify(args: argparse.Namespace) -> int:
    def body() -> int:
        if args.sha is not None and not _SHA.match(args.sha):
            raise QualificationError(Code.USAGE, f"--sha {args.sha[:80]!r} is not a full lowercase commit id")
        policy = load_policy(args.policy)
        verdict = verify_release(policy, [args.evidence], list(args.artifact), candidate_sha=args.sha)
        note = check_candidate_is_main_head(policy, verdict.sha, os.environ, verdict.findings)
        decision = decide(verdict, mode="release-gate", notes=[note])
        # Outputs first: a verdict is printed only once everything it reports has been written.
        if args.json:
            write_atomic(args.json, decision.model_dump_json(indent=2).encode() + b"\n")
        if args.summary:
            append_text(args.summary, render_markdown(decision))
        sys.stdout.write(render_text(decision))
        return EXIT_OK if decision.decision == "QUALIFIED" else EXIT_REJECTED

    return guarded(body)


def _audit_one(policy: Policy, folder: Path) -> ConsumerDecision:
    """One historical run; a folder that cannot be read is a rejected run, not the end of the audit."""
    notes = ["audit: candidate files not checked; head of main not required"]
    try:
        verdict = verify_release(policy, [folder], None)
    except QualificationError as exc:
        if exc.exit_status != EXIT_USAGE or exc.code in (Code.POLICY_INVALID, Code.KEY_INVALID):
            raise
        verdict = Verdict(Expectations.from_policy(policy), verifier_for(policy))
        verdict.findings.add(Code.EVIDENCE_MISSING, f"{folder}: {exc.message}")
    return decide(verdict, mode="audit", notes=notes)


def run_audit(args: argparse.Namespace) -> int:
    def body() -> int:
        policy = load_policy(args.policy)
        decisions = [_audit_one(policy, folder) for folder in args.evidence]
        report = AuditReport(policy_sha256=policy.sha256, checked_at=utc_now(), runs=decisions,
                             evidence=[str(f)[:4000] for f in args.evidence])
        if args.json:
            write_atomic(args.json, report.model_dump_json(indent=2).encode() + b"\n")
        if args.html:
            write_atomic(args.html, render_audit_html(report).encode())
        for folder, decision in zip(args.evidence, decisions, strict=True):
            sys.stdout.write(f"== {folder}\n{render_text(decision)}")
        return EXIT_OK if all(d.decision == "QUALIFIED" for d in decisions) else EXIT_REJECTED

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m desktop_qualify.consumer verify|audit ...`."""
    parser = ArgumentParser(prog="python -m desktop_qualify.consumer")
    sub = parser.add_subparsers(dest="command", required=True)
    build_verify_parser(sub.add_parser("verify", help="the release gate"))
    build_audit_parser(sub.add_parser("audit", help="historical runs"))
    args = parser.parse_args(argv)
    return run_verify(args) if args.command == "verify" else run_audit(args)
