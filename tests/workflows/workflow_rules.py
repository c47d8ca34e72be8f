"""The guarded properties of the GitHub Actions workflows, one function per property.

Each rule takes the parsed workflows (file name -> YAML data) and the release
policy (TOML data) and returns what violates it; an empty list means the
property holds. tests/workflows holds every rule on the committed files and
shows, for each one, that a change to the property makes it fail.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from shell_commands import invoked

Workflows = dict[str, dict[str, Any]]
Policy = dict[str, Any]
Rule = Callable[[Workflows, Policy], list[str]]

PLATFORMS = ("linux", "macos", "windows")
RUNNERS = {"linux": "ubuntu-", "macos": "macos-", "windows": "windows-"}
PRODUCERS = {p: f"produce-{p}.yml" for p in PLATFORMS}
# The other reusable workflows a team calls at a tag, as this repository's own workflows call them with `./`.
AGGREGATE = "aggregate.yml"
GATE = "release-gate.yml"
REUSABLE = (*PRODUCERS.values(), AGGREGATE, GATE)
# Each producer file: `detect` (reads its own called-at commit), `run` (the app's code, no OIDC token) and
# then `sign` (the OIDC token, no app code).
PRODUCER_JOBS = ("detect", "run", "sign")
POLICY_PATH = "policies/release.toml"
CI_LOCK = "requirements/ci.txt"
# desktop-qualify, checked out beside the caller's repository at the commit the reusable file was called at.
PIPELINE = ".desktop-qualify"
LOCK = f"{PIPELINE}/requirements/pipeline.txt"
PIPELINE_CHECKOUT = {"repository": "${{ needs.detect.outputs.repository }}",
                     "ref": "${{ needs.detect.outputs.sha }}", "path": PIPELINE, "persist-credentials": False}
# The one step of every reusable file's `detect` job: its own OIDC token's job_workflow_ref and job_workflow_sha
# (the github context names only the caller's), as slsa-github-generator's builders detect their ref.
DETECT_ACTION = "actions/github-script@60a0d83039c74a4aee543508d2ffcb1c3799cdea"
DETECT_SCRIPT = """const token = await core.getIDToken();
const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
const [file, ref] = claims.job_workflow_ref.split('@');
core.info(`called as ${file} at ${ref}, commit ${claims.job_workflow_sha}`);
core.setOutput('repository', file.split('/').slice(0, 2).join('/'));
core.setOutput('sha', claims.job_workflow_sha);
"""
DETECT_STEP = {"id": "claims", "uses": DETECT_ACTION, "with": {"script": DETECT_SCRIPT}}
DETECT_OUTPUTS = {"repository": "${{ steps.claims.outputs.repository }}", "sha": "${{ steps.claims.outputs.sha }}"}
# The least each job needs, and no more (a job not named here may not exist).
LEAST: dict[tuple[str, str], dict[str, str]] = {
    # Each producer's two jobs: `run`, where the app's code runs, can mint no OIDC token; `sign` runs none of it.
    **{(PRODUCERS[p], "run"): {"contents": "read"} for p in PLATFORMS},
    **{(PRODUCERS[p], "sign"): {"contents": "read", "id-token": "write"} for p in PLATFORMS},
    # Each reusable file's detect job reads its own token's claims: no contents, nothing else.
    **{(name, "detect"): {"id-token": "write"} for name in REUSABLE},
    # A called workflow's jobs get at most what the caller grants: id-token: write, for detect and sign.
    **{("qualify.yml", p): {"contents": "read", "id-token": "write"} for p in PLATFORMS},
    # attestations: write on the aggregate job alone: it stores the statements it verified.
    ("qualify.yml", "aggregate"): {"contents": "read", "id-token": "write", "attestations": "write"},
    (AGGREGATE, "aggregate"): {"contents": "read", "id-token": "write", "attestations": "write"},
    # attestations: write for the gate's own VSAs (the read-back reads the store too); id-token: write to sign them.
    ("release.yml", "gate"): {"contents": "write", "actions": "read", "attestations": "write", "id-token": "write"},
    (GATE, "gate"): {"contents": "write", "actions": "read", "attestations": "write", "id-token": "write"},
    ("ci.yml", "tests"): {"contents": "read"},
}
TRIGGERS = {
    "qualify.yml": {"push": {"branches": ["main"]}, "workflow_dispatch": None},
    **{name: {"workflow_call": ...} for name in REUSABLE},
    "release.yml": {"workflow_dispatch": ...},
    "ci.yml": {"push": {"branches": ["main"]}, "pull_request": None},
}
# Inputs allowed at all: only the release gate's choice of draft, which it trusts for nothing
# (it must be a tag at main's head; the policy and checkout are literals), and release.yml passing it on.
ALLOWED_INPUTS = {"release.yml": {"tag"}, GATE: {"tag"}}
CALL_INPUTS = {("release.yml", "gate"): {"tag": "${{ inputs.tag }}"}}
_FORBIDDEN_INPUT = re.compile(r"ref|sha|commit|branch|workflow|policy|path|repo", re.IGNORECASE)
_SHA_PIN = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
_EXPRESSION = re.compile(r"\$\{\{")
_QUALIFY = re.compile(r"\bqualify\s+(produce|sign|gate|aggregate|verify|audit|keygen|schemas|bundle|readback)\b")
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
    # A caller passes its reusable producers nothing but the secrets they sign with (the gate: the draft's tag).
    bad += [f"{name}: job {job_id} passes inputs {sorted(job['with'])}" for name, job_id, job in jobs(workflows)
            if "uses" in job and job.get("with") and job["with"] != CALL_INPUTS.get((name, job_id))]
    # Two checkouts only: the caller's repository (at the triggering commit, or main for the gate), and
    # desktop-qualify at exactly the commit the detect job read from the job's own token.
    for name, _, step in steps(workflows):
        spec = step.get("with") or {}
        if not str(step.get("uses", "")).startswith("actions/checkout@") or spec == PIPELINE_CHECKOUT:
            continue
        bad += [f"{name}: a checkout of {key} {spec[key]!r}" for key in ("repository", "path") if key in spec]
        if "ref" in spec and spec["ref"] != "main":
            bad.append(f"{name}: a checkout of ref {spec['ref']!r}")
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
        if sorted(producer) != sorted(PRODUCER_JOBS):
            bad.append(f"{PRODUCERS[platform]}: jobs {sorted(producer)}, expected exactly {list(PRODUCER_JOBS)}")
            continue
        for job_id in PRODUCER_JOBS:
            job = producer[job_id]
            runner = job.get("runs-on")
            # The detect job reads a token on any fixed runner: Linux's, the cheapest.
            want = RUNNERS["linux" if job_id == "detect" else platform]
            if not isinstance(runner, str) or not runner.startswith(want) or "${{" in runner \
                    or "strategy" in job:
                bad.append(f"{PRODUCERS[platform]}: {job_id}'s runner {runner!r} is not a fixed {want}* label")
            if job_id == "detect":
                continue
            said = [arg for _, _, line in runs({"x": {"jobs": {job_id: job}}})
                    for arg in re.findall(r"--platform\s+(\S+)", line)]
            if said != [platform]:
                bad.append(f"{PRODUCERS[platform]}: {job_id} names platforms {said}, expected exactly [{platform!r}]")
    # The producers, and the aggregate once they are done (held by its own rule).
    if len(called) != len(PLATFORMS) + 1:
        bad.append(f"qualify.yml: {len(called)} reusable calls, expected {len(PLATFORMS) + 1}")
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
    bad += [f"{name}: {job_id} calls {job['uses']!r}, not one of this repository's reusable workflows"
            for name, job_id, job in jobs(workflows)
            if "uses" in job and job["uses"] not in {f"./.github/workflows/{f}" for f in REUSABLE}]
    return bad


def no_expressions_in_run(workflows: Workflows, _: Policy) -> list[str]:
    # Every value reaches a script through env:, never by template expansion into its text.
    return [f"{name}: {job_id}: a run: expands an expression: {step['run'][:80]!r}"
            for name, job_id, step in steps(workflows) if "run" in step and _EXPRESSION.search(step["run"])]


def aggregate_needs_every_producer(workflows: Workflows, _: Policy) -> list[str]:
    job = (workflows.get("qualify.yml", {}).get("jobs") or {}).get("aggregate") or {}
    needs = job.get("needs")
    needs = [needs] if isinstance(needs, str) else needs or []
    if sorted(needs) != sorted(PLATFORMS) or job.get("uses") != f"./.github/workflows/{AGGREGATE}":
        return [f"qualify.yml: aggregate needs {needs} and calls {job.get('uses')!r}, expected every producer "
                f"{list(PLATFORMS)} and {AGGREGATE}"]
    return []


def release_only_verifies_publishes_reads_back(workflows: Workflows, _: Policy) -> list[str]:
    # release.yml only calls the reusable gate; the gate's own steps are held below.
    release = workflows.get("release.yml", {}).get("jobs") or {}
    bad = [] if list(release) == ["gate"] and set(release["gate"]) == {"uses", "permissions", "with"} and \
        release["gate"]["uses"] == f"./.github/workflows/{GATE}" else [f"release.yml: jobs {sorted(release)}, "
                                                                         f"expected one call of {GATE}"]
    lines = [line for _, _, line in runs(workflows, GATE)]
    bad += [f"{GATE}: runs qualify {m}" for line in lines for m in _QUALIFY.findall(line)
            if m not in ("verify", "readback")]
    allowed = (ATTACH_BUNDLE, ATTACH_SUMMARIES)
    bad += [f"{GATE}: writes with {line[:80]!r}" for line in lines if line not in allowed and
            re.search(r"\bgh\s+(api|release\s+(create|upload|delete)|workflow|secret|variable)\b|\bgit\s+push\b",
                      line)]
    edits = [i for i, line in enumerate(lines) if re.search(r"\bgh\s+release\s+edit\b", line)]
    verifies = [i for i, line in enumerate(lines) if "qualify verify" in line]
    attaches = [i for i, line in enumerate(lines) if line == ATTACH_BUNDLE]
    if len(edits) != 1 or lines[edits[0]] != 'gh release edit "$TAG" --draft=false':
        return [*bad, f"{GATE}: exactly one publish, gh release edit \"$TAG\" --draft=false, expected"]
    if not any(i < edits[0] for i in verifies):
        bad.append(f"{GATE}: publishes before it verifies")
    if len(attaches) != 1 or not verifies or not verifies[0] < attaches[0] < edits[0]:
        bad.append(f"{GATE}: the run's bundle is attached once, after the verify and before the publish")
    summaries = [i for i, line in enumerate(lines) if line == ATTACH_SUMMARIES]
    writes_them = [i for i in verifies if "--vsa verification-summary.intoto.jsonl" in lines[i]]
    if len(summaries) != 1 or not writes_them or not writes_them[0] < summaries[0] < edits[0]:
        bad.append(f"{GATE}: the gate's summaries are written by the verify and attached once before publishing")
    after = lines[edits[0] + 1:]
    if not (any("gh release download" in line for line in after) and any("qualify verify" in line for line in after)):
        bad.append(f"{GATE}: does not read the published release back and verify it")
    if not any(line.startswith("qualify readback ") for line in after):
        bad.append(f"{GATE}: does not run qualify readback after publishing")
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
    want = {**{p: f".github/workflows/{PRODUCERS[p]}" for p in PLATFORMS},
            "aggregate": f".github/workflows/{AGGREGATE}"}
    bad = [] if signers == want else [f"policy signers {signers!r}, expected {want!r}"]
    if producer.get("workflow") != ".github/workflows/qualify.yml":
        bad.append(f"policy build config workflow {producer.get('workflow')!r} is not qualify.yml")
    verifier = policy.get("verifier") or {}
    gate = (f".github/workflows/{GATE}", ".github/workflows/release.yml")
    if (verifier.get("workflow"), verifier.get("caller")) != gate:
        bad.append(f"policy verifier {verifier!r} is not {GATE} called by release.yml")
    bad += [f"policy signer {path} is not a workflow here" for path in signers.values()
            if path.removeprefix(".github/workflows/") not in workflows]
    return bad


def installs_hash_pinned(workflows: Workflows, _: Policy) -> list[str]:
    bad = []
    for name, job_id, line in runs(workflows, "qualify.yml", "release.yml", *REUSABLE):
        if re.search(r"\bpip\s+install\b", line) and not (
                f"--require-hashes --only-binary :all: -r {LOCK}" in line or
                line.endswith(f"--no-deps --no-build-isolation ./{PIPELINE}")):
            bad.append(f"{name}: {job_id}: an install that is not hash-pinned: {line[:80]!r}")
    # The test runner's own tooling: nox from its lock; nox then installs the project and its test extras.
    for name, job_id, line in runs(workflows, "ci.yml"):
        if re.search(r"\bpip\s+install\b", line) and f"--require-hashes --only-binary :all: -r {CI_LOCK}" not in line:
            bad.append(f"{name}: {job_id}: an install that is not hash-pinned: {line[:80]!r}")
    return bad


# What a job that can mint an OIDC token (and so sign as its workflow) may run: nothing of the app's, nothing
# from an artifact, only the pipeline, as slsa-github-generator keeps the user's build out of its signing job.
SIGNING_ACTIONS = ("actions/checkout", "actions/setup-python", "actions/download-artifact", "actions/upload-artifact")
SIGNING_QUALIFY = {"sign", "aggregate", "verify", "bundle", "readback", "verify-vsa"}
PIPELINE_INSTALL = {("python", "-m", "pip", "install", "--require-hashes", "--only-binary", ":all:", "-r", LOCK),
                    ("python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", f"./{PIPELINE}")}
STORE_ATTESTATIONS = ("python", "-m", "desktop_qualify.qualify_github", "store-attestations")
# The shell's own plumbing (the release gate's checks and loops): none of it runs a file it is given.
SHELL_PLUMBING = {"set", "test", "[", "echo", "printf", "exit", "true", "read", "mkdir"}
# The release gate's reads and writes of its release, and its check of the tag: data in and out, no code.
GITHUB_CLI = {("gh", "release", "view"), ("gh", "release", "download"), ("gh", "release", "upload"),
              ("gh", "release", "edit"), ("gh", "run", "list"), ("gh", "run", "download"), ("git", "rev-parse"),
              ("git", "fetch")}
# The variables a signing job's steps may be given: none that a shell or an interpreter reads as code
# (BASH_ENV, PYTHONPATH, LD_PRELOAD ...), and no secret.
SIGNING_ENV = {"GITHUB_TOKEN", "GH_TOKEN", "TAG"}
# The one variable a signing job hands on to its later steps, and how.
SIGNING_ENV_WRITES = {'echo "CANDIDATE_SHA=$sha" >> "$GITHUB_ENV"'}
# What names the app's code: its build scripts, its sources, the frozen bundle, the freezer.
_APP_CODE = re.compile(r"build\.(py|sh|ps1)|reference_app|examples/|pyinstaller|skillhost", re.IGNORECASE)
_DATA_DOWNLOAD = re.compile(r"\bgh\s+(run|release)\s+download\b")


def mints_tokens(data: dict[str, Any], job: dict[str, Any]) -> bool:
    """Whether ``job`` can ask for an OIDC token: id-token: write, or write-all, its own or its workflow's."""
    granted = job["permissions"] if "permissions" in job else data.get("permissions", "write-all")
    if isinstance(granted, dict):
        return granted.get("id-token") == "write"
    return granted is None or "write" in str(granted)


