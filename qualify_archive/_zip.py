"""Unpacking a zip (Windows): regular files and folders only; zip carries no links here."""

from __future__ import annotations

import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from ._members import check_budget, damaged, safe_member_path, write_member
from ._names import Layout, refuse


def unpack_zip(archive: Path, prefix: Path) -> None:
    layout = Layout()
    try:
        with zipfile.ZipFile(archive) as zf:
            total = 0
            for count, info in enumerate(zf.infolist(), start=1):
                total += info.file_size
                check_budget(count, total)
                member = info.filename.rstrip("/") or info.filename
                target = safe_member_path(member, prefix)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise refuse(info.filename, "is a link")
                # Type bits are optional in zip (0 from tools that write none); a device or fifo is refused as in tar.
                if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise refuse(info.filename, "is a special file")
                if info.is_dir():
                    layout.add(PurePosixPath(member), "dir")
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                layout.add(PurePosixPath(member), "file")
                with zf.open(info) as source:
                    write_member(target, source, stat.S_IMODE(mode) or 0o644)
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
        raise damaged(exc) from exc
