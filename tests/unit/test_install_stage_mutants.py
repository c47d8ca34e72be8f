"""producer/installers/_install.py, the install stage: what its record says, exactly, for each way an install ends.

The artifact is read once, in 1 MiB pieces, into a private copy named ``.install-…-<artifact name>`` beside the
prefix (its folders made as needed), hashed as it is copied, and the copy is removed afterwards even when the
installer consumed it or a failed read left none behind (the read's own error is then the one recorded). An
install of other bytes than the build's (or the audited release's) is refused in one exact sentence naming both
digests; an artifact that cannot be read, an executable that is missing (or a link), and a read-back error each
fail in their own exact words; a failed record holds zeros for every count and digest, its reason printable
UTF-8 (lone surrogates escaped) and at most 2000 characters; the duration is the stage's own, in milliseconds.
``install`` hands the job's signature requirement and the platform's grant through unchanged. Written for the
mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import errno
import hashlib
import io
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest
from desktop_qualify.evidence_schemas import BuildRecord, Code, InstallRecord, QualificationError
from desktop_qualify.producer.installers import _install
from desktop_qualify.producer.installers._install import install, install_expected
from desktop_qualify.producer.installers._installers import SignatureRequirement
from desktop_qualify.qualify_archive import manifest_sha256, tree_manifest
from support.evidence_factory import utc_now

ZERO = "0" * 64
EXE = "skillhost/skillhost"
EXE_BYTES = b"#!/bin/sh\necho skillhost\n"
NAME = "skillhost-1.0-linux.zip"
MIB = 1 << 20


def _zip(folder: Path, members: dict[str, bytes] | None = None, *, name: str = NAME) -> Path:
    artifact = folder / name
    with zipfile.ZipFile(artifact, "w") as zf:
        for member, data in (members if members is not None else {EXE: EXE_BYTES, "skillhost/lib.so": b"lib"}).items():
            zf.writestr(member, data)
    return artifact


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _build(artifact: Path, sha256: str) -> BuildRecord:
    return BuildRecord.model_validate({
        "artifact": {"name": artifact.name, "size": artifact.stat().st_size, "sha256": sha256},
        "build_sha": "a" * 40, "source_digest": hashlib.sha256(b"source").hexdigest(), "command": ["make"],
        "tools": {"python": "3.11"}, "started_at": utc_now(), "duration_ms": 1, "passed": True,
    })


def _expected(artifact: Path, prefix: Path, **kwargs: Any) -> InstallRecord:
    options: dict[str, Any] = {"kind": "archive", "executable": EXE, "whose": "the build's", **kwargs}
    if "sha256" not in options:
        options["sha256"] = _sha(artifact) if artifact.exists() else ZERO
    return install_expected(archive=artifact, prefix=prefix, **options)


def _assert_zeroed(record: InstallRecord, *, artifact_sha256: str) -> None:
    assert record.passed is False
    assert record.artifact_sha256 == artifact_sha256
    assert record.method == "archive"
    assert (record.file_count, record.total_bytes) == (0, 0)
    assert (record.manifest_sha256, record.executable_sha256) == (ZERO, ZERO)
    assert record.executable == EXE
    assert record.package_signature is None


class _Clock:
    """The stage's clock: ``first`` at the start, ``then`` at every later reading."""

    def __init__(self, first: float, then: float) -> None:
        self.readings = [first]
        self.then = then

    def __call__(self) -> float:
        return self.readings.pop() if self.readings else self.then


class _Installer:
    """An ``archive`` installer that records the copy it is handed, then writes the files ``write`` makes."""

    kind = "archive"

    def __init__(self, write: Callable[[Path, Path], None] | None = None) -> None:
        self.copies: list[tuple[Path, bytes]] = []
        self.write = write

    def install(self, copy: Path, prefix: Path) -> None:
        self.copies.append((copy, copy.read_bytes()))
        (prefix / "skillhost").mkdir()
        (prefix / EXE).write_bytes(EXE_BYTES)
        if self.write is not None:
            self.write(copy, prefix)


def _use(monkeypatch: pytest.MonkeyPatch, installer: _Installer) -> list[SignatureRequirement]:
    asked: list[SignatureRequirement] = []

    def chosen(requirement: SignatureRequirement) -> dict[str, Any]:
        asked.append(requirement)
        return {"archive": installer}

    monkeypatch.setattr(_install, "installers_for", chosen)
    return asked


class _Reader:
    """A file opened for reading that records every size asked of it; ``fail`` runs before each read."""

    def __init__(self, inner: IO[bytes], sizes: list[int | None], fail: Callable[[], None] | None) -> None:
        self.inner, self.sizes, self.fail = inner, sizes, fail

    def read(self, size: int | None = -1) -> bytes:
        self.sizes.append(size)
        if self.fail is not None:
            self.fail()
        return self.inner.read(size)

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()


