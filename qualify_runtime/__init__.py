"""What every entry point shares at run time: exit statuses, the guarded main, the usage-error parser.

Kept apart from ``evidence_schemas`` (pure data) and light on purpose: a
command's ``--help`` imports this and argparse, and nothing that validates,
signs or talks to GitHub.
"""

from ._cli import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, ArgumentParser, guarded
from ._lazy import lazy_attributes

__all__ = ["EXIT_OK", "EXIT_REJECTED", "EXIT_USAGE", "ArgumentParser", "guarded", "lazy_attributes"]
