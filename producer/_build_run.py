"""One run of the build command, shared by the build stage (``_build``) and its second build (``_reproduce``).

Its own module so that neither of the two imports the other: ``_build`` starts the second build, and
``_reproduce`` only runs the callable it is given and reads what that returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuildRun:
    """One run of the policy's build command: where it ran and the one output file it left."""

    app_dir: Path
    output: Path
    suffix: str
    env: dict[str, str]
    values: dict[str, str]
    # The build's own folder (source/, out/, build-tmp/, home/ inside) and the build information it read.
    root: Path
    build_info: Path
