"""Two qualifications on one machine: each build has a HOME of its own, so tool caches are never shared.

Two jobs once shared PyInstaller's cache folder (in the machine's HOME) and one read the other's
half-written cache index. Each build now runs with a HOME inside its own job's work folder
(``producer/_build._build_env``). Proven here without running PyInstaller: two jobs' builds, run at the
same time through the producer's ``build()``, record their HOME and the cache folder PyInstaller would use
(its rule: ``PYINSTALLER_CONFIG_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``pyinstaller``), write
an index there and read it back after the other build has written its own.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from desktop_qualify.producer._build import BuildPlan, build
from desktop_qualify.producer.os_signing._platform_signing import NoPlatformSigner
from support.chain import commit_tree
from support.stage_runners import unconfined_runner

# The build: PyInstaller's cache folder as PyInstaller 6 picks it on Linux (PyInstaller/configure.py), an index
# written there, a wait for the other job's build to have written its own, and what the folder then holds.
_BUILD_SCRIPT = """
import json, os, pathlib, sys, tarfile, time
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
job = sys.argv[sys.argv.index("--job") + 1]
config = os.environ.get("PYINSTALLER_CONFIG_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyinstaller")
pathlib.Path(config).mkdir(parents=True, exist_ok=True)
(pathlib.Path(config) / "index.dat").write_text(job)
ready = pathlib.Path(sys.argv[sys.argv.index("--ready") + 1])
(ready / job).write_text("written")
deadline = time.monotonic() + 30
while len(list(ready.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.02)
(out / "seen.json").write_text(json.dumps({
    "home": os.environ["HOME"], "expanded_home": os.path.expanduser("~"), "config": config,
    "index": (pathlib.Path(config) / "index.dat").read_text(),
    "both_written": len(list(ready.iterdir())) == 2}))
with tarfile.open(out / "app-1.0-linux.tar.gz", "w:gz") as tf:
    tf.add(__file__, arcname="app/app")
"""


def _plan(job: str, ready: Path) -> BuildPlan:
    return BuildPlan(argv=["{python}", "build.py", "--out", "{out}", "--job", job, "--ready", str(ready)],
                     env_names=(), tools={}, output_glob="app-*-linux.tar.gz", kind="archive",
                     executable="app/app")


@pytest.mark.skipif(os.name == "nt", reason="PyInstaller's Linux/macOS rule: HOME and ~/.cache")
def test_two_jobs_builds_never_share_home_or_pyinstallers_cache(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "build.py").write_text(_BUILD_SCRIPT, encoding="utf-8")
    sha = commit_tree(repo, "app")
    # Both jobs run as the same user: one machine HOME, whose cache settings point into it.
    machine_home = tmp_path / "machine-home"
    machine_home.mkdir()
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(machine_home),
               "XDG_CACHE_HOME": str(machine_home / ".cache"),
               "PYINSTALLER_CONFIG_DIR": str(machine_home / ".cache" / "pyinstaller")}
    ready = tmp_path / "ready"
    ready.mkdir()
    errors: list[BaseException] = []

    def job(name: str) -> None:
        try:
            build(repo=repo, sha=sha, ref="refs/heads/main", app_source=repo / "app", plan=_plan(name, ready),
                  app_name="app", platform="linux", arch="x86_64", work=tmp_path / name / "work",
                  artifacts=tmp_path / name / "artifacts", signer=NoPlatformSigner(), timeout=60,
                  runner=unconfined_runner(), environ=environ)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=job, args=(name,)) for name in ("job-a", "job-b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    seen = {name: json.loads((tmp_path / name / "work" / "out" / "seen.json").read_text())
            for name in ("job-a", "job-b")}
    for name, facts in seen.items():
        work = (tmp_path / name / "work").resolve()
        home = Path(facts["home"])
        # The build's HOME is a folder of its own inside its job's work folder, and ~ expands to it.
        assert home == tmp_path / name / "work" / "home"
        assert facts["expanded_home"] == facts["home"]
        # Neither PYINSTALLER_CONFIG_DIR nor XDG_CACHE_HOME of the job reached it: the cache is in that HOME.
        assert Path(facts["config"]) == home / ".cache" / "pyinstaller"
        assert Path(facts["config"]).resolve().is_relative_to(work)
        # The job's HOME is never the build's, nor does the cache lie in it.
        assert not Path(facts["config"]).resolve().is_relative_to(machine_home.resolve())
        assert home.resolve() != machine_home.resolve()
        # Both builds had written their index before either read its own back: each read its own.
        assert facts["both_written"]
        assert facts["index"] == name
    assert seen["job-a"]["home"] != seen["job-b"]["home"]
    assert seen["job-a"]["config"] != seen["job-b"]["config"]
    # Nothing was written into the machine's HOME.
    assert list(machine_home.iterdir()) == []


def test_the_rule_is_pyinstallers_own() -> None:
    """The build above mirrors PyInstaller's choice of cache folder; held to PyInstaller's own where installed."""
    configure = pytest.importorskip("PyInstaller.configure")
    if os.name == "nt" or configure.compat.is_darwin:
        pytest.skip("the Linux rule")
    mp = pytest.MonkeyPatch()
    try:
        mp.delenv("PYINSTALLER_CONFIG_DIR", raising=False)
        mp.delenv("XDG_CACHE_HOME", raising=False)
        # XDG_DATA_HOME pointed at an empty place: PyInstaller moves an old cache from there, and there is none.
        mp.setenv("XDG_DATA_HOME", "/nonexistent/qualify-test-data")
        mp.setenv("HOME", "/nonexistent/qualify-test-home")
        assert configure._get_pyinstaller_cache_dir() == "/nonexistent/qualify-test-home/.cache/pyinstaller"
    finally:
        mp.undo()
