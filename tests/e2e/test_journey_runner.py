"""A journey driven from outside the app (docs/app-contract.md, "The runner interface"), through the real chain.

A small app that is not the skill host: its own build script (a tar.gz of a
bundle folder), its own probe checks, no sandbox of its own (no ``[isolation]``),
refusal codes of its own, and a journey runner committed in its source that
starts the installed executable itself and writes the ``qualify-journey``
record. The chain (keygen, produce, aggregate, verify) must qualify it; a
runner that observes what the policy forbids must not; the runner that runs is
the gated commit's, not the work tree's nor the copy the build could change.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.evidence_schemas import PlatformStatement
from support.chain import commit_tree, qualify
from support.evidence_factory import make_keys, policy_text

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the tiny app's launcher is a POSIX shell script")

# The app: a launcher script and its Python body. `probe` writes the probe record; `open NAME` refuses names
# outside its documents (a refusal with a code of its own); `version` prints the embedded build SHA.
APP_BODY = r'''
import hashlib, json, os, pathlib, sys
exe, args = pathlib.Path(sys.argv[1]), sys.argv[2:]
here = pathlib.Path(__file__).resolve().parent
info = json.loads((here / "build_info.json").read_text())
if args[:1] == ["version"]:
    print(json.dumps({"app_version": "2.0.0", "build_sha": info["build_sha"]}))
elif args[:1] == ["open"]:
    name = args[1]
    if "/" in name or name.startswith("."):
        print(json.dumps({"refused": "TINY_PATH_DENIED"}))
        sys.exit(3)
    print(json.dumps({"opened": name}))
elif args[:1] == ["probe"]:
    record = {"kind": "qualify-probe", "version": 2, "app_version": "2.0.0", "build_sha": info["build_sha"],
              "platform": info["platform"], "executable_sha256": hashlib.sha256(exe.read_bytes()).hexdigest(),
              "checks": [{"name": "documents-readable", "passed": True, "detail": "ok"}]}
    pathlib.Path(args[args.index("--record") + 1]).write_text(json.dumps(record))
    print("probe: logs on stdout are never the record")
else:
    sys.exit(2)
'''

BUILD = r'''
import json, os, pathlib, sys, tarfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
info = json.loads(pathlib.Path(os.environ["QUALIFY_BUILD_INFO"]).read_text())
bundle = out.parent / "stage" / "tiny"
bundle.mkdir(parents=True)
(bundle / "app.py").write_text(pathlib.Path("body.py").read_text())
(bundle / "build_info.json").write_text(json.dumps(info))
launcher = bundle / "tiny"
launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$(dirname "$0")/app.py" "$0" "$@"\n')
launcher.chmod(0o755)
# A build may change its own copy of the source: the runner must not come from it.
pathlib.Path("journey/run.py").write_text("raise SystemExit('the build changed the runner')\n")
with tarfile.open(out / "tiny-2.0.0-linux.tar.gz", "w:gz", compresslevel=6) as tf:
    tf.add(bundle, arcname="tiny")
'''

# The runner: drives the installed executable from outside and writes the journey record.
RUNNER = r'''
import argparse, json, subprocess
ap = argparse.ArgumentParser()
ap.add_argument("--executable", required=True)
ap.add_argument("--record", required=True)
ns = ap.parse_args()

def run(*args):
    done = subprocess.run([ns.executable, *args], capture_output=True, text=True, timeout=30)
    return done.returncode, json.loads(done.stdout)

steps = []
rc, version = run("version")
rc, said = run("open", "notes.txt")
steps.append({"id": "open-document", "observed": "allow" if rc == 0 else "reject", "code": said.get("refused"),
              "errno": None, "detail": f"exit {rc}"})
for step, name in (("dotdot-refused", "../etc/passwd"), ("hidden-refused", OBSERVE_HIDDEN)):
    rc, said = run("open", name)
    steps.append({"id": step, "observed": "reject" if rc == 3 else "allow", "code": said.get("refused"),
                  "errno": None, "detail": f"exit {rc}"})
record = {"kind": "qualify-journey", "version": 2, "app_version": version["app_version"],
          "build_sha": version["build_sha"], "platform": "linux", "steps": steps}
with open(ns.record, "w") as fh:
    json.dump(record, fh)
print("runner: 3 steps")
'''

APP_SECTION = """[app]
name = "tiny"
source = {source}

[app.build]
argv = ["{{python}}", "build.py", "--out", "{{out}}"]
tools = {{ tar = ["{{python}}", "-c", "import tarfile; print('tarfile', tarfile.version)"] }}

[app.build.outputs]
linux = "tiny-*-linux.tar.gz"

[app.install]
linux = {{ kind = "archive", executable = "tiny/tiny" }}

[app.probe]
argv = ["{{executable}}", "probe", "--record", "{{record}}"]
require = ["documents-readable"]

