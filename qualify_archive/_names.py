"""Names an archive may use: text a manifest can record, and no two spellings of one path."""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath
from typing import Literal

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_files import casefold_name

from . import _limits as limits


def refuse(name: str, why: str) -> QualificationError:
    return QualificationError(Code.INSTALL_FAILED, f"archive member {name[:120]!r} {why}")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a name or link target: a manifest records it as UTF-8 text, shown to people."""
    try:
        text.encode("utf-8")  # tarfile and os hand undecodable bytes over as lone surrogates, which fail here
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if any(unicodedata.category(char) in limits.UNSAFE_CATEGORIES for char in text):
        return "contains a control or format character"
    return None


def name_problem(name: str) -> str | None:
    if problem := text_problem(name):
        return problem
    if len(PurePosixPath(name).as_posix()) > limits.MAX_NAME_CHARS:
        return f"is longer than {limits.MAX_NAME_CHARS} characters"
    return None


_Kind = Literal["file", "dir", "link"]


class Layout:
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
        folded = tuple(casefold_name(part) for part in name.parts)
        for depth in range(1, len(folded) + 1):
            spelled = PurePosixPath(*name.parts[:depth])
            first = self._spelling.setdefault(folded[:depth], spelled)
            if first != spelled:
                raise refuse(str(name), f"collides with {str(first)[:120]!r} on a case-insensitive or "
                                         "normalising file system")
        for depth in range(1, len(folded)):
            ancestor = self._kind.get(folded[:depth])
            if ancestor == "link":
                raise refuse(str(name), f"goes through the link {str(PurePosixPath(*name.parts[:depth]))[:120]!r}")
            if ancestor == "file":
                raise refuse(str(name), f"is below the file {str(PurePosixPath(*name.parts[:depth]))[:120]!r}")
            self._first_below.setdefault(folded[:depth], name)
        if (earlier := self._kind.get(folded)) is not None:
            if earlier == kind:
                raise refuse(str(name), "is listed twice")
            raise refuse(str(name), "is both a link and a file or folder" if "link" in (earlier, kind)
                          else "is both a file and a folder")
        if kind != "dir" and (below := self._first_below.get(folded)) is not None:
            if kind == "link":
                raise refuse(str(below), f"goes through the link {str(name)[:120]!r}")
            raise refuse(str(name), f"is a file, but {str(below)[:120]!r} is below it")
        self._kind[folded] = kind
