"""qualify_archive: pack and unpack the bundle, refusing what could escape the install prefix."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, _members, pack, unpack
from desktop_qualify.qualify_archive import _tar as tar_reader
from desktop_qualify.qualify_archive import _zip as zip_reader

Builder = Callable[[Path], Path]


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Builder:
    def build(where: Path) -> Path:
        path = where / "hostile.tar.gz"
        with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
            for info, data in members:
                if data is not None:
                    info.size = len(data)
                tf.addfile(info, io.BytesIO(data) if data is not None else None)
        return path

    return build


def _tinfo(name: str, kind: bytes = tarfile.REGTYPE, *, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = mode
    return info


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    return _tinfo(name, mode=mode), data


def _dir(name: str) -> tuple[tarfile.TarInfo, None]:
    return _tinfo(name, tarfile.DIRTYPE, mode=0o755), None


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    return _tinfo(name, tarfile.SYMTYPE, link=target, mode=0o777), None


def _zip(members: list[tuple[str, bytes, int]]) -> Builder:
    """(name, data, st_mode) triples; st_mode carries the file type bits as zip's external attributes do."""

    def build(where: Path) -> Path:
        path = where / "hostile.zip"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns about the duplicate names we write on purpose
            with zipfile.ZipFile(path, "w") as zf:
                for name, data, mode in members:
                    info = zipfile.ZipInfo(name)
                    info.external_attr = mode << 16
                    zf.writestr(info, data)
        return path

    return build


REG = stat.S_IFREG | 0o644

