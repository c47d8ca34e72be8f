"""Kind ``appimage``: the squashfs image an AppImage carries, unpacked by ``unsquashfs``, never run.

An AppImage (type 2) is an ELF runtime followed by a squashfs image; its own
``--appimage-extract`` would run that runtime, code of the artifact, at
install time. ``unsquashfs`` reads the image in place instead, at the offset
where the ELF file ends (its section header table is last), into
``squashfs-root/`` below the prefix: the layout ``--appimage-extract`` gives,
so the policy's executable path (``squashfs-root/AppRun``, or the binary under
``squashfs-root/usr/bin``) is the same either way.

The image's listing (``unsquashfs -lln``) is read first: as root, unsquashfs
would create the devices and set-id files an image lists, so an image that
lists any (or more members than the cap) is refused before anything is
written; what was written is audited again by the caller.
"""

from __future__ import annotations

import struct
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, InstallerKind, QualificationError
from desktop_qualify.qualify_archive import MAX_MEMBERS

from ._tools import ToolRunner, require_tool, run_tool, run_tool_process

_NEEDED = "the appimage installer needs unsquashfs (Debian and Ubuntu: apt-get install squashfs-tools)"
_SQUASHFS_MAGIC = b"hsqs"
EXTRACTED = "squashfs-root"
# One -lln line per member, under 600 bytes even with a long name: enough for the member cap.
_MAX_LISTING = 600 * MAX_MEMBERS


def _refuse(why: str) -> QualificationError:
    return QualificationError(Code.INSTALL_FAILED, f"AppImage {why}")


def squashfs_offset(head: bytes, size: int) -> int:
    """Where the squashfs image starts: the end of the ELF runtime, from its header (64 bytes suffice)."""
    if len(head) < 64 or head[:4] != b"\x7fELF":
        raise _refuse("does not start with an ELF runtime")
    if head[8:11] != b"AI\x02":
        raise _refuse("is not of type 2 (no 'AI\\x02' mark in the ELF header's padding)")
    order = {1: "<", 2: ">"}.get(head[5])
    if order is None or head[4] not in (1, 2):
        raise _refuse("has an ELF header of unknown class or byte order")
    if head[4] == 2:  # ELF64: e_shoff at 0x28, e_shentsize and e_shnum at 0x3A
        (shoff,) = struct.unpack_from(order + "Q", head, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", head, 0x3A)
    else:  # ELF32: e_shoff at 0x20, e_shentsize and e_shnum at 0x2E
        (shoff,) = struct.unpack_from(order + "I", head, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", head, 0x2E)
    offset = int(shoff) + int(shentsize) * int(shnum)
    if not 64 <= offset < size:
        raise _refuse(f"names an image offset ({offset}) outside the file")
    return offset


def list_argv(unsquashfs: str, copy: Path, offset: int) -> list[str]:
    return [unsquashfs, "-o", str(offset), "-lln", "-UTC", copy.as_posix()]


def extract_argv(unsquashfs: str, copy: Path, offset: int, dest: Path) -> list[str]:
    # -no-xattrs: nothing beyond names, modes and content; -st: any error writing is fatal, never skipped.
    return [unsquashfs, "-o", str(offset), "-n", "-no-xattrs", "-st", "-d", str(dest), copy.as_posix()]


def check_listing(listing: str) -> int:
    """Refuse special files and set-id bits by the mode column of ``-lln``; the member count."""
    count = 0
    for line in listing.splitlines():
        mode = line.split(" ", 1)[0]
        if len(mode) != 10 or mode[1:3] not in ("r-", "rw", "--", "-w"):
            continue  # not a listing line (unsquashfs' own header lines)
        count += 1
        if mode[0] not in "-dl":
            raise _refuse(f"lists a device, fifo or socket: {line[:160]!r}")
        if mode[3] in "sS" or mode[6] in "sS":
            raise _refuse(f"lists a set-user-id or set-group-id file: {line[:160]!r}")
        if count > MAX_MEMBERS:
            raise _refuse(f"lists more than {MAX_MEMBERS} members")
    if count == 0:
        raise _refuse("lists nothing (or its image cannot be read)")
    return count


class AppImageInstaller:
    kind: InstallerKind = "appimage"

    def __init__(self, runner: ToolRunner = run_tool_process) -> None:
        self._runner = runner

    def install(self, copy: Path, prefix: Path) -> None:
        unsquashfs = require_tool("unsquashfs", _NEEDED)
        with copy.open("rb") as handle:
            head = handle.read(64)
            offset = squashfs_offset(head, copy.stat().st_size)
            handle.seek(offset)
            if handle.read(4) != _SQUASHFS_MAGIC:
                raise _refuse(f"has no squashfs image at offset {offset}")
        listing = run_tool(self._runner, list_argv(unsquashfs, copy, offset), cwd=prefix.parent,
                           what="unsquashfs -lln", max_output=_MAX_LISTING)
        check_listing(listing)
        run_tool(self._runner, extract_argv(unsquashfs, copy, offset, prefix / EXTRACTED), cwd=prefix.parent,
                 what="unsquashfs")