class _Watched(type(Path())):  # type: ignore[misc]
    """The artifact's path, its reads watched."""

    sizes: list[int | None]
    fail: Callable[[], None] | None = None

    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        assert mode == "rb"
        return _Reader(io.FileIO(str(self), "rb"), self.sizes, self.fail)


def _watched(path: Path, fail: Callable[[], None] | None = None) -> _Watched:
    watched = _Watched(path)
    watched.sizes, watched.fail = [], fail
    return watched


# --- a passing install -------------------------------------------------------------------------------------


def test_a_passing_install_records_what_landed_and_the_stages_own_duration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    monkeypatch.setattr(_install, "time", SimpleNamespace(monotonic=_Clock(1000.0, 1002.5)))
    prefix = tmp_path / "work" / "install"
    record = _expected(artifact, prefix)
    assert record.passed, record.failure
    entries = tree_manifest(prefix)
    assert record == InstallRecord(
        artifact_sha256=_sha(artifact), method="archive", file_count=2, total_bytes=len(EXE_BYTES) + 3,
        manifest_sha256=manifest_sha256(entries), executable=EXE,
        executable_sha256=hashlib.sha256(EXE_BYTES).hexdigest(), duration_ms=2500, passed=True)
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["install"]  # the private copy is gone


def test_the_install_folder_is_made_with_its_missing_parents(tmp_path: Path) -> None:
    artifact = _zip(tmp_path)
    prefix = tmp_path / "jobs" / "run-1" / "install"
    record = _expected(artifact, prefix)
    assert record.passed, record.failure
    assert (prefix / EXE).read_bytes() == EXE_BYTES


def test_the_installer_gets_a_private_copy_beside_the_prefix_named_after_the_artifact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    installer = _Installer()
    _use(monkeypatch, installer)
    prefix = tmp_path / "work" / "install"
    assert _expected(artifact, prefix).passed
    [(copy, data)] = installer.copies
    assert copy.parent == prefix.parent
    assert copy.name.startswith(".install-")
    assert copy.name.endswith(f"-{NAME}")
    assert data == artifact.read_bytes()
    assert not copy.exists()


