"""Packing a built bundle into one archive: sorted, without owners, the same bytes for the same content.

What unpack would refuse is never packed.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import NOFOLLOW

from . import _limits as limits
from ._links import resolves_inside, stays_inside
from ._names import name_problem, text_problem
from ._tree import TreeEntry, read_link, walk_tree


def _check_bundle(bundle_dir: Path, entries: list[TreeEntry], *, zip_format: bool) -> None:
    for entry in entries:
        # What unpack would refuse must not be built: the name as it will stand in the archive.
        if problem := name_problem(f"{bundle_dir.name}/{entry.relative}"):
            raise QualificationError(Code.BUILD_FAILED, f"bundle path {entry.relative[:120]!r} {problem}")
        if entry.is_link:
            if zip_format:
                raise QualificationError(Code.BUILD_FAILED, f"bundle contains a symlink: {entry.relative}",
                                         hint="a zip archive cannot carry links; the Windows bundle must have none")
            target = read_link(entry.path)
            if text_problem(target) or not stays_inside(PurePosixPath(entry.relative).parent.parts, target) or \
                    not resolves_inside(entry.path, bundle_dir):
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
    info.mtime = limits.EPOCH
    return info


def _pack_tar(bundle_dir: Path, entries: list[TreeEntry], archive: Path) -> None:
    top = bundle_dir.name
    # The gzip header's name and mtime are fixed too: same content, same bytes.
    with archive.open("wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=limits.EPOCH,
                          compresslevel=limits.DEFLATE_LEVEL) as gz, \
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
                with os.fdopen(os.open(entry.path, os.O_RDONLY | NOFOLLOW), "rb") as src:
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
            # A member's deflate level can be given publicly only with its whole data (ZipInfo.compress_level
            # is public from Python 3.13 on): one file at a time is held, the largest of a bundle.
            with os.fdopen(os.open(entry.path, os.O_RDONLY | NOFOLLOW), "rb") as src:
                zf.writestr(info, src.read(), compresslevel=limits.DEFLATE_LEVEL)


def pack(bundle_dir: Path, archive: Path) -> None:
    """Archive ``bundle_dir`` (its folder name kept as the top level), sorted and without owners."""
    entries = walk_tree(bundle_dir)
    zip_format = archive.name.endswith(".zip")
    _check_bundle(bundle_dir, entries, zip_format=zip_format)
    (_pack_zip if zip_format else _pack_tar)(bundle_dir, entries, archive)
