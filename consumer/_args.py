"""`qualify verify` and `qualify audit`'s command lines (light: argparse only)."""

from __future__ import annotations

import argparse
from pathlib import Path

from desktop_qualify.qualify_runtime import ArgumentParser

ROOT_HELP = ("the checkout the policy belongs to, for a policy taken out of it (git show SHA:policies/...): "
             "its relative paths resolve from ROOT/policies (default: the policy file's own folder)")

_VSA = ("a signed SLSA Verification Summary Attestation per candidate artifact (JSON Lines, one a line; "
        "the policy's verifier key or, in GitHub mode, this workflow's identity signs it)")
# Every output option: '-' is standard output (the verdict text then goes to standard error).
_OUT = "write {} to this file, replacing it; - for standard output"


def build_verify_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify verify`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify verify", description="Is this candidate qualified?")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--evidence", type=Path, help="the evidence folder of one run")
    source.add_argument("--from-attestations", action="store_true",
                        help="GitHub mode: read the statements from the policy repository's attestations, by the "
                             "--artifact files' digests (GITHUB_API_URL, GITHUB_TOKEN), instead of a folder")
    parser.add_argument("--artifact", type=Path, action="append", default=[],
                        help="a candidate file (repeatable); every artifact in the evidence must be presented")
    parser.add_argument("--sha", help="the candidate commit; every statement must carry it")
    parser.add_argument("--json", type=Path, help=_OUT.format("the consumer decision (JSON)"))
    parser.add_argument("--summary", type=Path,
                        help="append GitHub job-summary Markdown to this file (as $GITHUB_STEP_SUMMARY expects); - for "
                             "standard output")
    parser.add_argument("--vsa", type=Path, help=_OUT.format(_VSA))
    parser.add_argument("--release-tag",
                        help="GitHub mode: the release whose assets the candidates are; each summary's resourceUri "
                             "is then the asset's download URL (default: the artifact's file name)")
    return parser


def build_audit_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify audit`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify audit", description="Check historical runs offline.")
    parser.add_argument("--policy", type=Path, required=True,
                        help="the policy as of the runs (folders), and the anchor a bundle's own policy must match")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--evidence", type=Path, nargs="+", default=[],
                        help="one folder per run (one or more; repeatable, every value kept)")
    parser.add_argument("--bundle", type=Path, nargs="+", default=[],
                        help="qualification bundles (*.qualify-bundle.zip), each judged under its own policy "
                             "(repeatable)")
    parser.add_argument("--rebuild", type=Path, nargs="+", default=[],
                        help="rebuild attestations (qualify rebuild --attest), each shown beside the run it rebuilt "
                             "once its signature verifies; they never change a decision")
    parser.add_argument("--json", type=Path, help=_OUT.format("the audit report (JSON)"))
    parser.add_argument("--html", type=Path,
                        help=_OUT.format("the report as one self-contained HTML page"))
    parser.add_argument("--markdown", type=Path, help=_OUT.format("the report as Markdown"))
    parser.add_argument("--vsa", type=Path, help=_OUT.format(_VSA + " of every run audited"))
    return parser


def build_verify_vsa_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of `qualify verify-vsa` (added to ``parser`` when given)."""
    parser = parser or ArgumentParser(prog="qualify verify-vsa",
                                      description="Check the gate's Verification Summary Attestation offline.")
    parser.add_argument("--policy", type=Path, required=True,
                        help="the committed policy: names who may sign the summary, and its digest must be the one "
                             "the summary names")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--artifact", type=Path, required=True, help="the artifact file the summary must name")
    parser.add_argument("--level", metavar="LEVEL",
                        help="the verifiedLevels entry every summary of the artifact must assert: "
                             "DESKTOP_QUALIFIED_RELEASE_GATE, DESKTOP_QUALIFIED_LOCAL_CHECK or DESKTOP_QUALIFIED_AUDIT "
                             "(default: the gate's level for the policy's mode, so an audit's summary is refused)")
    parser.add_argument("vsa", type=Path, metavar="VSA",
                        help="the summaries file (JSON Lines) that qualify verify --vsa wrote")
    return parser


def build_bundle_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify bundle`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify bundle", description="Pack one run for auditors.")
    parser.add_argument("--policy", type=Path, required=True, help="the policy the run was judged by")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--evidence", type=Path, required=True, help="the evidence folder of the run")
    parser.add_argument("--out", type=Path, required=True,
                        help="the bundle to write (a name ending in .qualify-bundle.zip), replacing it")
    return parser


def build_readback_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify readback`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify readback", description="Check a published release's assets.")
    parser.add_argument("--policy", type=Path, required=True, help="the anchor the release's bundle must match")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--repository", required=True, help="OWNER/REPO of the release")
    parser.add_argument("--tag", required=True, help="the release's tag")
    return parser
