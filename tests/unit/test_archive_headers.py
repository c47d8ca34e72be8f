"""qualify_archive: tar headers are bounded before tarfile reads what they announce.

tarfile reads a pax record or a GNU long name whole into memory before its
caller sees the member, so a few hundred kilobytes of gzip could make it hold
gigabytes. Each case is checked by the reason it is refused and, where memory
is the point, by the peak of Python allocations during the unpack.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, unpack

Fill = Callable[[tarfile.TarFile], None]


def _tgz(where: Path, fill: Fill, *, tar_format: int = tarfile.PAX_FORMAT,
         global_pax: dict[str, str] | None = None) -> Path:
    path = where / "headers.tar.gz"
    with tarfile.open(path, "w:gz", format=tar_format, pax_headers=global_pax) as tf:
        fill(tf)
    return path


def _file(name: str, data: bytes = b"x", pax: dict[str, str] | None = None) -> Fill:
    def fill(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.pax_headers = pax or {}
        tf.addfile(info, io.BytesIO(data))

    return fill


def _files(*fills: Fill) -> Fill:
    def fill(tf: tarfile.TarFile) -> None:
        for one in fills:
            one(tf)

    return fill


def _pax_record_length(keyword: str, value_length: int) -> int:
    """The length of the pax record "LEN keyword=value\\n", whose LEN counts its own digits."""
    length = len(keyword) + value_length + 3
    while len(str(length)) + len(keyword) + value_length + 3 != length:
        length = len(str(length)) + len(keyword) + value_length + 3
    return length


def _pax_comment_bomb(where: Path, comment_bytes: int) -> Path:
    """The review's archive: one member behind a pax "comment" of ``comment_bytes``, streamed, never held whole."""
    path = where / "pax.tar.gz"
    size = _pax_record_length("comment", comment_bytes)
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = size
    member = tarfile.TarInfo("top/a")
    member.size = 1
    with gzip.open(path, "wb", compresslevel=1) as gz:
        gz.write(header.tobuf(tarfile.USTAR_FORMAT))
        gz.write(f"{size} comment=".encode())
        chunk = b"x" * (1 << 20)
        for _ in range(comment_bytes >> 20):
            gz.write(chunk)
        gz.write(b"x" * (comment_bytes % (1 << 20)) + b"\n" + b"\0" * (-size % 512))
        gz.write(member.tobuf(tarfile.USTAR_FORMAT) + b"x" + b"\0" * 511 + b"\0" * 1024)
    return path


def _unpack_measured(archive: Path, prefix: Path) -> tuple[QualificationError | None, int]:
    """The refusal (or None) and the peak of Python allocations while unpacking."""
    tracemalloc.start()
    try:
        unpack(archive, prefix)
    except QualificationError as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    else:
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_400_mib_pax_comment_is_refused_from_its_header(tmp_path: Path) -> None:
    archive = _pax_comment_bomb(tmp_path, 400 << 20)
    assert archive.stat().st_size < 4 << 20  # a small download ...
    refused, peak = _unpack_measured(archive, tmp_path / "prefix")
    # ... that used to unpack with a 1.2 GiB resident peak.
    assert refused is not None
    assert refused.code is Code.INSTALL_FAILED
    assert "bytes of extended headers (pax records, long names) in front of one member" in refused.message
    assert peak < 2 << 20
    assert not (tmp_path / "prefix").exists()


def test_a_gnu_long_name_past_the_limit_is_refused_from_its_header(tmp_path: Path) -> None:
    archive = _tgz(tmp_path, _file("top/" + "n" * 70_000), tar_format=tarfile.GNU_FORMAT)
    refused, peak = _unpack_measured(archive, tmp_path / "prefix")
    assert refused is not None
    assert "bytes of extended headers" in refused.message
    assert peak < 2 << 20


def test_extended_headers_are_capped_across_the_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tarfile keeps every member's pax records while it streams: many small ones add up.
    monkeypatch.setattr(_limits, "MAX_EXTENDED_TOTAL", 16 * 1024)
    archive = _tgz(tmp_path, _files(*(_file(f"top/f{i}", pax={"comment": "c" * 2000}) for i in range(10))))
    refused, _ = _unpack_measured(archive, tmp_path / "prefix")
    assert refused is not None
    assert "bytes of extended headers in all" in refused.message


def test_the_decompressed_stream_is_counted_as_it_arrives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each pax record is under the per-member limit and the members hold 3 bytes: only the counter sees the total.
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 1000)
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    archive = _tgz(tmp_path, _files(*(_file(f"top/f{i}", pax={"comment": "c" * 30_000}) for i in range(3))))
    refused, _ = _unpack_measured(archive, tmp_path / "prefix")
    assert refused is not None
    assert "archive decompresses to more than" in refused.message
    assert not (tmp_path / "prefix").exists()


def _sparse_map(count: int) -> Fill:
    # A GNU sparse 1.0 file: tarfile reads its map from the data area while it still parses the headers.
    data = f"{count}\n".encode() + b"0\n1\n" * count
    return _file("top/GNUSparseFile.0/a", data, pax={"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                                                     "GNU.sparse.name": "top/a", "GNU.sparse.realsize": "1"})


def _global_header(tf: tarfile.TarFile) -> None:
    tf.addfile(tarfile.TarInfo("top/a"), io.BytesIO(b""))


def _gnu_sparse(tf: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("top/s")
    info.type = tarfile.GNUTYPE_SPARSE
    tf.addfile(info)


PAX, GNU = tarfile.PAX_FORMAT, tarfile.GNU_FORMAT
REFUSED_HEADERS: list[tuple[str, Fill, int, dict[str, str] | None, str]] = [
    ("sparse-map-past-the-window", _sparse_map(50_000), PAX, None, "archive member headers run past"),
    ("sparse-file", _sparse_map(1), PAX, None, "is a sparse file"),
    ("gnu-sparse-type", _gnu_sparse, GNU, None, "holds a GNU sparse file"),
    ("pax-global-header", _global_header, PAX, {"comment": "every member"}, "a pax global header"),
    ("too-many-pax-records", _file("top/a", pax={f"k{i}": "v" for i in range(20)}), PAX, None,
     "more than 16 pax records"),
]


@pytest.mark.parametrize(("fill", "tar_format", "global_pax", "why"),
                         [(f, t, g, w) for _, f, t, g, w in REFUSED_HEADERS], ids=[i for i, *_ in REFUSED_HEADERS])
def test_headers_a_bundle_never_holds_are_refused(fill: Fill, tar_format: int, global_pax: dict[str, str] | None,
                                                  why: str, tmp_path: Path) -> None:
    archive = _tgz(tmp_path, fill, tar_format=tar_format, global_pax=global_pax)
    refused, peak = _unpack_measured(archive, tmp_path / "prefix")
    assert refused is not None
    assert refused.code is Code.INSTALL_FAILED
    assert why in refused.message
    assert peak < 2 << 20
    assert not (tmp_path / "prefix").exists()


def test_pax_records_for_long_and_non_ascii_names_still_unpack(tmp_path: Path) -> None:
    # PAX_FORMAT, as pack writes it, uses a pax "path" record for these: the limits must leave them alone.
    names = ["top/" + "d" * 150 + "/f", "top/caf\u00e9/\u65e5\u672c", "top/" + "/".join(["e" * 100] * 4)]
    archive = _tgz(tmp_path, _files(*(_file(n, n.encode()) for n in names)))
    unpack(archive, tmp_path / "prefix")
    assert [(tmp_path / "prefix" / n).read_bytes() for n in names] == [n.encode() for n in names]
