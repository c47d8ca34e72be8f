"""A team's repository qualified by this project's reusable workflows at a tag, offline (nox -s qualify-team-offline).

The session makes a scratch team repository (tests/support/github_team.py: Qt Notes, the second example app;
the team's policy at its conventional path, policies/release.toml; and the one caller workflow,
docs/examples/team-qualify.yml, calling desktop-qualify's produce-*.yml and aggregate.yml at
refs/tags/vX.Y.Z), then runs GitHub mode for it on the machinery of `nox -s qualify-github-offline`: the
loopback GitHub emulator answers the team's source gate, the test Sigstore instance signs each job as Fulcio
shapes a call into another repository (build signer: desktop-qualify's file at the tag and that tag's
commit; source: the team's repository, main and commit; build config: the team's qualify.yml), the real
producer runs as produce-linux.yml's run job (no OIDC variable, no signer) and sign job, then the aggregate
(signed as aggregate.yml at the tag), then `qualify verify` as the release gate in a child process.

Writes OUT (default qualification-out-team/): evidence/, artifacts/, the instance's trusted_root.json, the
policy the run was judged by (policies/release-test.toml), signer-identity.json (the exact certificate SAN
demanded of each bundle, and the team's source), decision.json and summary.md. OUT is replaced only when the
new run is QUALIFIED. Exits with the verdict's code (0 = QUALIFIED).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the offline chain is built from the test support code
sys.path.insert(0, str(ROOT))

from desktop_qualify.qualify_policy import load_policy  # noqa: E402
from support.github_chain import GitHubChain, actions_env, produce_in_two_jobs  # noqa: E402
from support.github_emulator import Branch, GitHubEmulator  # noqa: E402
from support.github_team import (  # noqa: E402
    BUILDER_COMMIT,
    BUILDER_REF,
    BUILDER_REPOSITORY,
    TEAM_REPOSITORY,
    make_team_repo,
    team_identity,
)
from support.sigstore_instance import TestSigstoreInstance  # noqa: E402

from desktop_qualify import aggregate  # noqa: E402
from tools.staging import staging_folder, swap_into_place  # noqa: E402

RUN_ID = 5151
# Where the run's policy is kept, relative to OUT: it pins the trusted root kept beside it.
POLICY = "policies/release-test.toml"


def _log(message: str) -> None:
    print(f"team-offline: {message}", flush=True)


def _kept_policy(made: Path, out: Path, trusted_root: Path) -> Path:
    """The run's policy, kept in OUT with its trusted root: the run can be checked again once the scratch is gone."""
    shutil.copyfile(trusted_root, out / "trusted_root.json")
    kept = out / POLICY
    kept.parent.mkdir(parents=True, exist_ok=True)
    lines = ['trusted_root = "../trusted_root.json"' if line.split("=", 1)[0].strip() == "trusted_root" else line
             for line in made.read_text(encoding="utf-8").splitlines()]
    kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return kept


def run(out: Path, work: Path) -> int:
    """The team's GitHub-mode chain into ``out``, with ``work`` as its scratch folder; the exit status."""
    instance = TestSigstoreInstance(work / "sigstore")
    repo = work / "team"
    sha, made = make_team_repo(repo, work, instance)
    _log(f"team repository {TEAM_REPOSITORY} at {repo}: commit {sha} on main")
    caller = (repo / ".github" / "workflows" / "qualify.yml").read_text(encoding="utf-8")
    for line in caller.splitlines():
        if line.strip().startswith("uses:"):
            _log(f"caller workflow .github/workflows/qualify.yml: {line.strip()}")
    emulator = GitHubEmulator().start()
    try:
        emulator.repo(TEAM_REPOSITORY).branches["main"] = Branch(sha=sha, protected=True, required_checks=True)
        policy = load_policy(_kept_policy(made, out, instance.trusted_root_path))
        linux = team_identity(sha, "linux", run_id=RUN_ID)
        chain = GitHubChain(work, policy, out, sha, instance, emulator, linux,
                            {**actions_env(sha, emulator.api_url, repository=TEAM_REPOSITORY),
                             "GITHUB_RUN_ID": str(RUN_ID)},
                            platform_identities={"linux": linux},
                            aggregate_signer=team_identity(sha, "aggregate", run_id=RUN_ID))
        _log(f"source: {linux.extensions['1.3.6.1.4.1.57264.1.12']} ref {linux.ref} commit {sha} "
             f"(build config {linux.build_config_uri})")
        _log(f"builder: {BUILDER_REPOSITORY} at {BUILDER_REF} (commit {BUILDER_COMMIT}); "
             f"GitHub API emulated at {emulator.api_url}")
        _log(f"linux signer identity {linux.san_uri}")
        _log(f"aggregate signer identity {chain.aggregate_identity.san_uri}")

        jobs = produce_in_two_jobs(chain, "linux", log=_log)
        if jobs.signed is None or not jobs.run.passed or not jobs.signed.passed:
            _log(f"produce failed: run job {jobs.run.failures}, sign job "
                 f"{'not run' if jobs.signed is None else jobs.signed.failures}")
            return 1
        combined = aggregate.aggregate(policy, [chain.evidence], chain.evidence,
                                       signer=chain.signer(chain.aggregate_identity))
        if combined.written is None:
            _log(f"aggregate refused: {combined.reasons}")
            return 1
        sans = {"platform-linux.sigstore.json": linux.san_uri, "provenance-linux.sigstore.json": linux.san_uri,
                "aggregate.sigstore.json": chain.aggregate_identity.san_uri}
        (out / "signer-identity.json").write_text(json.dumps(
            {"issuer": linux.issuer, "subjectAlternativeNames": sans,
             "sourceRepositoryURI": f"https://github.com/{TEAM_REPOSITORY}", "sourceRepositoryRef": linux.ref,
             "sourceRepositoryDigest": sha}, indent=2) + "\n", encoding="utf-8")
        # The release gate, as a team runs it: the CLI in a child, reading main's live head from the emulator.
        args = [sys.executable, "-m", "desktop_qualify.qualify_cli", "verify", "--policy", POLICY,
                "--evidence", "evidence", "--sha", sha, "--json", "decision.json", "--summary", "summary.md"]
        for artifact in chain.artifacts:
            args += ["--artifact", str(artifact.relative_to(out))]
        env = {**os.environ, "GITHUB_API_URL": emulator.api_url, "GITHUB_TOKEN": chain.env["GITHUB_TOKEN"]}
        code = subprocess.run(args, env=env, cwd=out, check=False).returncode
    finally:
        emulator.stop()
    if code == 0:
        _log(f"QUALIFIED: {TEAM_REPOSITORY}@{sha}, signed by {BUILDER_REPOSITORY}'s workflows at {BUILDER_REF}")
    else:
        _log(f"not qualified (exit {code}); see {out / 'summary.md'}")
    return code


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the team's chain; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "qualification-out-team")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch folder (the team repository)")
    options = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        _log("the team's app is a Debian package built and driven on linux: run it on linux")
        return 2
    out: Path = options.out.resolve()
    staging = staging_folder(out)
    staging.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="qualify-team-offline-"))
    try:
        code = run(staging, work)
        if code == 0:
            swap_into_place(staging, out)
            _log(f"{out} replaced by this run")
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
