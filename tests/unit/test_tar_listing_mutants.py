"""qualify_archive/_tar.py, the listing half: what `audit_tar_listing` refuses in a package's data tar before
anything is unpacked, with the exact reason (a root entry that is not a folder, a name that escapes the prefix, a
pax-record flood, a sparse file, a set-id bit, a member below a link or a file, a hard link or special file, a
damaged stream), the extended-header budget at its edge in front of each member and across the archive, header
numbers in GNU base-256 (accepted) and a checksum in base-256 (refused), the byte cap counted over every member, and
a big member's data read in bounded pieces. Written for the mutants of the module that survived the fast test set
(docs/mutation.md).
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile
import tracemalloc
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, audit_tar_listing, unpack

BLOCK = 512


def _info(name: str, kind: bytes = tarfile.REGTYPE, *, size: int = 0, mode: int = 0o644, link: str = "",
          pax: dict[str, str] | None = None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.linkname = link
    info.pax_headers = pax or {}
    return info


def _tar(*infos: tarfile.TarInfo, tar_format: int = tarfile.PAX_FORMAT) -> bytes:
    """An uncompressed tar of the members, each regular one holding `size` bytes of "x"."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tar_format) as tf:
        for info in infos:
            tf.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return buffer.getvalue()


def _end(body: bytes) -> bytes:
    body += bytes(2 * BLOCK)
    return body + bytes(-len(body) % (20 * BLOCK))


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def _raw_header(info: tarfile.TarInfo) -> bytearray:
    return bytearray(info.tobuf(format=tarfile.USTAR_FORMAT))


def _with_checksum(block: bytearray) -> bytes:
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def _pax_record(keyword: str, length: int) -> bytes:
    """One pax record "LEN keyword=value\\n" of exactly ``length`` bytes (LEN counts its own digits)."""
    digits = 1
    while len(str(length)) != digits:
        digits += 1
    value = length - digits - len(keyword) - 3
    record = f"{length} {keyword}={'c' * value}\n".encode()
    assert len(record) == length
    return record


def _behind_pax(name: str, pax_size: int) -> bytes:
    """A pax header whose records take exactly ``pax_size`` bytes, then an empty regular member ``name``."""
    header = _info("././@PaxHeader", tarfile.XHDTYPE, size=pax_size)
    return (bytes(_raw_header(header)) + _padded(_pax_record("comment", pax_size))
            + bytes(_raw_header(_info(name))))


def _audit(raw: bytes) -> int:
    return audit_tar_listing(io.BytesIO(raw))


def _refusal(raw: bytes) -> str:
    with pytest.raises(QualificationError) as caught:
        _audit(raw)
    assert caught.value.code is Code.INSTALL_FAILED
    return caught.value.message


# --- the extended-header budget ---------------------------------------------------------------------------------

def test_extended_headers_of_exactly_the_limit_pass_in_front_of_each_member() -> None:
    # A pax header block plus records filling the rest of the limit, in front of the first member and again in
    # front of the second: each member's count starts afresh at zero.
    fill = _limits.MAX_EXTENDED_HEADER - BLOCK
    assert _audit(_end(_behind_pax("app/a", fill) + _behind_pax("app/b", fill))) == 2


def test_one_byte_of_extended_header_past_the_limit_is_refused() -> None:
    fill = _limits.MAX_EXTENDED_HEADER - BLOCK
    assert _refusal(_end(_behind_pax("app/a", fill) + _behind_pax("app/b", fill + 1))) == (
        f"archive has more than {_limits.MAX_EXTENDED_HEADER} bytes of extended headers (pax records, long names) "
        f"in front of one member; this one announces {fill + 1}")


def test_the_extended_headers_in_front_of_one_member_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # A GNU long link (K, 201 bytes) and a long name (L, 205): 1024 bytes each in whole blocks, neither alone past
    # 1536; the refusal comes at the second, the long name.
    monkeypatch.setattr(_limits, "MAX_EXTENDED_HEADER", 1536)
    raw = _tar(_info("app/" + "n" * 200, tarfile.SYMTYPE, link="m" * 200), tar_format=tarfile.GNU_FORMAT)
    assert _refusal(raw) == ("archive has more than 1536 bytes of extended headers (pax records, long names) in "
                             "front of one member; this one announces 205")


def _pax_members(count: int) -> bytes:
    # Each member: a pax header block and one block of records in front of it, 1024 bytes counted.
    return _tar(*(_info(f"app/f{i}", pax={"comment": "c"}) for i in range(count)))


