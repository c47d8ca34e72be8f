"""The workflows hold every guarded property, and changing any one of them makes its rule fail."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from workflow_rules import PLATFORMS, RULES, Policy, Workflows, load

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
                                        "produce-macos.yml", "produce-windows.yml"])


def _job(w: Workflows, name: str, job: str) -> dict[str, Any]:
    return w[name]["jobs"][job]


def _step(w: Workflows, name: str, job: str, containing: str) -> dict[str, Any]:
    return next(s for s in _job(w, name, job)["steps"] if containing in str(s.get("run", s.get("uses", ""))))


def _set(target: dict[str, Any], key: str, value: object) -> None:
    target[key] = value


def _prepend_run(w: Workflows, name: str, job: str, containing: str, text: str) -> None:
    step = _step(w, name, job, containing)
    step["run"] = f"{text}\n{step['run']}"


PRODUCE_LINUX = ("produce-linux.yml", "produce")
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
    ("inputs name nothing trusted", "qualify passes a producer inputs",
     lambda w, p: _set(_job(w, "qualify.yml", "linux"), "with", {"platform": "macos"})),
    ("inputs name nothing trusted", "the release gate checks out the tag",
     lambda w, p: _set(_step(w, "release.yml", "gate", "actions/checkout@")["with"], "ref", "${{ inputs.tag }}")),
    # permissions
    ("least permissions", "no top-level permissions",
     lambda w, p: w["qualify.yml"].pop("permissions")),
    ("least permissions", "a producer may write contents",
     lambda w, p: _set(_job(w, *PRODUCE_LINUX)["permissions"], "contents", "write")),
    ("least permissions", "the aggregate may write packages",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate")["permissions"], "packages", "write")),
    ("least permissions", "a producer may store attestations",
     lambda w, p: _set(_job(w, "produce-windows.yml", "produce")["permissions"], "attestations", "write")),
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
     lambda w, p: _set(_job(w, "produce-macos.yml", "produce"), "runs-on", "ubuntu-latest")),
    ("three platforms, each once", "the windows producer produces linux",
     lambda w, p: _set(_step(w, "produce-windows.yml", "produce", "--platform"), "run",
                       "qualify produce --policy policies/release.toml --platform linux --out out")),
    # pins
    ("actions pinned, credentials not persisted", "checkout by tag",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "actions/checkout@"), "uses", "actions/checkout@v4")),
    ("actions pinned, credentials not persisted", "an abbreviated SHA",
     lambda w, p: _set(_step(w, "qualify.yml", "aggregate", "actions/setup-python@"), "uses",
                       "actions/setup-python@4237552")),
    ("actions pinned, credentials not persisted", "checkout keeps its credentials",
     lambda w, p: _step(w, "release.yml", "gate", "actions/checkout@")["with"].pop("persist-credentials")),
    ("actions pinned, credentials not persisted", "a producer from another repository",
     lambda w, p: _set(_job(w, "qualify.yml", "linux"), "uses",
                       "acme/workflows/.github/workflows/produce-linux.yml@main")),
    # expressions
    ("no expressions in run", "a commit message expanded into a script",
     lambda w, p: _prepend_run(w, "qualify.yml", "aggregate", "qualify aggregate",
                               'echo "${{ github.event.head_commit.message }}"')),
    ("no expressions in run", "the release tag expanded into a script",
     lambda w, p: _prepend_run(w, "release.yml", "gate", "--draft=false", 'echo "${{ inputs.tag }}"')),
    # aggregate
    ("aggregate needs every producer", "the aggregate does not wait for windows",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate"), "needs", ["linux", "macos"])),
    ("aggregate needs every producer", "the aggregate becomes a reusable call",
     lambda w, p: _set(_job(w, "qualify.yml", "aggregate"), "uses", "./.github/workflows/produce-linux.yml")),
    # release
    ("release only verifies, publishes, reads back", "the gate re-aggregates",
     lambda w, p: _prepend_run(w, "release.yml", "gate", "qualify verify",
                               "qualify aggregate --policy policies/release.toml --evidence e --out e")),
    ("release only verifies, publishes, reads back", "the gate uploads an asset",
     lambda w, p: _prepend_run(w, "release.yml", "gate", "--draft=false", 'gh release upload "$TAG" extra.bin')),
    ("release only verifies, publishes, reads back", "publish without the read-back",
     lambda w, p: _job(w, "release.yml", "gate")["steps"].pop()),
    ("release only verifies, publishes, reads back", "no bundle attached",
     lambda w, p: _job(w, "release.yml", "gate")["steps"].remove(
         _step(w, "release.yml", "gate", 'upload "$TAG" "evidence-bundle/'))),
    ("release only verifies, publishes, reads back", "no summaries attached",
     lambda w, p: _job(w, "release.yml", "gate")["steps"].remove(
         _step(w, "release.yml", "gate", 'upload "$TAG" verification-summary'))),
    ("release only verifies, publishes, reads back", "the gate's verify writes no summaries",
     lambda w, p: _set(_step(w, "release.yml", "gate", "--vsa"), "run",
                       _step(w, "release.yml", "gate", "--vsa")["run"].replace("--vsa", "--json"))),
    ("release only verifies, publishes, reads back", "no qualify readback after publishing",
     lambda w, p: _set(_job(w, "release.yml", "gate")["steps"][-1], "run",
                       _job(w, "release.yml", "gate")["steps"][-1]["run"].replace("qualify readback", "true"))),
    ("release only verifies, publishes, reads back", "publish first",
     lambda w, p: _prepend_run(w, "release.yml", "gate", "gh release download",
                               'gh release edit "$TAG" --draft=false')),
    # policy paths
    ("policy paths literal", "the policy from a variable",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "--platform"), "run",
                       'qualify produce --policy "$POLICY" --platform linux --out out')),
    ("policy paths literal", "another policy file",
     lambda w, p: _set(_step(w, "qualify.yml", "aggregate", "qualify aggregate"), "run",
                       "qualify aggregate --policy policies/local.toml --evidence e --out e")),
    ("policy paths literal", "qualify without a policy",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "--platform"), "run", "qualify produce --platform linux --out out")),
    # signers
    ("policy signers are these files", "the policy lets the linux file sign macos",
     lambda w, p: _set(p["producer"]["signers"], "macos", ".github/workflows/produce-linux.yml")),
    ("policy signers are these files", "the policy names a file that does not exist",
     lambda w, p: _set(p["producer"]["signers"], "windows", ".github/workflows/produce-win.yml")),
    ("policy signers are these files", "the policy has no signer for the aggregate",
     lambda w, p: p["producer"]["signers"].pop("aggregate")),
    ("policy signers are these files", "another build config workflow",
     lambda w, p: _set(p["producer"], "workflow", ".github/workflows/release.yml")),
    # installs
    ("installs hash-pinned", "ci installs nox unpinned",
     lambda w, p: _set(_step(w, "ci.yml", "tests", "pip install"), "run", "python -m pip install nox")),
    ("installs hash-pinned", "an unpinned install",
     lambda w, p: _set(_step(w, *PRODUCE_LINUX, "pip install"), "run", "python -m pip install .")),
    ("installs hash-pinned", "the lock without hashes",
     lambda w, p: _set(_step(w, "release.yml", "gate", "pip install"), "run",
                       "python -m pip install -r requirements/pipeline.txt")),
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
        assert f"--platform {platform} " in str(workflows[signer]["jobs"]["produce"]["steps"])
