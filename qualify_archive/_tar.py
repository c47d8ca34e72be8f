"""Unpacking a tar.gz (or a package's uncompressed data tar), read as a bounded stream.

tarfile reads a pax record or a GNU long name whole into memory before its caller
sees the member, so the archive is read through a counter of decompressed bytes,
checked as they arrive, and each raw header's announced size is checked before
tarfile reads what it announces. Only header bytes count against the header
window: a member's data is read (or skipped) by the caller with the window
closed, bounded by the archive's size and member caps alone.

Every raw 512-byte header is also held to one spelling of its numbers before
tarfile parses it (``check_header_numbers``): plain octal digits (after
optional leading spaces) ended by NUL or space, an all-NUL field (zero), or
GNU base-256. tarfile reads ``+12`` as octal 10, GNU tar as its old base-64
form (3446): a field two readers can disagree on is refused, as is a header
whose checksum does not match (tarfile would silently end the archive there,
GNU tar would skip it and read on). So is a folder, link or special member
whose header or pax records announce data (``refuse_announced_data``):
tarfile reads none, GNU tar skips it for a link, device or fifo, and what it
skips can be a whole member.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Protocol, Self

from desktop_qualify.evidence_schemas import Code, QualificationError

from . import _limits as limits
from ._audit import check_link_target
from ._limits import BLOCK, EXTENDED_TYPES, MEMBER_OVERHEAD, RECORD, REFUSED_TYPES
from ._links import check_link_member, place_links
from ._members import check_budget, damaged, safe_member_path, write_member
from ._names import Layout, name_problem, refuse


class _HeaderBudget:
    """Extended-header bytes in front of the member being read, and in the archive so far, in whole blocks."""

    def __init__(self) -> None:
        self.member = 0
        self.archive = 0

    def admit(self, kind: bytes, size: int) -> None:
        if size < 0:
            raise QualificationError(Code.INSTALL_FAILED, "archive has a header with a negative size")
        if kind in REFUSED_TYPES:
            raise QualificationError(Code.INSTALL_FAILED, f"archive holds {REFUSED_TYPES[kind]}")
        if kind not in EXTENDED_TYPES:
            self.member = 0  # a member's own header: the next member's extended headers count afresh
            return
        spent = BLOCK + -(-size // BLOCK) * BLOCK
        self.member += spent
        self.archive += spent
        if self.member > limits.MAX_EXTENDED_HEADER:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive has more than {limits.MAX_EXTENDED_HEADER} bytes of extended headers "
                                     f"(pax records, long names) in front of one member; this one announces {size}")
        if self.archive > limits.MAX_EXTENDED_TOTAL:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive has more than {limits.MAX_EXTENDED_TOTAL} bytes of extended headers "
                                     "in all")


# The numeric fields of a tar header: name, offset, length (POSIX ustar; GNU uses the same places).
NUMERIC_FIELDS = (("mode", 100, 8), ("uid", 108, 8), ("gid", 116, 8), ("size", 124, 12), ("mtime", 136, 12),
                  ("checksum", 148, 8), ("devmajor", 329, 8), ("devminor", 337, 8))
_OCTAL = re.compile(rb" *[0-7]+[\0 ]*")
_BASE256 = (0x80, 0xFF)  # GNU: a positive or negative big-endian binary number


def number_field_problem(field: bytes | bytearray, *, binary: bool = True) -> str | None:
    """Why one raw numeric field could read two ways (None when it cannot): see the module docstring."""
    if binary and field[0] in _BASE256:
        return None
    if field.count(0) == len(field) or _OCTAL.fullmatch(field):
        return None
    return f"is not plain octal ({bytes(field)!r})"


def check_header_numbers(buf: bytes | bytearray) -> None:
    """Refuse a raw header whose numeric fields are not in the one form every tar reader agrees on."""
    for name, start, length in NUMERIC_FIELDS:
        if problem := number_field_problem(buf[start:start + length], binary=name != "checksum"):
            raise QualificationError(Code.INSTALL_FAILED, f"archive has a header whose {name} field {problem}")


# Member types tarfile reads no data for: it takes the block after the header for the next header. GNU tar skips a
# link's, device's or fifo's announced size as data instead, so a link announcing 1024 bytes can hide a whole member
# from one reader and show it to the other (the package manager's listing and ours would differ). GNU tar reads a
# folder as tarfile does, but a folder announcing data is malformed all the same: any announced size is refused, in
# the raw header and again once pax records (which can carry a ``size``) are applied.
_DATALESS = {tarfile.DIRTYPE: "folder", tarfile.SYMTYPE: "link", tarfile.LNKTYPE: "hard link",
             tarfile.CHRTYPE: "device", tarfile.BLKTYPE: "device", tarfile.FIFOTYPE: "fifo"}


def refuse_announced_data(info: tarfile.TarInfo) -> None:
    """Refuse a folder, link or special member whose header announces data: tar readers read it two ways."""
    if info.type in _DATALESS and info.size != 0:
        raise refuse(info.name, f"is a {_DATALESS[info.type]} whose header announces {info.size} bytes of data, "
                                "which tar readers read two ways")


def _bounded_tarinfo(budget: _HeaderBudget) -> type[tarfile.TarInfo]:
    class BoundedTarInfo(tarfile.TarInfo):
        # tarfile builds every header, extended ones included, through frombuf from the raw 512-byte block,
        # and only then reads the bytes that header announces: the earliest point a size can be refused.
        @classmethod
        def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
            if len(buf) != BLOCK:  # tarfile would take a cut-off archive for a whole one
                raise QualificationError(Code.INSTALL_FAILED, "archive ends inside a header or before its "
                                                              "end-of-archive block")
            if buf.count(0) != BLOCK:  # an all-NUL block is the end; tarfile stops there
                check_header_numbers(buf)
                try:
                    info = super().frombuf(buf, encoding, errors)
                except tarfile.HeaderError as exc:  # tarfile would take a bad checksum for the end of the archive
                    raise QualificationError(Code.INSTALL_FAILED, f"archive has a malformed header: {exc}") from exc
            else:
                info = super().frombuf(buf, encoding, errors)
            budget.admit(info.type, info.size)
            refuse_announced_data(info)
            return info

    return BoundedTarInfo


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class _CountingReader:
    """The decompressed tar stream, counted as tarfile pulls it: the backstop behind every announced size.

    Two limits: the whole stream (the members' data plus a small allowance per
    member for its headers), and, while tarfile parses one member's headers, a
    window that no header (pax records, long names, a sparse map), whatever it
    announces, can make tarfile read past. It offers what tarfile's stream mode
    calls: ``read`` and ``tell``; it is never written or sought.
    """

    def __init__(self, source: _Readable, limit: int) -> None:
        self._source = source
        self._limit = limit
        self._count = 0
        self._window_end: int | None = None

    def expect_headers(self) -> None:
        # What one member's headers may take, plus the padding before them and one read ahead at each end.
        self._window_end = self._count + limits.MAX_EXTENDED_HEADER + 4 * BLOCK + 2 * RECORD

    def expect_data(self) -> None:
        self._window_end = None

    def read(self, size: int = -1, /) -> bytes:
        # At most one record per call; a short read is allowed, and tarfile asks for exactly one record anyway.
        data = self._source.read(RECORD if size < 0 else min(size, RECORD))
        self._count += len(data)
        if self._count > self._limit:
            raise QualificationError(Code.INSTALL_FAILED, f"archive decompresses to more than {self._limit} bytes")
        if self._window_end is not None and self._count > self._window_end:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive member headers run past {limits.MAX_EXTENDED_HEADER} bytes")
        return data

    def tell(self) -> int:
        return self._count

    def write(self, data: bytes, /) -> int:
        raise io.UnsupportedOperation("the archive is only read")

    def seek(self, offset: int, /) -> int:
        raise io.UnsupportedOperation("the archive is read as a stream")

    def close(self) -> None:
        """Nothing to release: the gzip stream below is closed by its own owner."""


def _tar_members(reader: _CountingReader) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """Each member in archive order, its headers read under the window; the caller reads its data before the next.

    Opening reads the first member's headers. A ``ValueError`` can only come
    from tarfile's own number and text parsing here: the caller's code runs
    outside this generator.
    """
    reader.expect_headers()
    try:
        with tarfile.open(fileobj=reader, mode="r|", bufsize=RECORD,
                          tarinfo=_bounded_tarinfo(_HeaderBudget())) as tf:
            while (member := tf.next()) is not None:
                reader.expect_data()
                # Again with the pax records applied: a pax ``size`` record reaches the member after frombuf.
                refuse_announced_data(member)
                yield tf, member
                reader.expect_headers()
    except ValueError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"archive has a malformed header: {exc}") from exc


def _unpack_tar_member(tf: tarfile.TarFile, member: tarfile.TarInfo, prefix: Path, layout: Layout,
                       links: dict[PurePosixPath, str]) -> None:
    target = safe_member_path(member.name, prefix)
    name = PurePosixPath(member.name)
    if len(member.pax_headers) > limits.MAX_PAX_RECORDS:
        raise refuse(member.name, f"carries more than {limits.MAX_PAX_RECORDS} pax records")
    if any(key.startswith("GNU.sparse.") for key in member.pax_headers):
        raise refuse(member.name, "is a sparse file")
    if member.issym():
        check_link_member(name, member.linkname)
        layout.add(name, "link")
        links[name] = member.linkname  # placed once every file is written
    elif member.isdir():
        layout.add(name, "dir")
        target.mkdir(parents=True, exist_ok=True)
    elif member.isreg():
        layout.add(name, "file")
        source = tf.extractfile(member)
        if source is None:
            raise refuse(member.name, "is unreadable")
        write_member(target, source, member.mode)  # now: a stream cannot go back for it later
    else:
        raise refuse(member.name, "is a hard link or special file")


def _stream_limit() -> int:
    return limits.MAX_UNPACKED_BYTES + limits.MAX_MEMBERS * MEMBER_OVERHEAD + 4 * RECORD


def unpack_tar(archive: Path, prefix: Path) -> None:
    layout = Layout()
    links: dict[PurePosixPath, str] = {}
    try:
        with archive.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            total = 0
            for count, (tf, member) in enumerate(_tar_members(_CountingReader(gz, _stream_limit())), start=1):
                total += member.size
                check_budget(count, total)
                _unpack_tar_member(tf, member, prefix, layout, links)
        place_links(prefix, links)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise damaged(exc) from exc


def _audit_listed_member(member: tarfile.TarInfo, layout: Layout) -> None:
    """One member of a package's data listing, before any tool extracts it: the unpack's rules, nothing written."""
    if member.name in (".", "./"):
        if not member.isdir():
            raise refuse(member.name, "is the root, and not a folder")
        return  # the root of a package's tree: the prefix itself
    if problem := name_problem(member.name):
        raise refuse(member.name, problem)
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts or any(c in member.name for c in "\\:") or not name.parts:
        raise refuse(member.name, "escapes the install prefix")
    if len(member.pax_headers) > limits.MAX_PAX_RECORDS:
        raise refuse(member.name, f"carries more than {limits.MAX_PAX_RECORDS} pax records")
    if any(key.startswith("GNU.sparse.") for key in member.pax_headers):
        raise refuse(member.name, "is a sparse file")
    if member.mode & (stat.S_ISUID | stat.S_ISGID):
        # The unpack strips set-id bits as it writes; a package that asks for one is refused, not quietly changed.
        raise refuse(member.name, "has a set-user-id or set-group-id bit")
    if member.issym():
        check_link_target(name, member.linkname)
        layout.add(name, "link")
    elif member.isdir():
        layout.add(name, "dir")
    elif member.isreg():
        layout.add(name, "file")
    else:
        raise refuse(member.name, "is a hard link or special file")


def _skip_data(tf: tarfile.TarFile, member: tarfile.TarInfo) -> None:
    """Read a regular member's data to its end, with the header window closed: only the stream caps apply."""
    if not member.isreg() or member.size == 0:
        return
    source = tf.extractfile(member)
    if source is None:  # pragma: no cover - a regular member always has a reader
        raise refuse(member.name, "is unreadable")
    while source.read(1 << 20):
        pass


