"""qualify_archive (tree manifests): install manifests are deterministic and never follow a symbolic link."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from desktop_qualify.qualify_archive import manifest_sha256, pack, tree_manifest, unpack, walk_tree

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="creating symlinks needs a privilege on Windows")


def _tree(root: Path) -> Path:
    (root / "lib" / "real").mkdir(parents=True)
    (root / "lib" / "real" / "mod.so").write_bytes(b"module")
    (root / "app").write_bytes(b"main")
    (root / "lib" / "alias").symlink_to("real", target_is_directory=True)
    (root / "lib" / "mod.so").symlink_to("real/mod.so")
    return root


def test_links_are_listed_by_target_and_never_followed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "root")
    manifest = {e.path: (e.size, e.sha256) for e in tree_manifest(root)}
    assert manifest == {
        "app": (4, hashlib.sha256(b"main").hexdigest()),
        "lib/alias": (4, hashlib.sha256(b"symlink:real").hexdigest()),
        "lib/mod.so": (11, hashlib.sha256(b"symlink:real/mod.so").hexdigest()),
        "lib/real/mod.so": (6, hashlib.sha256(b"module").hexdigest()),
    }
    # The linked folder is not walked a second time through its alias.
    assert "lib/alias/mod.so" not in manifest


def test_a_link_and_a_file_with_the_same_text_differ(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"target")
    (tmp_path / "link").symlink_to("target")
    file_entry, link_entry = tree_manifest(tmp_path)
    assert file_entry.size == link_entry.size
    assert file_entry.sha256 != link_entry.sha256


def test_what_a_link_points_at_does_not_change_the_manifest(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"one")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)
    before = manifest_sha256(tree_manifest(root))
    outside.write_bytes(b"two, and longer")
    assert manifest_sha256(tree_manifest(root)) == before
    (root / "link").unlink()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    assert manifest_sha256(tree_manifest(root)) != before


def test_walk_is_sorted_by_posix_path_and_excludes_the_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "root")
    (root / "a-b").write_bytes(b"")
    relative = [e.relative for e in walk_tree(root)]
    assert relative == sorted(relative)
    assert relative == ["a-b", "app", "lib", "lib/alias", "lib/mod.so", "lib/real", "lib/real/mod.so"]


def test_the_installed_manifest_equals_the_built_bundles(tmp_path: Path) -> None:
    bundle = _tree(tmp_path / "skillhost")
    pack(bundle, tmp_path / "a.tar.gz")
    unpack(tmp_path / "a.tar.gz", tmp_path / "prefix")
    assert tree_manifest(tmp_path / "prefix" / "skillhost") == tree_manifest(bundle)
