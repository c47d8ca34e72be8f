"""Packing the built bundle into one archive, and unpacking it safely.

Extraction refuses what a hostile or damaged archive could use to escape the
install prefix: absolute names, ".." segments, links, devices, and sizes or
counts beyond the caps. Permissions come from the archive, stripped of
set-id bits; nothing else is trusted.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from evidence_schemas import Code, QualificationError

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 2 * 1024**3
# Fixed mtime so that the archive's bytes depend on its content, not the clock.
_EPOCH = 1_700_000_000


def archive_suffix(platform: str) -> str:
    return ".zip" if platform == "windows" else ".tar.gz"


def pack(bundle_dir: Path, archive: Path) -> None:
    """Archive ``bundle_dir`` (its folder name kept as the top level), sorted and without owners."""
    files = sorted(p for p in bundle_dir.rglob("*"))
    top = bundle_dir.name
    # A link in the bundle would be dropped (zip) or could escape on unpack: refuse it for every format.
    for path in files:
        if path.is_symlink():
            raise QualificationError(Code.BUILD_FAILED, f"bundle contains a symlink: {path.relative_to(bundle_dir)}")
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                if path.is_file() and not path.is_symlink():
                    arcname = f"{top}/{path.relative_to(bundle_dir).as_posix()}"
                    info = zipfile.ZipInfo(arcname, date_time=(2023, 11, 14, 22, 13, 20))
                    info.external_attr = (stat.S_IMODE(path.stat().st_mode) | stat.S_IFREG) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    info.file_size = path.stat().st_size
                    with path.open("rb") as src, zf.open(info, "w") as dst:
                        while chunk := src.read(1 << 20):
                            dst.write(chunk)
        return

    def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = _EPOCH
        return info

    # The gzip header's name and mtime are fixed too: same content, same bytes.
    with archive.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=_EPOCH) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.add(bundle_dir, arcname=top, recursive=False, filter=normalise)
        for path in files:
            tf.add(path, arcname=f"{top}/{path.relative_to(bundle_dir).as_posix()}", recursive=False,
                   filter=normalise)


def _safe_member_path(name: str, prefix: Path) -> Path:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in name or ":" in name or not pure.parts:
        raise QualificationError(Code.INSTALL_FAILED, f"archive member {name[:120]!r} escapes the install prefix")
    target = prefix.joinpath(*pure.parts)
    if not target.resolve().is_relative_to(prefix.resolve()):
        raise QualificationError(Code.INSTALL_FAILED, f"archive member {name[:120]!r} escapes the install prefix")
    return target


def _check_budget(count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise QualificationError(Code.INSTALL_FAILED, f"archive has more than {MAX_MEMBERS} members")
    if total > MAX_UNPACKED_BYTES:
        raise QualificationError(Code.INSTALL_FAILED, f"archive unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def _write_member(target: Path, source: object, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: a member listed twice cannot overwrite what was already unpacked.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as dst:
        while chunk := source.read(1 << 20):  # type: ignore[attr-defined]
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


def _unpack_tar(archive: Path, prefix: Path) -> None:
    try:
        with tarfile.open(archive, "r:gz") as tf:
            total = 0
            for count, member in enumerate(tf, start=1):
                total += max(member.size, 0)
                _check_budget(count, total)
                target = _safe_member_path(member.name, prefix)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                elif member.isreg():
                    source = tf.extractfile(member)
                    if source is None:
                        raise QualificationError(Code.INSTALL_FAILED, f"archive member {member.name!r} unreadable")
                    _write_member(target, source, member.mode)
                else:
                    raise QualificationError(
                        Code.INSTALL_FAILED, f"archive member {member.name[:120]!r} is a link or special file"
                    )
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
                    raise QualificationError(Code.INSTALL_FAILED, f"archive member {info.filename[:120]!r} is a link")
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                with zf.open(info) as source:
                    _write_member(target, source, stat.S_IMODE(mode) or 0o644)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise QualificationError(Code.INSTALL_FAILED, "archive lists a member twice") from exc
        raise QualificationError(Code.INSTALL_FAILED, f"archive is damaged: {exc}") from exc
