"""What every entry point shares at run time: exit statuses, the guarded main, the usage-error parser.

Kept apart from ``evidence_schemas`` (pure data) and light on purpose: a
command's ``--help`` imports this and argparse, and nothing that validates,
signs or talks to GitHub.
"""

from ._cli import EXIT_OK, EXIT_REJECTED, EXIT_USAGE, ArgumentParser, guarded
from ._paths import distinct_outputs, refuse_repeats, require_inputs
from ._terminal import terminal_field, terminal_safe
from ._version import VersionAction, tool_version

__all__ = [
    "terminal_field",
    "terminal_safe",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_USAGE",
    "ArgumentParser",
    "VersionAction",
    "distinct_outputs",
    "guarded",
    "refuse_repeats",
    "require_inputs",
    "tool_version",
]
