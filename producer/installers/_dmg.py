"""Kind ``dmg`` (macOS): the disk image attached read-only at a private mount point, copied out, always detached.

``-nobrowse`` keeps the volume out of Finder and ``-noautoopen`` keeps it from
opening a window; ``-mountpoint`` puts it in a folder of this job's own,
never under /Volumes, where another image of the same name could stand in.
The mounted volume is audited before anything is copied (a device, a set-id
file or a link out of it is refused there), and the copy again by the caller.

Not copied: links at the volume's top level (the ``Applications -> /Applications``
alias of a drag-to-install window is a convenience of the window, not
content) and the volume's own bookkeeping folders. Each top-level entry is
copied with ``ditto`` (``/usr/bin/ditto SRC DST``), not ``shutil``: ditto keeps
extended attributes, resource forks and ACLs, which a signed app's
``_CodeSignature`` seal and Gatekeeper read, so the installed copy verifies as
the image's did (shutil drops extended attributes and can break the seal).
The detach runs on every path out; a busy volume is detached with ``-force``. Where the install is
already refused, a detach that fails too does not replace the refusal: the record keeps the first reason.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import audit_tree

from ._tools import ToolRunner, run_tool, run_tool_process

HDIUTIL = "/usr/bin/hdiutil"
DITTO = "/usr/bin/ditto"
# Folders macOS keeps on every volume for itself: not the image's content, and not always readable.
_VOLUME_BOOKKEEPING = frozenset({".fseventsd", ".Trashes", ".Spotlight-V100", ".TemporaryItems"})
_DETACH_TIMEOUT = 120.0


def attach_argv(copy: Path, mountpoint: Path) -> list[str]:
    return [HDIUTIL, "attach", "-readonly", "-nobrowse", "-noautoopen", "-mountpoint", str(mountpoint), str(copy)]


def detach_argv(mountpoint: Path, *, force: bool = False) -> list[str]:
    return [HDIUTIL, "detach", str(mountpoint), *(["-force"] if force else [])]


def ditto_argv(source: Path, target: Path) -> list[str]:
    # ditto copies links as links (never follows them) and a folder's contents into the target it creates.
    return [DITTO, str(source), str(target)]


def copy_volume(runner: ToolRunner, volume: Path, prefix: Path) -> None:
    """Copy the volume's content into the prefix with ditto, one top-level entry at a time."""
    for entry in sorted(volume.iterdir()):
        if entry.name in _VOLUME_BOOKKEEPING or entry.is_symlink():
            continue
        run_tool(runner, ditto_argv(entry, prefix / entry.name), cwd=prefix.parent, what="ditto")


class DmgInstaller:
    kind: InstallerKind = "dmg"

    def __init__(self, runner: ToolRunner = run_tool_process) -> None:
        self._runner = runner

    def install(self, copy: Path, prefix: Path) -> None:
        mountpoint = Path(tempfile.mkdtemp(prefix="qualify-dmg-"))
        try:
            run_tool(self._runner, attach_argv(copy, mountpoint), cwd=prefix.parent, what="hdiutil attach")
            try:
                self._copy_out(mountpoint, prefix)
            except BaseException:
                # The refusal in flight is the reason the install record must give: a detach that fails after it
                # (a volume busy even when forced) must not take its place.
                with contextlib.suppress(QualificationError):
                    self._detach(mountpoint, prefix.parent)
                raise
            self._detach(mountpoint, prefix.parent)
        finally:
            shutil.rmtree(mountpoint, ignore_errors=True)

    def _copy_out(self, mountpoint: Path, prefix: Path) -> None:
        try:
            staged = [entry for entry in mountpoint.iterdir()
                      if entry.name not in _VOLUME_BOOKKEEPING and not entry.is_symlink()]
            if not staged:
                raise QualificationError(Code.INSTALL_FAILED, "the disk image's volume holds nothing to install")
            for entry in staged:
                if entry.is_dir():
                    audit_tree(entry)
            copy_volume(self._runner, mountpoint, prefix)
        except OSError as exc:
            raise QualificationError(Code.INSTALL_FAILED, f"the disk image's volume cannot be copied: {exc}") from exc

    def _detach(self, mountpoint: Path, cwd: Path) -> None:
        try:
            run_tool(self._runner, detach_argv(mountpoint), cwd=cwd, what="hdiutil detach", timeout=_DETACH_TIMEOUT)
        except QualificationError:
            run_tool(self._runner, detach_argv(mountpoint, force=True), cwd=cwd, what="hdiutil detach -force",
                     timeout=_DETACH_TIMEOUT)
