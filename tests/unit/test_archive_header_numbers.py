"""qualify_archive: tar headers read one way only, and a member's data never counts as header bytes.

A numeric header field is accepted only in the form every tar reader agrees
on (plain octal, NUL- or space-ended; all NUL; GNU base-256): ``+12`` is 10 to
Python's tarfile and 3446 to GNU tar. A header whose checksum is wrong, or an
archive cut off inside a header, is refused where tarfile would quietly take
it for the end. The listing check reads each member's data outside the header
window, so a member far past 64 KiB passes it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import audit_tar_listing, unpack
from desktop_qualify.qualify_archive._tar import number_field_problem


def _header(name: str, size_field: bytes, *, checksum_delta: int = 0) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = 0
    block = bytearray(info.tobuf(format=tarfile.USTAR_FORMAT))
    block[124:136] = size_field.ljust(12, b"\0")
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block) + checksum_delta:06o}\0 ".encode()
    return bytes(block)


def _tar(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _end(body: bytes) -> bytes:
    body += bytes(1024)
    return body + bytes(-len(body) % 10240)


@pytest.mark.parametrize("field", [b"12\0", b"00000000012\0", b"  12 \0", b"12 ", b"0" * 12, b"\0" * 12,
                                   b"\x80" + bytes(10) + b"\x0c", b"\xff" * 12])
def test_plain_octal_all_nul_and_base_256_read_one_way(field: bytes) -> None:
    assert number_field_problem(field.ljust(12, b"\0")) is None


@pytest.mark.parametrize("field", [b"+12", b"-12", b"0o12", b"1_2", b"12x", b"\x0012", b"12\0 7", b"\t12", b"8",
                                   b" "])
def test_any_other_spelling_of_a_number_is_refused(field: bytes) -> None:
    assert number_field_problem(field.ljust(12, b"\0")) is not None


def test_a_checksum_in_base_256_is_refused() -> None:
    assert number_field_problem(b"\x80" + bytes(7), binary=False) is not None


def test_the_listing_check_passes_a_member_far_past_the_header_window() -> None:
    big = bytes(1024 * 1024)  # 16 header windows of data: refused as "headers run past 65536 bytes" before
    stream = io.BytesIO(_tar(("app/small", b"x"), ("app/big", big), ("app/after", b"y")))
    assert audit_tar_listing(stream) == 3


def test_the_listing_check_still_bounds_the_data_by_the_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_qualify.qualify_archive import _limits

    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 100_000)
    with pytest.raises(QualificationError, match="more than 100000 bytes"):
        audit_tar_listing(io.BytesIO(_tar(("app/big", bytes(200_000)))))


@pytest.mark.parametrize(("raw", "fragment"), [
    (_end(_header("app/two-ways", b"+12") + bytes(512)), "size field is not plain octal"),
    (_end(_header("app/two-ways", b"0o12") + bytes(512)), "size field is not plain octal"),
    (_end(_tar(("app/a", b"a"))[:1024] + _header("app/bad", b"0", checksum_delta=1)), "malformed header"),
    (_tar(("app/a", b"a"))[:1024] + _header("app/cut", b"0")[:300], "ends inside a header"),
    (_tar(("app/a", b"a"))[:1024], "before its end-of-archive block"),
])
def test_a_header_two_readers_could_read_two_ways_is_refused(tmp_path: Path, raw: bytes, fragment: str) -> None:
    with pytest.raises(QualificationError) as caught:
        audit_tar_listing(io.BytesIO(raw))
    assert caught.value.code is Code.INSTALL_FAILED
    assert fragment in caught.value.message, caught.value.message
    archive = tmp_path / "two-ways.tar.gz"
    archive.write_bytes(gzip.compress(raw))
    with pytest.raises(QualificationError) as unpacked:
        unpack(archive, tmp_path / "prefix")
    assert fragment in unpacked.value.message, unpacked.value.message
    assert not (tmp_path / "prefix").exists()