def _refused_command(argv: list[str]) -> str | None:
    """Why a signing job may not run ``argv``, or None."""
    head = argv[0]
    if head == "qualify":
        sub = argv[1] if len(argv) > 1 else ""
        if sub == "produce":
            return "runs qualify produce (the app's build, install, launch and journey)"
        return None if sub in SIGNING_QUALIFY else f"runs qualify {sub or '(no subcommand)'}"
    if head == "nox":
        return "runs nox (its sessions build and run the app)"
    if head in ("python", "python3", "py", "pip", "pip3") or head.endswith(("/python", "/python3")):
        if tuple(argv) in PIPELINE_INSTALL or tuple(argv[:4]) == STORE_ATTESTATIONS:
            return None
        if "install" in argv:
            return "installs something other than the hash-pinned pipeline"
        if len(argv) > 1 and _APP_CODE.search(argv[1]):
            return "runs the app's build script or the app"
        return "runs Python code other than the pipeline's"
    if _APP_CODE.search(head):
        return "runs the app's build script or the app"
    if "/" in head or head.endswith((".py", ".sh", ".ps1", ".exe")):
        return "runs a script or a program of the checkout or of an artifact"
    if head in SHELL_PLUMBING or tuple(argv[:3]) in GITHUB_CLI or tuple(argv[:2]) in GITHUB_CLI:
        return None
    return "is not on the signing jobs' allow-list"


