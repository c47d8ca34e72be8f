"""qualify_archive/_compare.py, how a tar's and a zip's members are listed for `first_difference`: each member's
facts in order and by name (a tar's kind, mode, owner, mtime, size, link and content digest; a zip's mode from the
high half of its external attributes, time, size, compression method and content digest), a tar member's kind byte
read as ASCII with a replacement character where it is not, a link's target compared without opening the link, the
first member that differs named with the fact and both values word for word, the tar read forward as a stream (it
may be a pipe), and both readers' caps at their edge: the member count (a refusal naming the cap) and, in a zip, the
content bytes. Written for the mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest
from desktop_qualify.qualify_archive import _limits, first_difference
from desktop_qualify.qualify_archive._compare import _tar_members, _zip_members

WHEN = 1_700_000_000
DAY = (2024, 5, 17, 12, 30, 40)
REFUSED = "the archives could not be compared member by member: "


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entry(name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, link: str = "",
           uid: int = 1000, uname: str = "builder", mtime: int = WHEN) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = link
    info.uid, info.gid, info.uname, info.gname = uid, 1000, uname, "staff"
    info.mtime = mtime
    info.size = len(data)
    return info, data


def _tar(path: Path, *entries: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data else None)
    return path


def _tar_bytes(*entries: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _zinfo(name: str, *, mode: int = 0o100644, when: tuple[int, ...] = DAY,
           method: int = zipfile.ZIP_STORED) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=when)  # type: ignore[arg-type]
    info.external_attr = mode << 16
    info.compress_type = method
    return info


def _zip(path: Path, *members: tuple[zipfile.ZipInfo, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for info, data in members:
            zf.writestr(info, data)
    return path


# --- tar ----------------------------------------------------------------------------------------------------------


def test_a_tar_member_is_listed_with_each_fact_by_name_in_order(tmp_path: Path) -> None:
    path = _tar(tmp_path / "a.tar",
                _entry("app/bin", b"abc", mode=0o755),
                _entry("app/etc", kind=tarfile.DIRTYPE, mode=0o750, uid=0, uname="root", mtime=WHEN + 5),
                _entry("app/run", kind=tarfile.SYMTYPE, mode=0o777, link="bin"),
                _entry("app/again", kind=tarfile.LNKTYPE, link="app/bin"))
    owner = "1000:1000 builder:staff"
    assert list(_tar_members(path)) == [
        ("app/bin", (("kind", "0"), ("mode", "0o755"), ("owner", owner), ("mtime", WHEN), ("size", 3),
                     ("link", ""), ("content sha256", _sha(b"abc")))),
        ("app/etc", (("kind", "5"), ("mode", "0o750"), ("owner", "0:1000 root:staff"), ("mtime", WHEN + 5),
                     ("size", 0), ("link", ""), ("content sha256", ""))),
        ("app/run", (("kind", "2"), ("mode", "0o777"), ("owner", owner), ("mtime", WHEN), ("size", 0),
                     ("link", "bin"), ("content sha256", ""))),
        ("app/again", (("kind", "1"), ("mode", "0o644"), ("owner", owner), ("mtime", WHEN), ("size", 0),
                       ("link", "app/bin"), ("content sha256", ""))),
    ]


@pytest.mark.parametrize(("changed", "words"), [
    ({"kind": tarfile.FIFOTYPE}, "kind differs (0 vs 6)"),
    ({"mode": 0o755}, "mode differs (0o644 vs 0o755)"),
    ({"uid": 0, "uname": "root"}, "owner differs (1000:1000 builder:staff vs 0:1000 root:staff)"),
    ({"mtime": WHEN + 1}, "mtime differs (1700000000 vs 1700000001)"),
    ({"data": b"abcd"}, "size differs (3 vs 4)"),
    ({"data": b"abd"}, f"content sha256 differs ({_sha(b'abc')} vs {_sha(b'abd')})"),
], ids=["kind", "mode", "owner", "mtime", "size", "content"])
def test_the_first_tar_fact_that_differs_is_named_with_both_values(
        tmp_path: Path, changed: dict[str, object], words: str) -> None:
    base: dict[str, object] = {"data": b"abc"} if "kind" not in changed else {}
    first = _tar(tmp_path / "first.tar", _entry("app/a", b"same"), _entry("app/b", **base))  # type: ignore[arg-type]
    second = _tar(tmp_path / "second.tar", _entry("app/a", b"same"),
                  _entry("app/b", **{**base, **changed}))  # type: ignore[arg-type]
    assert first_difference(first, second) == f"member 1: 'app/b': {words}"


def test_a_symbolic_and_a_hard_link_are_compared_by_target_without_being_opened(tmp_path: Path) -> None:
    first = _tar(tmp_path / "first.tar", _entry("app/bin", b"x"),
                 _entry("app/hard", kind=tarfile.LNKTYPE, link="app/bin"),
                 _entry("app/soft", kind=tarfile.SYMTYPE, link="bin"))
    same = _tar(tmp_path / "same.tar", _entry("app/bin", b"x"),
                _entry("app/hard", kind=tarfile.LNKTYPE, link="app/bin"),
                _entry("app/soft", kind=tarfile.SYMTYPE, link="bin-2"))
    other = _tar(tmp_path / "other.tar", _entry("app/bin", b"x"),
                 _entry("app/hard", kind=tarfile.LNKTYPE, link="app/bin-2"),
                 _entry("app/soft", kind=tarfile.SYMTYPE, link="bin"))
    assert first_difference(first, same) == "member 2: 'app/soft': link differs (bin vs bin-2)"
    assert first_difference(first, other) == "member 1: 'app/hard': link differs (app/bin vs app/bin-2)"


def test_a_kind_byte_outside_ascii_is_shown_as_a_replacement_character(tmp_path: Path) -> None:
    odd = _tar(tmp_path / "odd.tar", _entry("app/x", kind=b"\xe9"))
    plain = _tar(tmp_path / "plain.tar", _entry("app/x"))
    assert [facts[0] for _, facts in _tar_members(odd)] == [("kind", "\ufffd")]
    assert first_difference(odd, plain) == "member 0: 'app/x': kind differs (\ufffd vs 0)"


def _open_writer(pipe: Path, reader: threading.Thread) -> int | None:
    """The pipe's writing end once a reader has opened it; None if no reader came within a second."""
    for _ in range(100):
        try:
            return os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet (ENXIO)
            if not reader.is_alive():
                return None
            time.sleep(0.01)
    return None


