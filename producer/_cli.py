"""`qualify produce` / `python -m desktop_qualify.producer`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_runtime import EXIT_OK, EXIT_REJECTED, guarded, require_inputs

from ._args import build_parser
from ._pipeline import produce
from ._result import ProduceResult
from ._sign_run import sign_run
from .previous import PreviousInput


def run(args: argparse.Namespace) -> int:
    """`qualify produce` on parsed arguments: one platform job; 0 only when every stage passed."""
    def body() -> int:
        if (args.previous_bundle is None) != (args.previous_artifact is None):
            raise QualificationError(Code.USAGE, "--previous-bundle and --previous-artifact go together")
        previous = (None if args.previous_bundle is None else
                    PreviousInput(bundle=args.previous_bundle, artifact=args.previous_artifact))
        result = produce(load_policy(args.policy), args.platform, args.out, run_id=args.run_id, previous=previous,
                         sign=not args.unsigned)
        return _said("produced", result)

    return guarded(body)


def _said(what: str, result: ProduceResult) -> int:
    if result.passed:
        print(f"{what} {result.statement}")
        return EXIT_OK
    print(f"{what} {result.statement}, but these stages failed: {', '.join(result.failures)}")
    return EXIT_REJECTED


def run_sign(args: argparse.Namespace) -> int:
    """`qualify sign` on parsed arguments: 0 when the signed run's every stage passed, 1 when one failed."""
    def body() -> int:
        require_inputs("--run", [args.run], "folder")
        return _said("signed", sign_run(load_policy(args.policy), args.platform, args.run, args.out))

    return guarded(body)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m desktop_qualify.producer`: parse ``argv`` and run; the exit status."""
    return run(build_parser().parse_args(argv))