def test_the_artifact_is_read_in_pieces_of_one_mebibyte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = tmp_path / NAME
    artifact.write_bytes(bytes(range(256)) * (2 * MIB // 256) + b"tail")  # 2 MiB and 4 bytes
    installer = _Installer()
    _use(monkeypatch, installer)
    watched = _watched(artifact)
    record = _expected(watched, tmp_path / "work" / "install", sha256=_sha(artifact))
    assert record.passed, record.failure
    assert record.artifact_sha256 == _sha(artifact)
    assert watched.sizes == [MIB] * 4  # two whole pieces, the tail, and the empty read that ends it
    assert installer.copies[0][1] == artifact.read_bytes()


def test_an_installer_that_consumes_its_copy_still_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    installer = _Installer(lambda copy, prefix: copy.unlink())
    _use(monkeypatch, installer)
    prefix = tmp_path / "work" / "install"
    record = _expected(artifact, prefix)
    assert record.passed, record.failure
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["install"]


# --- install() hands the job's requirement and grant through --------------------------------------------------


def test_install_checks_against_the_builds_digest_and_passes_the_requirement_and_grant_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    asked = _use(monkeypatch, _Installer())
    granted: list[Path] = []
    requirement = SignatureRequirement(require_signed=True, signtool="signtool", thumbprint="ab" * 20)
    prefix = tmp_path / "work" / "install"
    record = install(archive=artifact, build=_build(artifact, _sha(artifact)), prefix=prefix, kind="archive",
                     executable=EXE, signatures=requirement, grant=granted.append)
    assert record.passed, record.failure
    assert asked == [requirement]
    assert asked[0] is requirement
    assert granted == [prefix]


def test_install_without_a_requirement_asks_for_none_and_grants_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    asked = _use(monkeypatch, _Installer())
    record = install(archive=artifact, build=_build(artifact, _sha(artifact)), prefix=tmp_path / "work" / "install",
                     kind="archive", executable=EXE)
    assert record.passed, record.failure
    assert asked == [SignatureRequirement()]


def test_install_refuses_other_bytes_than_the_builds_naming_both_digests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifact = _zip(tmp_path)
    actual = _sha(artifact)
    built = hashlib.sha256(b"the bytes the build made").hexdigest()
    monkeypatch.setattr(_install, "time", SimpleNamespace(monotonic=_Clock(1000.0, 1002.0)))
    prefix = tmp_path / "work" / "install"
    record = install(archive=artifact, build=_build(artifact, built), prefix=prefix, kind="archive", executable=EXE)
    _assert_zeroed(record, artifact_sha256=actual)
    assert record.failure == f"artifact digest {actual[:16]} differs from the build's {built[:16]}"
    assert record.duration_ms == 2000
    assert not prefix.exists()
    assert list(prefix.parent.iterdir()) == []  # nor the private copy


def test_an_audited_release_is_named_as_such_when_its_bytes_differ(tmp_path: Path) -> None:
    artifact = _zip(tmp_path)
    audited = "f" * 64
    record = _expected(artifact, tmp_path / "work" / "install", sha256=audited, whose="the audited release's")
    assert record.failure == f"artifact digest {_sha(artifact)[:16]} differs from the audited release's {'f' * 16}"


# --- failures, each in its own words ---------------------------------------------------------------------


def test_an_artifact_that_cannot_be_read_fails_in_the_systems_words(tmp_path: Path) -> None:
    record = _expected(tmp_path / NAME, tmp_path / "work" / "install")
    _assert_zeroed(record, artifact_sha256=ZERO)
    assert record.failure == f"artifact {NAME} cannot be read into the install folder: No such file or directory"


def test_a_read_error_is_recorded_and_leaves_no_copy(tmp_path: Path) -> None:
    artifact = _zip(tmp_path)

    def fail() -> None:
        raise OSError(errno.EIO, "Input/output error")

    record = _expected(_watched(artifact, fail), tmp_path / "work" / "install", sha256=_sha(artifact))
    _assert_zeroed(record, artifact_sha256=ZERO)
    assert record.failure == f"artifact {NAME} cannot be read into the install folder: Input/output error"
    assert list((tmp_path / "work").iterdir()) == []


def test_a_read_error_is_the_one_recorded_when_the_copy_is_already_gone(tmp_path: Path) -> None:
    artifact = _zip(tmp_path)
    folder = tmp_path / "work"

    def swept_then_fail() -> None:
        for copy in folder.glob(".install-*"):
            copy.unlink()  # swept by someone else before the read fails
        raise OSError(errno.EIO, "Input/output error")

    record = _expected(_watched(artifact, swept_then_fail), folder / "install", sha256=_sha(artifact))
    assert record.failure == f"artifact {NAME} cannot be read into the install folder: Input/output error"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names as lone surrogates")
def test_a_name_the_file_system_handed_over_as_surrogates_is_recorded_escaped(tmp_path: Path) -> None:
    record = _expected(tmp_path / "caf\udce9.zip", tmp_path / "work" / "install")
    assert record.failure == ("artifact caf\\udce9.zip cannot be read into the install folder: "
                              "No such file or directory")
    record.model_dump_json().encode("utf-8")


@pytest.mark.parametrize("length", [1999, 2000, 2001, 5000])
def test_a_failure_is_recorded_up_to_2000_characters(tmp_path: Path, length: int) -> None:
    said = ("icacls: " + "denied " * 1000)[:length]

    def refuse(prefix: Path) -> None:
        raise QualificationError(Code.INSTALL_FAILED, said)

    record = _expected(_zip(tmp_path), tmp_path / "work" / "install", grant=refuse)
    assert record.failure == said[:2000]
    assert len(record.failure) == min(length, 2000)


def test_a_missing_executable_is_said_to_be_missing(tmp_path: Path) -> None:
    artifact = _zip(tmp_path, {"skillhost/lib.so": b"lib"})
    record = _expected(artifact, tmp_path / "work" / "install")
    _assert_zeroed(record, artifact_sha256=_sha(artifact))
    assert record.failure == f"installed executable {EXE} is missing"


def test_an_executable_that_is_a_link_is_said_to_be_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def link(copy: Path, prefix: Path) -> None:
        (prefix / EXE).rename(prefix / "skillhost" / "real")
        (prefix / EXE).symlink_to("real")

    _use(monkeypatch, _Installer(link))
    record = _expected(_zip(tmp_path), tmp_path / "work" / "install")
    assert record.failure == f"installed executable {EXE} is missing"


def test_an_installed_file_that_cannot_be_read_back_fails_in_the_systems_words(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(path: Path) -> str:
        raise OSError(errno.EIO, "Input/output error", str(path))

    monkeypatch.setattr(_install, "file_sha256", unreadable)
    prefix = tmp_path / "work" / "install"
    record = _expected(_zip(tmp_path), prefix)
    assert record.failure == f"the installed files cannot be read back: [Errno 5] Input/output error: '{prefix / EXE}'"

