"""Done when: a team adopts the pipeline from its own repository, and the chain ends QUALIFIED.

(i) A fresh git repository outside this checkout: `qualify init --example`, commit, and the whole local chain
(`qualify run`) qualifies the example unchanged.
(ii) An app of this test's own, shipped as a .deb holding a 100 MB executable, its journey under pytest through
desktop-qualify's plugin, set up by `qualify init --kind deb --journey pytest` run from a regular install of the
wheel (as a team has it: the confined journey imports the plugin from the installed package). It qualifies; a
commit that breaks one of its refusals fails the run, and the run names the step.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from support.chain import git

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the local chain confines app code on Linux"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: the producer "
                                                             "confines the app's stages with it"),
]
POLICY = "policies/qualify.toml"


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def _new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "team@example.invalid")
    git(path, "config", "user.name", "team")
    return path


def chain(qualify: list[str], repo: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], str | None]:
    """The whole local chain under the written policy; its last command's result and the decision."""
    policy = repo / POLICY
    env = {**os.environ, "QUALIFY_RUN_ID": f"adopt-{time.time_ns()}"}

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*qualify, *map(str, args)], cwd=repo, capture_output=True, text=True, timeout=300,
                              check=False, env=env, stdin=subprocess.DEVNULL)

    done = run("run", "--policy", policy, "--out", out)
    decision_file = out / "decision.json"
    if not decision_file.is_file():  # qualify run keeps a failed run in its staging folder beside --out
        decision_file = out.parent / f".{out.name}.staging" / "decision.json"
    decision = json.loads(decision_file.read_text())["decision"] if decision_file.is_file() else None
    return done, decision


