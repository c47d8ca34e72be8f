"""The deb installer: the members it checks are the members it writes, whatever the data tar's headers say.

Each package here is written header by header (raw 512-byte blocks), so that
Python's tarfile and GNU tar read it two ways: a ``+12`` size field is octal 10
to tarfile and 3446 in GNU tar's old base-64 form, so the blocks tarfile reads
as one member's data hold, for GNU tar, more members (a set-user-id file, a
device node, an absolute link with a file written through it). A checksum
that does not match ends the archive for tarfile, while GNU tar skips the block
and reads on. Each is refused with QE_INSTALL_FAILED, and a spy on the
installer's clean-up sees an empty prefix at the moment of refusal: nothing,
hidden or not, reached it.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers import _installers
from desktop_qualify.producer.installers._installers import install_with
from desktop_qualify.qualify_archive import tree_manifest
from support.packages import require
from support.raw_deb import app_blocks, behind_plus_twelve, data, deb_of, end, header

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")

def hidden_members(shape: str, outside: Path) -> bytes:
    if shape == "file":
        return header("./opt/demo/hidden", size=6, mode=0o755) + data(b"hidden")
    if shape == "setuid":
        return header("./opt/demo/su", size=2, mode=0o4755) + data(b"x\n")
    if shape == "device":
        return header("./opt/demo/null", kind=b"3", mode=0o666, dev=(1, 3))
    assert shape == "absolute-link"
    return (header("./opt/demo/out", kind=b"2", mode=0o777, linkname=str(outside))
            + header("./opt/demo/out/written", size=8, mode=0o644) + data(b"written\n"))


def plus_twelve_tar(shape: str, outside: Path) -> bytes:
    return behind_plus_twelve(hidden_members(shape, outside))


def bad_checksum_tar(shape: str, outside: Path) -> bytes:
    """tarfile ends the archive at a header whose checksum is wrong; GNU tar skips it and reads the rest."""
    return end(app_blocks() + header("./opt/demo/junk", size=0, checksum_delta=1) + hidden_members(shape, outside))


def _listing(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):  # links are listed, never followed
        found += [(Path(folder) / name).relative_to(root).as_posix() for name in dirs + files]
    return sorted(found)


@pytest.fixture
def seen_at_refusal(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What the prefix held when the installer gave up, recorded just before its clean-up removes it."""
    seen: list[list[str]] = []
    discard = _installers._discard

    def spy(prefix: Path) -> None:
        seen.append(_listing(prefix) if prefix.is_dir() else [])
        discard(prefix)

    monkeypatch.setattr(_installers, "_discard", spy)
    return seen


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


@pytest.mark.parametrize("shape", ["file", "setuid", "device", "absolute-link"])
def test_a_plus_twelve_size_field_is_refused_before_anything_reaches_the_prefix(
        tmp_path: Path, shape: str, seen_at_refusal: list[list[str]]) -> None:
    require("dpkg-deb", "dpkg")
    outside = _outside(tmp_path)
    package = deb_of(tmp_path / "two-ways.deb", plus_twelve_tar(shape, outside))
    prefix = tmp_path / "work" / "install"
    with pytest.raises(QualificationError) as caught:
        install_with("deb", package, prefix)
    assert seen_at_refusal == [[]], caught.value.message  # refused before anything was written
    assert caught.value.code is Code.INSTALL_FAILED
    assert "size field is not plain octal" in caught.value.message, caught.value.message
    assert not prefix.exists() or not any(prefix.iterdir())
    assert not any(outside.iterdir())


@pytest.mark.parametrize("shape", ["setuid", "device", "absolute-link"])
def test_a_header_with_a_bad_checksum_is_refused_before_anything_reaches_the_prefix(
        tmp_path: Path, shape: str, seen_at_refusal: list[list[str]]) -> None:
    require("dpkg-deb", "dpkg")
    outside = _outside(tmp_path)
    package = deb_of(tmp_path / "skipped.deb", bad_checksum_tar(shape, outside))
    prefix = tmp_path / "work" / "install"
    with pytest.raises(QualificationError) as caught:
        install_with("deb", package, prefix)
    assert seen_at_refusal == [[]], caught.value.message
    assert caught.value.code is Code.INSTALL_FAILED
    assert "malformed header" in caught.value.message, caught.value.message
    assert not prefix.exists() or not any(prefix.iterdir())
    assert not any(outside.iterdir())


def test_the_same_package_with_plain_octal_headers_installs(tmp_path: Path) -> None:
    """The crafted packages fail by their headers alone: written plainly, the same builder's package installs."""
    require("dpkg-deb", "dpkg")
    body = app_blocks() + header("./opt/demo/pad", size=10) + data(b"0123456789")
    package = deb_of(tmp_path / "plain.deb", end(body))
    prefix = tmp_path / "work" / "install"
    assert install_with("deb", package, prefix) == "deb"
    assert [entry.path for entry in tree_manifest(prefix)] == ["opt/demo/demo", "opt/demo/pad"]
    assert (prefix / "opt/demo/pad").read_bytes() == b"0123456789"


def test_the_crafted_header_really_reads_two_ways(tmp_path: Path) -> None:
    """The premise: tarfile (before the header rules) and GNU tar disagree about the ``+12`` package."""
    import subprocess
    import tarfile

    tar = require("tar", "tar")
    raw = plus_twelve_tar("file", _outside(tmp_path))
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r|") as tf:
        python_names = [member.name for member in tf]
    gnu_names = subprocess.run([tar, "-tf", "-"], input=raw, capture_output=True, check=False).stdout.decode()
    assert "./opt/demo/hidden" not in python_names
    assert "./opt/demo/cover" in python_names
    assert "./opt/demo/hidden" in gnu_names.split()
    assert "./opt/demo/cover" not in gnu_names.split()
