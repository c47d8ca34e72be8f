"""Kind ``deb``: a Debian package's files, extracted by ``dpkg-deb -x`` into the prefix, never installed.

No maintainer script runs and nothing reaches dpkg's database or the
system's folders: ``-x`` only extracts the data member. dpkg-deb keeps what
the package says (devices, set-id bits, hard links, absolute link targets)
where the hardened unpack would not, so the data member's listing
(``--fsys-tarfile``, the same private copy) is read first under the
unpack's rules and caps; only a package that passes is extracted, and what
was extracted is audited again by the caller.

A package whose links are absolute (``/usr/share/...``) is refused: in a
private prefix such a link would name the host's file, not the package's.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import audit_tar_listing

from ..processes import excerpt, minimal_environment
from ._tools import TOOL_TIMEOUT, ToolRunner, require_tool, run_tool, run_tool_process

# GNU tar pads its output to whole records (10 KiB by default); a listing ends with at most that.
_MAX_TRAILER = 1024 * 1024
_NEEDED = "the deb installer needs dpkg-deb (Debian and Ubuntu: apt-get install dpkg)"


def fsys_tarfile_argv(dpkg_deb: str, copy: Path) -> list[str]:
    return [dpkg_deb, "--fsys-tarfile", str(copy)]


def extract_argv(dpkg_deb: str, copy: Path, prefix: Path) -> list[str]:
    return [dpkg_deb, "-x", str(copy), str(prefix)]


def _drain_trailer(stream: IO[bytes]) -> None:
    """Read the tar's end padding, so dpkg-deb is not cut off mid-write; more than a trailer is refused."""
    left = _MAX_TRAILER
    while chunk := stream.read(1 << 16):
        left -= len(chunk)
        if left < 0:
            raise QualificationError(Code.INSTALL_FAILED, "the package's data member runs on past its end")


def audit_listing(dpkg_deb: str, copy: Path, *, timeout: float = TOOL_TIMEOUT) -> int:
    """Stream the package's data tar out of dpkg-deb and check every member; the member count."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(fsys_tarfile_argv(dpkg_deb, copy), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=errors, cwd=copy.parent,
                                env=minimal_environment(copy.parent))
        timer = threading.Timer(timeout, proc.kill)  # a wedged tool must not hang the job
        timer.start()
        try:
            if proc.stdout is None:  # pragma: no cover - the pipe was requested
                raise RuntimeError("dpkg-deb's output pipe is missing")
            with proc.stdout:
                count = audit_tar_listing(proc.stdout)
                _drain_trailer(proc.stdout)
            status = proc.wait(timeout=timeout)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        errors.seek(0)
        said = excerpt(errors.read(64 * 1024), 600).strip()
    if status != 0:
        # The listing was read to its end; dpkg-deb must also agree that the package is whole.
        raise QualificationError(Code.INSTALL_FAILED, f"dpkg-deb cannot read the package (exit {status}): "
                                                      f"{said or 'no output'}")
    return count


class DebInstaller:
    kind: InstallerKind = "deb"

    def __init__(self, runner: ToolRunner = run_tool_process) -> None:
        self._runner = runner

    def install(self, copy: Path, prefix: Path) -> None:
        dpkg_deb = require_tool("dpkg-deb", _NEEDED)
        audit_listing(dpkg_deb, copy)
        run_tool(self._runner, extract_argv(dpkg_deb, copy, prefix), cwd=prefix.parent, what="dpkg-deb -x")
