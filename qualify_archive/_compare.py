"""Where two builds' archives first differ: for people, after their digests already said that they do.

A reproducibility check and ``qualify rebuild`` compare digests; when those
differ, this names the first member (in archive order) whose name, kind,
mode, owner, time, size, link or content is not the other archive's, so the
report says *where* without anyone unpacking anything. Nothing is extracted:
members are read as streams, bounded by the archive caps. Archives tar (any
compression tarfile reads) and zip are compared member by member; any other
file by its first differing byte.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Iterator
from itertools import zip_longest
from pathlib import Path
from typing import IO, Literal

from . import _limits as limits

_GZIP_MAGIC = b"\x1f\x8b"
# A zip begins with a member's local header, or, holding no member, with its end record.
_ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")
# A member as compared: its name and the facts that make up its bytes in the archive.
_Member = tuple[str, tuple[tuple[str, object], ...]]


def _content(handle: IO[bytes] | None, budget: list[int]) -> str:
    if handle is None:
        return ""
    digest = hashlib.sha256()
    while chunk := handle.read(1 << 20):
        budget[0] -= len(chunk)
        if budget[0] < 0:
            raise ValueError("more content than the archive cap")
        digest.update(chunk)
    return digest.hexdigest()


def _tar_members(path: Path) -> Iterator[_Member]:
    budget = [limits.MAX_UNPACKED_BYTES]
    with path.open("rb") as raw:
        # tarfile's own gzip stream ends at the first gzip member; gzip (as GNU tar) reads a tar.gz made of several.
        # peek, not read: the file may be a pipe, read once, forward.
        gzipped = raw.peek(2)[:2] == _GZIP_MAGIC
        source = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
        yield from _tar_stream(source, "r|" if gzipped else "r|*", budget)


def _tar_stream(source: gzip.GzipFile | io.BufferedReader, mode: Literal["r|", "r|*"],
                budget: list[int]) -> Iterator[_Member]:
    with tarfile.open(fileobj=source, mode=mode) as tf:
        for count, info in enumerate(tf):
            if count >= limits.MAX_MEMBERS:
                raise ValueError(f"more than {limits.MAX_MEMBERS} members")
            facts = (("kind", info.type.decode("ascii", "replace")), ("mode", oct(info.mode)),
                     ("owner", f"{info.uid}:{info.gid} {info.uname}:{info.gname}"), ("mtime", info.mtime),
                     ("size", info.size), ("link", info.linkname),
                     ("content sha256", _content(tf.extractfile(info) if info.isfile() else None, budget)))
            yield info.name, facts


def _zip_members(path: Path) -> Iterator[_Member]:
    budget = [limits.MAX_UNPACKED_BYTES]
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > limits.MAX_MEMBERS:
            raise ValueError(f"more than {limits.MAX_MEMBERS} members")
        for info in infos:
            with zf.open(info) as handle:
                content = _content(handle, budget)
            facts = (("mode", oct(info.external_attr >> 16)), ("time", info.date_time), ("size", info.file_size),
                     ("compression", info.compress_type), ("content sha256", content))
            yield info.filename, facts


_NOT_ARCHIVES = "the files are not archives this tool reads member by member"
_SAME_MEMBERS = ("every member's name, kind, mode, owner, time, size, link and content match: the difference is "
                 "outside those (compression, extended headers, zip extra fields or comments, padding)")


def _first_byte(a: Path, b: Path, why: str = _NOT_ARCHIVES) -> str | None:
    with a.open("rb") as fa, b.open("rb") as fb:
        offset = 0
        while True:
            ca, cb = fa.read(1 << 20), fb.read(1 << 20)
            if ca != cb:
                at = next((i for i, (x, y) in enumerate(zip(ca, cb, strict=False)) if x != y), min(len(ca), len(cb)))
                return f"byte {offset + at} differs ({why})"
            if not ca:
                return None
            offset += len(ca)


def _is_zip(path: Path) -> bool:
    """A zip from its first byte: ``is_zipfile`` alone finds an end record anywhere in the last 64 KiB, so a tar
    whose last member is a zip would be compared as that zip."""
    with path.open("rb") as raw:
        head = raw.read(4)
    return head in _ZIP_STARTS and zipfile.is_zipfile(path)


def _members(path: Path) -> Iterator[_Member] | None:
    if _is_zip(path):
        return _zip_members(path)
    if tarfile.is_tarfile(path):
        return _tar_members(path)
    return None


def first_difference(first: Path, second: Path) -> str | None:
    """The first member (or byte) where ``second`` differs from ``first``, in words; None when none differs."""
    ours, theirs = _members(first), _members(second)
    if ours is None or theirs is None:
        return _first_byte(first, second)
    try:
        for index, (a, b) in enumerate(zip_longest(ours, theirs)):
            if a is None or b is None:
                present = b if a is None else a
                where = "second" if a is None else "first"
                return f"member {index}: {present[0]!r} is only in the {where} archive"
            if a[0] != b[0]:
                return f"member {index}: {a[0]!r} in the first archive, {b[0]!r} in the second (order or name)"
            for (fact, mine), (_, other) in zip(a[1], b[1], strict=True):
                if mine != other:
                    return f"member {index}: {a[0]!r}: {fact} differs ({mine} vs {other})"
    except (OSError, ValueError, EOFError, tarfile.TarError, zipfile.BadZipFile) as exc:
        return f"the archives could not be compared member by member: {exc}"[:400]
    return _first_byte(first, second, _SAME_MEMBERS)
