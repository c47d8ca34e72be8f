"""Packing the built bundle into one archive, and unpacking it safely.

Extraction refuses what a hostile or damaged archive could use to escape the
install prefix or to exhaust the machine: absolute names, ".." segments, hard
links, devices, fifos, sizes or counts beyond the caps, names an install
manifest cannot record (not UTF-8, control characters, too long), and names
that alias one another on a case-insensitive or normalising file system (APFS,
HFS+, NTFS). Permissions come from the archive, stripped of set-id bits;
nothing else is trusted. The prefix is created by ``unpack`` and must not exist
before; any refusal after writing began removes it whole, so a refused archive
leaves nothing behind.

Symbolic links: PyInstaller's macOS bundles hold relative links into
themselves (framework and ``.dylib`` aliases), so a tar archive may carry a
link whose target is relative and stays inside the bundle's top folder,
checked lexically and again after resolving, at pack and at unpack. Links are
created only after every regular file is written, each in a folder the unpack
itself made (checked with ``lstat``; no folder is ever made for a link), so
nothing is ever written through one. zip (Windows) carries no links at all.

Tar headers: tarfile reads a pax record or a GNU long name whole into memory
before its caller sees the member, so the archive is read as a stream through
a counter of decompressed bytes, checked as they arrive, and each raw header's
announced size is checked before tarfile reads what it announces.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import tarfile
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Literal, Protocol, Self

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._hashing import TreeEntry, read_link, walk_tree

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3
MAX_LINK_TARGET = 1024
# evidence_schemas.RelPath: a manifest path holds at most 512 characters, so a longer name could not be recorded.
MAX_NAME_CHARS = 512
# Extended headers (pax records, GNU long names) in front of one member, and in the whole archive, in bytes of
# whole blocks: tarfile reads each whole into memory and keeps every member's pax records while it streams.
MAX_EXTENDED_HEADER = 64 * 1024
MAX_EXTENDED_TOTAL = 32 * 1024**2
MAX_PAX_RECORDS = 16
# Fixed mtime so that the archive's bytes depend on its content, not the clock.
_EPOCH = 1_700_000_000
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)

_BLOCK = 512  # the tar format's block
# tarfile's stream buffer, passed explicitly: it never asks for, nor reads ahead, more than this at a time.
_RECORD = 20 * _BLOCK
# Per member, beyond its data: its own header block, padding, a pax record for a long path.
_MEMBER_OVERHEAD = 8 * _BLOCK
# pax (POSIX, and Solaris' early form) and GNU long name / long link: headers that announce more header.
_EXTENDED_TYPES = frozenset({b"x", b"X", b"L", b"K"})
# A bundle never holds these, and tarfile would act on them before the caller could refuse the member.
_REFUSED_TYPES = {b"g": "a pax global header (it applies to every later member)",
                  b"S": "a GNU sparse file (its map is read as a header)"}
# Control characters (C0, C1, DEL), format characters (bidi overrides; the zero-width joiners HFS+ ignores in
# names) and line or paragraph separators: a name holding one can pass for another in a log or on disk.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def archive_suffix(platform: str) -> str:
    return ".zip" if platform == "windows" else ".tar.gz"


# -- names ---------------------------------------------------------------------------------------------------

def _text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a name or link target: a manifest records it as UTF-8 text, shown to people."""
    try:
        text.encode("utf-8")  # tarfile and os hand undecodable bytes over as lone surrogates, which fail here
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if any(unicodedata.category(char) in _UNSAFE_CATEGORIES for char in text):
        return "contains a control or format character"
    return None


def _name_problem(name: str) -> str | None:
    if problem := _text_problem(name):
        return problem
    if len(PurePosixPath(name).as_posix()) > MAX_NAME_CHARS:
        return f"is longer than {MAX_NAME_CHARS} characters"
    return None


def _fold(part: str) -> str:
    """A name component as a case-insensitive, normalising file system compares it.

    Unicode's canonical caseless match (NFD of the case fold of NFD): it equates
    at least the spellings APFS and HFS+ (case and normalisation) and NTFS (case)
    treat as one name.
    """
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", part).casefold())


