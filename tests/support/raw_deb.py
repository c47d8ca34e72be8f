"""A .deb written header by header (raw 512-byte ustar blocks, gzip members), for packages that read two ways.

Python's tarfile and GNU tar disagree on some headers (a ``+12`` size field is octal 10 to tarfile and 3446
in GNU tar's old base-64 form; a wrong checksum ends the archive for tarfile, GNU tar skips the block): the
installer tests and the hostile corpus build such packages here, one header at a time.
"""

from __future__ import annotations

import gzip
from pathlib import Path

BLOCK = 512


def _field(value: int | bytes, length: int) -> bytes:
    raw = value if isinstance(value, bytes) else f"{value:0{length - 1}o}".encode()
    return raw.ljust(length, b"\0")


def header(name: str, *, kind: bytes = b"0", size: int | bytes = 0, mode: int = 0o644, linkname: str = "",
           dev: tuple[int, int] = (0, 0), checksum_delta: int = 0) -> bytes:
    """One raw ustar header; ``size`` as raw bytes writes the size field exactly as given."""
    block = bytearray(BLOCK)
    block[0:100] = name.encode().ljust(100, b"\0")
    block[100:108] = _field(mode, 8)
    block[108:116] = _field(0, 8)
    block[116:124] = _field(0, 8)
    block[124:136] = _field(size, 12)
    block[136:148] = _field(1_700_000_000, 12)
    block[148:156] = b" " * 8
    block[156:157] = kind
    block[157:257] = linkname.encode().ljust(100, b"\0")
    block[257:265] = b"ustar\x0000"
    block[265:297] = b"root".ljust(32, b"\0")
    block[297:329] = b"root".ljust(32, b"\0")
    block[329:337] = _field(dev[0], 8)
    block[337:345] = _field(dev[1], 8)
    block[148:156] = f"{sum(block) + checksum_delta:06o}\0 ".encode()
    return bytes(block)


def data(payload: bytes) -> bytes:
    """A member's data, padded to whole blocks."""
    return payload + b"\0" * (-len(payload) % BLOCK)


def end(body: bytes) -> bytes:
    """The archive's two zero blocks, padded to GNU tar's 20-block record."""
    body += b"\0" * (2 * BLOCK)
    return body + b"\0" * (-len(body) % (20 * BLOCK))


def app_blocks() -> bytes:
    """The package's ordinary part, which both readers see: folders and an executable."""
    script = b"#!/bin/sh\necho demo\n"
    return (header("./", kind=b"5", mode=0o755) + header("./opt/", kind=b"5", mode=0o755)
            + header("./opt/demo/", kind=b"5", mode=0o755)
            + header("./opt/demo/demo", size=len(script), mode=0o755) + data(script))


def behind_plus_twelve(hidden: bytes) -> bytes:
    """``+12``: tarfile reads 10 bytes of data, GNU tar 3446 (7 blocks), then ``hidden``.

    For tarfile, the block after the 10 bytes is a ``cover`` file whose data runs over GNU tar's view of the
    rest and over the hidden members, so a reader that took ``+12`` as octal would see only that cover.
    """
    gnu_data = data(b"0123456789".ljust(3446, b"-"))  # 7 blocks, of which tarfile takes the first as data
    cover_size = len(gnu_data) - 2 * BLOCK + len(hidden)
    tarfile_view = data(b"0123456789") + header("./opt/demo/cover", size=cover_size, mode=0o644)
    assert len(gnu_data) == 7 * BLOCK
    return end(app_blocks() + header("./opt/demo/pad", size=b"+12") + tarfile_view
               + gnu_data[len(tarfile_view):] + hidden)


def _ar_member(name: str, payload: bytes) -> bytes:
    head = f"{name:<16}{1_700_000_000:<12}{0:<6}{0:<6}{0o100644:<8o}{len(payload):<10}`\n".encode("ascii")
    return head + payload + (b"\n" if len(payload) % 2 else b"")


def deb_of(path: Path, data_tar: bytes) -> Path:
    """``path``, a .deb whose data member is ``data_tar`` exactly as given (gzip, no other change)."""
    control = (b"Package: crafted\nVersion: 1.0\nArchitecture: all\nMaintainer: Tests <t@example.invalid>\n"
               b"Description: a package written header by header\n")
    control_tar = end(header("./", kind=b"5", mode=0o755) + header("./control", size=len(control)) + data(control))
    path.write_bytes(b"!<arch>\n" + _ar_member("debian-binary", b"2.0\n")
                     + _ar_member("control.tar.gz", gzip.compress(control_tar, mtime=0))
                     + _ar_member("data.tar.gz", gzip.compress(data_tar, mtime=0)))
    return path
