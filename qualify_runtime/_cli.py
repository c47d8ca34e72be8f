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
# Interrupted (Ctrl-C): 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED = 130
# A negative number is a value, not an option.
_NUMBER = re.compile(r"^-\d+(\.\d*)?$")


def configure_logging() -> None:
    level = os.environ.get("QUALIFY_LOGLEVEL", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), format="%(name)s: %(message)s")


def guarded(body: Callable[[], int]) -> int:
    """Run a command's ``body`` and return its exit status; never a traceback.

    A QualificationError prints its diagnostics and exits with its status; an interruption (Ctrl-C) is
    QE_INTERRUPTED with exit status 130, and any other exception a QE_INTERNAL line (the traceback only with
    QUALIFY_DEBUG=1).
    """
    configure_logging()
    try:
        return body()
    except QualificationError as exc:
        print(terminal_safe(exc.diagnostics()), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{Code.INTERRUPTED.value}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get("QUALIFY_DEBUG") == "1":
            traceback.print_exc()
        print(f"{Code.INTERNAL.value}: unexpected {type(exc).__name__}: {str(exc)[:300]} "
              "(set QUALIFY_DEBUG=1 for details)", file=sys.stderr)
        return EXIT_USAGE


def _given_once(action: argparse.Action, parser: argparse.ArgumentParser, option_string: str | None) -> None:
    """Refuse a second occurrence of a single-value option in this parse (QE_USAGE, naming it)."""
    given: set[str] = getattr(parser, "_given_options", set())
    if action.dest in given:
        name = "/".join(action.option_strings) or action.dest
        parser.error(f"{name} given twice; it is given at most once (the repeatable options are marked ... in "
                     "docs/cli.md)")
    given.add(action.dest)
    parser._given_options = given  # type: ignore[attr-defined]


class _StoreOnce(argparse._StoreAction):
    """``store`` that refuses a repeat: ``--policy A --policy B`` is an error, never a silent B."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _given_once(self, parser, option_string)
        super().__call__(parser, namespace, values, option_string)


class _StoreConstOnce(argparse._StoreConstAction):
    """``store_const`` / ``store_true`` / ``store_false`` that refuses a repeat."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        _given_once(self, parser, option_string)
        super().__call__(parser, namespace, values, option_string)


_FLAGS = {"store_true": True, "store_false": False}


def repeatable(action: argparse.Action) -> bool:
    """Whether an option may be given more than once (each value kept): ``append``, ``extend`` and ``count``."""
    return isinstance(action, argparse._AppendAction | argparse._ExtendAction | argparse._CountAction)


def _one_rule(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The repetition rule for an option: a single value refuses a second; a list of values (``nargs``) extends."""
    if not args or not all(isinstance(a, str) and a.startswith("-") for a in args):
        return kwargs  # a positional argument
    action = kwargs.get("action", "store")
    kwargs = dict(kwargs)
    if action == "store" and kwargs.get("nargs") in ("+", "*"):
        kwargs["action"] = "extend"  # --evidence A B --evidence C is A, B and C, never C alone
    elif action == "store" and kwargs.get("nargs") is None:
        kwargs["action"] = _StoreOnce
    elif action in _FLAGS:
        kwargs.update(action=_StoreConstOnce, const=_FLAGS[action])
        kwargs.setdefault("default", not _FLAGS[action])
    elif action == "store_const":
        kwargs.update(action=_StoreConstOnce)
    return kwargs


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the contract's usage error: a QE_USAGE line and exit status 2.

    Options are spelled in full (``allow_abbrev=False``: ``--evid`` is not
    ``--evidence``), and an option this parser does not know is named as
    unknown before anything else is checked, so a mistyped ``--evidnce`` is
    not reported as a missing ``--evidence``.

    One repetition rule (docs/cli.md, "Repeated options"): an option that takes
    one value (or a flag) refuses a second occurrence, naming it; ``append``
    options and options taking a list (``nargs``, which then extend) are the
    repeatable ones, and the contract block marks them ``...``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        self._known_options: set[str] = set()
        self._has_subcommands = False
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """Add an option under the repetition rule, remembering its spellings as known."""
        action = super().add_argument(*args, **_one_rule(args, kwargs))
        self._known_options.update(action.option_strings)
        return action

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        """A group whose options are remembered as known too."""
        group = super().add_mutually_exclusive_group(**kwargs)
        parser = self
        original = group.add_argument

        def add_argument(*args: Any, **kw: Any) -> argparse.Action:
            action = original(*args, **_one_rule(args, kw))
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
        self._given_options: set[str] = set()
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
