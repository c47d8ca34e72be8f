"""The one place a command-line entry point turns errors into exit statuses.

Only :class:`QualificationError` is expected; anything else is a bug, reported
in one line (with the traceback only when QUALIFY_DEBUG=1), never as a raw
traceback that a consumer might mistake for a verdict.

The error types come from ``qualify_errors``, a leaf with no pydantic behind
it, so ``--help`` still pays for argparse and an enum only.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from desktop_qualify.qualify_errors import Code, QualificationError

from ._terminal import terminal_safe

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def configure_logging() -> None:
    level = os.environ.get("QUALIFY_LOGLEVEL", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), format="%(name)s: %(message)s")


def guarded(body: Callable[[], int]) -> int:
    configure_logging()
    try:
        return body()
    except QualificationError as exc:
        print(terminal_safe(exc.diagnostics()), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{Code.USAGE.value}: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if os.environ.get("QUALIFY_DEBUG") == "1":
            traceback.print_exc()
        print(f"{Code.INTERNAL.value}: unexpected {type(exc).__name__}: {str(exc)[:300]} "
              "(set QUALIFY_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_USAGE


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the contract's usage error: a QE_USAGE line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{Code.USAGE.value}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
