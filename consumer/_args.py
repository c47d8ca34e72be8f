"""`qualify verify` and `qualify audit`'s command lines (light: argparse only)."""

from __future__ import annotations

import argparse
from pathlib import Path

from desktop_qualify.qualify_runtime import ArgumentParser

ROOT_HELP = ("the checkout the policy belongs to, for a policy taken out of it (git show SHA:policies/...): "
             "its relative paths resolve from ROOT/policies (default: the policy file's own folder)")


def build_verify_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or ArgumentParser(prog="qualify verify", description="Is this candidate qualified?")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--evidence", type=Path, required=True, help="the evidence folder of one run")
    parser.add_argument("--artifact", type=Path, action="append", default=[],
                        help="a candidate file (repeatable); every artifact in the evidence must be presented")
    parser.add_argument("--sha", help="the candidate commit; every statement must carry it")
    parser.add_argument("--json", type=Path, help="write the consumer decision (JSON) to this file, replacing it")
    parser.add_argument("--summary", type=Path,
                        help="append GitHub job-summary Markdown to this file (as $GITHUB_STEP_SUMMARY expects)")
    return parser


def build_audit_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or ArgumentParser(prog="qualify audit", description="Check historical runs offline.")
    parser.add_argument("--policy", type=Path, required=True, help="the policy as of the runs")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--evidence", type=Path, nargs="+", required=True, help="one folder per run (one or more)")
    parser.add_argument("--json", type=Path, help="write the audit report (JSON) to this file, replacing it")
    parser.add_argument("--html", type=Path,
                        help="write the report as one self-contained HTML page to this file, replacing it")
    parser.add_argument("--markdown", type=Path, help="write the report as Markdown to this file, replacing it")
    return parser
