"""The Linux installer kinds, run for real: dpkg-deb on packages, unsquashfs on AppImage-shaped files.

Each hostile input is refused with QE_INSTALL_FAILED before its tool writes
anything into the prefix, and the prefix is gone afterwards.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer.installers._installers import install_with
from desktop_qualify.qualify_archive import tree_manifest
from support.packages import Entry, app_tree, appimage, deb, require

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux installer tools")


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "work" / "install"
    prefix.mkdir(parents=True)
    return prefix


def _refused(kind: str, copy: Path, prefix: Path, fragment: str) -> None:
    with pytest.raises(QualificationError) as caught:
        install_with(kind, copy, prefix)
    assert caught.value.code is Code.INSTALL_FAILED
    assert fragment in caught.value.message, caught.value.message
    assert not prefix.exists() or not any(prefix.iterdir())


def test_deb_extracts_the_package_data_into_the_prefix_and_runs_no_script(tmp_path: Path) -> None:
    require("dpkg-deb", "dpkg")
    package = deb(tmp_path / "demo.deb", app_tree())
    prefix = _prefix(tmp_path)
    assert install_with("deb", package, prefix) == "deb"
    manifest = {entry.path for entry in tree_manifest(prefix)}
    assert manifest == {"opt/demo/demo", "usr/bin/demo"}
    assert (prefix / "usr/bin/demo").resolve() == (prefix / "opt/demo/demo").resolve()
    assert os.access(prefix / "opt/demo/demo", os.X_OK)


def test_deb_built_by_dpkg_deb_itself_installs(tmp_path: Path) -> None:
    dpkg_deb = require("dpkg-deb", "dpkg")
    root = tmp_path / "root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: demo\nVersion: 1.0\nArchitecture: all\n"
                                             "Maintainer: Tests <t@example.invalid>\nDescription: demo\n")
    (root / "opt" / "demo").mkdir(parents=True)
    (root / "opt" / "demo" / "demo").write_text("#!/bin/sh\n")
    package = tmp_path / "demo.deb"
    subprocess.run([dpkg_deb, "--build", "--root-owner-group", str(root), str(package)], check=True,
                   capture_output=True)
    prefix = _prefix(tmp_path)
    assert install_with("deb", package, prefix) == "deb"
    assert [entry.path for entry in tree_manifest(prefix)] == ["opt/demo/demo"]


@pytest.mark.parametrize(("entry", "fragment"), [
    (Entry("./opt/../../escape", data=b"x"), "escapes the install prefix"),
    (Entry("/etc/evil", data=b"x"), "escapes the install prefix"),
    (Entry("./opt/demo/su", data=b"x", mode=0o4755), "set-user-id"),
    (Entry("./opt/demo/sg", data=b"x", mode=0o2755), "set-user-id or set-group-id"),
    (Entry("./opt/demo/null", "chardev"), "special file"),
    (Entry("./opt/demo/pipe", "fifo"), "special file"),
    (Entry("./opt/demo/hard", "hardlink", target="./opt/demo/demo"), "hard link"),
    (Entry("./opt/demo/passwd", "link", target="/etc/passwd"), "outside the installed tree"),
    (Entry("./opt/demo/up", "link", target="../../../../etc"), "outside the installed tree"),
    (Entry("./opt/demo/DEMO", data=b"x"), "case-insensitive"),
    (Entry("./opt/demo/bell\x07", data=b"x"), "control or format character"),
])
def test_deb_refuses_what_the_unpack_refuses_before_dpkg_deb_writes(tmp_path: Path, entry: Entry,
                                                                       fragment: str) -> None:
    require("dpkg-deb", "dpkg")
    package = deb(tmp_path / "hostile.deb", [*app_tree(), entry])
    _refused("deb", package, _prefix(tmp_path), fragment)


def test_deb_over_the_size_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("dpkg-deb", "dpkg")
    from desktop_qualify.qualify_archive import _limits

    monkeypatch.setattr(_limits, "MAX_UNPACKED_BYTES", 1000)
    package = deb(tmp_path / "big.deb", [*app_tree(), Entry("./opt/demo/big", data=b"\0" * 4096)])
    _refused("deb", package, _prefix(tmp_path), "unpacks to more than 1000 bytes")


def test_a_damaged_deb_is_refused(tmp_path: Path) -> None:
    require("dpkg-deb", "dpkg")
    package = deb(tmp_path / "demo.deb", app_tree())
    data = package.read_bytes()
    package.write_bytes(data[: len(data) - 200])
    _refused("deb", package, _prefix(tmp_path), "")


def _app_dir(tmp_path: Path) -> Path:
    tree = tmp_path / "AppDir"
    (tree / "usr" / "bin").mkdir(parents=True)
    (tree / "usr" / "bin" / "demo").write_text("#!/bin/sh\necho demo\n")
    (tree / "usr" / "bin" / "demo").chmod(0o755)
    (tree / "AppRun").symlink_to("usr/bin/demo")
    return tree


def test_appimage_unpacks_its_image_without_running_it(tmp_path: Path) -> None:
    require("unsquashfs", "squashfs-tools")
    image = appimage(tmp_path / "Demo-x86_64.AppImage", _app_dir(tmp_path))
    prefix = _prefix(tmp_path)
    assert install_with("appimage", image, prefix) == "appimage"
    assert {entry.path for entry in tree_manifest(prefix)} == {"squashfs-root/AppRun", "squashfs-root/usr/bin/demo"}
    assert os.access(prefix / "squashfs-root/usr/bin/demo", os.X_OK)


@pytest.mark.parametrize(("shape", "fragment"), [
    ("device", "device, fifo or socket"),
    ("setuid", "set-user-id"),
    ("absolute-link", "outside the installed tree"),
    ("escaping-link", "outside the installed tree"),
])
def test_appimage_refuses_what_the_unpack_refuses(tmp_path: Path, shape: str, fragment: str) -> None:
    require("unsquashfs", "squashfs-tools")
    tree = _app_dir(tmp_path)
    pseudo: list[str] = []
    if shape == "device":
        pseudo = ["null c 666 root root 1 3"]
    elif shape == "setuid":
        (tree / "usr" / "bin" / "demo").chmod(0o4755)
    elif shape == "absolute-link":
        (tree / "usr" / "passwd").symlink_to("/etc/passwd")
    else:
        (tree / "usr" / "up").symlink_to("../../../..")
    image = appimage(tmp_path / "Hostile.AppImage", tree, pseudo=pseudo)
    _refused("appimage", image, _prefix(tmp_path), fragment)


@pytest.mark.parametrize(("mangle", "fragment"), [
    (lambda data: b"MZ" + data[2:], "ELF runtime"),
    (lambda data: data[:8] + b"AI\x01" + data[11:], "type 2"),
    (lambda data: data[:64] + b"xxxx" + data[68:], "no squashfs image"),
])
def test_appimage_of_the_wrong_shape_is_refused(tmp_path: Path, mangle: Callable[[bytes], bytes],
                                                fragment: str) -> None:
    require("unsquashfs", "squashfs-tools")
    image = appimage(tmp_path / "Demo.AppImage", _app_dir(tmp_path))
    image.write_bytes(mangle(image.read_bytes()))
    _refused("appimage", image, _prefix(tmp_path), fragment)


def test_archive_kind_is_the_hardened_unpack(tmp_path: Path) -> None:
    from support.archives import files_and_links, tgz

    archive = tgz(tmp_path, files_and_links(["app/app"]), name="app.tar.gz")
    prefix = _prefix(tmp_path)
    assert install_with("archive", archive, prefix) == "archive"
    assert stat.S_ISREG((prefix / "app/app").lstat().st_mode)
    hostile = tgz(tmp_path, files_and_links(["app/app"], {"app/out": "../../x"}), name="bad.tar.gz")
    _refused("archive", hostile, _prefix(tmp_path / "2"), "outside the bundle")


def test_a_prefix_that_is_not_empty_is_refused(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    (prefix / "left-over").write_text("x")
    with pytest.raises(QualificationError, match="not empty"):
        install_with("deb", tmp_path / "none.deb", prefix)
