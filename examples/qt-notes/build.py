"""Qt Notes' own build: a zipapp of the package, laid out as a Debian package, built by dpkg-deb.

    python build.py --out OUT

Run by the pipeline in the exported source of the gated commit (policy.toml,
``[app.build]``); the interpreter that runs it is the one the zipapp names in
its first line, the Python that has PySide6 (the package declares it as a
dependency, as a distribution's package would depend on python3-pyside6).
The build information the pipeline hands over (``QUALIFY_BUILD_INFO``) is
embedded as ``qt_notes/build_info.json``. Reproducible: every file time is
SOURCE_DATE_EPOCH, owners are root (``--root-owner-group``), and the package
is compressed with gzip, whose output depends only on its input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "qt-notes"
DEFAULT_EPOCH = 1_700_000_000


def _version() -> str:
    for line in (HERE / "qt_notes" / "__init__.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("build: qt_notes/__init__.py names no __version__")


def _build_info() -> dict[str, str]:
    path = os.environ.get("QUALIFY_BUILD_INFO")
    if not path:
        raise SystemExit("build: QUALIFY_BUILD_INFO is not set (the pipeline names the build information file)")
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {"build_sha": data["build_sha"], "platform": data["platform"], "built_at": data["built_at"]}


def _stage_package(staging: Path, info: dict[str, str], epoch: int) -> Path:
    package = staging / "qt_notes"
    shutil.copytree(HERE / "qt_notes", package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (package / "build_info.json").write_text(json.dumps(info, sort_keys=True) + "\n", encoding="utf-8")
    # The zipapp's entry; its exit status is the command's (zipapp's own generated entry would drop it).
    (staging / "__main__.py").write_text("import sys\n\nfrom qt_notes.__main__ import main\n\nsys.exit(main())\n",
                                         encoding="utf-8")
    for path in [staging, *staging.rglob("*")]:
        os.utime(path, (epoch, epoch))
    return staging


def _control(version: str) -> str:
    return (f"Package: {NAME}\nVersion: {version}\nArchitecture: all\nMaintainer: Qt Notes <notes@example.invalid>\n"
            "Depends: python3 (>= 3.11), python3-pyside6.qtwidgets\nSection: editors\nPriority: optional\n"
            "Description: a small notes editor\n Qt Notes, the second example app of desktop-qualify.\n")


def main() -> int:
    parser = argparse.ArgumentParser(prog="build.py")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or DEFAULT_EPOCH)
    version = _version()
    info = _build_info()
    with tempfile.TemporaryDirectory(prefix="qt-notes-build-") as scratch:
        work = Path(scratch)
        root = work / "root"
        app_dir = root / "opt" / NAME
        app_dir.mkdir(parents=True)
        executable = app_dir / NAME
        zipapp.create_archive(_stage_package(work / "staging", info, epoch), executable,
                              interpreter=sys.executable, compressed=True)
        executable.chmod(0o755)
        (root / "usr" / "bin").mkdir(parents=True)
        (root / "usr" / "bin" / NAME).symlink_to(f"../../opt/{NAME}/{NAME}")
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN" / "control").write_text(_control(version), encoding="utf-8")
        for path in [root, *root.rglob("*")]:
            os.utime(path, (epoch, epoch), follow_symlinks=False)
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / f"{NAME}_{version}_all.deb"
        subprocess.run(["dpkg-deb", "--build", "--root-owner-group", "-Zgzip", str(root), str(target)],
                       check=True, env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)})
    print(f"build: {target.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