HOSTILE = [
    ("tar-absolute", _tar([_file("/tmp/evil")])),
    ("tar-dotdot", _tar([_file("../evil")])),
    ("tar-dotdot-inside", _tar([_file("app/../../evil")])),
    ("tar-backslash", _tar([_file("app\\..\\evil")])),
    ("tar-drive", _tar([_file("C:evil")])),
    ("tar-symlink", _tar([(_tinfo("app/link", tarfile.SYMTYPE, link="/etc/passwd"), None)])),
    ("tar-symlink-relative", _tar([(_tinfo("app/link", tarfile.SYMTYPE, link="../../x"), None)])),
    # Inside the prefix but outside the bundle's top folder: still an escape.
    ("tar-symlink-up-one", _tar([_dir("app"), _file("x"), _link("app/link", "../x")])),
    ("tar-symlink-deep-escape", _tar([_dir("app/a/b"), _link("app/a/b/link", "../../../../etc")])),
    ("tar-symlink-top-level", _tar([_dir("app"), _link("link", "app")])),
    ("tar-symlink-backslash", _tar([_file("app/x"), _link("app/link", "..\\..\\x")])),
    ("tar-symlink-drive", _tar([_file("app/x"), _link("app/link", "C:/x")])),
    ("tar-symlink-empty", _tar([_file("app/x"), _link("app/link", "")])),
    # Each link alone stays inside; followed together they leave the prefix.
    ("tar-symlink-chain", _tar([_dir("app/sub"), _link("app/sub/up", ".."), _link("app/esc", "sub/up/../..")])),
    ("tar-symlink-chain-to-a-sibling", _tar([_file("x"), _dir("app/d"), _link("app/d/l1", ".."),
                                             _link("app/l2", "d/l1/../x")])),
    ("tar-symlink-dangling", _tar([_dir("app"), _link("app/link", "missing")])),
    ("tar-symlink-loop", _tar([_dir("app"), _link("app/a", "b"), _link("app/b", "a")])),
    ("tar-symlink-twice", _tar([_file("app/x"), _link("app/l", "x"), _link("app/l", "x")])),
    ("tar-symlink-and-file", _tar([_file("app/x"), _link("app/l", "x"), _file("app/l")])),
    # A member whose path goes through a link member, in either order: it would be written where the link points.
    ("tar-file-through-link", _tar([_dir("app/sub"), _link("app/link", "sub"), _file("app/link/evil")])),
    ("tar-file-before-its-link", _tar([_dir("app/sub"), _file("app/link/evil"), _link("app/link", "sub")])),
    ("tar-dir-through-link", _tar([_dir("app/sub"), _link("app/link", "sub"), _dir("app/link/d")])),
    ("tar-link-through-link", _tar([_dir("app/sub"), _link("app/link", "sub"), _link("app/link/l2", "..")])),
    ("tar-hardlink", _tar([_file("app/a"), (_tinfo("app/b", tarfile.LNKTYPE, link="app/a"), None)])),
    ("tar-chardev", _tar([(_tinfo("app/null", tarfile.CHRTYPE), None)])),
    ("tar-blockdev", _tar([(_tinfo("app/sda", tarfile.BLKTYPE), None)])),
    ("tar-fifo", _tar([(_tinfo("app/fifo", tarfile.FIFOTYPE), None)])),
    ("tar-duplicate", _tar([_file("app/a", b"first"), _file("app/a", b"second")])),
    ("tar-damaged", lambda w: _write(w / "x.tar.gz", b"\x1f\x8b\x08\x00garbage")),
    ("tar-not-gzip", lambda w: _write(w / "x.tar.gz", b"PK\x03\x04 not a tar")),
    ("zip-absolute", _zip([("/tmp/evil", b"x", REG)])),
    ("zip-dotdot", _zip([("../evil", b"x", REG)])),
    ("zip-dotdot-inside", _zip([("app/../../evil", b"x", REG)])),
    ("zip-backslash", _zip([("app\\..\\evil", b"x", REG)])),
    ("zip-drive", _zip([("C:/evil", b"x", REG)])),
    ("zip-symlink", _zip([("app/link", b"/etc/passwd", stat.S_IFLNK | 0o777)])),
    ("zip-duplicate", _zip([("app/a", b"first", REG), ("app/a", b"second", REG)])),
    ("zip-chardev", _zip([("app/null", b"", stat.S_IFCHR | 0o666)])),
    ("zip-fifo", _zip([("app/fifo", b"", stat.S_IFIFO | 0o644)])),
    ("zip-damaged", lambda w: _write(w / "x.zip", b"PK\x05\x06" + b"\x00" * 10)),
]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("build", [b for _, b in HOSTILE], ids=[i for i, _ in HOSTILE])
def test_hostile_archives_are_refused(build: Builder, tmp_path: Path) -> None:
    archive = build(tmp_path)
    prefix = tmp_path / "prefix"
    with pytest.raises(QualificationError) as caught:
        unpack(archive, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    # Nothing escaped next to the prefix, and the refused install is gone whole: no file, folder or link is left.
    assert [p.name for p in tmp_path.iterdir()] == [archive.name]


# Why each link case is refused: the chains must be caught by the resolved check, not by accident.
LINK_REASONS = {
    "tar-symlink": "outside the bundle",
    "tar-symlink-up-one": "outside the bundle",
    "tar-symlink-top-level": "at the top level",
    "tar-symlink-chain": "resolves outside the bundle",
    "tar-symlink-chain-to-a-sibling": "resolves outside the bundle",
    "tar-symlink-dangling": "resolves outside the bundle (or nowhere)",
    "tar-symlink-loop": "resolves outside the bundle (or nowhere)",
    "tar-symlink-and-file": "both a link and a file",
    "tar-file-through-link": "goes through the link 'app/link'",
    "tar-file-before-its-link": "goes through the link 'app/link'",
    "tar-dir-through-link": "goes through the link 'app/link'",
    "tar-link-through-link": "goes through the link 'app/link'",
    "tar-hardlink": "hard link",
}


@pytest.mark.parametrize("case", sorted(LINK_REASONS))
def test_link_cases_are_refused_for_the_right_reason(case: str, tmp_path: Path) -> None:
    build = dict(HOSTILE)[case]
    with pytest.raises(QualificationError) as caught:
        unpack(build(tmp_path), tmp_path / "prefix")
    assert LINK_REASONS[case] in caught.value.message


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_duplicate_member_is_refused_before_it_is_written(kind: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []
    write = _members.write_member

    def spy(target: Path, source: IO[bytes], mode: int) -> None:
        written.append(target.relative_to(tmp_path / "prefix").as_posix())
        write(target, source, mode)

    monkeypatch.setattr(tar_reader if kind == "tar" else zip_reader, "write_member", spy)
    archive = (_tar([_file("app/a", b"first"), _file("app/a", b"second")]) if kind == "tar"
               else _zip([("app/a", b"first", REG), ("app/a", b"second", REG)]))(tmp_path)
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert "listed twice" in caught.value.message
    assert written == ["app/a"]
    assert not (tmp_path / "prefix").exists()


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_too_many_members(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    names = [f"app/f{i}" for i in range(4)]
    archive = (_tar([_file(n) for n in names]) if kind == "tar" else _zip([(n, b"x", REG) for n in names]))(tmp_path)
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert caught.value.code is Code.INSTALL_FAILED
    assert "members" in caught.value.message


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_too_many_bytes(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 1000)
    archive = (_tar([_file("app/a", b"x" * 600), _file("app/b", b"x" * 600)]) if kind == "tar"
               else _zip([("app/a", b"x" * 600, REG), ("app/b", b"x" * 600, REG)]))(tmp_path)
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert caught.value.code is Code.INSTALL_FAILED
    assert not (tmp_path / "prefix" / "app" / "b").exists()


def _bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle" / "skillhost"
    (bundle / "_internal" / "deep").mkdir(parents=True)
    (bundle / "skillhost").write_bytes(b"#!/bin/sh\necho hi\n")
    (bundle / "skillhost").chmod(0o755)
    (bundle / "_internal" / "data.json").write_bytes(b"{}")
    (bundle / "_internal" / "data.json").chmod(0o644)
    (bundle / "_internal" / "deep" / "lib.so").write_bytes(b"\x7fELF" + bytes(range(256)))
    (bundle / "_internal" / "deep" / "lib.so").chmod(0o700)
    return bundle


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_pack_unpack_round_trip_keeps_content_and_modes(suffix: str, tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    archive = tmp_path / f"skillhost{suffix}"
    pack(bundle, archive)
    prefix = tmp_path / "prefix"
    unpack(archive, prefix)
    unpacked = _tree(prefix / "skillhost")
    assert unpacked == _tree(bundle)
    assert unpacked["skillhost"][1] == 0o755
    assert unpacked["_internal/data.json"][1] == 0o644
    assert unpacked["_internal/deep/lib.so"][1] == 0o700


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_set_id_and_world_write_bits_are_stripped(kind: str, tmp_path: Path) -> None:
    mode = stat.S_ISUID | stat.S_ISGID | 0o777
    archive = (_tar([_file("app/tool", b"x", mode=mode)]) if kind == "tar"
               else _zip([("app/tool", b"x", stat.S_IFREG | mode)]))(tmp_path)
    unpack(archive, tmp_path / "prefix")
    assert stat.S_IMODE((tmp_path / "prefix" / "app" / "tool").stat().st_mode) == 0o755


def test_zip_pack_refuses_a_symlink_in_the_bundle(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "link").symlink_to("skillhost")
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.zip")
    assert caught.value.code is Code.BUILD_FAILED


def test_zip_pack_is_reproducible(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    pack(bundle, tmp_path / "a.zip")
    (tmp_path / "again").mkdir()
    pack(bundle, tmp_path / "again" / "a.zip")
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "again" / "a.zip").read_bytes()


def test_tar_pack_is_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _bundle(tmp_path)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    pack(bundle, tmp_path / "one" / "a.tar.gz")
    monkeypatch.setattr(time, "time", lambda: 1_800_000_100.0)
    pack(bundle, tmp_path / "two" / "a.tar.gz")
    monkeypatch.setattr(time, "time", real_time)
    assert (tmp_path / "one" / "a.tar.gz").read_bytes() == (tmp_path / "two" / "a.tar.gz").read_bytes()


def test_pack_writes_no_owner_and_a_fixed_mtime(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    pack(bundle, tmp_path / "a.tar.gz")
    with tarfile.open(tmp_path / "a.tar.gz", "r:gz") as tf:
        members = tf.getmembers()
    assert members[0].name == "skillhost"
    assert members[0].isdir()
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    assert len({m.mtime for m in members}) == 1
    assert [m.name for m in members] == sorted(m.name for m in members)


def test_unpack_into_an_existing_prefix_is_a_qualification_error(tmp_path: Path) -> None:
    archive = _tar([_file("app/a")])(tmp_path)
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "mine").write_bytes(b"not the archive's")
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert "must be fresh" in caught.value.message
    # A prefix unpack did not make is never removed: only a refused install of its own is discarded.
    assert [p.name for p in (tmp_path / "prefix").iterdir()] == ["mine"]


# -- symlinks in a macOS bundle: relative, internal ones survive a tar round trip ------------------------------

def _mac_bundle(tmp_path: Path) -> Path:
    """A PyInstaller-6-like macOS onedir: dylib aliases and a framework's Versions/Current link, chained."""
    bundle = _bundle(tmp_path)
    internal = bundle / "_internal"
    (internal / "libssl.3.dylib").write_bytes(b"\xcf\xfa\xed\xfe" + b"ssl")
    (internal / "libssl.dylib").symlink_to("libssl.3.dylib")
    versions = internal / "Python.framework" / "Versions"
    (versions / "3.11").mkdir(parents=True)
    (versions / "3.11" / "Python").write_bytes(b"\xcf\xfa\xed\xfe" + b"python")
    (versions / "Current").symlink_to("3.11", target_is_directory=True)
    (internal / "Python.framework" / "Python").symlink_to("Versions/Current/Python")
    (internal / "Python").symlink_to("Python.framework/Python")
    return bundle


LINKS = {
    "_internal/libssl.dylib": "libssl.3.dylib",
    "_internal/Python.framework/Versions/Current": "3.11",
    "_internal/Python.framework/Python": "Versions/Current/Python",
    "_internal/Python": "Python.framework/Python",
}


def _links(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): str(p.readlink()) for p in root.rglob("*") if p.is_symlink()}


def test_tar_round_trip_keeps_internal_relative_links(tmp_path: Path) -> None:
    bundle = _mac_bundle(tmp_path)
    archive = tmp_path / "skillhost.tar.gz"
    pack(bundle, archive)
    with tarfile.open(archive, "r:gz") as tf:
        members = {m.name: m for m in tf.getmembers()}
    # Stored as link members, and nothing is stored (twice) through a link to a folder.
    assert {n.removeprefix("skillhost/"): m.linkname for n, m in members.items() if m.issym()} == LINKS
    assert not any(n.startswith("skillhost/_internal/Python.framework/Versions/Current/") for n in members)
    prefix = tmp_path / "prefix"
    unpack(archive, prefix)
    installed = prefix / "skillhost"
    assert _links(installed) == LINKS
    assert (installed / "_internal" / "Python").read_bytes() == b"\xcf\xfa\xed\xfepython"
    assert _tree(installed) == _tree(bundle)


def test_pack_accepts_a_link_to_the_bundle_folder_itself(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "_internal" / "root").symlink_to("..", target_is_directory=True)
    pack(bundle, tmp_path / "a.tar.gz")
    unpack(tmp_path / "a.tar.gz", tmp_path / "prefix")
    assert (tmp_path / "prefix" / "skillhost" / "_internal" / "root").resolve() == \
        (tmp_path / "prefix" / "skillhost").resolve()


def _escape_outside(bundle: Path) -> None:
    (bundle.parent / "x").write_bytes(b"outside")
    (bundle / "link").symlink_to("../x")


def _escape_absolute(bundle: Path) -> None:
    (bundle / "link").symlink_to(bundle / "skillhost")  # absolute, even though it points inside


def _escape_by_chain(bundle: Path) -> None:
    (bundle / "_internal" / "up").symlink_to("..", target_is_directory=True)
    (bundle / "esc").symlink_to("_internal/up/..")


def _dangling(bundle: Path) -> None:
    (bundle / "link").symlink_to("missing")


def _fifo(bundle: Path) -> None:
    os.mkfifo(bundle / "pipe")


PACK_REFUSALS = [("outside", _escape_outside, "leaves the bundle"), ("absolute", _escape_absolute, "leaves the bundle"),
                 ("chain", _escape_by_chain, "leaves the bundle"), ("dangling", _dangling, "leaves the bundle"),
                 ("fifo", _fifo, "special file")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX links and fifos")
@pytest.mark.parametrize(("damage", "why"), [(d, w) for _, d, w in PACK_REFUSALS], ids=[i for i, _, _ in PACK_REFUSALS])
def test_tar_pack_refuses_links_that_leave_the_bundle(damage: Callable[[Path], None], why: str,
                                                      tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    damage(bundle)
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.tar.gz")
    assert caught.value.code is Code.BUILD_FAILED
    assert why in caught.value.message


def test_a_hard_linked_file_is_packed_as_a_plain_file(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "again").hardlink_to(bundle / "skillhost")
    pack(bundle, tmp_path / "a.tar.gz")
    with tarfile.open(tmp_path / "a.tar.gz", "r:gz") as tf:
        assert {m.type for m in tf.getmembers()} <= {tarfile.REGTYPE, tarfile.DIRTYPE}
    unpack(tmp_path / "a.tar.gz", tmp_path / "prefix")
    assert (tmp_path / "prefix" / "skillhost" / "again").read_bytes() == (bundle / "skillhost").read_bytes()


def test_zip_pack_refuses_even_an_internal_link(tmp_path: Path) -> None:
    bundle = _mac_bundle(tmp_path)
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.zip")
    assert caught.value.code is Code.BUILD_FAILED


def test_tar_pack_deflates_at_the_fast_level(tmp_path: Path) -> None:
    """Level 9 cost half the build for 8% of the size: the gzip header says which level wrote it (XFL 4: fastest)."""
    bundle = _bundle(tmp_path)
    pack(bundle, tmp_path / "a.tar.gz")
    header = (tmp_path / "a.tar.gz").read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[8] == 4


def test_zip_pack_deflates_at_the_fast_level(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "_internal" / "text.txt").write_bytes(b"".join(b"line %d of a compressible file\n" % i
                                                             for i in range(20_000)))
    pack(bundle, tmp_path / "a.zip")
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        info = zf.getinfo("skillhost/_internal/text.txt")
    fast = zlib.compressobj(1, zlib.DEFLATED, -15)
    data = (bundle / "_internal" / "text.txt").read_bytes()
    assert info.compress_size == len(fast.compress(data) + fast.flush())
