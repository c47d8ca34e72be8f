"""What an installer tool wrote, held to the hardened unpack's rules (qualify_archive.audit_tree)."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_archive import _limits, audit_tree


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "prefix"
    (root / "opt" / "app").mkdir(parents=True)
    (root / "opt" / "app" / "app").write_bytes(b"#!/bin/sh\n")
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "app").symlink_to("../../opt/app/app")
    return root


def test_a_clean_tree_passes_with_links_confined_to_the_whole_tree(tmp_path: Path) -> None:
    assert audit_tree(_tree(tmp_path)) == 6


def _socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda root: os.mkfifo(root / "opt" / "pipe"), "device, fifo or socket"),
    (lambda root: _socket(root / "opt" / "sock"), "device, fifo or socket"),
    (lambda root: (root / "opt" / "app" / "app").chmod(0o4755), "set-user-id"),
    (lambda root: (root / "opt" / "app").chmod(0o2755), "set-group-id"),
    (lambda root: os.link(root / "opt" / "app" / "app", root / "opt" / "twin"), "hard link"),
    (lambda root: (root / "opt" / "passwd").symlink_to("/etc/passwd"), "outside the installed tree"),
    (lambda root: (root / "opt" / "up").symlink_to("../../.."), "outside the installed tree"),
    # Each link looks contained; followed, the chain leaves the tree.
    (lambda root: ((root / "opt" / "a").symlink_to("b"), (root / "opt" / "b").symlink_to("../../..")),
     "outside the installed tree"),
    (lambda root: (root / "opt" / "dangling").symlink_to("nowhere"), "resolves outside the installed tree"),
    (lambda root: (root / "opt" / "App").mkdir(), "case-insensitive"),
    (lambda root: (root / "opt" / "bell\x07").write_bytes(b"x"), "control or format character"),
])
def test_what_the_unpack_refuses_is_refused(tmp_path: Path, make: Callable[[Path], object], fragment: str) -> None:
    if sys.platform == "win32":  # pragma: no cover - POSIX file types
        pytest.skip("POSIX file types")
    root = _tree(tmp_path)
    make(root)
    with pytest.raises(QualificationError) as caught:
        audit_tree(root)
    assert caught.value.code is Code.INSTALL_FAILED
    assert fragment in caught.value.message


def test_more_members_or_bytes_than_the_caps_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 5)
    with pytest.raises(QualificationError, match="more than 5 members"):
        audit_tree(root)
    monkeypatch.setattr(_limits, "MAX_MEMBERS", 100)
    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 4)
    with pytest.raises(QualificationError, match="more than 4 bytes"):
        audit_tree(root)