def test_extended_headers_of_exactly_the_archive_limit_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_EXTENDED_TOTAL", 4 * 2 * BLOCK)
    assert _audit(_pax_members(4)) == 4


def test_extended_headers_count_in_whole_blocks_across_the_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    # Five 13-byte pax records: 5120 bytes in whole blocks (past 4096), though 2625 bytes counted one by one.
    monkeypatch.setattr(_limits, "MAX_EXTENDED_TOTAL", 4 * 2 * BLOCK)
    assert _refusal(_pax_members(5)) == "archive has more than 4096 bytes of extended headers in all"


def test_a_header_with_a_negative_size_is_refused() -> None:
    block = _raw_header(_info("app/negative"))
    block[124:136] = b"\xff" * 12  # GNU base-256: -1
    assert _refusal(_end(_with_checksum(block))) == "archive has a header with a negative size"


# --- header numbers ------------------------------------------------------------------------------------------------

def test_a_number_in_gnu_base_256_is_read_one_way_and_passes() -> None:
    # GNU tar writes a uid past 8**7 - 1 in base-256; every reader agrees on it.
    info = _info("app/owned", size=1)
    info.uid = 10_000_000
    raw = _tar(info, tar_format=tarfile.GNU_FORMAT)
    assert raw[108] == 0x80
    assert _audit(raw) == 1


def test_a_checksum_in_base_256_is_refused_even_when_it_matches() -> None:
    block = _raw_header(_info("app/sum"))
    block[148:156] = b" " * 8
    block[148:156] = b"\x80" + sum(block).to_bytes(7, "big")
    field = bytes(block[148:156])
    assert _refusal(_end(bytes(block))) == f"archive has a header whose checksum field is not plain octal ({field!r})"


# --- one member of the listing -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "kind"), [("./", tarfile.REGTYPE), (".", tarfile.REGTYPE),
                                            ("./", tarfile.SYMTYPE), (".", tarfile.FIFOTYPE)])
def test_a_root_entry_that_is_not_a_folder_is_refused(name: str, kind: bytes) -> None:
    raw = _end(bytes(_raw_header(_info(name, kind, link="x" if kind == tarfile.SYMTYPE else ""))))
    assert _refusal(raw) == f"archive member {name!r} is the root, and not a folder"


@pytest.mark.parametrize("root", ["./", "."])
def test_the_root_folder_entry_is_the_prefix_itself(root: str) -> None:
    raw = _tar(_info(root, tarfile.DIRTYPE, mode=0o755), _info("./usr", tarfile.DIRTYPE, mode=0o755),
               _info("./usr/bin", tarfile.DIRTYPE, mode=0o755), _info("./usr/bin/app", size=3, mode=0o755))
    assert _audit(raw) == 4


@pytest.mark.parametrize("name", ["/etc/passwd", "app/../../etc/passwd", "../outside", "app/c:evil", "app\\evil",
                                  "app/:"])
def test_a_name_that_escapes_the_prefix_is_refused(name: str) -> None:
    assert _refusal(_tar(_info(name, size=1))) == f"archive member {name!r} escapes the install prefix"


def test_a_name_with_capital_letters_passes() -> None:
    raw = _tar(_info("usr/share/X11", tarfile.DIRTYPE, mode=0o755), _info("usr/share/X11/XKeysymDB", size=2),
               _info("usr/bin/Xorg", size=1, mode=0o755))
    assert _audit(raw) == 3


def _pax_keys(count: int) -> dict[str, str]:
    return {f"DQ.key{i}": "v" for i in range(count)}


def test_exactly_the_allowed_pax_records_pass() -> None:
    assert len(_pax_keys(_limits.MAX_PAX_RECORDS)) == 16
    assert _audit(_tar(_info("app/tagged", size=1, pax=_pax_keys(_limits.MAX_PAX_RECORDS)))) == 1


def test_one_pax_record_more_is_refused_with_the_member_named() -> None:
    raw = _tar(_info("app/tagged", size=1, pax=_pax_keys(_limits.MAX_PAX_RECORDS + 1)))
    assert _refusal(raw) == "archive member 'app/tagged' carries more than 16 pax records"


@pytest.mark.parametrize("key", ["GNU.sparse.major", "GNU.sparse.", "GNU.sparse.anything"])
def test_a_member_with_a_gnu_sparse_record_is_refused(key: str) -> None:
    # No map and no sizes: tarfile reads nothing more for it, so only the audit's own check can see it.
    raw = _tar(_info("app/holes", size=1, pax={key: "1"}))
    assert _refusal(raw) == "archive member 'app/holes' is a sparse file"


