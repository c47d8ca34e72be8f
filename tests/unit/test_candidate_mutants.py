"""Hashing a candidate file: what a refusal names, the cap's boundary, and the file changing under the read
(docs/verifier.md).

Written for the mutants of ``qualify_verify._candidate`` that the other tests let through (docs/mutation.md): a
candidate that cannot be opened as a regular file is named as the ``--artifact`` the person passed, so the
message says which argument to fix; a file of exactly the cap is hashed and one byte more is refused; a file of
several read chunks gets its whole digest and size; and a file that changes while it is hashed (rewritten in
place, yielding bytes past its recorded size, never ending, removed or replaced once read) is refused with the
message that says what happened, never reported under a digest that does not describe it. The changes are made
by a writer acting through the read handle the module opens (its ``os.fdopen`` wrapped), at the moment the read
reaches the file's end.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_verify import _candidate
from desktop_qualify.qualify_verify._candidate import (
    CandidateChangedError,
    CandidateTooLargeError,
    stable_sha256,
)

CHUNK = 1 << 20
CHANGED = "the file changed while it was being hashed; present a file nothing is writing to"
REPLACED = "the path names another file than the one hashed"


def test_a_missing_candidate_is_named_as_the_artifact_argument(tmp_path: Path) -> None:
    missing = tmp_path / "app.tar.gz"
    with pytest.raises(QualificationError) as caught:
        stable_sha256(missing, 1 << 20)
    assert caught.value.code is Code.EVIDENCE_MISSING
    assert caught.value.message == f"--artifact {missing}: file not found"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_candidate_is_refused_before_a_byte_is_read_and_named_as_the_argument(tmp_path: Path) -> None:
    fifo = tmp_path / "app.tar.gz"
    os.mkfifo(fifo)
    with pytest.raises(QualificationError) as caught:
        stable_sha256(fifo, 1 << 20)
    assert caught.value.message.startswith(f"--artifact {fifo}: ")


# -- the cap and the chunks -----------------------------------------------------------------------------------


def test_a_candidate_of_exactly_the_cap_is_hashed_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    candidate = tmp_path / "app.tar.gz"
    data = b"0123456789" * 10
    candidate.write_bytes(data)
    assert stable_sha256(candidate, len(data)) == (hashlib.sha256(data).hexdigest(), len(data))
    with pytest.raises(CandidateTooLargeError) as caught:
        stable_sha256(candidate, len(data) - 1)
    assert str(caught.value) == "100 bytes, above the policy's [limits] max_candidate_bytes (99)"


def test_an_empty_candidate_under_a_cap_of_zero_is_hashed(tmp_path: Path) -> None:
    candidate = tmp_path / "app.tar.gz"
    candidate.write_bytes(b"")
    assert stable_sha256(candidate, 0) == (hashlib.sha256(b"").hexdigest(), 0)


def test_a_candidate_of_several_chunks_gets_the_digest_and_size_of_all_its_bytes(tmp_path: Path) -> None:
    candidate = tmp_path / "app.tar.gz"
    data = bytes(range(256)) * (2 * CHUNK // 256) + b"tail of the archive"
    candidate.write_bytes(data)
    assert len(data) > 2 * CHUNK
    assert stable_sha256(candidate, len(data)) == (hashlib.sha256(data).hexdigest(), len(data))


# -- a file that changes under the read -----------------------------------------------------------------------


class _Handle:
    """The module's read handle; the first time a read finds the end of the file, ``at_end`` runs (a writer acting
    then) and the bytes it returns are read as if the file went on. Every later read at the end is empty, whatever
    size it asks for."""

    def __init__(self, real: BinaryIO, at_end: Callable[[], bytes]) -> None:
        self._real = real
        self._at_end = at_end
        self._ended = False

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()

    def fileno(self) -> int:
        return self._real.fileno()

    def read(self, size: int | None = -1) -> bytes:
        chunk = self._real.read(size)
        if chunk or self._ended:
            return chunk
        self._ended = True
        return self._at_end()


class _Endless(_Handle):
    """A handle whose file never ends (grows as fast as it is read): ``size`` bytes per read; an unbounded read
    gets a bounded 8 MiB, then nothing, so that it runs dry. ``handed_out`` counts the bytes given."""

    def __init__(self, real: BinaryIO) -> None:
        super().__init__(real, lambda: b"")
        self.handed_out = 0
        self._whole_given = False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            count = 0 if self._whole_given else 8 * CHUNK
            self._whole_given = True
        else:
            count = size
        self.handed_out += count
        return b"\0" * count


class _Os:
    """The ``os`` the module sees: the real one, but ``fdopen`` hands back ``wrap`` of the real handle."""

    def __init__(self, wrap: Callable[[BinaryIO], Any]) -> None:
        self._wrap = wrap

    def fdopen(self, fd: int, mode: str) -> Any:
        return self._wrap(os.fdopen(fd, mode))

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def _writer_at_end(monkeypatch: pytest.MonkeyPatch, at_end: Callable[[], bytes]) -> None:
    monkeypatch.setattr(_candidate, "os", _Os(lambda real: _Handle(real, at_end)))


def _candidate_file(tmp_path: Path, data: bytes = b"release archive bytes") -> Path:
    candidate = tmp_path / "app.tar.gz"
    candidate.write_bytes(data)
    return candidate


def test_a_candidate_rewritten_in_place_with_the_same_size_is_refused(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = _candidate_file(tmp_path)
    was = candidate.stat()

    def rewrite() -> bytes:
        candidate.write_bytes(b"RELEASE ARCHIVE BYTES")
        os.utime(candidate, ns=(was.st_atime_ns, was.st_mtime_ns + 1_000_000_000))
        return b""

    _writer_at_end(monkeypatch, rewrite)
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, 1 << 20)
    assert str(caught.value) == CHANGED


def test_a_candidate_appended_to_while_it_is_read_is_refused(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = _candidate_file(tmp_path)

    def append() -> bytes:
        with candidate.open("ab") as writer:
            writer.write(b" and more")
        return b""

    _writer_at_end(monkeypatch, append)
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, 1 << 20)
    assert str(caught.value) == CHANGED


def test_bytes_past_the_recorded_size_are_refused_even_at_exactly_the_cap(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose stat lags behind its bytes (stale attributes, a writer the stat did not see yet) and whose
    recorded size is exactly the cap: the read goes on past the cap and finds the bytes, and the digest of its
    first bytes is not reported."""
    data = b"release archive bytes"
    candidate = _candidate_file(tmp_path, data)
    _writer_at_end(monkeypatch, lambda: b"bytes the stat did not count")
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, len(data))
    assert str(caught.value) == CHANGED


