"""Kind ``deb``: a Debian package's files, written into the prefix by the hardened unpack, never installed.

No maintainer script runs and nothing reaches dpkg's database or the
system's folders. ``dpkg-deb --fsys-tarfile`` (on the private copy) does the
one thing only dpkg knows: it finds the data member in the ``ar`` archive and
decompresses it (gzip, xz, zstd...), streaming the plain data tar. That tar
is read by one parser only, Python's tarfile under the unpack's bounds, twice:
first its whole listing is checked and nothing is written
(``audit_tar_listing``), then the same stream (``--fsys-tarfile`` again, the
same immutable copy) is written into the prefix by ``unpack_package_tar``,
which checks every member again as it goes. What was written is audited again
by the caller.

Why not ``dpkg-deb -x`` after the check: it hands the tar to GNU tar, a
second parser. Where the two disagree about a header (a ``+12`` size field is
10 bytes to tarfile and 3446 to GNU tar's old base-64 form; a bad checksum
ends the archive for tarfile, GNU tar skips it and reads on; a GNU header's
prefix field), GNU tar extracts members the check never saw: set-id files,
devices (the producer runs as root), an absolute link with a file written
through it. Refusing each known disagreement would leave the next unknown one
open; with one parser, the members checked are the members written, whatever
the headers say. Headers whose numbers two tar readers could read two ways are
still refused outright (the unpack's header rules), so such a package fails
loudly rather than installing what one reader saw.

The unpack's rules hold: no devices, fifos, hard links or set-id bits (refused,
not stripped), no name that climbs out or aliases another, the size and
member caps; modes are kept without set-id bits, owners are not (the files
belong to the producer). A link must be relative and stay inside the
installed tree: an absolute one (``/usr/share/...``) would name the host's
file in a private prefix, not the package's.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import audit_tar_listing, unpack_package_tar

from ..processes import excerpt, minimal_environment
from ._tools import TOOL_TIMEOUT, require_tool

# GNU tar pads its output to whole records (10 KiB by default); a listing ends with at most that.
_MAX_TRAILER = 1024 * 1024
_NEEDED = "the deb installer needs dpkg-deb (Debian and Ubuntu: apt-get install dpkg)"


def fsys_tarfile_argv(dpkg_deb: str, copy: Path) -> list[str]:
    return [dpkg_deb, "--fsys-tarfile", str(copy)]


def _drain_trailer(stream: IO[bytes]) -> None:
    """Read the tar's end padding, so dpkg-deb is not cut off mid-write; more than a trailer is refused."""
    left = _MAX_TRAILER
    while chunk := stream.read(1 << 16):
        left -= len(chunk)
        if left < 0:
            raise QualificationError(Code.INSTALL_FAILED, "the package's data member runs on past its end")


def read_data_tar(dpkg_deb: str, copy: Path, consume: Callable[[IO[bytes]], int], *,
                  timeout: float = TOOL_TIMEOUT) -> int:
    """Stream the package's plain data tar out of dpkg-deb into ``consume``; what ``consume`` returns.

    dpkg-deb must also agree, by its exit status, that the package is whole.
    """
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
                result = consume(proc.stdout)
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
        raise QualificationError(Code.INSTALL_FAILED, f"dpkg-deb cannot read the package (exit {status}): "
                                                      f"{said or 'no output'}")
    return result


def audit_listing(dpkg_deb: str, copy: Path, *, timeout: float = TOOL_TIMEOUT) -> int:
    """Check every member of the package's data tar, writing nothing; the member count."""
    return read_data_tar(dpkg_deb, copy, audit_tar_listing, timeout=timeout)


class DebInstaller:
    kind: InstallerKind = "deb"

    def install(self, copy: Path, prefix: Path) -> None:
        dpkg_deb = require_tool("dpkg-deb", _NEEDED)
        listed = audit_listing(dpkg_deb, copy)
        written = read_data_tar(dpkg_deb, copy, lambda stream: unpack_package_tar(stream, prefix))
        if written != listed:  # the same copy read twice by the same tool: a difference is not this package
            raise QualificationError(Code.INSTALL_FAILED, f"the package's data tar listed {listed} members, "
                                                          f"then {written}")