def audit_tar_listing(stream: _Readable) -> int:
    """Read an uncompressed tar stream to its end, refusing any member the unpack would refuse; return the count.

    For a package whose data tar is read twice (``dpkg-deb --fsys-tarfile``):
    the whole listing is checked first, nothing written, then
    ``unpack_package_tar`` writes it under the same rules. Each member's data
    is read through (not counted as header bytes), so a member of any size
    within the caps passes.
    """
    layout = Layout()
    count = 0
    try:
        total = 0
        for count, (tf, member) in enumerate(_tar_members(_CountingReader(stream, _stream_limit())), start=1):
            total += member.size
            check_budget(count, total)
            _audit_listed_member(member, layout)
            _skip_data(tf, member)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise damaged(exc) from exc
    return count


def _unpack_package_member(tf: tarfile.TarFile, member: tarfile.TarInfo, prefix: Path, layout: Layout,
                           links: dict[PurePosixPath, str]) -> None:
    _audit_listed_member(member, layout)  # every rule, before anything is written for this member
    if member.name in (".", "./"):
        return  # the prefix itself
    target = safe_member_path(member.name, prefix)
    if member.issym():
        links[PurePosixPath(member.name)] = member.linkname  # placed once every file is written
    elif member.isdir():
        target.mkdir(parents=True, exist_ok=True)
    else:  # a regular file: the audit refused everything else
        source = tf.extractfile(member)
        if source is None:  # pragma: no cover - a regular member always has a reader
            raise refuse(member.name, "is unreadable")
        write_member(target, source, member.mode)


def unpack_package_tar(stream: _Readable, prefix: Path) -> int:
    """Write a package's uncompressed data tar into ``prefix`` (which exists, empty) under the listing's rules.

    The rules of ``audit_tar_listing``, not the bundle's: the ``./`` root
    entry is the prefix, and a link is confined to the installed tree as a
    whole (``usr/bin/app`` -> ``../../opt/app/app``), checked lexically and
    again once every link is placed. The caller removes the prefix on refusal.
    """
    layout = Layout()
    links: dict[PurePosixPath, str] = {}
    count = 0
    try:
        total = 0
        for count, (tf, member) in enumerate(_tar_members(_CountingReader(stream, _stream_limit())), start=1):
            total += member.size
            check_budget(count, total)
            _unpack_package_member(tf, member, prefix, layout, links)
        place_links(prefix, links, confined_to_tree=True)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise damaged(exc) from exc
    return count
