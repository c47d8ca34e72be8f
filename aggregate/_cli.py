"""`qualify aggregate` / `python -m desktop_qualify.aggregate`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, EXIT_REJECTED, guarded, require_inputs, terminal_safe

from ._aggregate import aggregate
from ._args import build_parser


def run(args: argparse.Namespace) -> int:
    """`qualify aggregate` on parsed arguments: write the aggregate, or print why not; the exit status."""
    def body() -> int:
        require_inputs("--evidence", args.evidence, "folder")
        result = aggregate(load_policy(args.policy), args.evidence, args.out)
        if result.written is None:
            print("aggregate refused: the platform statements do not qualify", file=sys.stderr)
            for reason in result.reasons:
                where = f" [{reason.platform}]" if reason.platform else ""
                lead = "  " if reason.cause == "root" else "      which leaves: "
                print(terminal_safe(f"{lead}{reason.code.value}{where}: {reason.message}"), file=sys.stderr)
            return EXIT_REJECTED
        print(f"aggregated {result.written}")
        return EXIT_OK

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m desktop_qualify.aggregate`: parse ``argv`` and run; the exit status."""
    return run(build_parser().parse_args(argv))