_Kind = Literal["file", "dir", "link"]


class _Layout:
    """Every name an archive uses, member or implied folder, keyed as a case-insensitive file system sees it.

    Checked as each member arrives, before anything is written for it: two
    spellings of one folded path, a member listed twice, and a member at or
    below a link or a file are refused, whatever the order of the members.
    """

    def __init__(self) -> None:
        self._spelling: dict[tuple[str, ...], PurePosixPath] = {}
        self._kind: dict[tuple[str, ...], _Kind] = {}
        self._first_below: dict[tuple[str, ...], PurePosixPath] = {}

    def add(self, name: PurePosixPath, kind: _Kind) -> None:
        folded = tuple(_fold(part) for part in name.parts)
        for depth in range(1, len(folded) + 1):
            spelled = PurePosixPath(*name.parts[:depth])
            first = self._spelling.setdefault(folded[:depth], spelled)
            if first != spelled:
                raise _refuse(str(name), f"collides with {str(first)[:120]!r} on a case-insensitive or "
                                         "normalising file system")
        for depth in range(1, len(folded)):
            ancestor = self._kind.get(folded[:depth])
            if ancestor == "link":
                raise _refuse(str(name), f"goes through the link {str(PurePosixPath(*name.parts[:depth]))[:120]!r}")
            if ancestor == "file":
                raise _refuse(str(name), f"is below the file {str(PurePosixPath(*name.parts[:depth]))[:120]!r}")
            self._first_below.setdefault(folded[:depth], name)
        if (earlier := self._kind.get(folded)) is not None:
            if earlier == kind:
                raise _refuse(str(name), "is listed twice")
            raise _refuse(str(name), "is both a link and a file or folder" if "link" in (earlier, kind)
                          else "is both a file and a folder")
        if kind != "dir" and (below := self._first_below.get(folded)) is not None:
            if kind == "link":
                raise _refuse(str(below), f"goes through the link {str(name)[:120]!r}")
            raise _refuse(str(name), f"is a file, but {str(below)[:120]!r} is below it")
        self._kind[folded] = kind


# -- links ---------------------------------------------------------------------------------------------------

def _stays_inside(link_dir: tuple[str, ...], target: str) -> bool:
    """Whether ``target``, read from a link in folder ``link_dir`` (relative to a root), stays in the root.

    Lexical only: the resolved check follows, since a chain of links can
    escape where each link alone looks contained.
    """
    if not target or len(target) > MAX_LINK_TARGET or any(c in target for c in "\\:\0"):
        return False
    if PurePosixPath(target).is_absolute():
        return False
    where = list(link_dir)
    for part in target.split("/"):
        if part == "..":
            if not where:
                return False
            where.pop()
        elif part not in ("", "."):
            where.append(part)
    return True


def _resolves_inside(link: Path, root: Path) -> bool:
    try:
        resolved = Path(os.path.realpath(link, strict=True))
        return resolved.is_relative_to(Path(os.path.realpath(root, strict=True)))
    except OSError:  # dangling or a loop: not a link into the bundle
        return False


# -- pack ----------------------------------------------------------------------------------------------------

def _check_bundle(bundle_dir: Path, entries: list[TreeEntry], *, zip_format: bool) -> None:
    for entry in entries:
        # What unpack would refuse must not be built: the name as it will stand in the archive.
        if problem := _name_problem(f"{bundle_dir.name}/{entry.relative}"):
            raise QualificationError(Code.BUILD_FAILED, f"bundle path {entry.relative[:120]!r} {problem}")
        if entry.is_link:
            if zip_format:
                raise QualificationError(Code.BUILD_FAILED, f"bundle contains a symlink: {entry.relative}",
                                         hint="a zip archive cannot carry links; the Windows bundle must have none")
            target = read_link(entry.path)
            if _text_problem(target) or not _stays_inside(PurePosixPath(entry.relative).parent.parts, target) or \
                    not _resolves_inside(entry.path, bundle_dir):
                raise QualificationError(Code.BUILD_FAILED,
                                         f"bundle symlink {entry.relative} -> {target[:120]!r} leaves the bundle")
        elif not (entry.is_dir or entry.is_file):
            raise QualificationError(Code.BUILD_FAILED, f"bundle contains a special file: {entry.relative}")


