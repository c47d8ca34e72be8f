"""Hand-built archives for the unpack tests: members of any kind, names of any shape."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

Member = tuple[str, str, str]  # (kind: f, d or l; name; link target)


def tgz(where: Path, members: list[Member], *, name: str = "crafted.tar.gz") -> Path:
    """A .tar.gz holding exactly ``members``, in order (files hold one byte)."""
    path = where / name
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for kind, member, target in members:
            info = tarfile.TarInfo(member)
            if kind == "f":
                info.size = 1
                tf.addfile(info, io.BytesIO(b"x"))
                continue
            info.type = tarfile.DIRTYPE if kind == "d" else tarfile.SYMTYPE
            info.mode = 0o755
            info.linkname = target
            tf.addfile(info)
    return path


def files_and_links(files: list[str], links: dict[str, str] | None = None) -> list[Member]:
    return [("f", name, "") for name in files] + [("l", name, target) for name, target in (links or {}).items()]


def zip_of(where: Path, names: list[str], *, name: str = "crafted.zip") -> Path:
    """A .zip of one-byte files with exactly these member names."""
    path = where / name
    with zipfile.ZipFile(path, "w") as zf:
        for member in names:
            zf.writestr(member, b"x")
    return path
