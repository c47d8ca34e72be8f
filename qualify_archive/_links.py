"""Symbolic links: relative, confined to the bundle's top folder, checked lexically and once resolved."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from . import _limits as limits
from ._names import refuse, text_problem


def stays_inside(link_dir: tuple[str, ...], target: str) -> bool:
    """Whether ``target``, read from a link in folder ``link_dir`` (relative to a root), stays in the root.

    Lexical only: the resolved check follows, since a chain of links can
    escape where each link alone looks contained.
    """
    if not target or len(target) > limits.MAX_LINK_TARGET or any(c in target for c in "\\:\0"):
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


def resolves_inside(link: Path, root: Path) -> bool:
    try:
        resolved = Path(os.path.realpath(link, strict=True))
        return resolved.is_relative_to(Path(os.path.realpath(root, strict=True)))
    except OSError:  # dangling or a loop: not a link into the bundle
        return False


def check_link_member(name: PurePosixPath, target: str) -> None:
    # A link is confined to the bundle's top folder, so it must sit below one.
    if len(name.parts) < 2:
        raise refuse(str(name), "is a link at the top level")
    if problem := text_problem(target):
        raise refuse(str(name), f"is a link whose target {problem}")
    if not stays_inside(name.parent.parts[1:], target):
        raise refuse(str(name), f"is a link to {target[:120]!r}, outside the bundle")


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
            raise refuse(str(name), f"is a link in {part[:120]!r}, a folder the archive does not make") from None
        if not stat.S_ISDIR(mode):
            raise refuse(str(name), f"is a link below {part[:120]!r}, which is not a real folder")


def _check_links_resolve(prefix: Path, links: dict[PurePosixPath, str], *, confined_to_tree: bool) -> None:
    # Only once all exist can chains be followed: every link must land inside its own bundle folder (or, for a
    # package's tree, inside the prefix).
    for name in links:
        root = prefix if confined_to_tree else prefix / name.parts[0]
        if not resolves_inside(prefix.joinpath(*name.parts), root):
            where = "the installed tree" if confined_to_tree else "the bundle"
            raise refuse(str(name), f"is a link that resolves outside {where} (or nowhere)")


def place_links(prefix: Path, links: dict[PurePosixPath, str], *, confined_to_tree: bool = False) -> None:
    # A refusal here leaves links behind on purpose: the caller removes the whole prefix.
    for name, target in sorted(links.items()):
        _require_real_folders(prefix, name)
        prefix.joinpath(*name.parts).symlink_to(target)
    _check_links_resolve(prefix, links, confined_to_tree=confined_to_tree)