@pytest.mark.parametrize("key", ["gnu.sparse.major", "GNU.SPARSE.major", "GNU.sparsefile"])
def test_a_pax_record_only_resembling_a_sparse_one_passes(key: str) -> None:
    assert _audit(_tar(_info("app/plain", size=1, pax={key: "1"}))) == 1


@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o6755])
def test_a_set_id_bit_is_refused_with_the_member_named(mode: int) -> None:
    raw = _tar(_info("usr/bin/su", size=1, mode=mode))
    assert _refusal(raw) == "archive member 'usr/bin/su' has a set-user-id or set-group-id bit"


def test_a_member_below_a_listed_link_is_refused() -> None:
    raw = _tar(_info("app/lib", tarfile.SYMTYPE, link="real"), _info("app/lib/evil", size=1))
    assert _refusal(raw) == "archive member 'app/lib/evil' goes through the link 'app/lib'"


def test_a_link_listed_after_a_member_below_it_is_refused() -> None:
    raw = _tar(_info("app/lib/evil", size=1), _info("app/lib", tarfile.SYMTYPE, link="real"))
    assert _refusal(raw) == "archive member 'app/lib/evil' goes through the link 'app/lib'"


def test_a_folder_may_be_listed_after_what_is_below_it() -> None:
    raw = _tar(_info("app/share/data", size=1), _info("app/share", tarfile.DIRTYPE, mode=0o755),
               _info("app", tarfile.DIRTYPE, mode=0o755))
    assert _audit(raw) == 3


def test_a_folder_listed_twice_is_refused() -> None:
    raw = _tar(_info("app/share", tarfile.DIRTYPE, mode=0o755), _info("app/share", tarfile.DIRTYPE, mode=0o755))
    assert _refusal(raw) == "archive member 'app/share' is listed twice"


def test_a_member_below_a_listed_file_is_refused() -> None:
    raw = _tar(_info("app/data", size=1), _info("app/data/inner", size=1))
    assert _refusal(raw) == "archive member 'app/data/inner' is below the file 'app/data'"


def test_a_file_listed_twice_is_refused() -> None:
    raw = _tar(_info("app/data", size=1), _info("app/data", size=1))
    assert _refusal(raw) == "archive member 'app/data' is listed twice"


def test_a_link_listed_twice_is_refused() -> None:
    raw = _tar(_info("app/l", tarfile.SYMTYPE, link="x"), _info("app/l", tarfile.SYMTYPE, link="y"))
    assert _refusal(raw) == "archive member 'app/l' is listed twice"


@pytest.mark.parametrize("info", [_info("app/hard", tarfile.LNKTYPE, link="app/data"),
                                  _info("app/fifo", tarfile.FIFOTYPE), _info("app/tty", tarfile.CHRTYPE),
                                  _info("app/disk", tarfile.BLKTYPE)], ids=["hard", "fifo", "char", "block"])
def test_a_hard_link_or_special_file_is_refused(info: tarfile.TarInfo) -> None:
    raw = _tar(_info("app/data", size=1), info)
    assert _refusal(raw) == f"archive member {info.name!r} is a hard link or special file"


# --- reading through the data ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "called"), [
    (tarfile.DIRTYPE, "folder"), (tarfile.SYMTYPE, "link"), (tarfile.LNKTYPE, "hard link"),
    (tarfile.CHRTYPE, "device"), (tarfile.BLKTYPE, "device"), (tarfile.FIFOTYPE, "fifo")])
