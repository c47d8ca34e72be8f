"""Build the skill host's release file: PyInstaller, then the archive users download.

The qualification pipeline runs this as the reference app's build command (its
policy's ``[app.build] argv``), in a copy of the committed source, with
``QUALIFY_BUILD_INFO`` naming the build information (docs/app-contract.md):

    QUALIFY_BUILD_INFO=/abs/build_info.json python reference_app/tools/build_release.py --out OUT

It writes exactly one file into OUT: ``skillhost-<version>-<platform>.tar.gz``
(``.zip`` on Windows), the one-folder bundle ``skillhost/`` packed with sorted
entries, no owners and a fixed time, so the same bundle gives the same bytes.
The pipeline never runs PyInstaller itself: this script is the app's own build.

Reproducible: the same commit gives the same bytes, whatever the folder, the
time, ``TMPDIR``, umask or locale of the build (reproducible-builds.org):

- every time in the output is ``SOURCE_DATE_EPOCH`` (the pipeline sets it to
  the commit's time; a fixed time without it), members' and the gzip header's;
- PyInstaller runs with a fixed ``PYTHONHASHSEED``: it collects the modules of
  ``base_library.zip`` in a set, so their order (and the zip's bytes) followed
  the hash seed of the run (found with diffoscope on two builds);
- the bytecode PyInstaller compiles carries no source time (PyInstaller writes
  it without one) and ``SOURCE_DATE_EPOCH`` makes any ``py_compile`` hash-based;
- members are sorted, owned by 0:0 with no names, and their modes normalised
  (0755 for folders and executables, 0644 otherwise): the umask of the build
  shaped the modes PyInstaller gave the bundle's files;
- the gzip header carries no file name and the fixed time.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

_APP = Path(__file__).resolve().parent.parent
_SPEC = _APP / "skillhost.spec"
_NAME = "skillhost"
# The time for every member (and the gzip header) without SOURCE_DATE_EPOCH: the archive's bytes depend on
# its content only.
_EPOCH = 1_700_000_000
# zip cannot hold a time before 1980.
_ZIP_EPOCH_MIN = 315_532_800
# Any fixed value works; the point is that it is the same in every build.
_HASH_SEED = "0"
# Level 1: on this bundle (55 MB) it packs in 1.2 s where level 6 took 3.1 s and level 9 about 8 s, for an
# archive 8% larger than level 6's; the build runs on every qualification, the download once per user.
_GZIP_LEVEL = 1
_MAX_INFO = 4096


class BuildError(Exception):
    pass


def _version() -> str:
    text = (_APP / "skillhost" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([0-9A-Za-z.+-]{1,32})"$', text, re.MULTILINE)
    if found is None:
        raise BuildError("skillhost/_version.py has no __version__")
    return found.group(1)


def _platform() -> str:
    """The platform named by the build information (the pipeline's), checked against this machine."""
    path = os.environ.get("QUALIFY_BUILD_INFO")
    if not path:
        raise BuildError("QUALIFY_BUILD_INFO is not set; it must name the pipeline's build information file")
    with Path(path).open("rb") as fh:
        raw = fh.read(_MAX_INFO + 1)
    if len(raw) > _MAX_INFO:
        raise BuildError(f"{path} is larger than {_MAX_INFO} bytes")
    info = json.loads(raw.decode("utf-8"))
    host = "windows" if sys.platform == "win32" else "macos" if sys.platform == "darwin" else "linux"
    platform = info.get("platform") if isinstance(info, dict) else None
    if platform != host:
        raise BuildError(f"the build information names platform {platform!r}; this machine is {host}")
    return host


def source_date_epoch() -> int:
    """``SOURCE_DATE_EPOCH`` (the commit's time, from the pipeline), or the fixed time without it."""
    text = os.environ.get("SOURCE_DATE_EPOCH")
    if text is None:
        return _EPOCH
    if not text.isdigit() or len(text) > 12:
        raise BuildError(f"SOURCE_DATE_EPOCH {text[:40]!r} is not a number of seconds")
    return int(text)


def _pyinstaller(dist: Path, work: Path, epoch: int) -> Path:
    argv = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
            "--distpath", str(dist), "--workpath", str(work), str(_SPEC)]
    env = {**os.environ, "PYTHONHASHSEED": _HASH_SEED, "SOURCE_DATE_EPOCH": str(epoch)}
    done = subprocess.run(argv, cwd=str(_APP), env=env, check=False)
    bundle = dist / _NAME
    if done.returncode != 0 or not bundle.is_dir():
        raise BuildError(f"PyInstaller exited {done.returncode}")
    return bundle


