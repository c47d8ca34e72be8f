"""What every entry point shares at run time: exit statuses, the guarded main, the usage-error parser,
the one output rule.

Kept apart from ``evidence_schemas`` (pure data) and light on purpose: a
command's ``--help`` imports this and argparse, and nothing that validates,
signs or talks to GitHub.
"""

from ._cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, ArgumentParser, guarded
from ._outputs import STDOUT, check_outputs, is_stdout, refuse_unsafe_output, text_stream
from ._paths import distinct_outputs, refuse_repeats, require_inputs
from ._terminal import terminal_field, terminal_safe
from ._version import VersionAction, tool_version

__all__ = [
    "terminal_field",
    "terminal_safe",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REJECTED",
    "EXIT_USAGE",
    "STDOUT",
    "ArgumentParser",
    "VersionAction",
    "check_outputs",
    "distinct_outputs",
    "guarded",
    "is_stdout",
    "refuse_unsafe_output",
    "refuse_repeats",
    "require_inputs",
    "text_stream",
    "tool_version",
]