def test_a_candidate_that_never_ends_is_read_one_chunk_past_the_cap_then_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = _candidate_file(tmp_path)
    handles: list[_Endless] = []

    def endless(real: BinaryIO) -> _Endless:
        handles.append(_Endless(real))
        return handles[-1]

    monkeypatch.setattr(_candidate, "os", _Os(endless))
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, CHUNK)
    assert str(caught.value) == CHANGED
    assert [handle.handed_out for handle in handles] == [2 * CHUNK]


def test_a_candidate_removed_once_read_is_refused_as_vanished(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = _candidate_file(tmp_path)

    def remove() -> bytes:
        candidate.unlink()
        return b""

    _writer_at_end(monkeypatch, remove)
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, 1 << 20)
    assert str(caught.value) == f"the file vanished after it was hashed ({os.strerror(errno.ENOENT)})"


def test_a_candidate_replaced_once_read_is_refused_as_another_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = _candidate_file(tmp_path)
    other = tmp_path / "other.tar.gz"
    other.write_bytes(b"release archive bytes")

    def replace() -> bytes:
        other.replace(candidate)
        return b""

    _writer_at_end(monkeypatch, replace)
    with pytest.raises(CandidateChangedError) as caught:
        stable_sha256(candidate, 1 << 20)
    assert str(caught.value) == REPLACED