def _entries(bundle: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(bundle):
        dirs.sort()
        for name in [*dirs, *files]:
            found.append(Path(folder) / name)
    return sorted(found, key=lambda p: p.relative_to(bundle).as_posix())


def normal_mode(mode: int) -> int:
    """0755 for folders and anything its owner may execute, 0644 otherwise: the build's umask never shows."""
    return 0o755 if stat.S_ISDIR(mode) or mode & stat.S_IXUSR else 0o644


def _tar_info(name: str, kind: bytes, mode: int, epoch: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _pack_tar(bundle: Path, archive: Path, epoch: int) -> None:
    with archive.open("wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch, compresslevel=_GZIP_LEVEL) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(_tar_info(_NAME, tarfile.DIRTYPE, 0o755, epoch))
        for path in _entries(bundle):
            name = f"{_NAME}/{path.relative_to(bundle).as_posix()}"
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                info = _tar_info(name, tarfile.SYMTYPE, 0o777, epoch)
                info.linkname = str(path.readlink())
                tf.addfile(info)
            elif stat.S_ISDIR(st.st_mode):
                tf.addfile(_tar_info(name, tarfile.DIRTYPE, normal_mode(st.st_mode), epoch))
            elif stat.S_ISREG(st.st_mode):
                info = _tar_info(name, tarfile.REGTYPE, normal_mode(st.st_mode), epoch)
                info.size = st.st_size
                with path.open("rb") as src:
                    tf.addfile(info, src)
            else:
                raise BuildError(f"the bundle holds a special file: {name}")


def _pack_zip(bundle: Path, archive: Path, epoch: int) -> None:
    date_time = time.gmtime(max(epoch, _ZIP_EPOCH_MIN))[:6]
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=_GZIP_LEVEL) as zf:
        for path in _entries(bundle):
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                raise BuildError(f"a zip cannot carry the link {path.relative_to(bundle)}")
            if not stat.S_ISREG(st.st_mode):
                continue
            info = zipfile.ZipInfo(f"{_NAME}/{path.relative_to(bundle).as_posix()}", date_time=date_time)
            info.external_attr = (normal_mode(st.st_mode) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as src, zf.open(info, "w") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def build(out: Path) -> Path:
    platform = _platform()
    suffix = ".zip" if platform == "windows" else ".tar.gz"
    archive = out / f"{_NAME}-{_version()}-{platform}{suffix}"
    epoch = source_date_epoch()
    scratch = Path(tempfile.mkdtemp(prefix="skillhost-build-"))
    try:
        bundle = _pyinstaller(scratch / "dist", scratch / "work", epoch)
        partial = archive.with_name(f".{archive.name}.partial")
        (_pack_zip if platform == "windows" else _pack_tar)(bundle, partial, epoch)
        partial.replace(archive)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return archive


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="an existing folder for the one release file")
    ns = ap.parse_args(argv)
    out = Path(ns.out)
    if not out.is_dir():
        print(f"build_release: --out {out} is not a folder", file=sys.stderr)
        return 2
    try:
        archive = build(out)
    except (BuildError, OSError, ValueError) as exc:
        print(f"build_release: {exc}", file=sys.stderr)
        return 1
    print(f"build_release: wrote {archive.name} ({archive.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
