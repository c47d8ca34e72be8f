"""The workflows hold every guarded property, and changing any one of them makes its rule fail."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from shell_commands import invoked
from workflow_rules import PLATFORMS, REUSABLE, RULES, Policy, Workflows, jobs, load, mints_tokens

REPO = Path(__file__).resolve().parents[2]
Change = Callable[[Workflows, Policy], None]


@pytest.fixture(scope="module")
def committed() -> tuple[Workflows, Policy]:
    return load(REPO / ".github" / "workflows"), tomllib.loads((REPO / "policies" / "release.toml").read_text("utf-8"))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_committed_workflows_hold_the_property(committed: tuple[Workflows, Policy], rule: str) -> None:
    workflows, policy = committed
    assert RULES[rule](workflows, policy) == []


def test_every_workflow_file_is_parsed(committed: tuple[Workflows, Policy]) -> None:
    workflows, _ = committed
    assert sorted(workflows) == sorted(["ci.yml", "qualify.yml", "release.yml", "produce-linux.yml",
                                        "produce-macos.yml", "produce-windows.yml", "aggregate.yml",
                                        "release-gate.yml"])


def _job(w: Workflows, name: str, job: str) -> dict[str, Any]:
    return w[name]["jobs"][job]


def _step(w: Workflows, name: str, job: str, containing: str) -> dict[str, Any]:
    return next(s for s in _job(w, name, job)["steps"] if containing in str(s.get("run", s.get("uses", ""))))


def _set(target: dict[str, Any], key: str, value: object) -> None:
    target[key] = value


def _prepend_run(w: Workflows, name: str, job: str, containing: str, text: str) -> None:
    step = _step(w, name, job, containing)
    step["run"] = f"{text}\n{step['run']}"


PRODUCE_LINUX = ("produce-linux.yml", "run")
SIGN_LINUX = ("produce-linux.yml", "sign")
SHA = "0" * 40
CHANGES: list[tuple[str, str, Change]] = [
    # triggers
    ("triggers", "qualify runs on pull_request_target",
     lambda w, p: _set(w["qualify.yml"]["on"], "pull_request_target", None)),
    ("triggers", "qualify runs on pushes to any branch",
     lambda w, p: _set(w["qualify.yml"]["on"], "push", {"branches": ["**"]})),
    ("triggers", "a producer can be dispatched on its own",
     lambda w, p: _set(w["produce-macos.yml"]["on"], "workflow_dispatch", None)),
    ("triggers", "a new workflow file nobody reviewed", lambda w, p: _set(w, "extra.yml", {"on": {"push": None}})),
    # inputs
    ("inputs name nothing trusted", "qualify takes a ref input",
     lambda w, p: _set(w["qualify.yml"]["on"], "workflow_dispatch", {"inputs": {"ref": {"type": "string"}}})),
    ("inputs name nothing trusted", "a producer takes a policy input",
     lambda w, p: _set(w["produce-windows.yml"]["on"]["workflow_call"], "inputs", {"policy": {"type": "string"}})),
    ("inputs name nothing trusted", "the release gate takes a sha input",
     lambda w, p: w["release.yml"]["on"]["workflow_dispatch"]["inputs"].update(sha={"type": "string"})),
    ("inputs name nothing trusted", "release.yml passes the gate a policy",
     lambda w, p: _job(w, "release.yml", "gate")["with"].update(policy="policies/other.toml")),
    ("inputs name nothing trusted", "the aggregate takes a ref input",
     lambda w, p: _set(w["aggregate.yml"]["on"]["workflow_call"], "inputs", {"qualify-ref": {"type": "string"}})),
    ("inputs name nothing trusted", "a sign job checks out another repository",
     lambda w, p: _step(w, *SIGN_LINUX, "actions/checkout@")["with"].update(repository="mallory/pipeline")),
    ("inputs name nothing trusted", "qualify passes a producer inputs",
     lambda w, p: _set(_job(w, "qualify.yml", "linux"), "with", {"platform": "macos"})),
    ("inputs name nothing trusted", "the release gate checks out the tag",
     lambda w, p: _set(_step(w, "release-gate.yml", "gate", "actions/checkout@")["with"], "ref", "${{ inputs.tag }}")),
    # permissions
    ("least permissions", "no top-level permissions",
     lambda w, p: w["qualify.yml"].pop("permissions")),
    ("least permissions", "a producer may write contents",
     lambda w, p: _set(_job(w, *PRODUCE_LINUX)["permissions"], "contents", "write")),
    ("least permissions", "the aggregate may write packages",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate")["permissions"], "packages", "write")),
    ("least permissions", "a producer may store attestations",
     lambda w, p: _set(_job(w, "produce-windows.yml", "sign")["permissions"], "attestations", "write")),
    ("least permissions", "a run job may mint OIDC tokens",
     lambda w, p: _set(_job(w, "produce-macos.yml", "run")["permissions"], "id-token", "write")),
    ("least permissions", "the aggregate may not store attestations",
     lambda w, p: _job(w, "qualify.yml", "aggregate")["permissions"].pop("attestations")),
    ("least permissions", "the ci job may mint OIDC tokens",
     lambda w, p: _set(_job(w, "ci.yml", "tests")["permissions"], "id-token", "write")),
    ("least permissions", "a job inherits default permissions",
     lambda w, p: _job(w, "release.yml", "gate").pop("permissions")),
    # platforms
    ("three platforms, each once", "macos calls the linux producer",
     lambda w, p: _set(_job(w, "qualify.yml", "macos"), "uses", "./.github/workflows/produce-linux.yml")),
    ("three platforms, each once", "windows is not produced",
     lambda w, p: w["qualify.yml"]["jobs"].pop("windows")),
    ("three platforms, each once", "a producer's runner comes from an expression",
     lambda w, p: _set(_job(w, *PRODUCE_LINUX), "runs-on", "${{ vars.RUNNER }}")),
    ("three platforms, each once", "the macos producer runs on linux",
     lambda w, p: _set(_job(w, "produce-macos.yml", "run"), "runs-on", "ubuntu-latest")),
    ("three platforms, each once", "the windows signer signs on an expression's runner",
     lambda w, p: _set(_job(w, "produce-windows.yml", "sign"), "runs-on", "${{ inputs.runner }}")),
    ("three platforms, each once", "the linux sign job signs macos",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign"), "run",
                       "qualify sign --policy policies/release.toml --platform macos --run run --out out")),
    ("three platforms, each once", "the windows producer produces linux",
     lambda w, p: _set(_step(w, "produce-windows.yml", "run", "--platform"), "run",
                       "qualify produce --policy policies/release.toml --platform linux --out out --unsigned")),
    # pins
    ("actions pinned, credentials not persisted", "checkout by tag",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "actions/checkout@"), "uses", "actions/checkout@v4")),
    ("actions pinned, credentials not persisted", "an abbreviated SHA",
     lambda w, p: _set(_step(w, "aggregate.yml", "aggregate", "actions/setup-python@"), "uses",
                       "actions/setup-python@4237552")),
    ("actions pinned, credentials not persisted", "checkout keeps its credentials",
     lambda w, p: _step(w, "release-gate.yml", "gate", "actions/checkout@")["with"].pop("persist-credentials")),
    ("actions pinned, credentials not persisted", "a producer from another repository",
     lambda w, p: _set(_job(w, "qualify.yml", "linux"), "uses",
                       "acme/workflows/.github/workflows/produce-linux.yml@main")),
    # expressions
    ("no expressions in run", "a commit message expanded into a script",
     lambda w, p: _prepend_run(w, "aggregate.yml", "aggregate", "qualify aggregate",
                               'echo "${{ github.event.head_commit.message }}"')),
    ("no expressions in run", "the release tag expanded into a script",
     lambda w, p: _prepend_run(w, "release-gate.yml", "gate", "--draft=false", 'echo "${{ inputs.tag }}"')),
    # aggregate
    ("aggregate needs every producer", "the aggregate does not wait for windows",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate"), "needs", ["linux", "macos"])),
    ("aggregate needs every producer", "the aggregate calls a producer's file",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate"), "uses", "./.github/workflows/produce-linux.yml")),
    ("aggregate needs every producer", "the aggregate is a job of qualify.yml again",
     lambda w, p: _set(w["qualify.yml"]["jobs"], "aggregate", {**_job(w, "aggregate.yml", "aggregate"),
                                                                "needs": ["linux", "macos", "windows"]})),
    # release
    ("release only verifies, publishes, reads back", "release.yml runs a job of its own beside the gate",
     lambda w, p: _set(w["release.yml"]["jobs"], "notify", {"runs-on": "ubuntu-latest", "permissions": {},
                                                            "steps": [{"run": "true"}]})),
    ("release only verifies, publishes, reads back", "the gate re-aggregates",
     lambda w, p: _prepend_run(w, "release-gate.yml", "gate", "qualify verify",
                               "qualify aggregate --policy policies/release.toml --evidence e --out e")),
    ("release only verifies, publishes, reads back", "the gate uploads an asset",
     lambda w, p: _prepend_run(w, "release-gate.yml", "gate", "--draft=false", 'gh release upload "$TAG" extra.bin')),
    ("release only verifies, publishes, reads back", "publish without the read-back",
     lambda w, p: _job(w, "release-gate.yml", "gate")["steps"].pop()),
    ("release only verifies, publishes, reads back", "no bundle attached",
     lambda w, p: _job(w, "release-gate.yml", "gate")["steps"].remove(
         _step(w, "release-gate.yml", "gate", 'upload "$TAG" "evidence-bundle/'))),
    ("release only verifies, publishes, reads back", "no summaries attached",
     lambda w, p: _job(w, "release-gate.yml", "gate")["steps"].remove(
         _step(w, "release-gate.yml", "gate", 'upload "$TAG" verification-summary'))),
    ("release only verifies, publishes, reads back", "the gate's verify writes no summaries",
     lambda w, p: _set(_step(w, "release-gate.yml", "gate", "--vsa"), "run",
                       _step(w, "release-gate.yml", "gate", "--vsa")["run"].replace("--vsa", "--json"))),
    ("release only verifies, publishes, reads back", "no qualify readback after publishing",
     lambda w, p: _set(_job(w, "release-gate.yml", "gate")["steps"][-1], "run",
                       _job(w, "release-gate.yml", "gate")["steps"][-1]["run"].replace("qualify readback", "true"))),
    ("release only verifies, publishes, reads back", "publish first",
     lambda w, p: _prepend_run(w, "release-gate.yml", "gate", "gh release download",
                               'gh release edit "$TAG" --draft=false')),
    # policy paths
    ("policy paths literal", "the policy from a variable",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "--platform"), "run",
                       'qualify produce --policy "$POLICY" --platform linux --out out --unsigned')),
    ("policy paths literal", "the sign job under another policy",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign"), "run",
                       "qualify sign --policy policies/local.toml --platform linux --run run --out out")),
    ("policy paths literal", "another policy file",
     lambda w, p: _set(_step(w, "aggregate.yml", "aggregate", "qualify aggregate"), "run",
                       "qualify aggregate --policy policies/local.toml --evidence e --out e")),
    ("policy paths literal", "qualify without a policy",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "--platform"), "run",
                       "qualify produce --platform linux --out out --unsigned")),
    # signers
    ("policy signers are these files", "the policy lets the linux file sign macos",
     lambda w, p: _set(p["producer"]["signers"], "macos", ".github/workflows/produce-linux.yml")),
    ("policy signers are these files", "the policy names a file that does not exist",
     lambda w, p: _set(p["producer"]["signers"], "windows", ".github/workflows/produce-win.yml")),
    ("policy signers are these files", "the policy has no signer for the aggregate",
     lambda w, p: p["producer"]["signers"].pop("aggregate")),
    ("policy signers are these files", "the aggregate signs as qualify.yml again",
     lambda w, p: _set(p["producer"]["signers"], "aggregate", ".github/workflows/qualify.yml")),
    ("policy signers are these files", "the gate signs as release.yml itself",
     lambda w, p: p["verifier"].pop("caller")),
    ("policy signers are these files", "another build config workflow",
     lambda w, p: _set(p["producer"], "workflow", ".github/workflows/release.yml")),
    # installs
    ("installs hash-pinned", "ci installs nox unpinned",
     lambda w, p: _set(_step(w, "ci.yml", "tests", "pip install"), "run", "python -m pip install nox")),
    ("installs hash-pinned", "an unpinned install",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "pip install"), "run", "python -m pip install .")),
    ("installs hash-pinned", "the lock without hashes",
     lambda w, p: _set(_step(w, "release-gate.yml", "gate", "pip install"), "run",
                       "python -m pip install -r requirements/pipeline.txt")),
    # the signing jobs
    ("signing jobs run no app code", "the sign job runs qualify produce",
     lambda w, p: _prepend_run(w, *SIGN_LINUX, "qualify sign",
                               "qualify produce --policy policies/release.toml --platform linux --out out")),
    ("signing jobs run no app code", "the sign job runs nox",
     lambda w, p: _prepend_run(w, *SIGN_LINUX, "qualify sign", "nox -s tests")),
    ("signing jobs run no app code", "the aggregate runs the app's build script",
     lambda w, p: _prepend_run(w, "aggregate.yml", "aggregate", "qualify aggregate", "python reference_app/build.py")),
    ("signing jobs run no app code", "the sign job runs the example app's build",
     lambda w, p: _prepend_run(w, "produce-macos.yml", "sign", "qualify sign", "cd examples/qt-notes && ./build.sh")),
    ("signing jobs run no app code", "the sign job pip-installs the downloaded artifact",
     lambda w, p: _prepend_run(w, *SIGN_LINUX, "qualify sign", "python -m pip install run/artifacts/app.whl")),
    ("signing jobs run no app code", "the sign job installs the pipeline without hashes",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "pip install"), "run", "python -m pip install .")),
    ("signing jobs run no app code", "the sign job executes the downloaded artifact",
     lambda w, p: _prepend_run(w, "produce-windows.yml", "sign", "qualify sign",
                               "run/artifacts/skillhost.exe --probe")),
    ("signing jobs run no app code", "the sign job unpacks the artifact",
     lambda w, p: _prepend_run(w, *SIGN_LINUX, "qualify sign", "tar -xzf run/artifacts/app.tar.gz")),
    ("signing jobs run no app code", "the release gate hides nox in a command substitution",
     lambda w, p: _prepend_run(w, "release-gate.yml", "gate", "--draft=false", 'echo "$(nox -s tests)"')),
    ("signing jobs run no app code", "the sign job runs another qualify subcommand",
     lambda w, p: _prepend_run(w, *SIGN_LINUX, "qualify sign", "qualify keygen --policy policies/release.toml")),
    ("signing jobs run no app code", "the sign job uses an action off the allow-list",
     lambda w, p: _job(w, *SIGN_LINUX)["steps"].insert(1, {"uses": f"actions/cache@{SHA}",
                                                         "with": {"path": "run", "key": "k"}})),
    ("signing jobs run no app code", "the sign job runs its script with Python",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign"), "shell", "python {0}")),
    ("signing jobs run no app code", "the sign job's default shell is Python",
     lambda w, p: _set(_job(w, "produce-windows.yml", "sign"), "defaults", {"run": {"shell": "python {0}"}})),
    ("signing jobs run no app code", "the sign job is given an OS code-signing secret",
     lambda w, p: _set(_step(w, "produce-windows.yml", "sign", "qualify sign")["env"], "QUALIFY_SIGNTOOL_PFX_BASE64",
                       "${{ secrets.QUALIFY_SIGNTOOL_PFX_BASE64 }}")),
    ("signing jobs run no app code", "BASH_ENV sources a downloaded file",
     lambda w, p: _set(_job(w, *SIGN_LINUX), "env", {"BASH_ENV": "run/unsigned/platform-linux.run.json"})),
    ("signing jobs run no app code", "PYTHONPATH into the downloaded folder",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign")["env"], "PYTHONPATH", "run")),
    ("signing jobs run no app code", "the sign job downloads into the checkout",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "actions/download-artifact@")["with"], "path", ".")),
    ("signing jobs run no app code", "the sign job runs in the downloaded folder",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign"), "working-directory", "run")),
    ("signing jobs run no app code", "the sign job installs the pipeline after the download",
     lambda w, p: _job(w, *SIGN_LINUX)["steps"].append(_step(w, *SIGN_LINUX, "pip install"))),
    ("signing jobs run no app code", "the aggregate puts the downloaded folder on PATH",
     lambda w, p: _prepend_run(w, "aggregate.yml", "aggregate", "qualify aggregate",
                               'echo "$PWD/downloaded" >> "$GITHUB_PATH"')),
    ("signing jobs run no app code", "the sign job runs in a container",
     lambda w, p: _set(_job(w, *SIGN_LINUX), "container", "python:3.11")),
    ("signing jobs run no app code", "a new job that mints tokens and runs the tests",
     lambda w, p: _set(w["ci.yml"]["jobs"], "publish", {"runs-on": "ubuntu-latest", "permissions": {
         "id-token": "write"}, "steps": [{"run": "nox -s tests"}]})),
    ("signing jobs run no app code", "a job with write-all runs the app",
     lambda w, p: _set(_job(w, "ci.yml", "tests"), "permissions", "write-all")),
    # the jobs that run the app
    ("producing jobs mint no token", "the run job may mint OIDC tokens",
     lambda w, p: _set(_job(w, *PRODUCE_LINUX)["permissions"], "id-token", "write")),
    ("producing jobs mint no token", "the run job gets write-all",
     lambda w, p: _set(_job(w, "produce-windows.yml", "run"), "permissions", "write-all")),
    ("producing jobs mint no token", "produce signs in the run job",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "qualify produce"), "run",
                       "qualify produce --policy policies/release.toml --platform linux --out out")),
    ("producing jobs mint no token", "the aggregate job produces",
     lambda w, p: _prepend_run(w, "aggregate.yml", "aggregate", "qualify aggregate",
                               "qualify produce --policy policies/release.toml --platform linux --out o --unsigned")),
    # the split
    ("each producer runs, then signs once", "the sign job does not wait for the run job",
     lambda w, p: _job(w, *SIGN_LINUX).pop("needs")),
    ("each producer runs, then signs once", "a second signing job",
     lambda w, p: _set(w["produce-macos.yml"]["jobs"], "sign-again", copy.deepcopy(_job(w, "produce-macos.yml",
                                                                                         "sign")))),
    ("each producer runs, then signs once", "produce and sign in one job again",
     lambda w, p: _set(w["produce-linux.yml"], "jobs", {"produce": {**_job(w, *PRODUCE_LINUX), "permissions": {
         "contents": "read", "id-token": "write"}}})),
    ("each producer runs, then signs once", "the sign job downloads every artifact of the run",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "actions/download-artifact@"), "with", {"path": "run"})),
    ("each producer runs, then signs once", "the sign job signs another platform's run",
     lambda w, p: _set(_step(w, "produce-windows.yml", "sign", "actions/download-artifact@")["with"], "name",
                       "unsigned-linux")),
    ("each producer runs, then signs once", "the sign job reads the run from another folder",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "qualify sign"), "run",
                       "qualify sign --policy policies/release.toml --platform linux --run out --out out")),
    ("each producer runs, then signs once", "the run job uploads straight to the aggregate",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "actions/upload-artifact@")["with"], "name",
                       "qualification-platform-linux")),
    ("each producer runs, then signs once", "the aggregate downloads the unsigned runs",
     lambda w, p: _set(_step(w, "aggregate.yml", "aggregate", "actions/download-artifact@")["with"], "pattern", "*")),
    ("each producer runs, then signs once", "the run job does not wait for detect",
     lambda w, p: _job(w, *PRODUCE_LINUX).pop("needs")),
    ("each producer runs, then signs once", "the run job may mint tokens too",
     lambda w, p: _set(_job(w, "produce-macos.yml", "run")["permissions"], "id-token", "write")),
    # the pipeline at the commit the file was called at
    ("pipeline at the called commit", "the run job installs the caller's lock",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "pip install"), "run",
                       "python -m pip install --require-hashes --only-binary :all: -r requirements/pipeline.txt\n"
                       "python -m pip install --no-deps --no-build-isolation .")),
    ("pipeline at the called commit", "the sign job checks desktop-qualify out at its default branch",
     lambda w, p: _job(w, *SIGN_LINUX)["steps"][1]["with"].pop("ref")),
    ("pipeline at the called commit", "the aggregate checks desktop-qualify out at a tag of its own choosing",
     lambda w, p: _set(_job(w, "aggregate.yml", "aggregate")["steps"][1]["with"], "ref", "v0.1.0")),
    ("pipeline at the called commit", "the detect job runs another script",
     lambda w, p: _set(_job(w, "release-gate.yml", "detect")["steps"][0]["with"], "script",
                       "core.setOutput('sha', process.env.QUALIFY_SHA);")),
    ("pipeline at the called commit", "the gate does not wait for detect",
     lambda w, p: _job(w, "release-gate.yml", "gate").pop("needs")),
    ("pipeline at the called commit", "the detect job checks out and runs the caller's code",
     lambda w, p: _job(w, "produce-windows.yml", "detect")["steps"].insert(0, {"run": "./setup.sh"})),
    ("each producer runs, then signs once", "the sign job uploads under another name",
     lambda w, p: _set(_step(w, *SIGN_LINUX, "actions/upload-artifact@")["with"], "name", "evidence-linux")),
]


def test_every_rule_has_a_change_that_breaks_it() -> None:
    assert {rule for rule, _, _ in CHANGES} == set(RULES)


@pytest.mark.parametrize(("rule", "change"), [(r, c) for r, _, c in CHANGES], ids=[n for _, n, _ in CHANGES])
def test_changing_a_guarded_property_fails_its_rule(committed: tuple[Workflows, Policy], rule: str,
                                                    change: Change) -> None:
    workflows, policy = copy.deepcopy(committed)
    change(workflows, policy)
    assert RULES[rule](workflows, policy) != []


def test_each_platform_is_signed_by_the_file_that_produces_it(committed: tuple[Workflows, Policy]) -> None:
    workflows, policy = committed
    for platform in PLATFORMS:
        signer = policy["producer"]["signers"][platform].removeprefix(".github/workflows/")
        jobs = workflows[signer]["jobs"]
        assert f"qualify produce --policy policies/release.toml --platform {platform} --out out --unsigned" in \
            str(jobs["run"]["steps"])
        assert f"qualify sign --policy policies/release.toml --platform {platform} --run run --out out" in \
            str(jobs["sign"]["steps"])


def test_only_the_sign_jobs_the_aggregate_and_the_gate_can_sign(committed: tuple[Workflows, Policy]) -> None:
    """The jobs that can mint an OIDC token, by name: none of them is a job where the app's code runs."""
    workflows, _ = committed
    minting = sorted((name, job_id) for name, job_id, job in jobs(workflows)
                     if "uses" not in job and mints_tokens(workflows[name], job))
    assert minting == sorted([*((f"produce-{p}.yml", "sign") for p in PLATFORMS), ("aggregate.yml", "aggregate"),
                              ("release-gate.yml", "gate"), *((name, "detect") for name in REUSABLE)])


@pytest.mark.parametrize(("script", "programs"), [
    ("qualify sign --policy p --run run --out out", ["qualify"]),
    ('echo "$(nox -s tests)"', ["echo", "nox"]),
    ("x=`make app`; y=$((1 + 2))", ["make"]),
    ("args=(--artifact a); args+=(b)\nfor f in run/*; do ./$f; done", ["./$f"]),
    ("if [ -e x ]; then (cd run && python build.py); fi # python evil.py", ["[", "cd", "python"]),
    ('case "$f" in *.zip | *.jsonl) ;; *) sh "$f" ;; esac', ["sh"]),
    ("while IFS= read -r l; do printf '%s' \"$l\" > out; done < list", ["read", "printf"]),
    ("test a = b || { echo no; exit 1; }", ["test", "echo", "exit"]),
])
def test_the_shell_reader_finds_every_program(script: str, programs: list[str]) -> None:
    assert sorted(argv[0] for argv in invoked(script)) == sorted(programs)
