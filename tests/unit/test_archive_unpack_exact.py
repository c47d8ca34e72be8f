"""The zip unpack (Windows bundles), the fresh prefix and its removal on refusal, held to exact outcomes.

The tar path is the one the corpus and the installers exercise most; these hold the zip path's own rules (what a
listing may hold and in what order, the caps at their boundary, modes), the prefix's creation and removal, the
per-member write, and a link's manifest entry: written for the mutants of ``qualify_archive`` that survived the
other tests (docs/mutation.md).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, unpack
from desktop_qualify.qualify_archive import _unpack as unpack_module
from desktop_qualify.qualify_archive._members import damaged, safe_member_path, write_member
from desktop_qualify.qualify_archive._tree import _unfollowed_sha256, link_entry

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


def _zip(path: Path, members: list[tuple[str, bytes | None, int]]) -> Path:
    """``members``: (name, data or None for a folder entry, the mode bits stored in external_attr)."""
    with zipfile.ZipFile(path, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a name listed twice, on purpose
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            with zf.open(info, "w") as member:
                member.write(b"" if data is None else data)
            # Set after the write, which gives an entry without mode bits 0o600 of its own; the central
            # directory, written on close, records this value.
            info.external_attr = mode << 16
    return path


def _refused(archive: Path, prefix: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        unpack(archive, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert not prefix.exists()
    return caught.value


def _files(prefix: Path) -> dict[str, bytes]:
    return {p.relative_to(prefix).as_posix(): p.read_bytes() for p in sorted(prefix.rglob("*")) if p.is_file()}


# --- zip ----------------------------------------------------------------------------------------------------------


def test_a_listing_may_name_a_folder_after_what_is_in_it_and_before_more(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "app.zip",
        [
            ("app/bin/tool.exe", b"MZ", stat.S_IFREG | 0o755),
            ("app/bin/", None, stat.S_IFDIR | 0o755),  # the folder of a member already written
            ("app/data/deep/", None, stat.S_IFDIR | 0o755),  # a folder whose parent no member made
            ("app/data/deep/notes.txt", b"n", stat.S_IFREG | 0o644),
            ("app/readme.txt", b"r", stat.S_IFREG | 0o644),
        ],
    )
    prefix = tmp_path / "prefix"
    unpack(archive, prefix)
    assert _files(prefix) == {"app/bin/tool.exe": b"MZ", "app/data/deep/notes.txt": b"n", "app/readme.txt": b"r"}
    assert (prefix / "app" / "data" / "deep").is_dir()


def test_a_member_name_keeps_every_character_but_a_folders_trailing_slash(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "app.zip",
        [
            ("app/notes ", b"trailing space", stat.S_IFREG | 0o644),
            ("app/boX", b"ends in X", stat.S_IFREG | 0o644),
            ("app/sub/", None, stat.S_IFDIR | 0o755),
        ],
    )
    prefix = tmp_path / "prefix"
    unpack(archive, prefix)
    assert _files(prefix) == {"app/boX": b"ends in X", "app/notes ": b"trailing space"}
    assert (prefix / "app" / "sub").is_dir()


@POSIX_ONLY
def test_a_member_without_mode_bits_is_written_read_write_for_its_owner_readable_by_all(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "app.zip", [("app/plain.txt", b"x", 0), ("app/tool", b"y", stat.S_IFREG | 0o755)])
    prefix = tmp_path / "prefix"
    unpack(archive, prefix)
    assert stat.S_IMODE((prefix / "app" / "plain.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((prefix / "app" / "tool").stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("member", "mode", "message"),
    [
        ("app/l", stat.S_IFLNK | 0o777, "archive member 'app/l' is a link"),
        ("app/p", stat.S_IFIFO | 0o644, "archive member 'app/p' is a special file"),
        ("app/c", stat.S_IFCHR | 0o644, "archive member 'app/c' is a special file"),
    ],
)
def test_a_link_or_a_special_file_in_a_zip_is_refused(tmp_path: Path, member: str, mode: int, message: str) -> None:
    archive = _zip(tmp_path / "app.zip", [("app/ok.txt", b"x", stat.S_IFREG | 0o644), (member, b"t", mode)])
    assert _refused(archive, tmp_path / "prefix").message == message


def test_a_member_below_a_file_is_refused_by_the_layout(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "app.zip",
        [
            ("app/f", b"file", stat.S_IFREG | 0o644),
            ("app/f/x", b"below it", stat.S_IFREG | 0o644),
        ],
    )
    assert _refused(archive, tmp_path / "prefix").message == "archive member 'app/f/x' is below the file 'app/f'"


def test_a_folder_listed_twice_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "app.zip", [("app/", None, stat.S_IFDIR | 0o755), ("app/", None, stat.S_IFDIR | 0o755)])
    assert _refused(archive, tmp_path / "prefix").message == "archive member 'app' is listed twice"


def test_the_zip_caps_count_members_and_bytes_at_their_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = [("app/a", b"12345", stat.S_IFREG | 0o644), ("app/b", b"1234567", stat.S_IFREG | 0o644)]
    archive = _zip(tmp_path / "app.zip", members)
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 2)
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 12)
    unpack(archive, tmp_path / "fits")
    assert _files(tmp_path / "fits") == {"app/a": b"12345", "app/b": b"1234567"}
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 1)
    assert _refused(archive, tmp_path / "one-member").message == "archive has more than 1 members"
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 2)
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 11)
    assert _refused(archive, tmp_path / "eleven-bytes").message == "archive unpacks to more than 11 bytes"


def test_a_damaged_zip_says_what_the_reader_said(tmp_path: Path) -> None:
    archive = tmp_path / "app.zip"
    archive.write_bytes(b"not a zip at all")
    assert _refused(archive, tmp_path / "prefix").message == "archive is damaged: File is not a zip file"


def test_damaged_names_a_member_listed_twice_as_such() -> None:
    twice = damaged(FileExistsError(17, "File exists"))
    assert (twice.code, twice.message) == (Code.INSTALL_FAILED, "archive lists a member twice")
    other = damaged(OSError("short read"))
    assert (other.code, other.message) == (Code.INSTALL_FAILED, "archive is damaged: short read")


# --- the prefix ---------------------------------------------------------------------------------------------------


def test_the_prefix_and_its_missing_parents_are_created(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "app.zip", [("app/a", b"x", stat.S_IFREG | 0o644)])
    prefix = tmp_path / "not" / "yet" / "prefix"
    unpack(archive, prefix)
    assert _files(prefix) == {"app/a": b"x"}


def test_a_prefix_that_cannot_be_created_is_an_install_failure(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "app.zip", [("app/a", b"x", stat.S_IFREG | 0o644)])
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is needed")
    prefix = blocker / "prefix"
    with pytest.raises(QualificationError) as caught:
        unpack(archive, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message.startswith(f"cannot create the install prefix {prefix}: ")
    assert blocker.read_text() == "a file where a folder is needed"


def test_a_refusal_removes_the_prefix_whole_ignoring_what_cannot_be_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, object]] = []
    real_rmtree = unpack_module.shutil.rmtree

    def spy(path: Path, **kwargs: object) -> None:
        calls.append(kwargs)
        real_rmtree(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(unpack_module.shutil, "rmtree", spy)
    archive = _zip(tmp_path / "app.zip", [("app/a", b"x", stat.S_IFREG | 0o644), ("app/l", b"t", stat.S_IFLNK | 0o777)])
    _refused(archive, tmp_path / "prefix")
    # A file it cannot remove must not turn the refusal into another error: what is left is reported instead.
    assert calls == [{"ignore_errors": True}]


def test_a_refusal_whose_prefix_could_not_be_removed_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack_module.shutil, "rmtree", lambda path, **kwargs: None)  # removes nothing
    archive = _zip(tmp_path / "app.zip", [("app/l", b"t", stat.S_IFLNK | 0o777)])
    prefix = tmp_path / "prefix"
    with pytest.raises(QualificationError) as caught:
        unpack(archive, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == (
        f"archive member 'app/l' is a link; and what was unpacked could not be removed from {prefix}"
    )


def test_an_interruption_is_not_turned_into_a_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack_module.shutil, "rmtree", lambda path, **kwargs: None)

    def interrupted(archive: Path, prefix: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(unpack_module, "unpack_zip", interrupted)
    with pytest.raises(KeyboardInterrupt):
        unpack(tmp_path / "app.zip", tmp_path / "prefix")


# --- the per-member write and a link's manifest entry ---------------------------------------------------------------


@POSIX_ONLY
def test_a_member_is_created_exclusively_private_and_never_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[int, tuple[object, ...]]] = []
    real_open = os.open

    def spy(path: object, flags: int, *args: object) -> int:
        opened.append((flags, args))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    source = tmp_path / "source.bin"
    source.write_bytes(b"data")
    with source.open("rb") as handle:
        write_member(tmp_path / "out" / "member", handle, 0o755)
    [(flags, args)] = [entry for entry in opened if entry[0] & os.O_CREAT]
    wanted = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    assert flags & wanted == wanted
    # Private while it is written; its own mode only once it is complete.
    assert args == (0o600,)
    assert stat.S_IMODE((tmp_path / "out" / "member").stat().st_mode) == 0o755


def test_a_links_manifest_entry_keeps_its_targets_exact_bytes() -> None:
    entry = link_entry("app/l", "caf\u00e9")
    assert entry.size == 5
    assert entry.sha256 == hashlib.sha256(b"symlink:" + "caf\u00e9".encode()).hexdigest()
    # An undecodable byte (a lone surrogate from os.readlink) is kept as the byte it was.
    raw = link_entry("app/l", "bad\udcff")
    assert raw.size == 4
    assert raw.sha256 == hashlib.sha256(b"symlink:bad\xff").hexdigest()


# --- member paths, read sizes, file digests -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["/etc/passwd", "a/../x", "a/../../x", "a\\b", "c:x"])
def test_a_name_that_could_leave_the_prefix_is_refused_by_its_spelling(tmp_path: Path, name: str) -> None:
    # "a/../x" stays inside once resolved: it is refused for its spelling, not for where it lands.
    with pytest.raises(QualificationError) as caught:
        safe_member_path(name, tmp_path)
    assert caught.value.code is Code.INSTALL_FAILED
    assert caught.value.message == f"archive member {name!r} escapes the install prefix"


@POSIX_ONLY
def test_a_name_that_resolves_outside_through_a_link_already_there_is_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    (tmp_path / "outside").mkdir()
    (prefix / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(QualificationError) as caught:
        safe_member_path("link/x", prefix)
    assert caught.value.message == "archive member 'link/x' escapes the install prefix"
    assert safe_member_path("sub/x", prefix) == prefix / "sub" / "x"


def test_a_zip_folder_entry_is_named_without_its_slash_in_a_refusal(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "app.zip", [("../evil/", None, stat.S_IFDIR | 0o755)])
    assert _refused(archive, tmp_path / "prefix").message == "archive member '../evil' escapes the install prefix"


class _CountingReader:
    """A binary source that records the size of every read asked of it."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.sizes: list[object] = []

    def read(self, size: int | None = -1) -> bytes:
        self.sizes.append(size)
        # Any size but a positive one reads the rest, as a file does: a mutant asking for read(None) ends.
        take = len(self._data) if size is None or size < 0 else size
        chunk, self._data = self._data[:take], self._data[take:]
        return chunk


