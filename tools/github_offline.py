"""The whole GitHub-mode chain on this machine, with no network: `nox -s qualify-github-offline`.

The loopback GitHub REST emulator (tests/support/github_emulator.py) answers the source gate and the
release gate; the test Sigstore instance (tests/support/sigstore_instance*.py) signs every statement
keylessly for `acme/desktop` on `refs/heads/main`, each job with its own identity as Fulcio shapes it for
reusable workflows: the linux statement as `produce-linux.yml` called by `qualify.yml`, the aggregate as
`aggregate.yml` called by it. The real producer runs as produce-linux.yml's two jobs: the run job (the
PyInstaller build, install, launch and journey, `qualify produce --unsigned`) with an environment that holds
no OIDC variable and no signer, then the sign job (`qualify sign`: the run job's artifact re-hashed, its claims
checked against the sign job's own context, main's head read again, then signed as produce-linux.yml) on
only what the run job's artifact carries; then the aggregate, then `qualify verify` as the
release gate in a child process, exactly as the end-to-end tests' `github_chain` fixture does. Every bundle
(the platform statement, its SLSA provenance, the aggregate) is then stored through the emulator's
attestation API, as the aggregate job stores them on GitHub, and the release gate runs again on what the
store hands back (`qualify verify --from-attestations`).

Writes OUT (default qualification-out-github/): evidence/, artifacts/, the instance's trusted_root.json,
the policy the run was judged by (policies/release-test.toml, pinning ../trusted_root.json, so the run can be
checked again offline: `qualify audit --policy OUT/policies/release-test.toml --evidence OUT/evidence`),
signer-identity.json (the issuer and the exact certificate SAN demanded of each bundle), decision.json,
summary.md, and the gate's Verification Summary Attestations (verification-summary.intoto.jsonl, one bundle
file each in summaries/, signed as release-gate.yml called by release.yml and stored through the emulator's
attestation API).
Everything is written into a staging folder beside OUT first; OUT (the last good run) is
replaced only when the new run is QUALIFIED, so a failed run loses nothing.
Exits with the verdict's code (0 = QUALIFIED).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the offline GitHub chain is built from the test support code
sys.path.insert(0, str(ROOT))

from desktop_qualify.qualify_github import GitHubClient, store_evidence  # noqa: E402
from desktop_qualify.qualify_policy import load_policy  # noqa: E402
from desktop_qualify.qualify_verify import verify_release  # noqa: E402
from support.chain import make_app_repo  # noqa: E402
from support.github_chain import (  # noqa: E402
    GATE_CALLER,
    GATE_WORKFLOW,
    REPOSITORY,
    WORKFLOW,
    GitHubChain,
    actions_env,
    github_policy,
    platform_identity,
    produce_in_two_jobs,
)
from support.github_emulator import Branch, GitHubEmulator  # noqa: E402
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance  # noqa: E402

from desktop_qualify import aggregate, consumer  # noqa: E402
from tools.staging import staging_folder, swap_into_place  # noqa: E402

RUN_ID = 4242


def _log(message: str) -> None:
    print(f"github-offline: {message}", flush=True)


# Where the run's policy is kept, relative to OUT: it pins the trusted root kept beside it.
POLICY = "policies/release-test.toml"


def _kept_policy(made: Path, out: Path, trusted_root: Path) -> Path:
    """The test policy, kept in OUT with its trusted root: the run can be checked again once the scratch is gone."""
    shutil.copyfile(trusted_root, out / "trusted_root.json")
    kept = out / POLICY
    kept.parent.mkdir(parents=True, exist_ok=True)
    lines = ['trusted_root = "../trusted_root.json"' if line.split("=", 1)[0].strip() == "trusted_root" else line
             for line in made.read_text(encoding="utf-8").splitlines()]
    kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return kept


# The release gate's own run: release-gate.yml called by release.yml on main, dispatched by hand, as the policy's
# [verifier] names it.
RELEASE_TAG = "v0.0.0-offline"


def _summaries(chain: GitHubChain, out: Path, sha: str, env: dict[str, str]) -> dict[str, str]:
    """The gate's VSAs, signed as release-gate.yml called by release.yml: written, checked with verify-vsa, stored.

    ``qualify verify --vsa`` signs with the job's OIDC token, which no offline run has: the same verdict is
    taken here in-process and the same writer signs it with the test instance. Each summary is then checked
    by the real CLI, split into one bundle file per summary (summaries/, for sigstore-js) and stored through
    the emulator's attestation API as release.yml does. Returns each bundle file's certificate SAN.
    """
    gate = GitHubIdentity(repository=REPOSITORY, workflow=GATE_CALLER, signer_workflow=GATE_WORKFLOW, sha=sha,
                          run_id=RUN_ID + 1, attempt=1, trigger="workflow_dispatch", workflow_name="release-gate")
    verdict = verify_release(chain.policy, [chain.evidence], chain.artifacts, candidate_sha=sha)
    decision = consumer.decide(verdict, chain.policy, policy_path=POLICY, mode="release-gate")
    path = out / "verification-summary.intoto.jsonl"
    consumer.SummaryWriter(path, chain.signer(gate)).write(
        consumer.summary_statements(verdict, chain.policy, decision, release_tag=RELEASE_TAG))
    for artifact in chain.artifacts:
        subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", "verify-vsa", "--policy", POLICY,
                        "--artifact", str(artifact.relative_to(out)), path.name], cwd=out, check=True)
    folder = out / "summaries"
    folder.mkdir()
    names = {}
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        (folder / f"summary-{number}.sigstore.json").write_bytes(line + b"\n")
        names[f"summary-{number}.sigstore.json"] = gate.san_uri
    subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_github", "store-attestations", "--evidence",
                    str(folder)], env={**env, "GITHUB_REPOSITORY": REPOSITORY}, check=True)
    _log(f"gate signer {gate.san_uri}: {len(names)} verification summaries, stored as attestations")
    return names


def run(out: Path, work: Path) -> int:
    """The offline GitHub-mode chain into ``out``, with ``work`` as its scratch folder; the exit status."""
    timings: list[tuple[str, float]] = []
    started = time.monotonic()
    sha = make_app_repo(work / "repo")
    instance = TestSigstoreInstance(work / "sigstore")
    emulator = GitHubEmulator().start()
    try:
        emulator.repo(REPOSITORY).branches["main"] = Branch(sha=sha, protected=True, required_checks=True)
        policy = load_policy(_kept_policy(github_policy(work, instance, work / "repo" / "reference_app"), out,
                                          instance.trusted_root_path))
        identity = platform_identity(GitHubIdentity(repository=REPOSITORY, workflow=WORKFLOW, sha=sha, run_id=RUN_ID,
                                                    attempt=1), "linux")
        chain = GitHubChain(work, policy, out, sha, instance, emulator, identity,
                            actions_env(sha, emulator.api_url))
        _log(f"candidate {sha} of {REPOSITORY}; GitHub API emulated at {emulator.api_url}")
        _log(f"linux signer {identity.san_uri}, called by {identity.build_config_uri} (issuer {identity.issuer})")
        _log(f"aggregate signer {chain.aggregate_identity.san_uri}")
        timings.append(("setup", time.monotonic() - started))

        # produce-linux.yml: the run job (the app's code runs there, no OIDC token), then the sign job.
        jobs = produce_in_two_jobs(chain, "linux", log=_log)
        timings += [("run job linux", jobs.seconds[0]), ("sign job linux", jobs.seconds[1])]
        if jobs.signed is None or not jobs.run.passed or not jobs.signed.passed:
            _log(f"produce failed: run job {jobs.run.failures}, sign job "
                 f"{'not run' if jobs.signed is None else jobs.signed.failures}")
            return 1

        started = time.monotonic()
        combined = aggregate.aggregate(policy, [chain.evidence], chain.evidence,
                                   signer=chain.signer(chain.aggregate_identity))
        timings.append(("aggregate", time.monotonic() - started))
        if combined.written is None:
            _log(f"aggregate refused: {combined.reasons}")
            return 1

        # The identity each statement must carry, for other verifiers (nox -s interop) to demand exactly.
        # The provenance is signed by the platform job that signed the platform statement.
        sans = {"platform-linux.sigstore.json": identity.san_uri,
                "provenance-linux.sigstore.json": identity.san_uri,
                "aggregate.sigstore.json": chain.aggregate_identity.san_uri}
        (out / "signer-identity.json").write_text(json.dumps(
            {"issuer": identity.issuer, "subjectAlternativeNames": sans}, indent=2) + "\n", encoding="utf-8")
        # The release gate, as a user runs it: the CLI in a child, reading main's live head from the emulator.
        started = time.monotonic()
        # Run from OUT with paths relative to it: the decision names the policy where it is kept.
        args = [sys.executable, "-m", "desktop_qualify.qualify_cli", "verify", "--policy", POLICY,
                "--evidence", "evidence", "--sha", sha]
        for artifact in chain.artifacts:
            args += ["--artifact", str(artifact.relative_to(out))]
        args += ["--json", "decision.json", "--summary", "summary.md"]
        env = {**os.environ, "GITHUB_API_URL": emulator.api_url, "GITHUB_TOKEN": chain.env["GITHUB_TOKEN"]}
        code = subprocess.run(args, env=env, cwd=out, check=False).returncode
        timings.append(("verify", time.monotonic() - started))
        if code == 0:
            code = _after_the_gate(chain, env, out, sha, sans=sans, timings=timings)
    finally:
        emulator.stop()
    for name, seconds in timings:
        _log(f"{name:<16} {seconds:6.1f}s")
    if code == 0:
        _log("QUALIFIED")
    else:
        _log(f"not qualified (exit {code}); see {out / 'summary.md'}")
    return code


def _after_the_gate(chain: GitHubChain, env: dict[str, str], out: Path, sha: str, *, sans: dict[str, str],
                    timings: list[tuple[str, float]]) -> int:
    """Once the gate passed: the same gate on what the attestation store hands back, then the gate's VSAs."""
    started = time.monotonic()
    code = _gate_on_attestation_store(chain, env, out, sha)
    timings.append(("store + verify", time.monotonic() - started))
    if code != 0:
        return code
    started = time.monotonic()
    sans.update(_summaries(chain, out, sha, env))
    (out / "signer-identity.json").write_text(json.dumps(
        {"issuer": chain.identity.issuer, "subjectAlternativeNames": sans}, indent=2) + "\n", encoding="utf-8")
    timings.append(("vsa", time.monotonic() - started))
    return 0


