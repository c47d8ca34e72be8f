"""Running an installer's own tool (dpkg-deb, unsquashfs, hdiutil, pkgutil, msiexec, an NSIS installer).

Behind one small seam, so that the exact command lines of the macOS and
Windows tools are unit-tested on any host through an injected runner. The
tool gets the minimal environment an app under test gets (none of the job's
secrets), a bounded time, and bounded output; a non-zero exit or a timeout is
an install failure that quotes the tool's own words.

A command is an argv list, run with no shell, or (Windows only) a command
line as one string: msiexec and NSIS installers parse their own command line,
and NSIS requires ``/D=`` last and unquoted even where the path has spaces,
which no argv quoting produces.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from desktop_qualify.evidence_schemas import Code, QualificationError

from ..processes import excerpt, minimal_environment, run_bounded

TOOL_TIMEOUT = 600.0


@dataclass(frozen=True)
class ToolResult:
    exit_code: int | None  # None: killed at the timeout
    stdout: str  # what the tool printed, up to the cap asked for
    stdout_truncated: bool
    output: str  # the tail of stdout and stderr, for the failure message


class ToolRunner(Protocol):
    def __call__(self, command: Sequence[str] | str, *, cwd: Path, timeout: float,
                 stdout_cap: int) -> ToolResult: ...


def run_tool_process(command: Sequence[str] | str, *, cwd: Path, timeout: float,
                     stdout_cap: int = 64 * 1024) -> ToolResult:
    """The real runner: ``run_bounded`` (bounded output, the whole tree killed at the timeout), for an argv or a
    Windows command line alike."""
    if isinstance(command, str) and sys.platform != "win32":
        raise QualificationError(Code.INTERNAL, "a command line as one string is for Windows tools only")
    result = run_bounded(command if isinstance(command, str) else list(command), timeout=timeout, cwd=cwd,
                         env=minimal_environment(cwd), stdout_cap=stdout_cap)
    return ToolResult(result.exit_code, result.stdout.decode("utf-8", errors="replace"),
                      stdout_truncated=result.stdout_truncated, output=excerpt(result.stdout + result.stderr, 1500))


def run_tool(runner: ToolRunner, command: Sequence[str] | str, *, cwd: Path, what: str,
             timeout: float = TOOL_TIMEOUT, max_output: int = 64 * 1024) -> str:
    """Run one installer tool; its stdout on success, else QE_INSTALL_FAILED with its own words."""
    try:
        result = runner(command, cwd=cwd, timeout=timeout, stdout_cap=max_output)
    except OSError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"{what} cannot be run: {exc.strerror or exc}") from exc
    if result.exit_code is None:
        raise QualificationError(Code.INSTALL_FAILED, f"{what} did not finish within {timeout:.0f} s")
    if result.exit_code != 0:
        said = result.output.strip()[-600:] or "no output"
        raise QualificationError(Code.INSTALL_FAILED, f"{what} failed (exit {result.exit_code}): {said}")
    if result.stdout_truncated:
        raise QualificationError(Code.INSTALL_FAILED, f"{what} printed more than {max_output} bytes")
    return result.stdout


def require_tool(name: str, needed: str) -> str:
    """The tool's absolute path from the job's PATH, or QE_ENVIRONMENT saying what needs it and where it comes from."""
    found = shutil.which(name, path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise QualificationError(Code.ENVIRONMENT, f"{needed}; {name} is not installed")
    return found
