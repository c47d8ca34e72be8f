"""Packing the built bundle into one archive, and unpacking it safely.

Extraction refuses what a hostile or damaged archive could use to escape the
install prefix: absolute names, ".." segments, hard links, devices, fifos, and
sizes or counts beyond the caps. Permissions come from the archive, stripped
of set-id bits; nothing else is trusted.

Symbolic links: PyInstaller's macOS bundles hold relative links into
themselves (framework and ``.dylib`` aliases), so a tar archive may carry a
link whose target is relative and stays inside the bundle's top folder,
checked lexically and again after resolving, at pack and at unpack. Links are
created only after every regular file is written, so nothing is ever written
through one. zip (Windows) carries no links at all.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from evidence_schemas import Code, QualificationError

from ._hashing import TreeEntry, read_link, walk_tree

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3
MAX_LINK_TARGET = 1024
# Fixed mtime so that the archive's bytes depend on its content, not the clock.
_EPOCH = 1_700_000_000
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def archive_suffix(platform: str) -> str:
    return ".zip" if platform == "windows" else ".tar.gz"


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
        if entry.is_link:
            if zip_format:
                raise QualificationError(Code.BUILD_FAILED, f"bundle contains a symlink: {entry.relative}",
                                         hint="a zip archive cannot carry links; the Windows bundle must have none")
            target = read_link(entry.path)
            if not _stays_inside(PurePosixPath(entry.relative).parent.parts, target) or \
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


# -- unpack --------------------------------------------------------------------------------------------------

def _refuse(name: str, why: str) -> QualificationError:
    return QualificationError(Code.INSTALL_FAILED, f"archive member {name[:120]!r} {why}")


def _safe_member_path(name: str, prefix: Path) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or any(c in name for c in "\\:\0") or not pure.parts:
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


def unpack(archive: Path, prefix: Path) -> None:
    """Extract into an empty ``prefix``; refuse anything unsafe before writing it."""
    try:
        prefix.mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        raise QualificationError(Code.INSTALL_FAILED,
                                 f"install prefix {prefix} already exists; it must be fresh") from exc
    if archive.name.endswith(".zip"):
        _unpack_zip(archive, prefix)
    else:
        _unpack_tar(archive, prefix)


def _check_link_member(name: PurePosixPath, target: str) -> None:
    # A link is confined to the bundle's top folder, so it must sit below one.
    if len(name.parts) < 2:
        raise _refuse(str(name), "is a link at the top level")
    if not _stays_inside(name.parent.parts[1:], target):
        raise _refuse(str(name), f"is a link to {target[:120]!r}, outside the bundle")


def _check_link_layout(links: dict[PurePosixPath, str], placed: list[PurePosixPath]) -> None:
    """No member may sit at or below a link: its bytes would otherwise go where the link points."""
    for path in [*placed, *links]:
        for ancestor in path.parents:
            if ancestor in links:
                raise _refuse(str(path), f"goes through the link {str(ancestor)[:120]!r}")
        if path in links and path in placed:
            raise _refuse(str(path), "is both a link and a file or folder")


def _check_links_resolve(prefix: Path, links: dict[PurePosixPath, str]) -> None:
    # Only once all exist can chains be followed: every link must land inside its own bundle folder.
    for name in links:
        if not _resolves_inside(prefix.joinpath(*name.parts), prefix / name.parts[0]):
            raise _refuse(str(name), "is a link that resolves outside the bundle (or nowhere)")


def _place_links(prefix: Path, links: dict[PurePosixPath, str]) -> None:
    created: list[Path] = []
    try:
        for name, target in sorted(links.items()):
            path = prefix.joinpath(*name.parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(target)
            created.append(path)
        _check_links_resolve(prefix, links)
    except BaseException:
        for path in created:
            path.unlink(missing_ok=True)
        raise


def _unpack_tar(archive: Path, prefix: Path) -> None:
    links: dict[PurePosixPath, str] = {}
    placed: list[PurePosixPath] = []
    try:
        with tarfile.open(archive, "r:gz") as tf:
            total = 0
            for count, member in enumerate(tf, start=1):
                total += max(member.size, 0)
                _check_budget(count, total)
                target = _safe_member_path(member.name, prefix)
                name = PurePosixPath(member.name)
                if member.issym():
                    _check_link_member(name, member.linkname)
                    if name in links:
                        raise _refuse(member.name, "is listed twice")
                    links[name] = member.linkname
                    continue
                placed.append(name)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif member.isreg():
                    source = tf.extractfile(member)
                    if source is None:
                        raise _refuse(member.name, "is unreadable")
                    _write_member(target, source, member.mode)
                else:
                    raise _refuse(member.name, "is a hard link or special file")
        _check_link_layout(links, placed)
        _place_links(prefix, links)
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise QualificationError(Code.INSTALL_FAILED, "archive lists a member twice") from exc
        raise QualificationError(Code.INSTALL_FAILED, f"archive is damaged: {exc}") from exc


def _unpack_zip(archive: Path, prefix: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            total = 0
            for count, info in enumerate(zf.infolist(), start=1):
                total += info.file_size
                _check_budget(count, total)
                target = _safe_member_path(info.filename.rstrip("/") or info.filename, prefix)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise _refuse(info.filename, "is a link")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as source:
                    _write_member(target, source, stat.S_IMODE(mode) or 0o644)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise QualificationError(Code.INSTALL_FAILED, "archive lists a member twice") from exc
        raise QualificationError(Code.INSTALL_FAILED, f"archive is damaged: {exc}") from exc
