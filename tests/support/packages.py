"""Real installer files for the installer tests: Debian packages and AppImage-shaped files, built here.

A .deb is an ``ar`` archive of ``debian-binary``, ``control.tar.gz`` and
``data.tar.gz``; written by hand (not by ``dpkg-deb --build``, which refuses
the hostile members these tests need), it is read by the real ``dpkg-deb``.
An AppImage (type 2) is an ELF file, marked ``AI\\x02`` in its header's
padding, followed by a squashfs image; the image is made by the real
``mksquashfs`` (Debian's squashfs-tools) and the ELF part here is a bare
header whose section table ends where the image begins, which is all the
installer reads of it.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str = "file"  # file, dir, link, hardlink, chardev, fifo
    data: bytes = b"x"
    mode: int = 0o755
    target: str = ""


def _tar_gz(entries: list[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tf:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mode = entry.mode
            info.mtime = 1_700_000_000
            if entry.kind == "file":
                info.size = len(entry.data)
                tf.addfile(info, io.BytesIO(entry.data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "link": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "chardev": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[entry.kind]
            info.linkname = entry.target
            info.devmajor, info.devminor = (1, 3) if entry.kind == "chardev" else (0, 0)
            tf.addfile(info)
    return buffer.getvalue()


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name:<16}{1_700_000_000:<12}{0:<6}{0:<6}{0o100644:<8o}{len(data):<10}`\n".encode("ascii")
    return header + data + (b"\n" if len(data) % 2 else b"")


def deb(path: Path, entries: list[Entry], *, package: str = "crafted") -> Path:
    control = (f"Package: {package}\nVersion: 1.0\nArchitecture: all\nMaintainer: Tests <t@example.invalid>\n"
               "Description: a package the installer tests build\n").encode()
    control_tar = _tar_gz([Entry("./", "dir"), Entry("./control", data=control, mode=0o644)])
    path.write_bytes(b"!<arch>\n" + _ar_member("debian-binary", b"2.0\n") + _ar_member("control.tar.gz", control_tar)
                     + _ar_member("data.tar.gz", _tar_gz(entries)))
    return path


def app_tree(*, executable: str = "opt/demo/demo") -> list[Entry]:
    """A package's data: folders, an executable, a relative link from usr/bin into opt."""
    return [Entry("./", "dir"), Entry("./opt/", "dir"), Entry("./opt/demo/", "dir"),
            Entry(f"./{executable}", data=b"#!/bin/sh\necho demo\n"), Entry("./usr/", "dir"),
            Entry("./usr/bin/", "dir"), Entry("./usr/bin/demo", "link", target="../../opt/demo/demo")]


def require(tool: str, package: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} is not installed here (Debian: apt-get install {package}); the real run needs it")
    return found


def elf_runtime_header() -> bytes:
    """A 64-byte little-endian ELF64 header, type-2 AppImage mark, no sections: the image starts right after."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"AI\x02" + bytes(5)
    rest = struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, 0, 0, 64, 0, 64, 0, 0, 64, 0, 0)
    return ident + rest


def appimage(path: Path, tree: Path, *, pseudo: list[str] | None = None) -> Path:
    """An AppImage-shaped file whose image holds ``tree`` (plus mksquashfs pseudo-definitions, if any)."""
    mksquashfs = require("mksquashfs", "squashfs-tools")
    image = path.with_suffix(".squashfs")
    argv = [mksquashfs, str(tree), str(image), "-noappend", "-quiet", "-no-progress", "-all-root"]
    for definition in pseudo or []:
        argv += ["-p", definition]
    subprocess.run(argv, check=True, capture_output=True)
    path.write_bytes(elf_runtime_header() + image.read_bytes())
    image.unlink()
    return path
