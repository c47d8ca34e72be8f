"""Installers take real sizes: a .deb, an AppImage and an archive each holding a 100 MB executable install.

The executable is a shell script's first line followed by a hole (a sparse
file: quick to make, and quick for gzip and mksquashfs to pack), so every test
moves 100 MB through the real tool and the real adapter. The deb installer
used to refuse any member past about 88 KiB: the listing check skipped each
member's data while its 64 KiB header window was still counting.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from desktop_qualify.producer.installers._installers import install_with
from support.packages import appimage, require

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")

SIZE = 100 * 1000 * 1000
HEAD = b"#!/bin/sh\nexit 0\n"


def big_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(HEAD)
        handle.truncate(SIZE)
    path.chmod(0o755)
    return path


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


def _installed(path: Path) -> None:
    assert path.stat().st_size == SIZE
    assert os.access(path, os.X_OK)
    with path.open("rb") as handle:
        assert handle.read(len(HEAD)) == HEAD


def test_a_deb_holding_a_100_mb_executable_installs(tmp_path: Path) -> None:
    dpkg_deb = require("dpkg-deb", "dpkg")
    root = tmp_path / "root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: big\nVersion: 1.0\nArchitecture: all\n"
                                             "Maintainer: Tests <t@example.invalid>\nDescription: big\n")
    big_executable(root / "opt" / "big" / "big")
    package = tmp_path / "big.deb"
    subprocess.run([dpkg_deb, "--build", "--root-owner-group", "-Zgzip", "-z1", str(root), str(package)],
                   check=True, capture_output=True)
    prefix = _prefix(tmp_path)
    assert install_with("deb", package, prefix) == "deb"
    _installed(prefix / "opt" / "big" / "big")


def test_an_appimage_holding_a_100_mb_executable_installs(tmp_path: Path) -> None:
    require("unsquashfs", "squashfs-tools")
    tree = tmp_path / "AppDir"
    big_executable(tree / "usr" / "bin" / "big")
    (tree / "AppRun").symlink_to("usr/bin/big")
    image = appimage(tmp_path / "Big-x86_64.AppImage", tree)  # skips when mksquashfs is missing
    prefix = _prefix(tmp_path)
    assert install_with("appimage", image, prefix) == "appimage"
    _installed(prefix / "squashfs-root" / "usr" / "bin" / "big")


def test_an_archive_holding_a_100_mb_executable_installs(tmp_path: Path) -> None:
    executable = big_executable(tmp_path / "bundle" / "app" / "app")
    archive = tmp_path / "app.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tf:
        tf.add(executable.parent, arcname="app")
    prefix = _prefix(tmp_path)
    assert install_with("archive", archive, prefix) == "archive"
    _installed(prefix / "app" / "app")
