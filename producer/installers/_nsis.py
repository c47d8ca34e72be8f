"""Kind ``nsis`` (Windows): the NSIS installer itself, silent (``/S``), told its folder (``/D=<prefix>``).

NSIS reads ``/D=`` only as the last item of its command line, unquoted, even
when the path has spaces (everything after ``/D=`` is the path), so the
command is one string, never argv-quoted. The private copy keeps its
``.exe`` name, which Windows needs to start it.

Unlike every other kind this one runs code of the artifact under
qualification at install time: the installer's script may also write
registry keys or shortcuts outside the prefix. The producer can direct the
files into the prefix and audit what lands there; it cannot stop the script
from doing more. A runner that qualifies an NSIS installer should be one the
job can throw away.
"""

from __future__ import annotations

from pathlib import Path

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError

from ._tools import ToolRunner, run_tool, run_tool_process


def silent_install_command(copy: Path, prefix: Path) -> str:
    if '"' in str(copy) or '"' in str(prefix):
        raise QualificationError(Code.INSTALL_FAILED, "an install path holds a double quote")
    return f'"{copy}" /S /D={prefix}'


class NsisInstaller:
    kind: InstallerKind = "nsis"

    def __init__(self, runner: ToolRunner = run_tool_process) -> None:
        self._runner = runner

    def install(self, copy: Path, prefix: Path) -> None:
        if not copy.name.lower().endswith(".exe"):
            raise QualificationError(Code.INSTALL_FAILED, f"an NSIS installer must end in .exe, not {copy.name!r}")
        run_tool(self._runner, silent_install_command(copy, prefix), cwd=prefix.parent, what="the NSIS installer")
