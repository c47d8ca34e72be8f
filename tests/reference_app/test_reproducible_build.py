"""The reference app's own build is reproducible: the same source gives the same bytes under varied conditions.

Two real PyInstaller builds of the app, from copies in different folders, at different times, with a
different TMPDIR, umask, locale, time zone, HOME and PYTHONHASHSEED of the calling process, and the same
SOURCE_DATE_EPOCH (the pipeline's: the commit's time), give one archive digest. The archive's gzip header
carries that time and no file name; every member has that time, owner 0:0 and a normalised mode.
"""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
from skillhost_testutil import REPO

pytest.importorskip("PyInstaller")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux build is the one held here")

EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z


def _copy_app(dest):
    shutil.copytree(REPO / "reference_app", dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _build(root, *, umask, locale, tz, seed, info):
    app = _copy_app(root / "deeper" / "src" if umask == 0o002 else root / "src")
    out, tmp, home = root / "out", root / "tmp", root / "home"
    for folder in (out, tmp, home):
        folder.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "LC_ALL": locale, "LANG": locale,
           "TZ": tz, "PYTHONHASHSEED": seed, "SOURCE_DATE_EPOCH": str(EPOCH), "QUALIFY_BUILD_INFO": str(info)}
    done = subprocess.run([sys.executable, "tools/build_release.py", "--out", str(out)], cwd=app, env=env,
                          capture_output=True, text=True, timeout=900, check=False,
                          umask=umask)
    assert done.returncode == 0, done.stderr[-3000:]
    (archive,) = out.iterdir()
    return archive


def test_two_builds_under_varied_conditions_give_one_digest(tmp_path):
    info = tmp_path / "build_info.json"
    info.write_text(json.dumps({"kind": "qualify-build-info", "version": 1, "build_sha": "a" * 40,
                                "built_at": "2026-01-01T00:00:00.000000Z", "source_ref": "refs/heads/main",
                                "platform": "linux"}))
    first = _build(tmp_path / "one", umask=0o022, locale="C.UTF-8", tz="UTC", seed="1", info=info)
    second = _build(tmp_path / "two", umask=0o002, locale="fr_CH.UTF-8", tz="GMT-14", seed="4242", info=info)
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (first, second)]
    assert digests[0] == digests[1], f"two builds differ: run diffoscope {first} {second}"

    raw = first.read_bytes()
    flags, mtime = raw[3], int.from_bytes(raw[4:8], "little")
    assert (flags & 0x08, mtime) == (0, EPOCH), "the gzip header names a file or carries another time"
    with gzip.open(first) as gz, tarfile.open(fileobj=gz) as tf:
        members = tf.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {m.mtime for m in members} == {EPOCH}
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    assert {m.mode for m in members if not m.issym()} <= {0o755, 0o644}
