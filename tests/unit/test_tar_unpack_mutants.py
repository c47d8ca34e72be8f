"""qualify_archive's tar unpack, held to exact bounds and refusals: the decompressed stream is counted from zero and
refused only once it runs past its cap (the data cap, 4 KiB per member and four records of slack), one member's
headers are read under a window of 64 KiB plus four blocks and two records that closes while its data is read, and
the counter hands tarfile at most one record per read (exactly what was asked for below that, nothing for zero); it is
never written or sought. A bundle's members are held to their caps at the boundary (16 pax records, the member count
and the byte total), a GNU sparse record, a hard link, a special file and a member below a file are refused in exact
words, as is a number tarfile cannot parse and a stream cut short; a package's data tar takes its root entry as the
prefix, creates a folder's missing parents and a folder already made for a file in it, and returns its member count.
Written for the mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import cast

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, unpack, unpack_package_tar
from desktop_qualify.qualify_archive._names import Layout
from desktop_qualify.qualify_archive._tar import _CountingReader, _unpack_package_member, _unpack_tar_member

RECORD = 20 * 512
HEADER_WINDOW = 64 * 1024 + 4 * 512 + 2 * RECORD  # one member's headers: the cap, padding, a read ahead each end

Member = tuple[tarfile.TarInfo, bytes]


def _member(name: str, data: bytes = b"x", *, kind: bytes = tarfile.REGTYPE, link: str = "",
            pax: dict[str, str] | None = None) -> Member:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.pax_headers = pax or {}
    return info, data


def _tar(*members: Member) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _tgz(where: Path, *members: Member) -> Path:
    path = where / "bundle.tar.gz"
    path.write_bytes(gzip.compress(_tar(*members)))
    return path


def _refused(call: object, *args: object) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value


def _files(prefix: Path) -> dict[str, bytes]:
    return {p.relative_to(prefix).as_posix(): p.read_bytes() for p in sorted(prefix.rglob("*")) if p.is_file()}


# --- the counting reader ------------------------------------------------------------------------------------------


def test_the_stream_is_counted_from_zero_and_refused_only_past_its_limit() -> None:
    reader = _CountingReader(io.BytesIO(b"abcdef"), 6)
    assert reader.tell() == 0
    assert reader.read(4) == b"abcd"
    assert reader.tell() == 4
    assert reader.read(4) == b"ef"  # exactly at the limit: still read
    assert reader.tell() == 6
    assert reader.read(4) == b""  # the end of the stream
    over = _CountingReader(io.BytesIO(b"abcdef"), 5)
    assert over.read(5) == b"abcde"
    refused = _refused(over.read, 1)
    assert refused.message == "archive decompresses to more than 5 bytes"


def test_each_read_takes_what_was_asked_up_to_one_record() -> None:
    reader = _CountingReader(io.BytesIO(bytes(4 * RECORD)), 10 * RECORD)
    assert len(reader.read()) == RECORD  # no size: one record, not the rest of the stream
    assert len(reader.read(-1)) == RECORD
    assert reader.read(0) == b""
    assert reader.tell() == 2 * RECORD
    assert len(reader.read(5)) == 5
    assert len(reader.read(RECORD + 1)) == RECORD
    assert reader.tell() == 3 * RECORD + 5


def _read_to(reader: _CountingReader, count: int) -> None:
    while (left := count - reader.tell()) > 0:
        assert reader.read(min(left, RECORD))


def test_the_header_window_ends_exactly_its_width_past_where_it_opened() -> None:
    reader = _CountingReader(io.BytesIO(bytes(100 + 2 * HEADER_WINDOW)), 10 * HEADER_WINDOW)
    _read_to(reader, 100)  # no window yet: data of any length
    reader.expect_headers()
    _read_to(reader, 100 + HEADER_WINDOW)  # up to its end: read
    refused = _refused(reader.read, 1)
    assert refused.message == "archive member headers run past 65536 bytes"


def test_the_header_window_closes_for_a_members_data() -> None:
    reader = _CountingReader(io.BytesIO(bytes(3 * HEADER_WINDOW)), 10 * HEADER_WINDOW)
    reader.expect_headers()
    reader.expect_data()
    _read_to(reader, 2 * HEADER_WINDOW)
    reader.expect_headers()  # opens afresh where the stream is
    _read_to(reader, 3 * HEADER_WINDOW)


def test_the_counter_is_neither_written_nor_sought() -> None:
    reader = _CountingReader(io.BytesIO(b"abc"), 3)
    with pytest.raises(io.UnsupportedOperation) as written:
        reader.write(b"x")
    assert str(written.value) == "the archive is only read"
    with pytest.raises(io.UnsupportedOperation) as sought:
        reader.seek(0)
    assert str(sought.value) == "the archive is read as a stream"
    assert reader.tell() == 0


def test_the_stream_cap_is_the_data_cap_4_kib_a_member_and_four_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 1000)
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    # Each pax comment is within one member's window, and the members' data is 3 bytes: only the counter refuses.
    members = [_member(f"top/f{i}", pax={"comment": "c" * 30_000}) for i in range(3)]
    refused = _refused(unpack, _tgz(tmp_path, *members), tmp_path / "prefix")
    assert refused.message == f"archive decompresses to more than {1000 + 3 * 8 * 512 + 4 * RECORD} bytes"
    assert not (tmp_path / "prefix").exists()


# --- a bundle's tar.gz --------------------------------------------------------------------------------------------


def test_a_member_may_carry_sixteen_pax_records_not_seventeen(tmp_path: Path) -> None:
    sixteen = {f"DESKTOPQ.k{i:02}": "v" for i in range(16)}
    (tmp_path / "ok").mkdir()
    unpack(_tgz(tmp_path / "ok", _member("top/a", pax=sixteen)), tmp_path / "ok" / "prefix")
    assert _files(tmp_path / "ok" / "prefix") == {"top/a": b"x"}
    seventeen = {**sixteen, "DESKTOPQ.k16": "v"}
    refused = _refused(unpack, _tgz(tmp_path, _member("top/a", pax=seventeen)), tmp_path / "prefix")
    assert refused.message == "archive member 'top/a' carries more than 16 pax records"


def test_a_gnu_sparse_record_is_refused_in_exact_words(tmp_path: Path) -> None:
    refused = _refused(unpack, _tgz(tmp_path, _member("top/a", pax={"GNU.sparse.note": "1"})), tmp_path / "prefix")
    assert refused.message == "archive member 'top/a' is a sparse file"


@pytest.mark.parametrize("kind", [tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE])
def test_a_hard_link_or_special_file_is_refused_in_exact_words(tmp_path: Path, kind: bytes) -> None:
    archive = _tgz(tmp_path, _member("top/a"), _member("top/h", kind=kind, link="top/a"))
    refused = _refused(unpack, archive, tmp_path / "prefix")
    assert refused.message == "archive member 'top/h' is a hard link or special file"


def test_a_member_below_a_file_already_unpacked_is_refused_by_the_layout(tmp_path: Path) -> None:
    refused = _refused(unpack, _tgz(tmp_path, _member("top/a"), _member("top/a/b")), tmp_path / "prefix")
    assert refused.message == "archive member 'top/a/b' is below the file 'top/a'"


def test_a_bundles_member_count_and_bytes_are_capped_at_their_boundary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _tgz(tmp_path, _member("top/a"), _member("top/b"), _member("top/c"))
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 3)
    unpack(archive, tmp_path / "whole")
    assert _files(tmp_path / "whole") == {"top/a": b"x", "top/b": b"x", "top/c": b"x"}
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 2)
    assert _refused(unpack, archive, tmp_path / "p1").message == "archive has more than 2 members"
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 2)
    assert _refused(unpack, archive, tmp_path / "p2").message == "archive unpacks to more than 2 bytes"


def test_a_file_that_is_not_gzip_is_damaged_in_the_readers_words(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(b"not gzip at all")
    refused = _refused(unpack, archive, tmp_path / "prefix")
    assert refused.message == "archive is damaged: Not a gzipped file (b'no')"


class _NoData:
    """A tar reader that gives no data for a member (tarfile's extractfile for what is not a file)."""

    def extractfile(self, member: tarfile.TarInfo) -> None:
        return None


@pytest.mark.parametrize("unpack_member", [_unpack_tar_member, _unpack_package_member])
def test_a_regular_member_with_no_data_is_refused_by_name(tmp_path: Path, unpack_member: object) -> None:
    info, _ = _member("top/a")
    refused = _refused(unpack_member, cast(tarfile.TarFile, _NoData()), info, tmp_path / "prefix", Layout(), {})
    assert refused.message == "archive member 'top/a' is unreadable"
    assert not (tmp_path / "prefix").exists()


# --- a package's data tar -----------------------------------------------------------------------------------------


def _package(where: Path, *members: Member) -> tuple[int, Path]:
    """The member count ``unpack_package_tar`` returns, and the prefix (made under ``where``) it wrote."""
    prefix = where / "prefix"
    prefix.mkdir(parents=True)
    return unpack_package_tar(io.BytesIO(_tar(*members)), prefix), prefix


def test_an_empty_data_tar_has_no_members(tmp_path: Path) -> None:
    count, prefix = _package(tmp_path)
    assert count == 0
    assert list(prefix.iterdir()) == []


def test_the_root_entry_spelled_with_its_slash_is_the_prefix(tmp_path: Path) -> None:
    # tarfile strips a folder's trailing slash from its name fields, not from a GNU.sparse.name record.
    root = _member(".", kind=tarfile.DIRTYPE, pax={"GNU.sparse.name": "./"})
    count, prefix = _package(tmp_path, root, _member("usr/bin/app"))
    assert count == 2
    assert _files(prefix) == {"usr/bin/app": b"x"}


def test_a_folder_is_made_with_its_missing_parents_and_may_follow_its_files(tmp_path: Path) -> None:
    count, prefix = _package(tmp_path, _member("usr/share/app", kind=tarfile.DIRTYPE), _member("usr/bin/app"),
                             _member("usr/bin", kind=tarfile.DIRTYPE))
    assert count == 3
    assert (prefix / "usr" / "share" / "app").is_dir()
    assert _files(prefix) == {"usr/bin/app": b"x"}


def test_a_data_tars_bytes_are_summed_over_its_members_and_capped_at_the_boundary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = (_member("usr/a"), _member("usr/b"), _member("usr/c"))
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 3)
    count, prefix = _package(tmp_path / "whole", *members)
    assert count == 3
    assert _files(prefix) == {"usr/a": b"x", "usr/b": b"x", "usr/c": b"x"}
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 2)
    refused = _refused(_package, tmp_path / "over", *members)
    assert refused.message == "archive unpacks to more than 2 bytes"


def test_a_data_tar_cut_inside_a_members_data_is_damaged_in_the_readers_words(tmp_path: Path) -> None:
    raw = _tar(_member("usr/a", bytes(2000)))
    refused = _refused(_package_raw, tmp_path, raw[:512 + 100])
    assert refused.message == "archive is damaged: unexpected end of data"


def test_a_number_tarfile_cannot_parse_is_a_malformed_header(tmp_path: Path) -> None:
    refused = _refused(_package, tmp_path, _member("usr/a", pax={"GNU.sparse.map": "x"}))
    assert refused.message == "archive has a malformed header: invalid literal for int() with base 10: 'x'"


def _package_raw(tmp_path: Path, raw: bytes) -> int:
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    return unpack_package_tar(io.BytesIO(raw), prefix)
