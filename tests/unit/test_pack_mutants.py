"""qualify_archive's pack, held to exact words and exact bytes: a zip refusal of a link names the link and says, in a
fixed hint, that the Windows bundle must have none; a refused name and a link target that leaves the bundle are quoted
to their first 120 characters; the gzip stream of a tar bundle is opened for writing by name (no FutureWarning) and
its header names no file and carries the fixed mtime; a link member is stored with mode 0o777; every zip member
carries the fixed date 2023-11-14 22:13:20; and a file that became a link after the walk is never read through, in a
tar or a zip alike.
Written for the mutants of the module that survived the fast test set (docs/mutation.md).
"""

from __future__ import annotations

import struct
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, pack
from desktop_qualify.qualify_archive._pack import _pack_tar, _pack_zip
from desktop_qualify.qualify_archive._tree import walk_tree


def _bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle" / "skillhost"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "skillhost").write_bytes(b"\x7fELF main")
    (bundle / "skillhost").chmod(0o755)
    (bundle / "_internal" / "data.json").write_bytes(b'{"k": 1}')
    return bundle


def test_zip_pack_refuses_a_link_naming_it_with_the_fixed_hint(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "_internal" / "alias").symlink_to("data.json")
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.zip")
    assert caught.value.code is Code.BUILD_FAILED
    assert caught.value.message == "bundle contains a symlink: _internal/alias"
    assert caught.value.hint == "a zip archive cannot carry links; the Windows bundle must have none"
    assert not (tmp_path / "out.zip").exists()


def test_a_refused_name_is_quoted_to_its_first_120_characters(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    name = "\x1b" + "a" * 119 + "z" * 30  # the 121st character is the first "z"
    (bundle / name).write_bytes(b"x")
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.tar.gz")
    assert caught.value.code is Code.BUILD_FAILED
    assert caught.value.message == f"bundle path {name[:120]!r} contains a control or format character"
    assert "z" not in caught.value.message


def test_a_leaving_link_target_is_quoted_to_its_first_120_characters(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    target = "../" + "a" * 117 + "z" * 30  # 120 characters up to the last "a", then "z"s
    (bundle / "_internal" / "out").symlink_to(target)
    with pytest.raises(QualificationError) as caught:
        pack(bundle, tmp_path / "out.tar.gz")
    assert caught.value.code is Code.BUILD_FAILED
    assert caught.value.message == f"bundle symlink _internal/out -> {target[:120]!r} leaves the bundle"
    assert "z" not in caught.value.message


def test_tar_gzip_header_names_no_file_and_carries_the_fixed_mtime(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    archive = tmp_path / "skillhost.tar.gz"
    pack(bundle, archive)
    header = archive.read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[3] == 0  # FLG: no FNAME (nor any other optional field), so the archive's own name is not in it
    assert struct.unpack("<I", header[4:8])[0] == _limits.EPOCH
    with tarfile.open(archive, "r:gz") as tf:
        assert tf.getnames() == ["skillhost", "skillhost/_internal", "skillhost/_internal/data.json",
                                 "skillhost/skillhost"]


def test_tar_link_member_has_mode_0o777(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (bundle / "_internal" / "alias").symlink_to("data.json")
    archive = tmp_path / "skillhost.tar.gz"
    pack(bundle, archive)
    with tarfile.open(archive, "r:gz") as tf:
        link = tf.getmember("skillhost/_internal/alias")
    assert link.issym()
    assert link.linkname == "data.json"
    assert link.mode == 0o777


def test_zip_members_carry_the_fixed_date(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    archive = tmp_path / "skillhost.zip"
    pack(bundle, archive)
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == ["skillhost/_internal/data.json", "skillhost/skillhost"]
    assert {i.date_time for i in infos} == {(2023, 11, 14, 22, 13, 20)}


def test_tar_pack_opens_its_gzip_stream_for_writing_by_name(tmp_path: Path) -> None:
    """A gzip stream whose mode is left to the file's warns that a later Python will open it for reading."""
    bundle = _bundle(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pack(bundle, tmp_path / "skillhost.tar.gz")
    with tarfile.open(tmp_path / "skillhost.tar.gz", "r:gz") as tf:
        assert tf.extractfile("skillhost/skillhost").read() == b"\x7fELF main"  # type: ignore[union-attr]


@pytest.mark.parametrize(("packer", "suffix"), [(_pack_tar, ".tar.gz"), (_pack_zip, ".zip")], ids=["tar", "zip"])
def test_a_file_that_became_a_link_after_the_walk_is_not_read_through(packer: object, suffix: str,
                                                                       tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    entries = walk_tree(bundle)
    secret = tmp_path / "secret"
    secret.write_bytes(b"outside the bundle")
    swapped = bundle / "_internal" / "data.json"
    assert swapped.is_relative_to(tmp_path)
    swapped.unlink()
    swapped.symlink_to(secret)
    archive = tmp_path / f"skillhost{suffix}"
    with pytest.raises(OSError):  # noqa: PT011 - ELOOP from O_NOFOLLOW; its errno differs across systems
        packer(bundle, entries, archive)  # type: ignore[operator]
