"""The guarded properties of the GitHub Actions workflows, one function per property.

Each rule takes the parsed workflows (file name -> YAML data) and the release
policy (TOML data) and returns what violates it; an empty list means the
property holds. tests/workflows holds every rule on the committed files and
shows, for each one, that a change to the property makes it fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

Workflows = dict[str, dict[str, Any]]
Policy = dict[str, Any]
Rule = Callable[[Workflows, Policy], list[str]]

PLATFORMS = ("linux", "macos", "windows")
RUNNERS = {"linux": "ubuntu-", "macos": "macos-", "windows": "windows-"}
PRODUCERS = {p: f"produce-{p}.yml" for p in PLATFORMS}
POLICY_PATH = "policies/release.toml"
CI_LOCK = "requirements/ci.txt"
LOCK = "requirements/pipeline.txt"
# The least each job needs, and no more (a job not named here may not exist).
LEAST: dict[tuple[str, str], dict[str, str]] = {
    **{(PRODUCERS[p], "produce"): {"contents": "read", "id-token": "write"} for p in PLATFORMS},
    **{("qualify.yml", p): {"contents": "read", "id-token": "write"} for p in PLATFORMS},
    # attestations: write on the aggregate job alone: it stores the statements it verified.
    ("qualify.yml", "aggregate"): {"contents": "read", "id-token": "write", "attestations": "write"},
    # attestations: write for the gate's own VSAs (the read-back reads the store too); id-token: write to sign them.
    ("release.yml", "gate"): {"contents": "write", "actions": "read", "attestations": "write", "id-token": "write"},
    ("ci.yml", "tests"): {"contents": "read"},
}
TRIGGERS = {
    "qualify.yml": {"push": {"branches": ["main"]}, "workflow_dispatch": None},
    **{PRODUCERS[p]: {"workflow_call": ...} for p in PLATFORMS},
    "release.yml": {"workflow_dispatch": ...},
    "ci.yml": {"push": {"branches": ["main"]}, "pull_request": None},
}
# Inputs allowed at all: only the release gate's choice of draft, which it trusts for nothing
# (it must be a tag at main's head; the policy and checkout are literals).
ALLOWED_INPUTS = {"release.yml": {"tag"}}
_FORBIDDEN_INPUT = re.compile(r"ref|sha|commit|branch|workflow|policy|path|repo", re.IGNORECASE)
_SHA_PIN = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
_EXPRESSION = re.compile(r"\$\{\{")
_QUALIFY = re.compile(r"\bqualify\s+(produce|aggregate|verify|audit|keygen|schemas|bundle|readback)\b")
# The one write besides publishing: the run's bundle, attached to the draft once it verified.
ATTACH_BUNDLE = 'gh release upload "$TAG" "evidence-bundle/qualification-$CANDIDATE_SHA.qualify-bundle.zip"'
# ... and the gate's signed Verification Summary Attestations, written by that verify.
ATTACH_SUMMARIES = 'gh release upload "$TAG" verification-summary.intoto.jsonl'
_POLICY_ARG = re.compile(r"--policy(?:\s+|=)(\S+)")


def load(folder: Path) -> Workflows:
    # YAML 1.1 reads the key `on` as True: name it back.
    return {path.name: {("on" if k is True else k): v for k, v in yaml.safe_load(path.read_text("utf-8")).items()}
            for path in sorted(folder.glob("*.yml"))}


def jobs(workflows: Workflows) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, data in workflows.items():
        for job_id, job in (data.get("jobs") or {}).items():
            yield name, job_id, job


def steps(workflows: Workflows) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, job_id, job in jobs(workflows):
        for step in job.get("steps") or []:
            yield name, job_id, step


def commands(run: str) -> list[str]:
    """The logical lines of a run: script, backslash continuations joined."""
    return [line.strip() for line in run.replace("\\\n", " ").splitlines() if line.strip()]


def runs(workflows: Workflows, *names: str) -> Iterator[tuple[str, str, str]]:
    for name, job_id, step in steps(workflows):
        if "run" in step and (not names or name in names):
            for command in commands(step["run"]):
                yield name, job_id, command


def triggers(workflows: Workflows, _: Policy) -> list[str]:
    bad = [f"{name}: unexpected workflow file" for name in workflows if name not in TRIGGERS]
    for name, want in TRIGGERS.items():
        got = workflows.get(name, {}).get("on")
        if not isinstance(got, dict) or set(got) != set(want):
            bad.append(f"{name}: triggers {sorted(got) if isinstance(got, dict) else got!r}, expected {sorted(want)}")
            continue
        bad += [f"{name}: {event} is {got[event]!r}, expected {value!r}"
                for event, value in want.items() if value is not ... and got[event] != value]
    return bad


def inputs_name_nothing_trusted(workflows: Workflows, _: Policy) -> list[str]:
    bad = []
    for name, data in workflows.items():
        for event in ("workflow_dispatch", "workflow_call"):
            spec = (data.get("on") or {}).get(event) or {}
            for key, value in (spec.get("inputs") or {}).items():
                text = f"{key} {(value or {}).get('description', '')}"
                if key not in ALLOWED_INPUTS.get(name, set()) or _FORBIDDEN_INPUT.search(key):
                    bad.append(f"{name}: input {key!r} ({text.strip()}) may not exist")
    # A caller passes its reusable producers nothing but the secrets they sign with.
    bad += [f"{name}: job {job_id} passes inputs {sorted(job['with'])}" for name, job_id, job in jobs(workflows)
            if "uses" in job and job.get("with")]
    bad += [f"{name}: a checkout of ref {step['with']['ref']!r}" for name, _, step in steps(workflows)
            if str(step.get("uses", "")).startswith("actions/checkout@") and "ref" in (step.get("with") or {})
            and step["with"]["ref"] != "main"]
    return bad


def least_permissions(workflows: Workflows, _: Policy) -> list[str]:
    bad = [f"{name}: top-level permissions {data.get('permissions')!r}, expected {{}}"
           for name, data in workflows.items() if data.get("permissions") != {}]
    for name, job_id, job in jobs(workflows):
        want = LEAST.get((name, job_id))
        if want is None:
            bad.append(f"{name}: job {job_id} has no least-permission entry")
        elif job.get("permissions") != want:
            bad.append(f"{name}: job {job_id} permissions {job.get('permissions')!r}, expected {want!r}")
    return bad


def platforms_once(workflows: Workflows, _: Policy) -> list[str]:
    qualify = workflows.get("qualify.yml", {}).get("jobs") or {}
    called = [str(job.get("uses")) for job in qualify.values() if "uses" in job]
    bad = []
    for platform in PLATFORMS:
        target = f"./.github/workflows/{PRODUCERS[platform]}"
        if called.count(target) != 1 or (qualify.get(platform) or {}).get("uses") != target:
            bad.append(f"qualify.yml: {platform} must be job {platform!r} calling {target} exactly once")
        producer = workflows.get(PRODUCERS[platform], {}).get("jobs") or {}
        if list(producer) != ["produce"]:
            bad.append(f"{PRODUCERS[platform]}: exactly one job, 'produce', expected")
            continue
        job = producer["produce"]
        runner = job.get("runs-on")
        if not isinstance(runner, str) or not runner.startswith(RUNNERS[platform]) or "${{" in runner \
                or "strategy" in job:
            bad.append(f"{PRODUCERS[platform]}: runner {runner!r} is not a fixed {RUNNERS[platform]}* label")
        said = [arg for _, _, line in runs({"x": workflows[PRODUCERS[platform]]})
                for arg in re.findall(r"--platform\s+(\S+)", line)]
        if said != [platform]:
            bad.append(f"{PRODUCERS[platform]}: produces {said}, expected exactly [{platform!r}]")
    if len(called) != len(PLATFORMS):
        bad.append(f"qualify.yml: {len(called)} reusable calls, expected {len(PLATFORMS)}")
    return bad


def actions_pinned(workflows: Workflows, _: Policy) -> list[str]:
    bad = []
    for name, job_id, step in steps(workflows):
        uses = step.get("uses")
        if uses is not None and _SHA_PIN.fullmatch(str(uses)) is None:
            bad.append(f"{name}: {job_id} uses {uses!r}, not pinned by a full commit SHA")
        if str(uses).startswith("actions/checkout@") and (step.get("with") or {}).get("persist-credentials") \
                is not False:
            bad.append(f"{name}: {job_id} checks out with persisted credentials")
    bad += [f"{name}: {job_id} calls {job['uses']!r}, not a local producer workflow"
            for name, job_id, job in jobs(workflows)
            if "uses" in job and job["uses"] not in {f"./.github/workflows/{f}" for f in PRODUCERS.values()}]
    return bad


def no_expressions_in_run(workflows: Workflows, _: Policy) -> list[str]:
    # Every value reaches a script through env:, never by template expansion into its text.
    return [f"{name}: {job_id}: a run: expands an expression: {step['run'][:80]!r}"
            for name, job_id, step in steps(workflows) if "run" in step and _EXPRESSION.search(step["run"])]


def aggregate_needs_every_producer(workflows: Workflows, _: Policy) -> list[str]:
    job = (workflows.get("qualify.yml", {}).get("jobs") or {}).get("aggregate") or {}
    needs = job.get("needs")
    needs = [needs] if isinstance(needs, str) else needs or []
    if sorted(needs) != sorted(PLATFORMS) or "uses" in job:
        return [f"qualify.yml: aggregate needs {needs}, expected every producer {list(PLATFORMS)}"]
    return []


def release_only_verifies_publishes_reads_back(workflows: Workflows, _: Policy) -> list[str]:
    lines = [line for _, _, line in runs(workflows, "release.yml")]
    bad = [f"release.yml: runs qualify {m}" for line in lines for m in _QUALIFY.findall(line)
           if m not in ("verify", "readback")]
    allowed = (ATTACH_BUNDLE, ATTACH_SUMMARIES)
    bad += [f"release.yml: writes with {line[:80]!r}" for line in lines if line not in allowed and
            re.search(r"\bgh\s+(api|release\s+(create|upload|delete)|workflow|secret|variable)\b|\bgit\s+push\b",
                      line)]
    edits = [i for i, line in enumerate(lines) if re.search(r"\bgh\s+release\s+edit\b", line)]
    verifies = [i for i, line in enumerate(lines) if "qualify verify" in line]
    attaches = [i for i, line in enumerate(lines) if line == ATTACH_BUNDLE]
    if len(edits) != 1 or lines[edits[0]] != 'gh release edit "$TAG" --draft=false':
        return [*bad, "release.yml: exactly one publish, gh release edit \"$TAG\" --draft=false, expected"]
    if not any(i < edits[0] for i in verifies):
        bad.append("release.yml: publishes before it verifies")
    if len(attaches) != 1 or not verifies or not verifies[0] < attaches[0] < edits[0]:
        bad.append("release.yml: the run's bundle is attached once, after the verify and before the publish")
    summaries = [i for i, line in enumerate(lines) if line == ATTACH_SUMMARIES]
    writes_them = [i for i in verifies if "--vsa verification-summary.intoto.jsonl" in lines[i]]
    if len(summaries) != 1 or not writes_them or not writes_them[0] < summaries[0] < edits[0]:
        bad.append("release.yml: the gate's summaries are written by the verify and attached once before publishing")
    after = lines[edits[0] + 1:]
    if not (any("gh release download" in line for line in after) and any("qualify verify" in line for line in after)):
        bad.append("release.yml: does not read the published release back and verify it")
    if not any(line.startswith("qualify readback ") for line in after):
        bad.append("release.yml: does not run qualify readback after publishing")
    return bad


def policy_paths_literal(workflows: Workflows, _: Policy) -> list[str]:
    bad = []
    for name, job_id, line in runs(workflows):
        if _QUALIFY.search(line) and "--policy" not in line:
            bad.append(f"{name}: {job_id}: qualify without --policy: {line[:80]!r}")
        bad += [f"{name}: {job_id}: --policy {path}" for path in _POLICY_ARG.findall(line) if path != POLICY_PATH]
    return bad


def signers_are_these_files(workflows: Workflows, policy: Policy) -> list[str]:
    producer = policy.get("producer") or {}
    signers = producer.get("signers") or {}
    want = {**{p: f".github/workflows/{PRODUCERS[p]}" for p in PLATFORMS}, "aggregate": ".github/workflows/qualify.yml"}
    bad = [] if signers == want else [f"policy signers {signers!r}, expected {want!r}"]
    if producer.get("workflow") != ".github/workflows/qualify.yml":
        bad.append(f"policy build config workflow {producer.get('workflow')!r} is not qualify.yml")
    bad += [f"policy signer {path} is not a workflow here" for path in signers.values()
            if path.removeprefix(".github/workflows/") not in workflows]
    return bad


def installs_hash_pinned(workflows: Workflows, _: Policy) -> list[str]:
    bad = []
    for name, job_id, line in runs(workflows, "qualify.yml", "release.yml", *PRODUCERS.values()):
        if re.search(r"\bpip\s+install\b", line) and not (
                f"--require-hashes --only-binary :all: -r {LOCK}" in line or line.endswith("--no-deps "
                                                                                           "--no-build-isolation .")):
            bad.append(f"{name}: {job_id}: an install that is not hash-pinned: {line[:80]!r}")
    # The test runner's own tooling: nox from its lock; nox then installs the project and its test extras.
    for name, job_id, line in runs(workflows, "ci.yml"):
        if re.search(r"\bpip\s+install\b", line) and f"--require-hashes --only-binary :all: -r {CI_LOCK}" not in line:
            bad.append(f"{name}: {job_id}: an install that is not hash-pinned: {line[:80]!r}")
    return bad


RULES: dict[str, Rule] = {
    "triggers": triggers,
    "inputs name nothing trusted": inputs_name_nothing_trusted,
    "least permissions": least_permissions,
    "three platforms, each once": platforms_once,
    "actions pinned, credentials not persisted": actions_pinned,
    "no expressions in run": no_expressions_in_run,
    "aggregate needs every producer": aggregate_needs_every_producer,
    "release only verifies, publishes, reads back": release_only_verifies_publishes_reads_back,
    "policy paths literal": policy_paths_literal,
    "policy signers are these files": signers_are_these_files,
    "installs hash-pinned": installs_hash_pinned,
}