def _tar_info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = _EPOCH
    return info


def _pack_tar(bundle_dir: Path, entries: list[TreeEntry], archive: Path) -> None:
    top = bundle_dir.name
    # The gzip header's name and mtime are fixed too: same content, same bytes.
    with archive.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=_EPOCH) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(_tar_info(top, tarfile.DIRTYPE, stat.S_IMODE(bundle_dir.lstat().st_mode)))
        for entry in entries:
            name = f"{top}/{entry.relative}"
            if entry.is_dir:
                tf.addfile(_tar_info(name, tarfile.DIRTYPE, stat.S_IMODE(entry.mode)))
            elif entry.is_link:
                info = _tar_info(name, tarfile.SYMTYPE, 0o777)
                info.linkname = read_link(entry.path)
                tf.addfile(info)
            else:
                # Every file is stored as itself: a hard link in the build tree is not a tar hard link.
                with os.fdopen(os.open(entry.path, os.O_RDONLY | _NOFOLLOW), "rb") as src:
                    info = _tar_info(name, tarfile.REGTYPE, stat.S_IMODE(entry.mode))
                    info.size = os.fstat(src.fileno()).st_size
                    tf.addfile(info, src)


def _pack_zip(bundle_dir: Path, entries: list[TreeEntry], archive: Path) -> None:
    top = bundle_dir.name
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for entry in entries:
            if not entry.is_file:
                continue
            info = zipfile.ZipInfo(f"{top}/{entry.relative}", date_time=(2023, 11, 14, 22, 13, 20))
            info.external_attr = (stat.S_IMODE(entry.mode) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with os.fdopen(os.open(entry.path, os.O_RDONLY | _NOFOLLOW), "rb") as src, zf.open(info, "w") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)


def pack(bundle_dir: Path, archive: Path) -> None:
    """Archive ``bundle_dir`` (its folder name kept as the top level), sorted and without owners."""
    entries = walk_tree(bundle_dir)
    zip_format = archive.name.endswith(".zip")
    _check_bundle(bundle_dir, entries, zip_format=zip_format)
    (_pack_zip if zip_format else _pack_tar)(bundle_dir, entries, archive)


# -- unpack: shared ------------------------------------------------------------------------------------------

def _refuse(name: str, why: str) -> QualificationError:
    return QualificationError(Code.INSTALL_FAILED, f"archive member {name[:120]!r} {why}")


def _damaged(exc: BaseException) -> QualificationError:
    if isinstance(exc, FileExistsError):
        return QualificationError(Code.INSTALL_FAILED, "archive lists a member twice")
    return QualificationError(Code.INSTALL_FAILED, f"archive is damaged: {exc}")


def _safe_member_path(name: str, prefix: Path) -> Path:
    if problem := _name_problem(name):
        raise _refuse(name, problem)
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or any(c in name for c in "\\:") or not pure.parts:
        raise _refuse(name, "escapes the install prefix")
    target = prefix.joinpath(*pure.parts)
    if not target.resolve().is_relative_to(prefix.resolve()):
        raise _refuse(name, "escapes the install prefix")
    return target