def test_init_example_in_a_fresh_repository_qualifies_unchanged(tmp_path: Path) -> None:
    started = time.monotonic()
    repo = _new_repo(tmp_path / "team-notes")
    qualify = [sys.executable, "-m", "desktop_qualify.qualify_cli"]
    done = subprocess.run([*qualify, "init", "--example"], cwd=repo, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    _commit(repo, "qualify init --example")
    done, decision = chain(qualify, repo, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert decision == "QUALIFIED"
    assert "QUALIFIED" in done.stdout
    assert git(repo, "status", "--porcelain") == ""  # the run left nothing to commit (keys ignored)
    assert time.monotonic() - started < 90


APP = '''
import hashlib, json, os, pathlib, sys
VERSION = "0.3.0"
BUILD = {build}
args = sys.argv[1:]
who = {"app_version": VERSION, "build_sha": BUILD["build_sha"], "platform": BUILD["platform"]}

def say(payload, status=0):
    print(json.dumps(payload))
    sys.exit(status)

if args[:1] == ["about"]:
    say(who)
if args[:1] == ["probe"]:
    exe = pathlib.Path(os.path.realpath(sys.argv[0]))
    record = {"kind": "qualify-probe", "version": 2, **who,
              "executable_sha256": hashlib.sha256(exe.read_bytes()).hexdigest(),
              "checks": [{"name": "build-info-embedded", "passed": True, "detail": BUILD["build_sha"][:12]}]}
    pathlib.Path(args[args.index("--record") + 1]).write_text(json.dumps(record))
    say({"probe": "written"})
if args[:1] == ["open"]:
    name = args[1]
    if REFUSE_OUTSIDE and ("/" in name or name.startswith(".")):
        say({"code": "TINYDEB_PATH_DENIED", "message": "outside the documents"}, 3)
    say({"opened": name})
if args[:1] == ["resize"]:
    if int(args[1]) > 10:
        say({"code": "TINYDEB_TOO_BIG", "message": "at most 10"}, 3)
    say({"size": int(args[1])})
say({"usage": "about | probe --record PATH | open NAME | resize N"}, 2)
'''

BUILD = r'''
import json, os, pathlib, subprocess, sys, time, zipfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
info = json.loads(pathlib.Path(os.environ["QUALIFY_BUILD_INFO"]).read_text())
epoch = int(os.environ["SOURCE_DATE_EPOCH"])
root = out.parent / "deb-root"
(root / "opt" / "tinydeb").mkdir(parents=True)
(root / "DEBIAN").mkdir()
body = pathlib.Path("tinydeb.py").read_text().replace("{build}", repr({"build_sha": info["build_sha"],
                                                                       "platform": info["platform"]}))
exe = root / "opt" / "tinydeb" / "tinydeb"
# A zipapp behind its shebang, carrying 100 MB as a real app's bundled runtime would: the installers take real sizes.
stamp = time.gmtime(epoch)[:6]
with exe.open("wb") as handle:
    handle.write(("#!" + sys.executable + "\n").encode())
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as bundle:
        bundle.writestr(zipfile.ZipInfo("__main__.py", stamp), body)
        bundle.writestr(zipfile.ZipInfo("runtime.bin", stamp), bytes(100 * 1024 * 1024))
exe.chmod(0o755)
(root / "DEBIAN" / "control").write_text("Package: tinydeb\nVersion: 0.3.0\nArchitecture: all\n"
                                         "Maintainer: Team <team@example.invalid>\nDescription: tiny\n")
for path in [root, *root.rglob("*")]:
    os.utime(path, (epoch, epoch))
subprocess.run(["dpkg-deb", "--build", "--root-owner-group", "-Zgzip", str(root), str(out / "tinydeb_0.3.0_all.deb")],
               check=True)
'''

JOURNEY = '''
from __future__ import annotations

import pytest
from conftest import App


def test_app_starts(app: App) -> None:
    code, about = app("about")
    assert code == 0, about


def test_open_document(app: App) -> None:
    assert app("open", "notes.txt") == (0, {"opened": "notes.txt"})


@pytest.mark.qualify_refusal(code="TINYDEB_PATH_DENIED")
def test_open_outside_refused(app: App) -> None:
    code, said = app("open", "../etc/passwd")
    assert (code, said.get("code")) == (3, "TINYDEB_PATH_DENIED"), said


@pytest.mark.qualify_step("resize-beyond-limit-refused")
@pytest.mark.qualify_refusal(code="TINYDEB_TOO_BIG")
def test_resize_too_big(app: App) -> None:
    code, said = app("resize", "11")
    assert (code, said.get("code")) == (3, "TINYDEB_TOO_BIG"), said
'''

STEPS = '''open-document = { expect = "allow" }
open-outside-refused = { expect = "reject", code = "TINYDEB_PATH_DENIED" }
resize-beyond-limit-refused = { expect = "reject", code = "TINYDEB_TOO_BIG" }
'''


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed (Debian: apt-get install "
                                                              "dpkg): the app ships as a .deb")
def test_a_deb_app_with_a_pytest_journey_qualifies_and_a_broken_refusal_names_its_step(
        tmp_path: Path, installed: Path) -> None:
    started = time.monotonic()
    repo = _new_repo(tmp_path / "tinydeb")
    qualify = [str(installed / "qualify")]
    done = subprocess.run([*qualify, "init", "--kind", "deb", "--journey", "pytest", "--name", "tinydeb"], cwd=repo,
                          capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    # The team's own app and build, where the written policy looks for them, and its own journey tests.
    (repo / "tinydeb.py").write_text("REFUSE_OUTSIDE = True\n" + APP, encoding="utf-8")
    (repo / "build.py").write_text(textwrap.dedent(BUILD), encoding="utf-8")
    (repo / "journey" / "test_journey.py").write_text(JOURNEY, encoding="utf-8")
    policy = repo / POLICY
    text = policy.read_text(encoding="utf-8")
    assert 'app-starts = { expect = "allow" }\n' in text
    policy.write_text(text.replace('app-starts = { expect = "allow" }\n', 'app-starts = { expect = "allow" }\n' +
                                   STEPS), encoding="utf-8")
    _commit(repo, "tinydeb: qualify with a pytest journey")
    done, decision = chain(qualify, repo, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert decision == "QUALIFIED"
    shipped = next((tmp_path / "out" / "artifacts").glob("*.deb"))
    listing = subprocess.run(["dpkg-deb", "--contents", str(shipped)], capture_output=True, text=True, check=True)
    size = next(int(line.split()[2]) for line in listing.stdout.splitlines() if line.endswith("/opt/tinydeb/tinydeb"))
    assert size > 100 * 1024 * 1024

    # A regression: the app now opens a path outside its documents. Its journey test fails, the plugin records
    # an error step, and the run fails naming it.
    app = repo / "tinydeb.py"
    app.write_text(app.read_text(encoding="utf-8").replace("REFUSE_OUTSIDE = True", "REFUSE_OUTSIDE = False"),
                   encoding="utf-8")
    _commit(repo, "tinydeb: open anything")
    broken = tmp_path / "out-broken"
    done, decision = chain(qualify, repo, broken)
    assert done.returncode != 0
    assert decision != "QUALIFIED"
    assert "journey" in done.stdout + done.stderr
    # The run's signed evidence names the step, and so does the release gate reading it.
    staging = broken.parent / f".{broken.name}.staging"
    evidence = next(path for path in (broken / "evidence", staging / "evidence") if path.is_dir())
    journey = _signed_journey(evidence / "platform-linux.dsse.json")
    assert journey["failed_steps"] == ["open-outside-refused"]
    step = next(step for step in journey["steps"] if step["id"] == "open-outside-refused")
    assert (step["observed"], step["passed"]) == ("error", False)
    assert step["detail"].startswith("expected refusal TINYDEB_PATH_DENIED not observed: call failed")
    gate = _gate(qualify, repo, evidence)
    assert gate.returncode != 0
    assert "open-outside-refused" in gate.stdout + gate.stderr
    assert time.monotonic() - started < 90


def _signed_journey(statement: Path) -> dict[str, Any]:
    envelope = json.loads(statement.read_text(encoding="utf-8"))
    journey: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["journey"]
    return journey


def _gate(qualify: list[str], repo: Path, evidence: Path) -> subprocess.CompletedProcess[str]:
    """aggregate (which refuses a failed platform) or, past it, verify: the release gate's verdict on the run."""
    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*qualify, *map(str, args)], cwd=repo, capture_output=True, text=True, timeout=300,
                              check=False, stdin=subprocess.DEVNULL)

    aggregated = run("aggregate", "--policy", repo / POLICY, "--evidence", evidence, "--out", evidence)
    if aggregated.returncode != 0:
        return aggregated
    artifacts = [arg for path in sorted((evidence.parent / "artifacts").iterdir()) for arg in ("--artifact", path)]
    return run("verify", "--policy", repo / POLICY, "--evidence", evidence, *artifacts)


@pytest.mark.skipif(shutil.which("dpkg-deb") is None or shutil.which("Xvfb") is None,
                    reason="dpkg-deb and Xvfb are needed (Debian: apt-get install dpkg xvfb)")
def test_the_example_as_a_deb_with_a_pytest_journey_under_xvfb_qualifies(tmp_path: Path, installed: Path) -> None:
    repo = _new_repo(tmp_path / "notes")
    qualify = [str(installed / "qualify")]
    done = subprocess.run([*qualify, "init", "--example", "--kind", "deb", "--journey", "pytest", "--display", "xvfb"],
                          cwd=repo, capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "wrote app/journey/test_journey.py" in done.stdout
    _commit(repo, "qualify init --example --kind deb --journey pytest --display xvfb")
    done, decision = chain(qualify, repo, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert decision == "QUALIFIED"
    journey = _signed_journey(tmp_path / "out" / "evidence" / "platform-linux.dsse.json")
    assert journey["display"] == "xvfb"
    assert [(s["id"], s["observed"], s["code"]) for s in journey["steps"]] == [
        ("save-note", "allow", None), ("open-note", "allow", None),
        ("open-outside-refused", "reject", "NOTES_PATH_OUTSIDE"),
        ("open-too-large-refused", "reject", "NOTES_FILE_TOO_LARGE"),
        ("open-missing-refused", "reject", "NOTES_NOT_FOUND")]
