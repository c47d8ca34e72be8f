"""qualify_archive/_compare.py, where two builds of an artifact first differ, as `qualify rebuild` and the
reproducibility checks report it: the exact byte offset of the first difference between two files that are not
archives (in the first chunk, several chunks in, where one file is the other's prefix, and none for identical files
larger than one read), which member of two tar or zip archives is only in one of them (either way round), named
otherwise or differs in a fact, the archive cap on member content (a content exactly at the cap is read, one byte
more, also summed over members, refuses the comparison with its exact words, and reading stops within one chunk
past the cap), an archive against a plain file compared byte by byte, and the refusal line cut at 400 characters.
Written for the mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from desktop_qualify.qualify_archive import _limits
from desktop_qualify.qualify_archive._compare import _content, _members, first_difference

MIB = 1 << 20
NOT_ARCHIVES = "differs (the files are not archives this tool reads member by member)"
REFUSED = "the archives could not be compared member by member: "


def _plain(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    assert _members(path) is None  # neither zip nor tar: compared byte by byte
    return path


def _pattern(size: int) -> bytes:
    # Not a tar header (its checksum is wrong) and no zip end record: a plain file's bytes.
    return (b"plain build output " * (size // 19 + 1))[:size]


def _tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            tf.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return path


# -- files that are not archives: the first differing byte --------------------------------------------------------


def test_the_first_differing_byte_of_two_plain_files_is_named_by_its_offset(tmp_path: Path) -> None:
    a = _plain(tmp_path / "a.bin", b"plain-abc-1")
    b = _plain(tmp_path / "b.bin", b"plain-abd-1")
    assert first_difference(a, b) == f"byte 8 {NOT_ARCHIVES}"
    assert first_difference(b, a) == f"byte 8 {NOT_ARCHIVES}"


def test_a_difference_at_the_very_first_byte_is_byte_0(tmp_path: Path) -> None:
    a = _plain(tmp_path / "a.bin", b"Xplain")
    b = _plain(tmp_path / "b.bin", b"Yplain")
    assert first_difference(a, b) == f"byte 0 {NOT_ARCHIVES}"


def test_a_difference_chunks_into_the_files_is_named_by_its_offset_from_the_start(tmp_path: Path) -> None:
    data = _pattern(3 * MIB + 100)
    at = 2 * MIB + 1234
    changed = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    a = _plain(tmp_path / "a.bin", data)
    b = _plain(tmp_path / "b.bin", changed)
    assert first_difference(a, b) == f"byte {at} {NOT_ARCHIVES}"
    assert first_difference(b, a) == f"byte {at} {NOT_ARCHIVES}"


def test_a_difference_just_past_the_first_chunk(tmp_path: Path) -> None:
    data = _pattern(MIB + 10)
    a = _plain(tmp_path / "a.bin", data)
    b = _plain(tmp_path / "b.bin", data[:MIB] + b"#" + data[MIB + 1:])
    assert first_difference(a, b) == f"byte {MIB} {NOT_ARCHIVES}"


def test_identical_files_larger_than_one_read_do_not_differ(tmp_path: Path) -> None:
    data = _pattern(3 * MIB + 100)
    a = _plain(tmp_path / "a.bin", data)
    b = _plain(tmp_path / "b.bin", data)
    assert first_difference(a, b) is None
    assert first_difference(b, a) is None


def test_a_file_that_is_the_others_prefix_differs_where_the_shorter_ends(tmp_path: Path) -> None:
    a = _plain(tmp_path / "a.bin", b"plain-build")
    b = _plain(tmp_path / "b.bin", b"plain-build-and-more")
    assert first_difference(a, b) == f"byte 11 {NOT_ARCHIVES}"
    assert first_difference(b, a) == f"byte 11 {NOT_ARCHIVES}"
    big = _pattern(2 * MIB + 5)
    c = _plain(tmp_path / "c.bin", big)
    d = _plain(tmp_path / "d.bin", big[:-5])
    assert first_difference(c, d) == f"byte {2 * MIB} {NOT_ARCHIVES}"


def test_an_archive_against_a_plain_file_is_compared_byte_by_byte(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", [("a.txt", b"one")])
    plain = _plain(tmp_path / "b.bin", b"plain")
    assert first_difference(archive, plain) == f"byte 0 {NOT_ARCHIVES}"
    assert first_difference(plain, archive) == f"byte 0 {NOT_ARCHIVES}"
    tar = _tar(tmp_path / "a.tar", [("a.txt", b"one")])
    assert first_difference(tar, plain) == f"byte 0 {NOT_ARCHIVES}"
    assert first_difference(plain, tar) == f"byte 0 {NOT_ARCHIVES}"


# -- archives: member by member ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_a_member_only_in_the_second_archive_is_named(tmp_path: Path, make) -> None:
    a = make(tmp_path / "a", [("a.txt", b"one")])
    b = make(tmp_path / "b", [("a.txt", b"one"), ("b.txt", b"two")])
    assert first_difference(a, b) == "member 1: 'b.txt' is only in the second archive"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_a_member_only_in_the_first_archive_is_named(tmp_path: Path, make) -> None:
    a = make(tmp_path / "a", [("a.txt", b"one"), ("b.txt", b"two")])
    b = make(tmp_path / "b", [("a.txt", b"one")])
    assert first_difference(a, b) == "member 1: 'b.txt' is only in the first archive"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_members_in_another_order_or_name_are_named_from_both_archives(tmp_path: Path, make) -> None:
    a = make(tmp_path / "a", [("a.txt", b"one"), ("b.txt", b"two")])
    b = make(tmp_path / "b", [("b.txt", b"two"), ("a.txt", b"one")])
    assert first_difference(a, b) == "member 0: 'a.txt' in the first archive, 'b.txt' in the second (order or name)"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_a_member_whose_content_differs_is_named_with_both_digests(tmp_path: Path, make) -> None:
    a = make(tmp_path / "a", [("a.txt", b"one"), ("b.txt", b"two")])
    b = make(tmp_path / "b", [("a.txt", b"one"), ("b.txt", b"TWO")])
    mine, other = hashlib.sha256(b"two").hexdigest(), hashlib.sha256(b"TWO").hexdigest()
    assert first_difference(a, b) == f"member 1: 'b.txt': content sha256 differs ({mine} vs {other})"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_identical_archives_do_not_differ(tmp_path: Path, make) -> None:
    a = make(tmp_path / "a", [("a.txt", b"one"), ("b.txt", b"two")])
    b = make(tmp_path / "b", [("a.txt", b"one"), ("b.txt", b"two")])
    assert first_difference(a, b) is None


def test_a_zip_is_read_member_by_member(tmp_path: Path) -> None:
    path = _zip(tmp_path / "a.zip", [("a.txt", b"one")])
    members = _members(path)
    assert members is not None
    [(name, facts)] = list(members)
    assert name == "a.txt"
    assert dict(facts)["content sha256"] == hashlib.sha256(b"one").hexdigest()


def test_a_tar_member_with_no_content_stream_has_an_empty_content_fact(tmp_path: Path) -> None:
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("dir")
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
        tf.addfile(info)
    members = _members(path)
    assert members is not None
    [(name, facts)] = list(members)
    assert name == "dir"
    assert dict(facts)["content sha256"] == ""


# -- the archive cap on content -----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_content_exactly_at_the_cap_is_compared(tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 5)
    a = make(tmp_path / "a", [("a.txt", b"12345")])
    b = make(tmp_path / "b", [("a.txt", b"12345")])
    assert first_difference(a, b) is None
    c = make(tmp_path / "c", [("a.txt", b"1234X")])
    mine, other = hashlib.sha256(b"12345").hexdigest(), hashlib.sha256(b"1234X").hexdigest()
    assert first_difference(a, c) == f"member 0: 'a.txt': content sha256 differs ({mine} vs {other})"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_content_past_the_cap_refuses_the_comparison(tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 5)
    a = make(tmp_path / "a", [("a.txt", b"123456")])
    b = make(tmp_path / "b", [("a.txt", b"123456")])
    assert first_difference(a, b) == f"{REFUSED}more content than the archive cap"


@pytest.mark.parametrize("make", [_tar, _zip], ids=["tar", "zip"])
def test_the_cap_holds_for_the_sum_of_the_members(tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 5)
    a = make(tmp_path / "a", [("a.txt", b"123"), ("b.txt", b"456")])
    b = make(tmp_path / "b", [("a.txt", b"123"), ("b.txt", b"456")])
    assert first_difference(a, b) == f"{REFUSED}more content than the archive cap"


def test_content_is_digested_and_charged_to_the_budget() -> None:
    data = _pattern(2 * MIB + 3)
    budget = [3 * MIB]
    assert _content(io.BytesIO(data), budget) == hashlib.sha256(data).hexdigest()
    assert budget == [3 * MIB - len(data)]
    assert _content(None, budget) == ""
    assert budget == [3 * MIB - len(data)]


class _Endless:
    """A member stream of 8 MiB that counts what it hands out (it honours the size asked for)."""

    def __init__(self) -> None:
        self.left = 8 * MIB
        self.given = 0

    def read(self, size: int | None = -1) -> bytes:
        n = self.left if size is None or size < 0 else min(size, self.left)
        self.left -= n
        self.given += n
        return b"\0" * n


def test_reading_stops_within_one_mebibyte_past_the_cap() -> None:
    stream = _Endless()
    with pytest.raises(ValueError, match=r"^more content than the archive cap$"):
        _content(stream, [10])  # type: ignore[arg-type]
    assert stream.given <= 10 + MIB


# -- a refusal line is cut at 400 characters ----------------------------------------------------------------------


def test_a_long_refusal_is_cut_at_400_characters(tmp_path: Path) -> None:
    name = "a" * 300
    a = _zip(tmp_path / "a.zip", [(name, b"one")])
    raw = bytearray(a.read_bytes())
    assert raw[30:330] == name.encode()  # the local header's copy of the name, after its 30 fixed bytes
    raw[30:330] = b"b" * 300  # the central directory still says a...a: zipfile refuses the member
    a.write_bytes(bytes(raw))
    b = _zip(tmp_path / "b.zip", [(name, b"one")])
    said = first_difference(a, b)
    assert said is not None
    assert said.startswith(f"{REFUSED}File name in directory '{'a' * 300}")
    assert len(said) == 400


# -- last: two empty files (a mutated loop that never ends on them is stopped by an earlier test) -----------------


def test_two_empty_files_do_not_differ_and_an_empty_one_differs_at_byte_0(tmp_path: Path) -> None:
    a = tmp_path / "a.bin"
    a.write_bytes(b"")
    b = _plain(tmp_path / "b.bin", b"plain")
    assert first_difference(a, b) == f"byte 0 {NOT_ARCHIVES}"
    c = tmp_path / "c.bin"
    c.write_bytes(b"")
    assert first_difference(a, c) is None