def test_a_member_is_copied_in_reads_of_one_mebibyte(tmp_path: Path) -> None:
    source = _CountingReader(b"x" * ((1 << 20) + 5))
    write_member(tmp_path / "m", source, 0o644)  # type: ignore[arg-type]
    assert source.sizes == [1 << 20, 1 << 20, 1 << 20]
    assert (tmp_path / "m").stat().st_size == (1 << 20) + 5


def test_a_file_is_digested_in_reads_of_one_mebibyte_and_its_size_is_the_sum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(1 << 20) + b"tail"
    (tmp_path / "f").write_bytes(data)
    sizes: list[int] = []
    real_fdopen = os.fdopen

    def spying_fdopen(fd: int, mode: str = "r") -> object:
        handle = real_fdopen(fd, mode)
        real_read = handle.read

        def read(size: int = -1) -> bytes:
            sizes.append(size)
            return real_read(size)

        handle.read = read  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(os, "fdopen", spying_fdopen)
    assert _unfollowed_sha256(tmp_path / "f") == (len(data), hashlib.sha256(data).hexdigest())
    assert sizes == [1 << 20, 1 << 20, 1 << 20]


@POSIX_ONLY
def test_a_file_that_became_a_link_is_not_opened_for_its_digest(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"real")
    (tmp_path / "f").symlink_to(tmp_path / "real")
    with pytest.raises(OSError) as caught:  # noqa: PT011 - its errno is what is checked
        _unfollowed_sha256(tmp_path / "f")
    assert caught.value.errno == errno.ELOOP
