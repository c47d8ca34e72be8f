"""Helpers for the offline GitHub-mode chain: a test policy, an Actions environment, a test-instance signer,
and each platform's two producer jobs as produce-PLATFORM.yml runs them (`run` with no OIDC token, then `sign`).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from desktop_qualify.qualify_policy import Policy
from desktop_qualify.qualify_trust._github_mode import SigstoreSigner

from support.chain import REPO
from support.github_emulator import DEFAULT_TOKEN, GitHubEmulator
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

if TYPE_CHECKING:
    from desktop_qualify.producer import ProduceResult

REPOSITORY = "acme/desktop"
WORKFLOW = ".github/workflows/qualify.yml"
# policies/release.toml's [producer.signers]: each platform's producer is a reusable workflow of its own.
SIGNER_WORKFLOWS = {p: f".github/workflows/produce-{p}.yml" for p in ("linux", "macos", "windows")}


def platform_identity(identity: GitHubIdentity, platform: str) -> GitHubIdentity:
    """The certificate identity of ``platform``'s producer job in the run ``identity`` names."""
    return replace(identity, signer_workflow=SIGNER_WORKFLOWS[platform])


AGGREGATE_WORKFLOW = ".github/workflows/aggregate.yml"
# policies/release.toml's [verifier]: the reusable release gate, called by release.yml.
GATE_WORKFLOW = ".github/workflows/release-gate.yml"
GATE_CALLER = ".github/workflows/release.yml"


def aggregate_identity(identity: GitHubIdentity) -> GitHubIdentity:
    """The aggregate is a reusable workflow of its own (aggregate.yml), called by qualify.yml like the producers."""
    return replace(identity, signer_workflow=AGGREGATE_WORKFLOW)


@dataclass
class GitHubChain:
    root: Path
    policy: Policy
    out: Path
    sha: str
    instance: TestSigstoreInstance
    emulator: GitHubEmulator
    # The run's identity as the linux producer job's certificate carries it.
    identity: GitHubIdentity
    env: dict[str, str]
    # main's head, read by each producer job through the API: the run job's source gate, the sign job's re-check.
    head_reads_by_run_job: int = 0
    head_reads_by_sign_job: int = 0
    # The producer jobs of the last produce_in_two_jobs, by platform.
    jobs: dict[str, TwoJobs] = field(default_factory=dict)
    # Each platform's signer when it is not this repository's own produce-PLATFORM.yml (a team's chain: the
    # builder's file at its tag), and the aggregate's likewise.
    platform_identities: dict[str, GitHubIdentity] | None = None
    aggregate_signer: GitHubIdentity | None = None

    @property
    def evidence(self) -> Path:
        return self.out / "evidence"

    @property
    def artifacts(self) -> list[Path]:
        return sorted((self.out / "artifacts").iterdir())

    @property
    def aggregate_identity(self) -> GitHubIdentity:
        return self.aggregate_signer or aggregate_identity(self.identity)

    def signer(self, identity: GitHubIdentity | None = None) -> SigstoreSigner:
        who = identity or self.identity
        return SigstoreSigner(lambda payload: self.instance.issue_dsse_bundle(
            payload, extensions=who.extensions, san_uri=who.san_uri))


def github_policy(root: Path, instance: TestSigstoreInstance, app_source: Path) -> Path:
    """policies/release.toml, re-pointed at the test repository, root and checkout; linux only."""
    text = (REPO / "policies" / "release.toml").read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        value = {
            "repository": f'"{REPOSITORY}"',
            "trusted_root": f'"{instance.trusted_root_path.as_posix()}"',
            "trusted_root_sha256": f'"{instance.trusted_root_sha256}"',
            "source": f'"{app_source.as_posix()}"',
            "required": '["linux"]',
        }.get(key)
        lines.append(f"{key} = {value}" if value is not None and "=" in line else line)
    policy = root / "release-test.toml"
    policy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return policy


def actions_env(chain_sha: str, api_url: str, *, ref: str = "refs/heads/main", attempt: int = 1,
                event: str = "push", repository: str = REPOSITORY) -> dict[str, str]:
    # GITHUB_WORKFLOW_REF is the caller's even inside a called workflow, another repository's included.
    return {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": repository,
        "GITHUB_REF": ref,
        "GITHUB_SHA": chain_sha,
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": str(attempt),
        "GITHUB_WORKFLOW_REF": f"{repository}/{WORKFLOW}@{ref}",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_API_URL": api_url,
        "GITHUB_TOKEN": DEFAULT_TOKEN,
        "RUNNER_ENVIRONMENT": "github-hosted",
    }


