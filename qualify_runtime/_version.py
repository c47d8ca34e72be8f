"""The tool's version: one source, ``desktop_qualify.__version__``, which pyproject.toml reads for the build."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


def tool_version() -> str:
    """desktop_qualify.__version__, which pyproject.toml takes as the distribution's version."""
    from desktop_qualify import __version__

    return __version__


class VersionAction(argparse.Action):
    """``--version``: print ``PROG VERSION`` and exit 0, reading the version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print the tool's version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        sys.stdout.write(f"{parser.prog} {tool_version()}\n")
        parser.exit(0)
