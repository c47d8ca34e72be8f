"""The hostile corpus's rows for the deb installer (issue 32, item 9): a package whose data tar it must refuse.

Each row is a .deb written header by header (raw 512-byte ustar blocks, gzip data member), handed to the
producer's deb installer (``install_with("deb", ...)``: ``dpkg-deb --fsys-tarfile`` streamed into the hardened
unpack of qualify_archive). The baseline row, the same builder's plain package, installs; every other row is
refused with its code, names what refused it, and leaves nothing in the prefix or outside it:

* a numeric header field that is neither plain octal nor GNU base-256 (a ``+12`` size, which tarfile reads as
  10 and GNU tar as its old base-64 form, 3446, so the blocks tarfile takes for data hold, for GNU tar, a
  set-user-id file, a device node or an absolute link with a file written through it);
* the same members in plain sight: a set-user-id or set-group-id member, a device node, an absolute link
  with a file written through it, and an absolute link alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._installers import install_with
from support.packages import require
from support.raw_deb import app_blocks, behind_plus_twelve, data, deb_of, end, header

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")

def _setuid(outside: Path) -> bytes:
    return header("./opt/demo/su", size=2, mode=0o4755) + data(b"x\n")


def _setgid(outside: Path) -> bytes:
    return header("./opt/demo/sg", size=2, mode=0o2755) + data(b"x\n")


def _device(outside: Path) -> bytes:
    return header("./opt/demo/null", kind=b"3", mode=0o666, dev=(1, 3))


def _absolute_link_written_through(outside: Path) -> bytes:
    return (header("./opt/demo/out", kind=b"2", mode=0o777, linkname=str(outside))
            + header("./opt/demo/out/written", size=8, mode=0o644) + data(b"written\n"))


def _absolute_link(outside: Path) -> bytes:
    return header("./opt/demo/out", kind=b"2", mode=0o777, linkname=str(outside))


def _in_plain_sight(members: Callable[[Path], bytes]) -> Callable[[Path], bytes]:
    return lambda outside: end(app_blocks() + members(outside))


def _behind_plus_twelve(members: Callable[[Path], bytes]) -> Callable[[Path], bytes]:
    return lambda outside: behind_plus_twelve(members(outside))


def _plain(outside: Path) -> bytes:
    return end(app_blocks() + header("./opt/demo/pad", size=10) + data(b"0123456789"))


@dataclass(frozen=True)
class DebRow:
    id: str
    data_tar: Callable[[Path], bytes]  # the data tar, given a folder outside the prefix an absolute link may name
    code: Code | None  # None: the plain baseline, which must install
    says: str = ""  # what the refusal names, so the row is refused by its own check


PLUS_TWELVE = "size field is not plain octal (b'+12"
SET_ID = "has a set-user-id or set-group-id bit"
SPECIAL = "is a hard link or special file"
OUTSIDE = ", outside the installed tree"  # the listing's check, before any link is placed

DEB_CORPUS = [
    DebRow("deb-plain-package-installs", _plain, None),
    # -- a numeric field two tar readers read two ways, hiding what GNU tar would extract
    DebRow("deb-plus-twelve-size-hides-a-set-user-id-file", _behind_plus_twelve(_setuid), Code.INSTALL_FAILED,
           PLUS_TWELVE),
    DebRow("deb-plus-twelve-size-hides-a-device-node", _behind_plus_twelve(_device), Code.INSTALL_FAILED, PLUS_TWELVE),
    DebRow("deb-plus-twelve-size-hides-an-absolute-link-written-through",
           _behind_plus_twelve(_absolute_link_written_through), Code.INSTALL_FAILED, PLUS_TWELVE),
    # -- the same members in plain sight
    DebRow("deb-set-user-id-member", _in_plain_sight(_setuid), Code.INSTALL_FAILED, SET_ID),
    DebRow("deb-set-group-id-member", _in_plain_sight(_setgid), Code.INSTALL_FAILED, SET_ID),
    DebRow("deb-device-node-member", _in_plain_sight(_device), Code.INSTALL_FAILED, SPECIAL),
    DebRow("deb-absolute-link-with-a-file-written-through-it", _in_plain_sight(_absolute_link_written_through),
           Code.INSTALL_FAILED, OUTSIDE),
    DebRow("deb-absolute-link-member", _in_plain_sight(_absolute_link), Code.INSTALL_FAILED, OUTSIDE),
]


def _listing(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):  # links are listed, never followed
        found += [(Path(folder) / name).relative_to(root).as_posix() for name in dirs + files]
    return sorted(found)


def test_row_ids_are_unique() -> None:
    ids = [row.id for row in DEB_CORPUS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("row", DEB_CORPUS, ids=lambda row: row.id)
def test_hostiledeb_of(row: DebRow, tmp_path: Path) -> None:
    require("dpkg-deb", "dpkg")
    outside = tmp_path / "outside"
    outside.mkdir()
    package = deb_of(tmp_path / "crafted.deb", row.data_tar(outside))
    prefix = tmp_path / "work" / "install"
    if row.code is None:
        assert install_with("deb", package, prefix) == "deb"
        assert _listing(prefix) == ["opt", "opt/demo", "opt/demo/demo", "opt/demo/pad"]
        return
    with pytest.raises(QualificationError) as caught:
        install_with("deb", package, prefix)
    assert caught.value.code is row.code, caught.value.message
    assert row.says in caught.value.message, caught.value.message
    assert not prefix.exists() or _listing(prefix) == []
    assert _listing(outside) == []
