"""The producer's command lines, `qualify produce` and `qualify gate` (light: argparse only)."""

from __future__ import annotations

import argparse
from pathlib import Path

from desktop_qualify.qualify_runtime import ArgumentParser

# The file `qualify gate` writes into --out.
RECORD_NAME = "source-gate.json"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify produce`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify produce",
                                      description="one platform job: gate to signed statement")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--platform", choices=["linux", "macos", "windows"], required=True,
                        help="the platform this job qualifies (must be this machine's)")
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder: evidence/, artifacts/, records/ and work/ are written under it")
    parser.add_argument("--run-id", help="local run id shared by every platform job of one run "
                        "(default: $QUALIFY_RUN_ID, else a new one)")
    parser.add_argument("--previous-bundle", type=Path,
                        help="the update journey ([update]): the last qualified release's qualification bundle, "
                             "audited as `qualify audit --bundle` would before the job starts")
    parser.add_argument("--previous-artifact", type=Path,
                        help="the update journey: that release's artifact for this platform (the audited bytes)")
    parser.add_argument("--unsigned", action="store_true",
                        help="GitHub mode's run job: run every stage, sign nothing and read no key; write the "
                             "unsigned run to OUT/unsigned/ and the artifact to OUT/artifacts/ for `qualify sign`")
    return parser


def build_sign_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify sign`'s arguments: the signing job that turns a run job's unsigned run into a statement."""
    parser = parser or ArgumentParser(prog="qualify sign",
                                      description="the signing job: re-check an unsigned run and sign it")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--platform", choices=["linux", "macos", "windows"], required=True,
                        help="the platform whose run this job signs (any machine may sign it)")
    parser.add_argument("--run", type=Path, required=True,
                        help="the run job's output: unsigned/platform-PLATFORM.run.json and artifacts/ under it")
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder: the signed statement and provenance go to evidence/, the artifact to "
                             "artifacts/")
    return parser


def build_gate_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify gate`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify gate",
                                      description="the GitHub-mode source gate on its own")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file (GitHub mode)")
    parser.add_argument("--out", type=Path, required=True, help=f"folder to write {RECORD_NAME} into")
    return parser


