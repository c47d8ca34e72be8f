"""`qualify aggregate`'s command line (light: argparse only)."""

from __future__ import annotations

import argparse
from pathlib import Path

from desktop_qualify.qualify_runtime import ArgumentParser


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """`qualify aggregate`'s arguments, added to ``parser`` (a subcommand's) or to a parser of its own."""
    parser = parser or ArgumentParser(prog="qualify aggregate",
                                      description="verify platform statements, sign the aggregate")
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--evidence", type=Path, required=True, action="append",
                        help="a folder of platform statements (repeatable: one per platform job's download)")
    parser.add_argument("--out", type=Path, required=True, help="where aggregate.dsse.json is written")
    return parser


