"""The one place a command-line entry point turns errors into exit statuses.

Only :class:`QualificationError` is expected; anything else is a bug, reported
in one line (with the traceback only when QUALIFY_DEBUG=1), never as a raw
traceback that a consumer might mistake for a verdict.

The error types come from ``qualify_errors``, a leaf with no pydantic behind
it, so ``--help`` still pays for argparse and an enum only.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from desktop_qualify.qualify_errors import Code, QualificationError

from ._terminal import terminal_safe

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2
# A negative number is a value, not an option.
_NUMBER = re.compile(r"^-\d+(\.\d*)?$")


def configure_logging() -> None:
    level = os.environ.get("QUALIFY_LOGLEVEL", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), format="%(name)s: %(message)s")


def guarded(body: Callable[[], int]) -> int:
    """Run a command's ``body`` and return its exit status; never a traceback.

    A QualificationError prints its diagnostics and exits with its status; an interruption is QE_USAGE, and any
    other exception a QE_INTERNAL line (the traceback only with QUALIFY_DEBUG=1).
    """
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
    """argparse with the contract's usage error: a QE_USAGE line and exit status 2.

    Options are spelled in full (``allow_abbrev=False``: ``--evid`` is not
    ``--evidence``), and an option this parser does not know is named as
    unknown before anything else is checked, so a mistyped ``--evidnce`` is
    not reported as a missing ``--evidence``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        self._known_options: set[str] = set()
        self._has_subcommands = False
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """Add an option, remembering its spellings as known."""
        action = super().add_argument(*args, **kwargs)
        self._known_options.update(action.option_strings)
        return action

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        """A group whose options are remembered as known too."""
        group = super().add_mutually_exclusive_group(**kwargs)
        parser = self
        original = group.add_argument

        def add_argument(*args: Any, **kw: Any) -> argparse.Action:
            action = original(*args, **kw)
            parser._known_options.update(action.option_strings)
            return action

        group.add_argument = add_argument  # type: ignore[method-assign]
        return group

    def add_subparsers(self, **kwargs: Any) -> Any:
        """Subcommands; unknown options are then left to the subcommand's parser."""
        self._has_subcommands = True
        return super().add_subparsers(**kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """argparse's parse, after refusing an unknown option (without subcommands)."""
        given = list(sys.argv[1:] if args is None else args)
        if not self._has_subcommands:
            self._refuse_unknown(given)
        return super().parse_known_args(given, namespace)

    def _refuse_unknown(self, given: list[str]) -> None:
        for arg in given:
            if arg == "--":
                break
            name = arg.partition("=")[0]
            if arg.startswith("-") and len(arg) > 1 and not _NUMBER.match(arg) and name not in self._known_options:
                close = difflib.get_close_matches(name, sorted(self._known_options), n=1)
                self.error(f"unknown option {name}" + (f" (did you mean {close[0]}?)" if close else ""))

    def error(self, message: str) -> NoReturn:
        """Print the usage and a QE_USAGE line, and exit with status 2."""
        self.print_usage(sys.stderr)
        print(f"{Code.USAGE.value}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
