"""Reference desktop skill host (first cut).

Public surface: ``__version__`` and ``main`` (the command-line entry point).
Everything else lives in private modules.
"""

from collections.abc import Sequence

from skillhost._version import __version__

__all__ = ["__version__", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    from skillhost._cli import main as _main  # noqa: PLC0415 - keep the package import light

    return _main(argv)
