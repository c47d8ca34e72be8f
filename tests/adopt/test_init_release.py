"""`qualify init` and the GitHub-mode release policy: policies/release.toml, the trusted root it pins and the
release gate's caller, written when the team's OWNER/NAME is known (`--repository`, else origin's github.com
URL, else asked on a terminal), or later with `qualify init --only release-policy`.

What init writes is held to what a team's offline GitHub-mode chain is judged by (tests/support/github_team.py):
the same identity, and certificates of that chain accepted or refused alike.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_init import _cli, _init, _render
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import GitHubIdentity
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow, check_identity
from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate
from desktop_qualify.qualify_trust.team_workflows import TEAM_RELEASE_PATH, caller_workflow
from support.chain import REPO, git
from support.sigstore_instance import GitHubIdentity as TeamIdentity
from support.sigstore_instance import TestSigstoreInstance

from desktop_qualify import __version__

TAG = f"v{__version__}"
RELEASE = "policies/release.toml"
ROOT = "policies/sigstore/trusted_root.production.json"
RELEASE_FILES = [RELEASE, ROOT, TEAM_RELEASE_PATH]


def qualify(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # stdin is not a terminal: init asks nothing.
    return subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def _repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    if origin is not None:
        git(path, "remote", "add", "origin", origin)
    return path


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def _refused(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"{Code.USAGE.value}: "), done.stderr
    assert message in done.stderr, done.stderr


def test_with_repository_init_writes_a_github_mode_policy_pinning_the_tag_the_source_and_the_root(
        tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes")
    done = qualify("init", "--kind", "deb", "--repository", "acme/notes", "--upstream", "acme/dq", cwd=repo)
    assert done.returncode == 0, done.stderr
    for path in RELEASE_FILES:
        assert f"wrote {path}" in done.stdout.splitlines()
    assert f"release policy for acme/notes: acme/dq's workflows at {TAG}" in done.stdout
    policy = load_policy(repo / RELEASE, repo)
    assert policy.mode == "github"
    producer = policy.file.producer
    assert (producer.repository, producer.workflow, producer.ref) == \
        ("acme/notes", ".github/workflows/qualify.yml", "refs/heads/main")
    assert producer.builder is not None
    assert producer.builder.model_dump() == {"repository": "acme/dq", "ref": f"refs/tags/{TAG}", "commit": None}
    trust = policy.sigstore
    assert trust is not None
    copied = (repo / ROOT).read_bytes()
    assert copied == (REPO / "policies" / "sigstore" / "trusted_root.production.json").read_bytes()
    assert trust.trusted_root == "sigstore/trusted_root.production.json"
    assert trust.trusted_root_sha256 == hashlib.sha256(copied).hexdigest()
    assert policy.resolve_pinned(trust.trusted_root) == (repo / ROOT).resolve()
    # The app is the local policy's, on every platform its kind installs on (a .deb: Linux).
    local = load_policy(repo / "policies" / "qualify.toml", repo)
    assert policy.file.app == local.file.app
    assert policy.required_platforms == ("linux",)
    # The gate's caller calls the same repository at the same tag as qualify.yml.
    calls = {job["uses"] for name in ("qualify.yml", "release.yml")
             for job in yaml.safe_load((repo / ".github" / "workflows" / name).read_text("utf-8"))["jobs"].values()}
    assert calls == {f"acme/dq/.github/workflows/{f}.yml@{TAG}" for f in ("produce-linux", "aggregate",
                                                                          "release-gate")}
    assert (repo / TEAM_RELEASE_PATH).read_text("utf-8") == caller_workflow(TAG, TEAM_RELEASE_PATH,
                                                                             builder="acme/dq")


@pytest.mark.parametrize(("url", "found"), [
    ("https://github.com/acme/notes.git", "acme/notes"),
    ("https://github.com/acme/notes", "acme/notes"),
    ("https://ci-bot@github.com/acme/notes.git", "acme/notes"),
    ("git@github.com:acme/notes.git", "acme/notes"),
    ("git@github.com:acme/my.notes", "acme/my.notes"),
    ("ssh://git@github.com/acme/notes.git", "acme/notes"),
    ("ssh://git@github.com:22/acme/notes.git", "acme/notes"),
    ("https://gitlab.com/acme/notes.git", None),
    ("git@gitlab.com:acme/notes.git", None),
    ("https://github.com.example.org/acme/notes.git", None),
    ("https://github.com/acme/notes/tree/main", None),
    ("/srv/git/notes.git", None),
])
def test_origin_is_read_only_when_it_is_a_github_url(tmp_path: Path, url: str, found: str | None) -> None:
    assert _init.origin_repository(_repo(tmp_path / "repo", url)) == found


@pytest.mark.parametrize("url", ["https://github.com/acme/notes.git", "git@github.com:acme/notes.git",
                                 "ssh://git@github.com/acme/notes.git"])
def test_plain_init_takes_the_repository_from_a_github_origin(tmp_path: Path, url: str) -> None:
    repo = _repo(tmp_path / "notes", url)
    done = qualify("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert set(RELEASE_FILES) <= set(_tree(repo))
    assert load_policy(repo / RELEASE, repo).file.producer.repository == "acme/notes"


def test_a_non_github_origin_writes_no_release_policy_and_says_how_to(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes", "https://gitlab.com/acme/notes.git")
    done = qualify("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert not set(RELEASE_FILES) & set(_tree(repo))
    assert (f"{RELEASE} not written: no --repository, and origin is not a github.com URL; write it with "
            "'qualify init --only release-policy --repository OWNER/NAME'") in done.stdout.splitlines()


def test_with_no_terminal_and_no_repository_init_writes_what_it_always_did(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes")
    done = qualify("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert sorted(_tree(repo)) == [".github/workflows/qualify.yml", ".qualify/.gitignore", "journey/journey.py",
                                   "policies/qualify.toml"]
    assert f"{RELEASE} not written" in done.stdout


def test_only_release_policy_adds_it_later_from_the_committed_policy_and_workflow(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes")
    assert qualify("init", "--kind", "appimage", "--upstream", "acme/dq", cwd=repo).returncode == 0
    before = _tree(repo)
    done = qualify("init", "--only", "release-policy", "--repository", "acme/notes", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [*(f"wrote {p}" for p in RELEASE_FILES),
                                        f"release policy for acme/notes: acme/dq's workflows at {TAG}"]
    after = _tree(repo)
    assert sorted(set(after) - set(before)) == sorted(RELEASE_FILES)
    assert all(after[p] == before[p] for p in before)  # nothing init wrote before is touched
    policy = load_policy(repo / RELEASE, repo)
    assert policy.file.producer.builder is not None
    assert (policy.file.producer.builder.repository, policy.file.producer.builder.ref) == \
        ("acme/dq", f"refs/tags/{TAG}")
    assert policy.file.app == load_policy(repo / "policies" / "qualify.toml", repo).file.app
    assert policy.required_platforms == ("linux",)  # an AppImage installs on Linux alone
    assert "acme/dq/.github/workflows/release-gate.yml@" + TAG in after[TEAM_RELEASE_PATH].decode()
    # The same again refuses: it never overwrites, and names every file that is there (release.yml is kept).
    again = qualify("init", "--only", "release-policy", "--repository", "acme/notes", cwd=repo)
    policy_files = [p for p in RELEASE_FILES if p != TEAM_RELEASE_PATH]
    _refused(again, f"qualify init never overwrites a file: {', '.join(policy_files)} already exist(s)")
    assert _tree(repo) == after


def test_only_release_policy_pins_the_tag_the_caller_workflow_calls(tmp_path: Path) -> None:
    # A team that moved qualify.yml to another release (every line, one commit) gets a policy pinning that tag.
    repo = _repo(tmp_path / "notes", "git@github.com:acme/notes.git")
    assert qualify("init", "--repository", "acme/notes", cwd=repo).returncode == 0
    for path in RELEASE_FILES:
        (repo / path).unlink()
    workflow = repo / ".github" / "workflows" / "qualify.yml"
    workflow.write_text(workflow.read_text("utf-8").replace(f"@{TAG}", "@v9.8.7"), encoding="utf-8")
    assert qualify("init", "--only", "release-policy", cwd=repo).returncode == 0
    builder = load_policy(repo / RELEASE, repo).file.producer.builder
    assert builder is not None
    assert (builder.repository, builder.ref) == (_render.UPSTREAM, "refs/tags/v9.8.7")
    assert "release-gate.yml@v9.8.7 " in (repo / TEAM_RELEASE_PATH).read_text("utf-8")


def test_plain_init_keeps_a_release_workflow_of_the_teams_own(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / TEAM_RELEASE_PATH).write_text("name: ours\n", encoding="utf-8")
    done = qualify("init", "--repository", "acme/notes", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (repo / TEAM_RELEASE_PATH).read_text("utf-8") == "name: ours\n"
    assert f"wrote {TEAM_RELEASE_PATH}" not in done.stdout
    assert f"kept {TEAM_RELEASE_PATH} (it exists)" in done.stdout
    assert (repo / RELEASE).is_file()


def test_only_release_policy_keeps_a_release_workflow_of_the_teams_own(tmp_path: Path) -> None:
    # The same rule as a plain init: a team's own release.yml is kept, and the line says what it must call.
    repo = _repo(tmp_path / "notes")
    assert qualify("init", cwd=repo).returncode == 0
    (repo / ".github" / "workflows" / "release.yml").write_text("name: ours\n", encoding="utf-8")
    done = qualify("init", "--only", "release-policy", "--repository", "acme/notes", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (repo / TEAM_RELEASE_PATH).read_text("utf-8") == "name: ours\n"
    assert done.stdout.splitlines()[-1] == (
        f"kept {TEAM_RELEASE_PATH} (it exists): the release gate's caller must call "
        f"{_render.UPSTREAM}/.github/workflows/release-gate.yml@{TAG} from that path (the policy's [verifier] caller)")
    assert (repo / RELEASE).is_file()


@pytest.mark.parametrize(("setup", "args", "message"), [
    ("none", ["init", "--repository", "acme"], "--repository 'acme' is not OWNER/NAME"),
    ("none", ["init", "--repository", "acme/notes/x"], "is not OWNER/NAME"),
    ("init", ["init", "--only", "release-policy", "--repository", "acme/no tes"], "is not OWNER/NAME"),
    ("init", ["init", "--only", "release-policy", "--kind", "deb", "--repository", "acme/notes"],
     "--only release-policy takes the app from policies/qualify.toml, not from --kind"),
    ("init", ["init", "--only", "release-policy", "--example", "--repository", "acme/notes"], "not from --example"),
    ("none", ["init", "--only", "release-policy", "--repository", "acme/notes"],
     "--only release-policy takes the app from policies/qualify.toml, which is missing"),
    ("init", ["init", "--only", "release-policy"], "--only release-policy needs the team's GitHub repository"),
    ("two-tags", ["init", "--only", "release-policy", "--repository", "acme/notes"],
     ".github/workflows/qualify.yml calls 2 different repositories or tags"),
    ("init", ["init", "--only", "release-policy", "--repository", "acme/notes", "--upstream", "other/dq"],
     "--upstream other/dq but .github/workflows/qualify.yml calls desktop-qualify/desktop-qualify"),
    ("branch", ["init", "--only", "release-policy", "--repository", "acme/notes"], "is not a release tag vX.Y.Z"),
])
def test_what_it_cannot_honour_is_refused_with_a_code_and_nothing_is_written(
        tmp_path: Path, setup: str, args: list[str], message: str) -> None:
    repo = _repo(tmp_path / "notes")
    if setup != "none":
        assert qualify("init", cwd=repo).returncode == 0
    workflow = repo / ".github" / "workflows" / "qualify.yml"
    if setup == "two-tags":  # one line moved to another release, the others not
        text = workflow.read_text("utf-8")
        workflow.write_text(text.replace(f"aggregate.yml@{TAG}", "aggregate.yml@v9.9.9"), encoding="utf-8")
    if setup == "branch":
        workflow.write_text(workflow.read_text("utf-8").replace(f"@{TAG}", "@main"), encoding="utf-8")
    before = _tree(repo)
    _refused(qualify(*args, cwd=repo), message)
    assert _tree(repo) == before


def test_only_takes_nothing_but_release_policy(tmp_path: Path) -> None:
    done = qualify("init", "--only", "workflow", cwd=_repo(tmp_path / "notes"))
    assert done.returncode == 2
    assert f"{Code.USAGE.value}: argument --only: invalid choice: 'workflow'" in done.stderr  # argparse's, coded
    assert _cli.ONLY == _init.ONLY  # the command line's choices, repeated to keep it argparse alone
    with pytest.raises(QualificationError) as refused:
        _init.init(start=tmp_path / "notes", name=None, kind=None, display=None, journey=None, example=False,
                   upstream=None, interactive=False, only="workflow")
    assert refused.value.code == Code.USAGE


def test_on_a_terminal_it_asks_for_the_repository_when_origin_does_not_say(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "notes", "https://gitlab.com/acme/notes.git")
    answers = iter(["not a repo", "acme/notes"])
    asked: list[str] = []

    def read(prompt: str) -> str:
        asked.append(prompt)
        return next(answers)

    assert _init.team_repository(repo, None, interactive=True, read=read) == "acme/notes"
    assert len(asked) == 2  # an answer that is not OWNER/NAME is asked again
    assert _init.team_repository(repo, None, interactive=True, read=lambda _: "") is None  # empty: not written
    assert _init.team_repository(repo, "acme/flag", interactive=True, read=read) == "acme/flag"  # the flag: no ask
    lines = _init.init(start=repo, name=None, kind="deb", display="none", journey="app", example=False,
                       upstream=None, interactive=True, read=lambda _: "acme/asked")
    assert "release policy for acme/asked: desktop-qualify/desktop-qualify's workflows at " + TAG in lines
    assert load_policy(repo / RELEASE, repo).file.producer.repository == "acme/asked"


@pytest.mark.parametrize("example", [False, True])
def test_a_write_that_fails_half_way_takes_back_the_release_files_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: bool) -> None:
    repo = _repo(tmp_path / "notes")
    real = _init.write_atomic

    def failing(path: Path, data: bytes, *, mode: int = 0o644) -> None:
        if path.name == "release.yml":  # the last file written
            raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write (disk full)")
        real(path, data, mode=mode)

    monkeypatch.setattr(_init, "write_atomic", failing)
    with pytest.raises(QualificationError, match="disk full"):
        _init.init(start=repo, name=None, kind=None, display=None, journey=None, example=example, upstream=None,
                   interactive=False, repository="acme/notes")
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def _certificate_identity(identity: TeamIdentity, instance: TestSigstoreInstance) -> GitHubIdentity:
    """The identity the verifier reads from a Fulcio certificate the test instance issues for ``identity``."""
    now = datetime.now(UTC) - timedelta(minutes=1)
    cert, _ = instance.fulcio.issue(san_uri=identity.san_uri, extensions=identity.extensions, not_before=now,
                                    lifetime=timedelta(minutes=10), ct_log=instance.ct_log)
    return identity_from_certificate(cert)


def test_the_release_policy_is_the_one_a_teams_github_chain_is_judged_by(tmp_path: Path) -> None:
    """Init's policy for the offline team (tests/support/github_team.py) pins what the team's own does."""
    from support.github_team import (
        BUILDER_TAG,
        RELEASE_CALLER_TEMPLATE,
        TEAM_APP,
        TEAM_REPOSITORY,
        gate_identity,
        team_identity,
        team_policy_text,
    )
    from support.github_team import caller_workflow as team_caller

    repo = _repo(tmp_path / "notes", f"git@github.com:{TEAM_REPOSITORY}.git")
    assert qualify("init", cwd=repo).returncode == 0
    ours = load_policy(repo / RELEASE, repo)
    assert ours.required_platforms == ("linux", "macos", "windows")  # an archive: one GitHub run qualifies all
    # The team's (without the optional commit pin init cannot know), pinning the same trusted root.
    theirs_path = tmp_path / "theirs" / "policies" / "release.toml"
    theirs_path.parent.mkdir(parents=True)
    assert ours.sigstore is not None
    theirs_path.write_text(team_policy_text(ours.sigstore.trusted_root, ours.sigstore.trusted_root_sha256,
                                            app_source=TEAM_APP.as_posix(), builder_commit=None), encoding="utf-8")
    theirs = load_policy(theirs_path)
    assert (ours.file.producer, ours.file.trust, ours.file.verifier) == \
        (theirs.file.producer, theirs.file.trust, theirs.file.verifier)
    assert ExpectedWorkflow.from_policy(ours) == ExpectedWorkflow.from_policy(theirs)
    assert ExpectedWorkflow.verifier_from_policy(ours) == ExpectedWorkflow.verifier_from_policy(theirs)
    # The gate's caller init writes is the one the offline team repository commits.
    assert (repo / TEAM_RELEASE_PATH).read_text("utf-8") == team_caller(template=RELEASE_CALLER_TEMPLATE)
    assert BUILDER_TAG == TAG
    # The team chain's certificates: accepted under init's policy, and refused at another tag or repository.
    instance = TestSigstoreInstance(tmp_path / "sigstore")
    sha = "a" * 40
    expected = ExpectedWorkflow.from_policy(ours)
    for platform in ("linux", "macos", "windows"):
        check_identity(_certificate_identity(team_identity(sha, platform), instance), expected, "platform")
    check_identity(_certificate_identity(team_identity(sha, "aggregate"), instance), expected, "aggregate")
    check_identity(_certificate_identity(gate_identity(sha, run_id=7), instance),
                   ExpectedWorkflow.verifier_from_policy(ours), "verifier")
    for stray, code in ((team_identity(sha, "aggregate", tag_ref="refs/tags/v0.0.1"), Code.BUILDER_REF_MISMATCH),
                        (team_identity(sha, "aggregate", repository="other-team/notes"),
                         Code.WORKFLOW_IDENTITY_MISMATCH),
                        (replace(team_identity(sha, "aggregate"), signer_repository="acme/dq"),
                         Code.WORKFLOW_IDENTITY_MISMATCH)):
        with pytest.raises(QualificationError) as refused:
            check_identity(_certificate_identity(stray, instance), expected, "aggregate")
        assert refused.value.code == code
