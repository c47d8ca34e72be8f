"""Kind ``pkg`` (macOS): a flat installer package expanded by ``pkgutil --expand-full``, never installed.

``--expand-full`` writes the package's parts and unpacks each component's
payload into ``<component>.pkg/Payload/`` (a component package: ``Payload/``)
without running its scripts or touching /Applications; the policy's
executable is a path in that tree. pkgutil creates the destination itself
and refuses one that exists, so it is handed the prefix's own path.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import InstallerKind

from ._tools import ToolRunner, run_tool, run_tool_process

PKGUTIL = "/usr/sbin/pkgutil"


def expand_argv(copy: Path, prefix: Path) -> list[str]:
    return [PKGUTIL, "--expand-full", str(copy), str(prefix)]


class PkgInstaller:
    kind: InstallerKind = "pkg"

    def __init__(self, runner: ToolRunner = run_tool_process) -> None:
        self._runner = runner

    def install(self, copy: Path, prefix: Path) -> None:
        prefix.rmdir()  # empty and fresh: pkgutil makes it again
        run_tool(self._runner, expand_argv(copy, prefix), cwd=prefix.parent, what="pkgutil --expand-full")
        if not prefix.is_dir():
            prefix.mkdir()  # a package pkgutil expanded to nothing: the caller finds no executable
