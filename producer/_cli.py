"""`qualify produce` / `python -m desktop_qualify.producer`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, EXIT_REJECTED, guarded

from ._args import build_parser
from ._pipeline import produce


def run(args: argparse.Namespace) -> int:
    """`qualify produce` on parsed arguments: one platform job; 0 only when every stage passed."""
    def body() -> int:
        result = produce(load_policy(args.policy), args.platform, args.out, run_id=args.run_id)
        if result.passed:
            print(f"produced {result.statement}")
            return EXIT_OK
        print(f"produced {result.statement}, but these stages failed: {', '.join(result.failures)}")
        return EXIT_REJECTED

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m desktop_qualify.producer`: parse ``argv`` and run; the exit status."""
    return run(build_parser().parse_args(argv))
