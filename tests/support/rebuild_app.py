"""A small committed app whose build is the producer's real build code, for `qualify rebuild` tests.

The factory's chain folder is made a checkout whose policy names the app (``app_checkout``), the producer
builds a commit of it (``built``), and ``rebuild`` runs `qualify rebuild` on the chain's evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from desktop_qualify.producer._build import BuildPlan, build
from desktop_qualify.producer.os_signing._platform_signing import NoPlatformSigner

from support.evidence_factory import Evidence
from support.stage_runners import unconfined_runner

BUILD = """
import gzip, io, os, pathlib, sys, tarfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
epoch = int(os.environ["SOURCE_DATE_EPOCH"])
with (out / "skillhost-0.1.0-linux.tar.gz").open("wb") as raw, \\
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=epoch) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
    for name in ("main.py", "skills.txt"):
        data = pathlib.Path(name).read_bytes()
        info = tarfile.TarInfo("skillhost/" + name)
        info.size, info.mtime, info.mode = len(data), epoch, 0o644
        tf.addfile(info, io.BytesIO(data))
"""


WHEN = "2026-12-01T12:00:00Z"


def app_checkout(ev: Evidence) -> Path:
    """The factory's chain folder made a checkout whose policy names a small app with the build above."""
    app = ev.root / "app"
    (app / "tools").mkdir(parents=True)
    (app / "tools" / "build_release.py").write_text(BUILD, encoding="utf-8")
    (app / "main.py").write_text("print('skill host')\n", encoding="utf-8")
    (app / "skills.txt").write_text("read-notes\nrepo-status\n", encoding="utf-8")
    text = ev.policy_path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.startswith("source = "))
    ev.policy_path.write_text(text.replace(old, 'source = "../app"'), encoding="utf-8")
    return app


def built(ev: Evidence, app: Path, sha: str, work: Path) -> tuple[Path, str]:
    """The producer's own build of ``sha``: the artifact and its source digest."""
    policy = ev.policy
    plan = BuildPlan(argv=policy.file.app.build.argv, env_names=(), tools={}, output_glob="skillhost-*-linux.tar.gz",
                     kind="archive", executable="skillhost/skillhost")
    out = build(repo=ev.root, sha=sha, ref="refs/heads/main", app_source=app, plan=plan, app_name="skillhost",
                platform="linux", arch="x86_64", work=work, artifacts=work / "artifacts", signer=NoPlatformSigner(),
                timeout=60, runner=unconfined_runner(), environ={"PATH": "/usr/bin:/bin"})
    return out.archive, out.record.source_digest


def rebuild(qualify: Any, ev: Evidence, *extra: str) -> Any:
    """`qualify rebuild` of the chain's evidence under its policy, with ``extra`` options."""
    return qualify(["rebuild", "--policy", str(ev.policy_path), "--evidence", str(ev.evidence_dir), *extra])