[app.journey]
argv = ["{{python}}", "journey/run.py", "--executable", "{{executable}}", "--record", "{{record}}"]
"""
STEPS = """open-document = { expect = "allow" }
dotdot-refused = { expect = "reject", code = "TINY_PATH_DENIED" }
hidden-refused = { expect = "reject", code = "TINY_PATH_DENIED" }
"""


def _tiny_repo(root: Path, *, hidden: str = ".secret") -> tuple[Path, str]:
    repo = root / "repo"
    app = repo / "app"
    (app / "journey").mkdir(parents=True)
    (app / "body.py").write_text(APP_BODY)
    (app / "build.py").write_text(BUILD)
    (app / "journey" / "run.py").write_text(RUNNER.replace("OBSERVE_HIDDEN", json.dumps(hidden)))
    return repo, commit_tree(repo, "tiny app")


def _chain(root: Path, repo: Path) -> dict[str, Any]:
    keys = make_keys(root / "keys")
    policy = root / "tiny.toml"
    policy.write_text(policy_text(keys, required=["linux"], app=APP_SECTION.format(source=json.dumps(
        str(repo / "app"))), journey_steps=STEPS, isolation=False).replace('name = "local"', 'name = "tiny"'))
    out = root / "out"
    produced = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "tiny-1")
    assert "[produce linux] journey" in produced.stderr, produced.stderr
    evidence = out / "evidence"
    aggregated = qualify("aggregate", "--policy", policy, "--evidence", evidence, "--out", evidence)
    artifacts = sorted((out / "artifacts").iterdir())
    verified = qualify("verify", "--policy", policy, "--evidence", evidence,
                       *[a for path in artifacts for a in ("--artifact", str(path))])
    envelope = json.loads((evidence / "platform-linux.dsse.json").read_bytes())
    statement = PlatformStatement.model_validate_json(base64.b64decode(envelope["payload"]))
    return {"produce": produced, "aggregate": aggregated, "verify": verified, "statement": statement}


@pytest.mark.skipif(sys.platform != "linux", reason="the tiny app's build names its output for linux")
def test_a_runner_from_the_gated_commit_drives_the_installed_app_and_the_chain_qualifies(tmp_path: Path) -> None:
    repo, sha = _tiny_repo(tmp_path)
    # An uncommitted change to the runner never runs: the runner is exported from the gated commit.
    (repo / "app" / "journey" / "run.py").write_text("raise SystemExit('the work tree runner ran')\n")
    done = _chain(tmp_path, repo)
    produced, verified = done["produce"], done["verify"]
    assert done["aggregate"].returncode == 0
    assert produced.returncode == 0, produced.stderr
    assert verified.returncode == 0, verified.stdout
    assert "QUALIFIED" in verified.stdout
    p = done["statement"].predicate
    assert p.build.artifact.name == f"tiny-{sha[:12]}-linux-{p.arch}.tar.gz"
    assert p.build.tools["tar"].startswith("tarfile ")
    assert [(c.name, c.passed) for c in p.launch_probe.report.checks] == [("documents-readable", True)]
    assert p.launch_probe.report.isolation_layers == []
    assert p.journey.command[:2] == ["{python}", "journey/run.py"]
    assert [(s.id, s.observed, s.code, s.passed) for s in p.journey.steps] == [
        ("open-document", "allow", None, True), ("dotdot-refused", "reject", "TINY_PATH_DENIED", True),
        ("hidden-refused", "reject", "TINY_PATH_DENIED", True)]
    assert p.journey.app_build_sha == sha
    # The runner's logs stayed logs: the record came from the file.
    assert "runner: 3 steps" in p.journey.stderr_excerpt


@pytest.mark.skipif(sys.platform != "linux", reason="the tiny app's build names its output for linux")
def test_a_runner_that_observes_what_the_policy_forbids_is_not_qualified(tmp_path: Path) -> None:
    # The runner opens a plain name where the policy requires a refusal: the app allows it, the runner says so.
    repo, _ = _tiny_repo(tmp_path, hidden="plain.txt")
    done = _chain(tmp_path, repo)
    produced, aggregated, verified = done["produce"], done["aggregate"], done["verify"]
    assert produced.returncode == 1
    # The evidence of the failed journey is still signed and emitted; the aggregate and the consumer refuse it.
    assert aggregated.returncode == 1
    why = "hidden-refused: observed allow, the policy requires reject TINY_PATH_DENIED"
    assert why in aggregated.stderr
    assert verified.returncode == 1
    assert "QE_JOURNEY_INCOMPLETE" in verified.stdout
    step = next(s for s in done["statement"].predicate.journey.steps if s.id == "hidden-refused")
    assert (step.observed, step.code, step.passed) == ("allow", None, False)
