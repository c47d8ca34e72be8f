"""Child processes of the producer: bounded runs whose whole tree dies with them, and a display for GUI apps."""

from __future__ import annotations

from ._display import display_env
from ._process import ProcessResult, excerpt, minimal_environment, run_bounded

__all__ = ["ProcessResult", "display_env", "excerpt", "minimal_environment", "run_bounded"]
