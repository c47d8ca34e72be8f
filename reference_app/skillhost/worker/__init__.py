"""The worker process external skills run in, one per run.

It loads nothing of the app but this subpackage and the OS sandbox, and no
third-party library (held by tests/reference_app/test_layering.py): resource
limits and the OS sandbox first, then the handler, re-checked with the static
rules the host's source audit uses (``check_source``), under allow-listed
builtins and module views (``_handler_sandbox``). ``OPERATIONS`` are the
hostile worker's attempts for the journey's kernel steps; ``TMP_ROUND_TRIP`` its
use of its own folder under the same sandbox.
"""

from skillhost.worker._handler_rules import MAX_SOURCE, check_source
from skillhost.worker._hostile import OPERATIONS, TMP_ROUND_TRIP
from skillhost.worker._main import main

__all__ = ["MAX_SOURCE", "OPERATIONS", "TMP_ROUND_TRIP", "check_source", "main"]
