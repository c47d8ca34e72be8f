"""A folder's state, to compare before and after a command that must change nothing there."""

from __future__ import annotations

import stat
from pathlib import Path


def snapshot(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder``: its kind and its link target or bytes (FIFOs and devices are never read)."""
    seen: dict[str, tuple[str, str]] = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        name = str(path.relative_to(folder))
        if stat.S_ISLNK(mode):
            seen[name] = ("link", str(path.readlink()))
        elif stat.S_ISREG(mode):
            seen[name] = ("file", path.read_bytes().hex())
        elif stat.S_ISDIR(mode):
            seen[name] = ("dir", "")
        else:
            seen[name] = ("special", oct(stat.S_IFMT(mode)))
    return seen