def test_a_tar_is_read_forward_as_a_stream_so_a_pipe_can_be_compared(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    data = _tar_bytes(_entry("app/a", b"abc"), _entry("app/b", b"defg"))
    assert len(data) < 16 * 1024  # fits a pipe's buffer: written whole without waiting on the reader
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    listed: list[object] = []

    def read() -> None:
        try:
            listed.extend((name, dict(facts)["content sha256"]) for name, facts in _tar_members(pipe))
        except Exception as exc:  # shown by the assertion below, not lost in the thread
            listed.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    writer = _open_writer(pipe, reader)
    assert writer is not None
    assert os.write(writer, data) == len(data)
    os.close(writer)
    for _ in range(20):  # a reader that opens the pipe again (to seek, to try another format) gets an empty stream
        reader.join(0.1)
        if not reader.is_alive():
            break
        again = _open_writer(pipe, reader)
        if again is not None:
            os.close(again)
    assert not reader.is_alive()
    assert listed == [("app/a", _sha(b"abc")), ("app/b", _sha(b"defg"))]


def test_a_tar_holds_the_member_cap_and_is_refused_one_member_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    at_cap = _tar(tmp_path / "three.tar", *(_entry(f"app/{i}", b"x") for i in range(3)))
    past = _tar(tmp_path / "four.tar", *(_entry(f"app/{i}", b"x") for i in range(4)))
    assert [name for name, _ in _tar_members(at_cap)] == ["app/0", "app/1", "app/2"]
    with pytest.raises(ValueError, match=r"^more than 3 members$"):
        list(_tar_members(past))
    assert first_difference(past, at_cap) == REFUSED + "more than 3 members"


# --- zip ----------------------------------------------------------------------------------------------------------


def test_a_zip_member_is_listed_with_each_fact_by_name_in_order(tmp_path: Path) -> None:
    path = _zip(tmp_path / "a.zip", (_zinfo("app/bin", mode=0o100755), b"abc"),
                (_zinfo("app/doc", when=(2020, 1, 2, 3, 4, 6), method=zipfile.ZIP_DEFLATED), b"text " * 50))
    assert list(_zip_members(path)) == [
        ("app/bin", (("mode", "0o100755"), ("time", DAY), ("size", 3), ("compression", zipfile.ZIP_STORED),
                     ("content sha256", _sha(b"abc")))),
        ("app/doc", (("mode", "0o100644"), ("time", (2020, 1, 2, 3, 4, 6)), ("size", 250),
                     ("compression", zipfile.ZIP_DEFLATED), ("content sha256", _sha(b"text " * 50)))),
    ]


@pytest.mark.parametrize(("changed", "words"), [
    ({"mode": 0o100755}, "mode differs (0o100644 vs 0o100755)"),
    ({"when": (2024, 5, 17, 12, 30, 42)}, "time differs ((2024, 5, 17, 12, 30, 40) vs (2024, 5, 17, 12, 30, 42))"),
    ({"data": b"abcd"}, "size differs (3 vs 4)"),
    ({"method": zipfile.ZIP_DEFLATED}, "compression differs (0 vs 8)"),
    ({"data": b"abd"}, f"content sha256 differs ({_sha(b'abc')} vs {_sha(b'abd')})"),
], ids=["mode", "time", "size", "compression", "content"])
def test_the_first_zip_fact_that_differs_is_named_with_both_values(
        tmp_path: Path, changed: dict[str, object], words: str) -> None:
    changed = dict(changed)
    data = changed.pop("data", b"abc")
    first = _zip(tmp_path / "first.zip", (_zinfo("app/a"), b"same"), (_zinfo("app/b"), b"abc"))
    second = _zip(tmp_path / "second.zip", (_zinfo("app/a"), b"same"),
                  (_zinfo("app/b", **changed), data))  # type: ignore[arg-type]
    assert first_difference(first, second) == f"member 1: 'app/b': {words}"


def test_a_zip_holds_the_member_cap_and_is_refused_one_member_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 3)
    at_cap = _zip(tmp_path / "three.zip", *((_zinfo(f"app/{i}"), b"x") for i in range(3)))
    past = _zip(tmp_path / "four.zip", *((_zinfo(f"app/{i}"), b"x") for i in range(4)))
    assert [name for name, _ in _zip_members(at_cap)] == ["app/0", "app/1", "app/2"]
    with pytest.raises(ValueError, match=r"^more than 3 members$"):
        list(_zip_members(past))
    assert first_difference(past, at_cap) == REFUSED + "more than 3 members"


