"""qualify_archive and _install.py: names an install manifest cannot record never get installed.

A manifest path is UTF-8 text of at most 512 characters (evidence_schemas'
RelPath); tarfile and the file system hand undecodable bytes over as lone
surrogates. unpack refuses such names, and install turns any failure into a
failed record, never an exception.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import BuildRecord, Code, InstallRecord, QualificationError
from desktop_qualify.producer.installers import _archive, _installers
from desktop_qualify.producer.installers._install import install
from desktop_qualify.qualify_archive import pack, unpack
from desktop_qualify.qualify_files import file_sha256
from support.archives import files_and_links, tgz, zip_of
from support.evidence_factory import utc_now

BAD_NAMES = [
    ("not-utf8", "top/caf\udce9", "is not valid UTF-8"),
    ("newline", "top/a\nb", "contains a control or format character"),
    ("escape-sequence", "top/a\x1b[31mred", "contains a control or format character"),
    ("delete", "top/a\x7f", "contains a control or format character"),
    ("c1-control", "top/a\x85b", "contains a control or format character"),
    ("bidi-override", "top/\u202eexe.txt", "contains a control or format character"),
    ("zero-width-joiner", "top/a\u200db", "contains a control or format character"),
    ("line-separator", "top/a\u2028b", "contains a control or format character"),
    ("longer-than-a-manifest-path", "top/" + "/".join(["d" * 100] * 6), "is longer than 512 characters"),
]


@pytest.mark.parametrize(("name", "why"), [(n, w) for _, n, w in BAD_NAMES], ids=[i for i, _, _ in BAD_NAMES])
def test_a_tar_member_name_a_manifest_cannot_record_is_refused(name: str, why: str, tmp_path: Path) -> None:
    archive = tgz(tmp_path, files_and_links(["top/ok", name]))
    with pytest.raises(QualificationError) as caught:
        unpack(archive, tmp_path / "prefix")
    assert caught.value.code is Code.INSTALL_FAILED
    assert why in caught.value.message
    caught.value.message.encode("utf-8")  # the refusal itself quotes the name printably
    assert not (tmp_path / "prefix").exists()


@pytest.mark.parametrize("name", ["top/a\nb", "top/a\x01", "top/\u202eexe.txt"])
def test_a_zip_member_name_with_a_control_character_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        unpack(zip_of(tmp_path, ["top/ok", name]), tmp_path / "prefix")
    assert "contains a control or format character" in caught.value.message


@pytest.mark.parametrize(("target", "why"), [("x\udce9", "is not valid UTF-8"),
                                             ("x\nx", "contains a control or format character")])
def test_a_link_target_a_manifest_cannot_record_is_refused(target: str, why: str, tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as caught:
        unpack(tgz(tmp_path, files_and_links(["top/x"], {"top/l": target})), tmp_path / "prefix")
    assert f"is a link whose target {why}" in caught.value.message


def test_utf8_names_beyond_ascii_are_installed(tmp_path: Path) -> None:
    names = ["top/caf\u00e9", "top/\u65e5\u672c/\u8a9e", "top/\U0001f600"]
    unpack(tgz(tmp_path, files_and_links(names)), tmp_path / "prefix")
    assert sorted(p.relative_to(tmp_path / "prefix").as_posix() for p in (tmp_path / "prefix").rglob("*")
                  if p.is_file()) == sorted(names)


def _build_record(archive: Path) -> BuildRecord:
    return BuildRecord.model_validate({
        "artifact": {"name": archive.name, "size": archive.stat().st_size, "sha256": file_sha256(archive)},
        "build_sha": "a" * 40, "source_digest": hashlib.sha256(b"source").hexdigest(), "command": ["make"],
        "tools": {"python": "3.11"}, "started_at": utc_now(), "duration_ms": 1, "passed": True,
    })


def _assert_failed(record: InstallRecord, why: str) -> None:
    assert record.passed is False
    assert record.failure is not None
    assert why in record.failure
    record.failure.encode("utf-8")  # the record stays UTF-8, whatever the name it quotes


def test_install_records_a_non_utf8_member_name_as_a_failure(tmp_path: Path) -> None:
    archive = tgz(tmp_path, files_and_links(["top/top", "top/caf\udce9"]))
    record = install(archive=archive, build=_build_record(archive), prefix=tmp_path / "prefix", kind="archive",
                     executable="top/top")
    _assert_failed(record, "is not valid UTF-8")


def test_install_records_a_manifest_it_cannot_write_as_a_failure(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Should a name that no manifest can hold land all the same (here: unpack and the installed-tree audit both
    # bypassed), install must not raise.
    try:
        (tmp_path / "probe\udce9").write_bytes(b"")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")

    def unpack_anything(archive: Path, prefix: Path) -> None:
        (prefix / "top").mkdir(parents=True)
        (prefix / "top" / "top").write_bytes(b"x")
        (prefix / "top" / "caf\udce9").write_bytes(b"x")

    monkeypatch.setattr(_archive, "unpack", unpack_anything)
    archive = tgz(tmp_path, files_and_links(["top/top"]))
    record = install(archive=archive, build=_build_record(archive), prefix=tmp_path / "prefix", kind="archive",
                     executable="top/top")
    # The audit of what the installer wrote refuses the name first.
    _assert_failed(record, "is not valid UTF-8")
    monkeypatch.setattr(_installers, "audit_tree", lambda root: 0)
    record = install(archive=archive, build=_build_record(archive), prefix=tmp_path / "prefix2", kind="archive",
                     executable="top/top")
    _assert_failed(record, "cannot be recorded in a manifest")


def test_install_records_an_unreadable_archive_as_a_failure(tmp_path: Path) -> None:
    archive = tgz(tmp_path, files_and_links(["top/top"]))
    build = _build_record(archive)
    archive.unlink()
    record = install(archive=archive, build=build, prefix=tmp_path / "prefix", kind="archive",
                     executable="top/top")
    _assert_failed(record, "cannot be read")
    assert not (tmp_path / "prefix").exists()


def test_pack_refuses_a_bundle_name_that_unpack_would_refuse(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle" / "skillhost"
    bundle.mkdir(parents=True)
    (bundle / "skillhost").write_bytes(b"x")
    (bundle / "bad\x1bname").write_bytes(b"x")
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.tar.gz")
    assert caught.value.code is Code.BUILD_FAILED
    assert "contains a control or format character" in caught.value.message
