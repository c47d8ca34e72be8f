"""The caller workflows a team commits (docs/examples/team-*.yml, what `qualify init` writes) call this
repository's reusable workflows at one release tag, with the least permissions, and nothing else.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_rules import AGGREGATE, GATE, LEAST, PRODUCERS, load

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
BUILDER = "desktop-qualify/desktop-qualify"
PLACEHOLDER = "vX.Y.Z"
# What each template's jobs call, by job id; the release gate's caller passes the draft's tag alone.
CALLS = {"team-qualify.yml": {**PRODUCERS, "aggregate": AGGREGATE}, "team-release.yml": {"gate": GATE}}
_TAG = re.compile(r"v[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")
Templates = dict[str, dict[str, Any]]


def _load(text: str) -> dict[str, Any]:
    return {("on" if k is True else k): v for k, v in yaml.safe_load(text).items()}


def caller_violations(templates: Templates, tag: str = PLACEHOLDER) -> list[str]:
    """What in the team's caller workflows does not call this repository's files at exactly ``tag``."""
    ours = load(REPO / ".github" / "workflows")
    bad = []
    for name, calls in CALLS.items():
        data = templates.get(name) or {}
        if data.get("permissions") != {}:
            bad.append(f"{name}: top-level permissions {data.get('permissions')!r}, expected {{}}")
        jobs = data.get("jobs") or {}
        if set(jobs) != set(calls):
            bad.append(f"{name}: jobs {sorted(jobs)}, expected {sorted(calls)}")
        for job_id, job in jobs.items():
            target = f"{BUILDER}/.github/workflows/{calls.get(job_id)}@{tag}"
            if job.get("uses") != target or "steps" in job:
                bad.append(f"{name}: {job_id} calls {job.get('uses')!r}, expected {target}")
            if calls.get(job_id) not in ours or "workflow_call" not in (ours[calls[job_id]].get("on") or {}):
                bad.append(f"{name}: {job_id} calls {calls.get(job_id)!r}, not a reusable workflow here")
            # The same grants as this repository's own calls: a called workflow's jobs get at most these.
            mine = "release.yml" if name == "team-release.yml" else "qualify.yml"
            if job.get("permissions") != LEAST.get((mine, job_id)):
                bad.append(f"{name}: {job_id} permissions {job.get('permissions')!r}")
            if job.get("with") not in (None, {"tag": "${{ inputs.tag }}"}) or (job.get("with") and job_id != "gate"):
                bad.append(f"{name}: {job_id} passes {job.get('with')!r}")
    aggregate = (templates.get("team-qualify.yml", {}).get("jobs") or {}).get("aggregate") or {}
    if sorted(aggregate.get("needs") or []) != sorted(PRODUCERS):
        bad.append("team-qualify.yml: the aggregate does not wait for every producer")
    return bad


def _templates(tag: str = PLACEHOLDER) -> Templates:
    return {path.name: _load(path.read_text("utf-8").replace(PLACEHOLDER, tag))
            for path in sorted(EXAMPLES.glob("team-*.yml"))}


def test_the_caller_templates_call_this_repositorys_workflows_at_one_tag() -> None:
    assert caller_violations(_templates()) == []


def test_filled_in_the_templates_name_the_tag_on_every_call() -> None:
    """What `qualify init` (and the offline team chain) commits: the placeholder replaced everywhere."""
    from support.github_team import RELEASE_CALLER_TEMPLATE, caller_workflow

    for template in (EXAMPLES / "team-qualify.yml", RELEASE_CALLER_TEMPLATE):
        text = caller_workflow("v1.4.2", template)
        assert PLACEHOLDER not in text
        assert caller_violations({**_templates("v1.4.2"), template.name: _load(text)}, "v1.4.2") == []
        refs = re.findall(rf"uses: {BUILDER}/\S+@(\S+)", text)
        assert set(refs) == {"v1.4.2"}
        assert all(_TAG.fullmatch(r) for r in refs)


def test_the_team_policy_pins_the_same_tag_and_these_files() -> None:
    import tomllib

    from support.github_team import BUILDER_REF, BUILDER_TAG, SIGNERS, caller_workflow, team_policy_text

    policy = tomllib.loads(team_policy_text("root.json", "0" * 64))
    assert policy["producer"]["builder"]["ref"] == BUILDER_REF == f"refs/tags/{BUILDER_TAG}"
    assert policy["producer"]["signers"] == SIGNERS
    called = set(re.findall(rf"uses: {BUILDER}/(\S+)@{re.escape(BUILDER_TAG)}", caller_workflow()))
    assert called == set(SIGNERS.values())
    assert policy["verifier"]["workflow"] == f".github/workflows/{GATE}"


Change = Callable[[Templates], None]
CHANGES: list[tuple[str, Change]] = [
    ("one producer at another tag", lambda t: t["team-qualify.yml"]["jobs"]["macos"].update(
        uses=f"{BUILDER}/.github/workflows/produce-macos.yml@v0.0.9")),
    ("the aggregate at a branch", lambda t: t["team-qualify.yml"]["jobs"]["aggregate"].update(
        uses=f"{BUILDER}/.github/workflows/aggregate.yml@main")),
    ("a fork's producer", lambda t: t["team-qualify.yml"]["jobs"]["linux"].update(
        uses=f"mallory/desktop-qualify/.github/workflows/produce-linux.yml@{PLACEHOLDER}")),
    ("a local copy of the gate", lambda t: t["team-release.yml"]["jobs"]["gate"].update(
        uses=f"./.github/workflows/{GATE}")),
    ("the aggregate before the producers", lambda t: t["team-qualify.yml"]["jobs"]["aggregate"].pop("needs")),
    ("windows is not produced", lambda t: t["team-qualify.yml"]["jobs"].pop("windows")),
    ("a producer gets write-all", lambda t: t["team-qualify.yml"]["jobs"]["linux"].update(permissions="write-all")),
    ("a producer is passed a policy", lambda t: t["team-qualify.yml"]["jobs"]["linux"].update(
        **{"with": {"policy": "other.toml"}})),
    ("no top-level permissions", lambda t: t["team-release.yml"].pop("permissions")),
]


@pytest.mark.parametrize("change", [c for _, c in CHANGES], ids=[n for n, _ in CHANGES])
def test_a_caller_that_strays_is_caught(change: Change) -> None:
    templates = copy.deepcopy(_templates())
    change(templates)
    assert caller_violations(templates) != []


def test_the_examples_are_the_packages_templates() -> None:
    """docs/examples holds what `qualify init` writes (qualify_trust.team_workflows), byte for byte."""
    from desktop_qualify.qualify_trust.team_workflows import TEAM_QUALIFY_PATH, TEAM_RELEASE_PATH, TEMPLATES

    assert TEMPLATES[TEAM_QUALIFY_PATH] == (EXAMPLES / "team-qualify.yml").read_text("utf-8")
    assert TEMPLATES[TEAM_RELEASE_PATH] == (EXAMPLES / "team-release.yml").read_text("utf-8")


@pytest.mark.parametrize("tag", ["main", "v1.2", "v1.2.3-rc1", "1.2.3", "v1.2.3\nuses: evil", ""])
def test_a_caller_is_written_for_a_release_tag_only(tag: str) -> None:
    from desktop_qualify.evidence_schemas import Code, QualificationError
    from desktop_qualify.qualify_trust.team_workflows import caller_workflow

    with pytest.raises(QualificationError) as refused:
        caller_workflow(tag)
    assert refused.value.code == Code.USAGE