def test_a_folder_link_or_special_member_announcing_data_is_refused(kind: bytes, called: str) -> None:
    # tarfile reads the next header right after it; GNU tar skips the announced size as data (a whole member can
    # hide there from one reader): an archive two readers list differently is refused.
    header = _raw_header(_info("app/entry", kind, size=BLOCK, mode=0o755, link="target"))
    raw = _end(bytes(header) + bytes(_raw_header(_info("app/next", size=1))) + _padded(b"x"))
    assert _refusal(raw) == (f"archive member 'app/entry' is a {called} whose header announces {BLOCK} bytes of "
                             "data, which tar readers read two ways")


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed: the two readings cannot be compared")
def test_a_link_announcing_data_hides_a_member_from_gnu_tar_that_tarfile_lists(tmp_path: Path) -> None:
    # Why the refusal above exists: the same bytes list three members to tarfile and two to GNU tar.
    hidden = _raw_header(_info("app/evil", size=3)) + _padded(b"sh\n")
    link = _raw_header(_info("app/link", tarfile.SYMTYPE, size=len(hidden), link="doc"))
    raw = _end(bytes(link) + bytes(hidden) + bytes(_raw_header(_info("app/readme", size=1))) + _padded(b"x"))
    (tmp_path / "t.tar").write_bytes(raw)
    with tarfile.open(tmp_path / "t.tar") as tf:
        assert tf.getnames() == ["app/link", "app/evil", "app/readme"]
    listed = subprocess.run(["tar", "-tf", str(tmp_path / "t.tar")], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == ["app/link", "app/readme"]
    assert _refusal(raw).startswith("archive member 'app/link' is a link whose header announces")


@pytest.mark.parametrize("kind", [tarfile.DIRTYPE, tarfile.SYMTYPE])
def test_a_folder_or_link_announcing_no_data_is_read_on(kind: bytes) -> None:
    header = _raw_header(_info("app/entry", kind, mode=0o755, link="target"))
    raw = _end(bytes(header) + bytes(_raw_header(_info("app/next", size=1))) + _padded(b"x"))
    assert _audit(raw) == 2


class _Zeros:
    """An uncompressed tar of one regular member of ``size`` zero bytes, made as it is read (never held whole)."""

    def __init__(self, size: int) -> None:
        self._head = bytes(_raw_header(_info("app/big", size=size)))
        self._left = size + (-size % BLOCK) + 2 * BLOCK
        self._left += -(BLOCK + self._left) % (20 * BLOCK)

    def read(self, size: int, /) -> bytes:
        if self._head:
            out, self._head = self._head[:size], self._head[size:]
            return out
        size = min(size, self._left)
        self._left -= size
        return bytes(size)


def test_a_big_members_data_is_read_through_in_bounded_pieces() -> None:
    # 16 MiB of data: read whole it would take 32 MiB at its peak; in 1 MiB pieces about 3 MiB.
    tracemalloc.start()
    try:
        count = audit_tar_listing(_Zeros(16 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 1
    assert peak < 4 << 20, peak


# --- the whole listing ---------------------------------------------------------------------------------------------

def test_an_archive_with_no_members_counts_none() -> None:
    assert _audit(_end(b"")) == 0


def test_the_byte_cap_counts_every_member_up_to_exactly_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 10)
    assert _audit(_tar(_info("app/a", size=4), _info("app/b", size=6))) == 2


def test_the_byte_cap_is_refused_by_the_sum_of_members(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 10)
    raw = _tar(_info("app/a", size=5), _info("app/b", size=6))
    assert _refusal(raw) == "archive unpacks to more than 10 bytes"


def test_a_member_cut_off_inside_its_data_is_damaged_with_tarfiles_reason() -> None:
    raw = bytes(_raw_header(_info("app/cut", size=5000))) + b"x" * 100
    assert _refusal(raw) == "archive is damaged: unexpected end of data"


def _link_with_pax_size(hidden: bytes) -> bytes:
    """A link whose ustar size is 0 and whose pax ``size`` record announces ``hidden``'s length, then ``hidden``."""
    link = _info("app/link", tarfile.SYMTYPE, link="doc")
    link.pax_headers = {"size": str(len(hidden))}
    return link.tobuf(format=tarfile.PAX_FORMAT) + hidden


def test_a_link_announcing_data_through_a_pax_size_record_is_refused() -> None:
    # The raw header says 0; the pax record, applied after it, says 1024: the same two readings, the same refusal.
    hidden = bytes(_raw_header(_info("app/evil", size=3))) + _padded(b"sh\n")
    raw = _end(_link_with_pax_size(hidden) + bytes(_raw_header(_info("app/readme", size=1))) + _padded(b"x"))
    assert _refusal(raw) == (f"archive member 'app/link' is a link whose header announces {len(hidden)} bytes of "
                             "data, which tar readers read two ways")


def test_a_bundle_with_a_link_announcing_data_through_a_pax_size_record_is_refused_and_nothing_hidden_is_written(
        tmp_path: Path) -> None:
    hidden = bytes(_raw_header(_info("app/evil", size=3))) + _padded(b"sh\n")
    raw = _end(_link_with_pax_size(hidden) + bytes(_raw_header(_info("app/readme", size=1))) + _padded(b"x"))
    archive = tmp_path / "bundle.tar.gz"
    archive.write_bytes(gzip.compress(raw, mtime=0))
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert caught.value.message.startswith("archive member 'app/link' is a link whose header announces")
    assert not (tmp_path / "prefix").exists()  # nothing written stays, the hidden member least of all