def test_a_zip_holds_the_content_cap_over_all_members_and_is_refused_one_byte_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 10)
    at_cap = _zip(tmp_path / "ten.zip", (_zinfo("app/a"), b"x" * 6), (_zinfo("app/b"), b"y" * 4))
    past = _zip(tmp_path / "eleven.zip", (_zinfo("app/a"), b"x" * 6), (_zinfo("app/b"), b"y" * 5))
    assert [dict(facts)["size"] for _, facts in _zip_members(at_cap)] == [6, 4]
    assert first_difference(at_cap, past) == REFUSED + "more content than the archive cap"


# --- which reading a file gets -----------------------------------------------------------------------------------


def _zip_bytes(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(zipfile.ZipInfo(name, DAY), data)
    return buffer.getvalue()


def test_a_tar_whose_last_member_is_a_zip_is_compared_as_the_tar(tmp_path: Path) -> None:
    # zipfile.is_zipfile finds the inner zip's end record near the file's end: the tar's own members must be read.
    inner = _zip_bytes("inner.txt", b"same")
    first = _tar(tmp_path / "first.tar", _entry("app/a", b"one"), _entry("app/inner.zip", inner))
    second = _tar(tmp_path / "second.tar", _entry("app/a", b"two"), _entry("app/inner.zip", inner))
    assert first_difference(first, second) == (f"member 0: 'app/a': content sha256 differs "
                                               f"({_sha(b'one')} vs {_sha(b'two')})")


def test_a_tar_gz_of_several_gzip_members_is_read_to_its_end(tmp_path: Path) -> None:
    # gzip and GNU tar read every gzip member of a file; tarfile's own stream stopped at the first one.
    body = _tar_bytes(_entry("a", b"first"), _entry("b", b"second"))
    split = 3 * 512  # the first member's header and data, then the rest (b and the end) in a second gzip member
    (tmp_path / "one.tgz").write_bytes(gzip.compress(body, mtime=0))
    (tmp_path / "two.tgz").write_bytes(gzip.compress(body[:split], mtime=0) + gzip.compress(body[split:], mtime=0))
    assert [name for name, _ in _tar_members(tmp_path / "two.tgz")] == ["a", "b"]
    assert first_difference(tmp_path / "one.tgz", tmp_path / "two.tgz") == (
        "byte 10 differs (every member's name, kind, mode, owner, time, size, link and content match: the "
        "difference is outside those (compression, extended headers, zip extra fields or comments, padding))")


@pytest.mark.parametrize("compression", ["xz", "bz2"])
def test_a_tar_compressed_otherwise_than_gzip_is_listed_member_by_member(tmp_path: Path, compression: str) -> None:
    path = tmp_path / f"app.tar.{compression}"
    with tarfile.open(path, mode=f"w:{compression}", format=tarfile.PAX_FORMAT) as tf:
        info, data = _entry("app/a", b"one")
        tf.addfile(info, io.BytesIO(data))
    assert [name for name, _ in _tar_members(path)] == ["app/a"]