def _gate_on_attestation_store(chain: GitHubChain, env: dict[str, str], out: Path, sha: str) -> int:
    """Store every bundle through the emulator's attestation API, then gate on what the store hands back."""
    with GitHubClient.from_env(chain.env) as client:
        stored = store_evidence(client, REPOSITORY, chain.evidence)
    _log("stored as attestations: " + ", ".join(f"{s.file} (id {s.attestation_id})" for s in stored))
    args = [sys.executable, "-m", "desktop_qualify.qualify_cli", "verify", "--policy", POLICY,
            "--from-attestations", "--sha", sha]
    for artifact in chain.artifacts:
        args += ["--artifact", str(artifact.relative_to(out))]
    return subprocess.run(args, env=env, cwd=out, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the chain; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "qualification-out-github")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the scratch folder (test repository, policy, instance keys are not kept)")
    options = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        _log("the offline GitHub chain builds the linux bundle: run it on linux")
        return 2
    out: Path = options.out.resolve()
    staging = staging_folder(out)
    staging.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="qualify-github-offline-"))
    try:
        code = run(staging, work)
        if code == 0:
            swap_into_place(staging, out)
            _log(f"{out} replaced by this run; re-check it offline with: qualify audit --policy {out / POLICY} "
                 f"--evidence {out / 'evidence'}")
        else:
            _log(f"{out} left as it was; this run's output is in {staging}")
        return code
    finally:
        if options.keep_work:
            _log(f"scratch kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