def _signing_job_setup(data: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """What a signing job's setting, rather than its steps, lets run: a container, a secret, a shell, a variable."""
    bad = [f"runs in a {key}" for key in ("container", "services") if key in job]
    if "secrets." in str(job):
        bad.append("is given a secret (the OS code-signing secrets stay in the run job)")
    for scope in (data, job):
        run_defaults = (scope.get("defaults") or {}).get("run") or {}
        if run_defaults.get("shell") not in (None, "bash", "sh"):
            bad.append(f"default shell {run_defaults['shell']!r}")
        if "working-directory" in run_defaults:
            bad.append(f"runs its scripts in {run_defaults['working-directory']!r}")
    bad += [f"sets {key}" for key in sorted({*(data.get("env") or {}), *(job.get("env") or {})} - SIGNING_ENV)]
    return bad


def _signing_step(step: dict[str, Any], downloaded: bool) -> list[str]:
    """What a signing job's step runs that is not on the allow-list (``downloaded``: data is on disk already)."""
    bad = [f"a step sets {key}" for key in sorted(set(step.get("env") or {}) - SIGNING_ENV)]
    if step.get("shell") not in (None, "bash", "sh"):
        bad.append(f"a step runs with shell {step['shell']!r}")
    if "working-directory" in step:
        bad.append(f"a step runs in {step['working-directory']!r}")
    if "uses" in step:
        action = str(step["uses"]).split("@", 1)[0]
        # The one script a signing job may run besides the pipeline: the detect job's, byte for byte.
        if action not in SIGNING_ACTIONS and step != DETECT_STEP:
            bad.append(f"uses {action!r}, not on the signing jobs' allow-list")
        if action == "actions/download-artifact" and str((step.get("with") or {}).get("path", "")).strip("./") == "":
            bad.append("downloads an artifact into the checkout itself")
        return bad
    script = str(step.get("run", ""))
    try:
        argvs = invoked(script)
    except ValueError as error:
        return [*bad, f"a script that cannot be read: {error}"]
    for argv in argvs:
        why = _refused_command(argv)
        if why is not None:
            bad.append(f"{shlex.join(argv)[:80]!r} {why}")
        elif tuple(argv) in PIPELINE_INSTALL and downloaded:
            bad.append("installs the pipeline after downloading data")
    bad += [f"changes a later step's environment: {line[:80]!r}" for line in commands(script)
            if "GITHUB_PATH" in line or ("GITHUB_ENV" in line and line not in SIGNING_ENV_WRITES)]
    return bad


def _downloads(step: dict[str, Any]) -> bool:
    return str(step.get("uses", "")).split("@", 1)[0] == "actions/download-artifact" or \
        _DATA_DOWNLOAD.search(str(step.get("run", ""))) is not None


def signing_jobs_run_no_app_code(workflows: Workflows, _: Policy) -> list[str]:
    """Every job that can mint an OIDC token runs only the pipeline, from an allow-list of steps."""
    bad = []
    for name, data in workflows.items():
        for job_id, job in (data.get("jobs") or {}).items():
            if "uses" in job or not mints_tokens(data, job):
                continue  # a call: the called file's jobs are held here one by one
            found = _signing_job_setup(data, job)
            downloaded = False
            for step in job.get("steps") or []:
                found += _signing_step(step, downloaded)
                downloaded = downloaded or _downloads(step)
            bad += [f"{name}: {job_id} (id-token: write): {what}" for what in found]
    return bad


def producing_jobs_mint_no_token(workflows: Workflows, _: Policy) -> list[str]:
    """Every job that runs `qualify produce` (the app's code) can mint no OIDC token and signs nothing."""
    bad = []
    for name, data in workflows.items():
        for job_id, job in (data.get("jobs") or {}).items():
            produces = [argv for step in job.get("steps") or [] if "run" in step
                        for argv in invoked(str(step["run"])) if argv[:2] == ["qualify", "produce"]]
            if not produces:
                continue
            if mints_tokens(data, job):
                bad.append(f"{name}: {job_id} runs qualify produce and can mint an OIDC token")
            bad += [f"{name}: {job_id}: qualify produce without --unsigned" for argv in produces
                    if "--unsigned" not in argv]
    return bad


def _uploads(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step.get("with") or {} for step in job.get("steps") or []
            if str(step.get("uses", "")).split("@", 1)[0] == action]


def _paths(spec: dict[str, Any]) -> set[str]:
    return {line.strip() for line in str(spec.get("path", "")).splitlines() if line.strip()}


def each_producer_runs_then_signs(workflows: Workflows, _: Policy) -> list[str]:
    """Each produce-*.yml: `run` hands `unsigned-P` to exactly one `sign` job, which needs it and signs it."""
    bad = []
    for platform, file in PRODUCERS.items():
        jobs_here = workflows.get(file, {}).get("jobs") or {}
        signing = [job_id for job_id, job in jobs_here.items() if mints_tokens(workflows[file], job)]
        if sorted(signing) != ["detect", "sign"]:
            bad.append(f"{file}: jobs that can mint a token {signing}, expected exactly 'detect' and 'sign'")
        run, sign = jobs_here.get("run") or {}, jobs_here.get("sign") or {}
        needs = sign.get("needs")
        if sorted(needs if isinstance(needs, list) else [needs]) != ["detect", "run"] or run.get("needs") != "detect":
            bad.append(f"{file}: sign needs {needs!r}, run needs {run.get('needs')!r}; expected the run job (and "
                       "detect) for sign, and detect alone for run")
        handed = f"unsigned-{platform}"
        produce = ["qualify", "produce", "--policy", POLICY_PATH, "--platform", platform, "--out", "out", "--unsigned"]
        said = [argv for step in run.get("steps") or [] if "run" in step for argv in invoked(str(step["run"]))
                if argv[:1] == ["qualify"]]
        if said != [produce]:
            bad.append(f"{file}: run job's qualify commands {said}, expected [{' '.join(produce)}]")
        if [(u.get("name"), _paths(u)) for u in _uploads(run, "actions/upload-artifact")] != \
                [(handed, {"out/unsigned/", "out/artifacts/"})] or _uploads(run, "actions/download-artifact"):
            bad.append(f"{file}: run job must upload exactly {handed} (out/unsigned/, out/artifacts/) and download "
                       "nothing")
        steps_here = sign.get("steps") or []
        downloads = [(i, s.get("with") or {}) for i, s in enumerate(steps_here)
                     if str(s.get("uses", "")).split("@", 1)[0] == "actions/download-artifact"]
        if [(w.get("name"), w.get("path"), w.get("pattern")) for _, w in downloads] != [(handed, "run", None)]:
            bad.append(f"{file}: sign job must download exactly {handed} into run/")
        sign_argv = ["qualify", "sign", "--policy", POLICY_PATH, "--platform", platform, "--run", "run", "--out", "out"]
        signs = [(i, argv) for i, s in enumerate(steps_here) if "run" in s for argv in invoked(str(s["run"]))
                 if argv[:1] == ["qualify"]]
        if [argv for _, argv in signs] != [sign_argv] or not downloads or signs[0][0] < downloads[0][0]:
            bad.append(f"{file}: sign job's qualify commands {[a for _, a in signs]}, expected "
                       f"[{' '.join(sign_argv)}] after the download")
        if [(u.get("name"), _paths(u)) for u in _uploads(sign, "actions/upload-artifact")] != \
                [(f"qualification-platform-{platform}", {"out/evidence/", "out/artifacts/"})]:
            bad.append(f"{file}: sign job must upload exactly qualification-platform-{platform}")
    # Nothing but a producer's own sign job reads what a run job wrote.
    for name, job_id, step in steps(workflows):
        if str(step.get("uses", "")).split("@", 1)[0] != "actions/download-artifact":
            continue
        spec = step.get("with") or {}
        wanted = str(spec.get("pattern") or spec.get("name") or "*")
        for platform, file in PRODUCERS.items():
            if fnmatch.fnmatchcase(f"unsigned-{platform}", wanted) and (name, job_id) != (file, "sign"):
                bad.append(f"{name}: {job_id} downloads {wanted!r}, which takes the unsigned-{platform} artifact")
    return bad


def pipeline_at_the_called_commit(workflows: Workflows, _: Policy) -> list[str]:
    """Every job that installs the pipeline installs desktop-qualify at the commit its file was called at.

    A team calls these files at a tag: the github context is the team's, so each file's `detect` job reads
    its own OIDC token (job_workflow_ref, job_workflow_sha: what Fulcio writes into .9 and .10) and runs
    nothing else; every job that installs the pipeline needs it and checks desktop-qualify out at that commit.
    """
    bad = []
    for name in REUSABLE:
        here = workflows.get(name, {}).get("jobs") or {}
        detect = here.get("detect") or {}
        if detect.get("steps") != [DETECT_STEP] or detect.get("outputs") != DETECT_OUTPUTS or "needs" in detect:
            bad.append(f"{name}: no detect job that runs exactly the token-claims script and hands on its outputs")
        for job_id, job in here.items():
            installs = [argv for step in job.get("steps") or [] if "run" in step
                        for argv in invoked(str(step["run"])) if tuple(argv) in PIPELINE_INSTALL]
            if job_id == "detect" or not installs:
                continue
            needs = job.get("needs")
            checkouts = [s.get("with") for s in job.get("steps") or []
                         if str(s.get("uses", "")).startswith("actions/checkout@")]
            if "detect" not in (needs if isinstance(needs, list) else [needs]) or PIPELINE_CHECKOUT not in checkouts:
                bad.append(f"{name}: {job_id} installs a pipeline not checked out at the detect job's commit")
    # The pipeline comes from those checkouts only, never from the caller's repository.
    bad += [f"{name}: {job_id}: installs the caller's checkout: {line[:80]!r}"
            for name, job_id, line in runs(workflows, "qualify.yml", "release.yml", *REUSABLE)
            if re.search(r"\bpip\s+install\b", line) and re.search(r"(-r requirements/|\s\.$)", line)]
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
    "signing jobs run no app code": signing_jobs_run_no_app_code,
    "producing jobs mint no token": producing_jobs_mint_no_token,
    "each producer runs, then signs once": each_producer_runs_then_signs,
    "pipeline at the called commit": pipeline_at_the_called_commit,
}