# What GitHub gives a job that may mint an OIDC token (`id-token: write`), and sigstore-python's own
# variable for a token handed in: a job without the permission has none of them.
OIDC_VARIABLES = ("ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "SIGSTORE_ID_TOKEN")
# What produce-PLATFORM.yml's run job uploads (out/unsigned/, out/artifacts/) and its sign job downloads into run/.
HANDED_ON = ("unsigned", "artifacts")


def _main(chain: GitHubChain) -> str:
    """The API path of the chain's repository's main branch, whose reads the jobs are counted by."""
    return f"/repos/{chain.env['GITHUB_REPOSITORY']}/branches/main"


def sign_job_env(env: Mapping[str, str], api_url: str) -> dict[str, str]:
    """The sign job's environment: the run's Actions context and the OIDC request variables of `id-token: write`.

    Offline no token is ever fetched (the test instance signs): the request URL points at a path the emulator
    does not serve, so anything that tried to use it would fail loudly.
    """
    return {**env, "ACTIONS_ID_TOKEN_REQUEST_URL": f"{api_url}/_no-oidc-offline",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "offline-not-a-token"}


def run_job_env(env: Mapping[str, str]) -> dict[str, str]:
    """The run job's environment: the same Actions context with no way to ask for an OIDC token (checked)."""
    run_env = {key: value for key, value in env.items() if key not in OIDC_VARIABLES}
    leaked = sorted(key for key in run_env if key in OIDC_VARIABLES or "ID_TOKEN" in key.upper())
    assert not leaked, f"the run job's environment may mint an OIDC token: {leaked}"
    return run_env


class NoSigner:
    """What the run job holds instead of a signer: any use of it fails the run (it has no identity to sign as)."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the run job used a signer ({name}): it has no OIDC token and must sign nothing")


@dataclass(frozen=True)
class TwoJobs:
    """One platform's producer jobs: the run job's result and folder, the sign job's result and its download."""

    run: ProduceResult
    signed: ProduceResult | None
    run_out: Path
    run_in: Path
    seconds: tuple[float, float]


def hand_on(run_out: Path, run_in: Path) -> None:
    """upload-artifact then download-artifact: only out/unsigned/ and out/artifacts/ reach the sign job."""
    shutil.rmtree(run_in, ignore_errors=True)
    run_in.mkdir(parents=True)
    for name in HANDED_ON:
        shutil.copytree(run_out / name, run_in / name, symlinks=True)


def produce_in_two_jobs(chain: GitHubChain, platform: str = "linux", *,
                        log: Callable[[str], None] | None = None) -> TwoJobs:
    """produce-PLATFORM.yml offline: the run job (no OIDC variables, no signer), then the sign job, into chain.out.

    The run job writes its own folder (``chain.root/run-job-PLATFORM``); the sign job reads only what the run
    job's artifact carries (``chain.root/sign-job-PLATFORM/run``) and writes ``chain.out`` (evidence/,
    artifacts/), which the aggregate reads. The sign job is not run when the run job's folder holds no run.
    """
    from desktop_qualify import producer

    say = log or (lambda message: None)
    run_out = chain.root / f"run-job-{platform}"
    run_in = chain.root / f"sign-job-{platform}" / "run"
    sign_env = sign_job_env(chain.env, chain.emulator.api_url)
    run_env = run_job_env(sign_env)
    reads = len(chain.emulator.calls(_main(chain)))
    say(f"run job ({platform}, contents: read; no {', '.join(OIDC_VARIABLES)}): qualify produce --unsigned "
        f"into {run_out}")
    started = time.monotonic()
    ran = producer.produce(chain.policy, platform, run_out, env=run_env, signer=NoSigner(), sign=False)
    run_seconds = time.monotonic() - started
    chain.head_reads_by_run_job = len(chain.emulator.calls(_main(chain))) - reads
    say(f"run job ({platform}): stages {'passed' if ran.passed else 'failed: ' + ', '.join(ran.failures)}; "
        f"main's head read {chain.head_reads_by_run_job}x")
    if not (run_out / "unsigned").is_dir():
        chain.jobs[platform] = TwoJobs(ran, None, run_out, run_in, (run_seconds, 0.0))
        return chain.jobs[platform]
    hand_on(run_out, run_in)
    identity = (chain.platform_identities or {}).get(platform) or platform_identity(chain.identity, platform)
    say(f"sign job ({platform}, id-token: write as {identity.san_uri}): qualify sign --run {run_in} "
        f"--out {chain.out}")
    reads = len(chain.emulator.calls(_main(chain)))
    started = time.monotonic()
    signed = producer.sign_run(chain.policy, platform, run_in, chain.out, env=sign_env, signer=chain.signer(identity))
    sign_seconds = time.monotonic() - started
    chain.head_reads_by_sign_job = len(chain.emulator.calls(_main(chain))) - reads
    say(f"sign job ({platform}): signed {signed.statement}; main's head read {chain.head_reads_by_sign_job}x")
    chain.jobs[platform] = TwoJobs(ran, signed, run_out, run_in, (run_seconds, sign_seconds))
    return chain.jobs[platform]
