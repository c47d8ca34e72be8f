"""What an installer tool wrote (or a mounted image holds), held to the unpack's rules after the fact.

The archive unpack enforces its rules as it writes. An installer kind whose
format only its own tool reads (``dpkg-deb``, ``unsquashfs``, ``hdiutil``,
``pkgutil``, ``msiexec``, an NSIS installer) writes first; this audit then
walks the tree without following anything and refuses what the unpack would
have refused: special files (devices, fifos, sockets), set-id bits, hard
links, links that are absolute or lead out of the tree (lexically or once
resolved), names a manifest cannot record or that alias one another on a
case-insensitive file system, and more members or bytes than the caps.

Links here are confined to the installed tree as a whole, not to a top
folder: a package installs ``usr/bin/app`` as a relative link into ``opt/``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from desktop_qualify.evidence_schemas import Code, QualificationError

from ._links import resolves_inside, stays_inside
from ._members import check_budget
from ._names import Layout, name_problem, refuse, text_problem
from ._tree import read_link, walk_tree

SETID = stat.S_ISUID | stat.S_ISGID


def check_link_target(name: PurePosixPath, target: str) -> None:
    """A link must be relative and stay inside the installed tree (whose root is the prefix)."""
    if problem := text_problem(target):
        raise refuse(str(name), f"is a link whose target {problem}")
    if not stays_inside(name.parent.parts, target):
        raise refuse(str(name), f"is a link to {target[:120]!r}, outside the installed tree")


def audit_tree(root: Path) -> int:
    """Refuse anything under ``root`` the hardened unpack would not have written; return the member count."""
    try:
        entries = walk_tree(root)
    except OSError as exc:
        raise QualificationError(Code.INSTALL_FAILED, f"the installed tree cannot be read: {exc}") from exc
    layout = Layout()
    total = 0
    for count, entry in enumerate(entries, start=1):
        name = PurePosixPath(entry.relative)
        if problem := name_problem(entry.relative):
            raise refuse(entry.relative, problem)
        if entry.mode & SETID:
            raise refuse(entry.relative, "has a set-user-id or set-group-id bit")
        if entry.is_link:
            check_link_target(name, read_link(entry.path))
            layout.add(name, "link")
        elif entry.is_dir:
            layout.add(name, "dir")
        elif entry.is_file:
            if os.lstat(entry.path).st_nlink > 1:
                raise refuse(entry.relative, "is a hard link")
            layout.add(name, "file")
            total += entry.size
        else:
            raise refuse(entry.relative, "is a device, fifo or socket")
        check_budget(count, total)
    for entry in entries:
        if entry.is_link and not resolves_inside(entry.path, root):
            raise refuse(entry.relative, "is a link that resolves outside the installed tree (or nowhere)")
    return len(entries)