def _check_budget(count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise QualificationError(Code.INSTALL_FAILED, f"archive has more than {MAX_MEMBERS} members")
    if total > MAX_UNPACKED_BYTES:
        raise QualificationError(Code.INSTALL_FAILED, f"archive unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def _write_member(target: Path, source: IO[bytes], mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: a member listed twice cannot overwrite what was already unpacked.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as dst:
        while chunk := source.read(1 << 20):
            dst.write(chunk)
    target.chmod(mode & 0o755)


def _discard(prefix: Path, cause: BaseException) -> None:
    """Remove a refused install whole: unpack made the prefix, so everything in it came from the archive.

    rmtree unlinks links and never follows them. Should something survive, the
    refusal says so rather than leave it unmentioned.
    """
    shutil.rmtree(prefix, ignore_errors=True)
    if (prefix.exists() or prefix.is_symlink()) and isinstance(cause, QualificationError):
        raise QualificationError(cause.code, f"{cause.message}; and what was unpacked could not be removed "
                                             f"from {prefix}") from cause


def unpack(archive: Path, prefix: Path) -> None:
    """Extract into ``prefix``, which must not exist yet; refuse anything unsafe, and leave nothing on refusal."""
    try:
        prefix.mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        raise QualificationError(Code.INSTALL_FAILED,
                                 f"install prefix {prefix} already exists; it must be fresh") from exc
    except OSError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"cannot create the install prefix {prefix}: {exc}") from exc
    try:
        if archive.name.endswith(".zip"):
            _unpack_zip(archive, prefix)
        else:
            _unpack_tar(archive, prefix)
    except BaseException as exc:
        _discard(prefix, exc)
        raise


# -- unpack: links -------------------------------------------------------------------------------------------

def _check_link_member(name: PurePosixPath, target: str) -> None:
    # A link is confined to the bundle's top folder, so it must sit below one.
    if len(name.parts) < 2:
        raise _refuse(str(name), "is a link at the top level")
    if problem := _text_problem(target):
        raise _refuse(str(name), f"is a link whose target {problem}")
    if not _stays_inside(name.parent.parts[1:], target):
        raise _refuse(str(name), f"is a link to {target[:120]!r}, outside the bundle")


def _require_real_folders(prefix: Path, name: PurePosixPath) -> None:
    """Every folder between the prefix and a link must be a real folder already made by the unpack.

    No folder is ever created for a link, and none may be a link: on a
    case-insensitive or normalising file system a name that looks new can be an
    existing entry, and ``lstat`` sees what is really there.
    """
    folder = prefix
    for part in name.parts[:-1]:
        folder /= part
        try:
            mode = folder.lstat().st_mode
        except OSError:
            raise _refuse(str(name), f"is a link in {part[:120]!r}, a folder the archive does not make") from None
        if not stat.S_ISDIR(mode):
            raise _refuse(str(name), f"is a link below {part[:120]!r}, which is not a real folder")


def _check_links_resolve(prefix: Path, links: dict[PurePosixPath, str]) -> None:
    # Only once all exist can chains be followed: every link must land inside its own bundle folder.
    for name in links:
        if not _resolves_inside(prefix.joinpath(*name.parts), prefix / name.parts[0]):
            raise _refuse(str(name), "is a link that resolves outside the bundle (or nowhere)")


def _place_links(prefix: Path, links: dict[PurePosixPath, str]) -> None:
    # A refusal here leaves links behind on purpose: unpack removes the whole prefix.
    for name, target in sorted(links.items()):
        _require_real_folders(prefix, name)
        prefix.joinpath(*name.parts).symlink_to(target)
    _check_links_resolve(prefix, links)


# -- unpack: tar, read as a bounded stream -------------------------------------------------------------------

class _HeaderBudget:
    """Extended-header bytes in front of the member being read, and in the archive so far, in whole blocks."""

    def __init__(self) -> None:
        self.member = 0
        self.archive = 0

    def admit(self, kind: bytes, size: int) -> None:
        if size < 0:
            raise QualificationError(Code.INSTALL_FAILED, "archive has a header with a negative size")
        if kind in _REFUSED_TYPES:
            raise QualificationError(Code.INSTALL_FAILED, f"archive holds {_REFUSED_TYPES[kind]}")
        if kind not in _EXTENDED_TYPES:
            self.member = 0  # a member's own header: the next member's extended headers count afresh
            return
        spent = _BLOCK + -(-size // _BLOCK) * _BLOCK
        self.member += spent
        self.archive += spent
        if self.member > MAX_EXTENDED_HEADER:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive has more than {MAX_EXTENDED_HEADER} bytes of extended headers (pax "
                                     f"records, long names) in front of one member; this one announces {size}")
        if self.archive > MAX_EXTENDED_TOTAL:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive has more than {MAX_EXTENDED_TOTAL} bytes of extended headers in all")


def _bounded_tarinfo(budget: _HeaderBudget) -> type[tarfile.TarInfo]:
    class BoundedTarInfo(tarfile.TarInfo):
        # tarfile builds every header, extended ones included, through frombuf from the raw 512-byte block,
        # and only then reads the bytes that header announces: the earliest point a size can be refused.
        @classmethod
        def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
            info = super().frombuf(buf, encoding, errors)
            budget.admit(info.type, info.size)
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
        self._window_end = self._count + MAX_EXTENDED_HEADER + 4 * _BLOCK + 2 * _RECORD

    def expect_data(self) -> None:
        self._window_end = None

    def read(self, size: int = -1, /) -> bytes:
        # At most one record per call; a short read is allowed, and tarfile asks for exactly one record anyway.
        data = self._source.read(_RECORD if size < 0 else min(size, _RECORD))
        self._count += len(data)
        if self._count > self._limit:
            raise QualificationError(Code.INSTALL_FAILED, f"archive decompresses to more than {self._limit} bytes")
        if self._window_end is not None and self._count > self._window_end:
            raise QualificationError(Code.INSTALL_FAILED,
                                     f"archive member headers run past {MAX_EXTENDED_HEADER} bytes")
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
        with tarfile.open(fileobj=reader, mode="r|", bufsize=_RECORD,
                          tarinfo=_bounded_tarinfo(_HeaderBudget())) as tf:
            while (member := tf.next()) is not None:
                reader.expect_data()
                yield tf, member
                reader.expect_headers()
    except ValueError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"archive has a malformed header: {exc}") from exc


def _unpack_tar_member(tf: tarfile.TarFile, member: tarfile.TarInfo, prefix: Path, layout: _Layout,
                       links: dict[PurePosixPath, str]) -> None:
    target = _safe_member_path(member.name, prefix)
    name = PurePosixPath(member.name)
    if len(member.pax_headers) > MAX_PAX_RECORDS:
        raise _refuse(member.name, f"carries more than {MAX_PAX_RECORDS} pax records")
    if any(key.startswith("GNU.sparse.") for key in member.pax_headers):
        raise _refuse(member.name, "is a sparse file")
    if member.issym():
        _check_link_member(name, member.linkname)
        layout.add(name, "link")
        links[name] = member.linkname  # placed once every file is written
    elif member.isdir():
        layout.add(name, "dir")
        target.mkdir(parents=True, exist_ok=True)
    elif member.isreg():
        layout.add(name, "file")
        source = tf.extractfile(member)
        if source is None:
            raise _refuse(member.name, "is unreadable")
        _write_member(target, source, member.mode)  # now: a stream cannot go back for it later
    else:
        raise _refuse(member.name, "is a hard link or special file")


def _unpack_tar(archive: Path, prefix: Path) -> None:
    layout = _Layout()
    links: dict[PurePosixPath, str] = {}
    limit = MAX_UNPACKED_BYTES + MAX_MEMBERS * _MEMBER_OVERHEAD + 4 * _RECORD
    try:
        with archive.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            total = 0
            for count, (tf, member) in enumerate(_tar_members(_CountingReader(gz, limit)), start=1):
                total += member.size
                _check_budget(count, total)
                _unpack_tar_member(tf, member, prefix, layout, links)
        _place_links(prefix, links)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise _damaged(exc) from exc


# -- unpack: zip ---------------------------------------------------------------------------------------------

def _unpack_zip(archive: Path, prefix: Path) -> None:
    layout = _Layout()
    try:
        with zipfile.ZipFile(archive) as zf:
            total = 0
            for count, info in enumerate(zf.infolist(), start=1):
                total += info.file_size
                _check_budget(count, total)
                member = info.filename.rstrip("/") or info.filename
                target = _safe_member_path(member, prefix)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise _refuse(info.filename, "is a link")
                # Type bits are optional in zip (0 from tools that write none); a device or fifo is refused as in tar.
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise _refuse(info.filename, "is a special file")
                if info.is_dir():
                    layout.add(PurePosixPath(member), "dir")
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                layout.add(PurePosixPath(member), "file")
                with zf.open(info) as source:
                    _write_member(target, source, stat.S_IMODE(mode) or 0o644)
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
        raise _damaged(exc) from exc
