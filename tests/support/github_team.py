"""A team's repository that calls desktop-qualify's reusable workflows at a tag, offline.

The team's repository (``TEAM_REPOSITORY``) holds its app (Qt Notes, the second example app), its policy at
the conventional path
(``policies/release.toml``) and one caller workflow, docs/examples/team-qualify.yml with the tag filled
in. Its certificates, as Fulcio shapes a call into another repository: the build signer (.9, the SAN)
is desktop-qualify's file at ``refs/tags/vX.Y.Z`` and its digest (.10) that tag's commit; the source
repository, ref and commit (.12 to .14) and the build config (.18, .19) are the team's.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace
from pathlib import Path

from desktop_qualify.qualify_trust import team_workflows
from desktop_qualify.qualify_trust.team_workflows import TEAM_QUALIFY_PATH, TEAM_RELEASE_PATH

from desktop_qualify import __version__
from support.chain import REPO, git
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

#: desktop-qualify's own repository, whose reusable workflows sign for every team (policies/release.toml's).
BUILDER_REPOSITORY = team_workflows.BUILDER_REPOSITORY
#: the release tag a team calls them at: this version's
BUILDER_TAG = f"v{__version__}"
BUILDER_REF = f"refs/tags/{BUILDER_TAG}"
#: the commit that tag names in the offline runs (a fixed value: the builder's repository is not cloned offline)
BUILDER_COMMIT = "5eed0000c0ffee00000000000000000000000001"
TEAM_REPOSITORY = "acme-team/notes"
#: the team's caller workflow (the build config, .18) and its release gate caller, at their conventional paths
TEAM_WORKFLOW = TEAM_QUALIFY_PATH
TEAM_RELEASE_WORKFLOW = TEAM_RELEASE_PATH
#: the canonical caller workflows a team commits (``qualify init`` writes them): the tag is their one blank
CALLER_TEMPLATE = REPO / "docs" / "examples" / "team-qualify.yml"
RELEASE_CALLER_TEMPLATE = REPO / "docs" / "examples" / "team-release.yml"
#: the builder's files that sign, as the team's policy names them ([producer.signers], [verifier] workflow)
SIGNERS = team_workflows.SIGNERS
GATE = team_workflows.GATE


def caller_workflow(tag: str = BUILDER_TAG, template: Path = CALLER_TEMPLATE) -> str:
    """The caller workflow's text with ``tag`` filled in (every ``uses:`` names desktop-qualify at it), as the
    package renders it for ``qualify init`` (docs/examples holds the same text, drift-tested)."""
    path = TEAM_RELEASE_PATH if template == RELEASE_CALLER_TEMPLATE else TEAM_QUALIFY_PATH
    return team_workflows.caller_workflow(tag, path)


def team_identity(sha: str, platform_or_aggregate: str, *, run_id: int = 4242, tag_ref: str = BUILDER_REF,
                  repository: str = TEAM_REPOSITORY, builder_commit: str = BUILDER_COMMIT) -> GitHubIdentity:
    """The certificate identity of a job of desktop-qualify's ``platform_or_aggregate`` workflow, called by the
    team's qualify.yml at ``tag_ref``, for ``repository``'s commit ``sha``."""
    return GitHubIdentity(repository=repository, workflow=TEAM_WORKFLOW, sha=sha, run_id=run_id, attempt=1,
                          signer_workflow=SIGNERS[platform_or_aggregate], signer_repository=BUILDER_REPOSITORY,
                          signer_ref=tag_ref, signer_sha=builder_commit)


def gate_identity(sha: str, *, run_id: int) -> GitHubIdentity:
    """desktop-qualify's release gate at the tag, called by the team's release.yml (dispatched by hand)."""
    return replace(team_identity(sha, "aggregate", run_id=run_id), workflow=TEAM_RELEASE_WORKFLOW,
                   signer_workflow=GATE, trigger="workflow_dispatch", workflow_name="release")


#: The team's app: the second example app (examples/qt-notes), laid out at the root of its repository.
TEAM_APP = REPO / "examples" / "qt-notes"
_APP_FILES = ("build.py", "journey", "qt_notes")


def team_policy_text(trusted_root: str, trusted_root_sha256: str, *, app_source: str = "..",
                     builder_commit: str | None = BUILDER_COMMIT, tag: str = BUILDER_TAG) -> str:
    """policies/release.toml as a team writes it: Qt Notes' own policy in GitHub mode, its source this
    repository, its signers desktop-qualify's reusable workflows at the tag (and that tag's commit)."""
    app = TEAM_APP.joinpath("policy.toml").read_text(encoding="utf-8")
    # Everything from [source] on is the app's own (build, install, probe, journey, confinement...).
    body = app[app.index("[source]"):].replace('source = "."', f'source = "{app_source}"')
    # A release policy refuses a dirty tree (the example's local policy allows one for a checkout in progress).
    body = body.replace("require_clean_worktree = false", "require_clean_worktree = true", 1)
    head = f"""# {TEAM_REPOSITORY}'s release policy: Qt Notes qualified in GitHub mode by desktop-qualify's
# reusable workflows, which its .github/workflows/qualify.yml calls at {tag}.
version = 2
name = "notes-release"

"""
    identity = team_workflows.policy_identity(TEAM_REPOSITORY, tag, commit=builder_commit,
                                              trusted_root=trusted_root, trusted_root_sha256=trusted_root_sha256)
    return head + identity + "\n" + body


def make_team_repo(repo: Path, root: Path, instance: TestSigstoreInstance) -> tuple[str, Path]:
    """The team's scratch repository: Qt Notes, its policy and its caller workflows, committed on main.

    Returns the commit and the policy the run is judged by: the committed one (which pins the production
    trusted root beside it) with the test instance's trusted root and this checkout's app, as
    ``github_policy`` re-points the repository's own.
    """
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "team@desktop-qualify.invalid")
    git(repo, "config", "user.name", "team")
    for name in _APP_FILES:
        source = TEAM_APP / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(source, repo / name)
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "qualify.yml").write_text(caller_workflow(), encoding="utf-8")
    (workflows / "release.yml").write_text(caller_workflow(template=RELEASE_CALLER_TEMPLATE), encoding="utf-8")
    policies = repo / "policies"
    shutil.copytree(REPO / "policies" / "sigstore", policies / "sigstore")
    production = policies / "sigstore" / "trusted_root.production.json"
    (policies / "release.toml").write_text(team_policy_text(
        "sigstore/trusted_root.production.json", hashlib.sha256(production.read_bytes()).hexdigest()),
        encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the team's app, policy and caller workflows")
    policy = root / "team-release-test.toml"
    policy.write_text(team_policy_text(instance.trusted_root_path.as_posix(), instance.trusted_root_sha256,
                                       app_source=repo.as_posix()), encoding="utf-8")
    return git(repo, "rev-parse", "HEAD"), policy
