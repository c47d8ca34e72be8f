"""`qualify produce` / `python -m producer`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from evidence_schemas import EXIT_OK, EXIT_REJECTED, ArgumentParser, guarded
from qualify_policy import load_policy

from ._pipeline import produce


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or ArgumentParser(prog="qualify produce", description=__doc__)
    parser.add_argument("--policy", type=Path, required=True, help="the committed policy file")
    parser.add_argument("--platform", choices=["linux", "macos", "windows"], required=True)
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder: evidence/, artifacts/, records/ and work/ are written under it")
    parser.add_argument("--run-id", help="local run id shared by every platform job of one run "
                        "(default: $QUALIFY_RUN_ID, else a new one)")
    return parser


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        result = produce(load_policy(args.policy), args.platform, args.out, run_id=args.run_id)
        if result.passed:
            print(f"produced {result.statement}")
            return EXIT_OK
        print(f"produced {result.statement}, but these stages failed: {', '.join(result.failures)}")
        return EXIT_REJECTED

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))
