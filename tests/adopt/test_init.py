"""`qualify init`: what it writes into a team's repository, and what it refuses (changing nothing).

Each rendered policy is loaded by the producer's own loader; the written one also passes `qualify keygen`.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_init import _cli, _init, _render
from desktop_qualify.qualify_policy import load_policy
from support.chain import git

from desktop_qualify import __version__

DEFAULT_FILES = [".github/workflows/qualify.yml", ".qualify/.gitignore", "journey/journey.py",
                 "policies/qualify.toml"]


def qualify(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # stdin is not a terminal: init asks nothing.
    return subprocess.run([sys.executable, "-m", "desktop_qualify.qualify_cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_with_no_flags_and_no_terminal_it_writes_the_policy_workflow_and_runner(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "Team Notes")
    done = qualify("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert sorted(_tree(repo)) == DEFAULT_FILES
    assert "app team-notes: installer archive, display none, journey app" in done.stdout
    policy = load_policy(repo / "policies" / "qualify.toml")
    app = policy.file.app
    assert (policy.file.name, app.name, app.source) == ("team-notes", "team-notes", "..")
    assert app.journey.argv == ["{executable}", "journey", "--record", "{record}"]
    assert app.install.linux is not None
    assert app.install.linux.kind == "archive"
    # The keys go where the policy says, inside the repository, in a folder that ignores itself.
    keygen = qualify("keygen", "--policy", repo / "policies" / "qualify.toml", cwd=repo)
    assert keygen.returncode == 0, keygen.stderr
    assert (repo / ".qualify" / "keys" / "platform.ed25519.pem").is_file()
    assert git(repo, "status", "--porcelain", "--ignored", "--untracked-files=all", ".qualify").splitlines() == [
        "?? .qualify/.gitignore", "!! .qualify/keyring.json", "!! .qualify/keys/aggregate.ed25519.pem",
        "!! .qualify/keys/platform.ed25519.pem", "!! .qualify/keys/verifier.ed25519.pem"]


def test_the_workflow_calls_this_projects_reusable_workflows_at_this_versions_tag(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    assert qualify("init", "--kind", "deb", "--upstream", "acme/desktop-qualify", cwd=repo).returncode == 0
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "qualify.yml").read_text(encoding="utf-8"))
    jobs = workflow["jobs"]
    assert sorted(jobs) == ["aggregate", "linux"]  # a .deb installs on Linux alone
    assert jobs["linux"]["uses"] == f"acme/desktop-qualify/.github/workflows/produce-linux.yml@v{__version__}"
    assert jobs["aggregate"]["uses"] == f"acme/desktop-qualify/.github/workflows/aggregate.yml@v{__version__}"
    assert jobs["aggregate"]["needs"] == ["linux"]
    assert workflow["permissions"] == {}
    assert "with" not in jobs["linux"]  # nothing a caller passes can change what is qualified
    archive = _repo(tmp_path / "archive")
    assert qualify("init", cwd=archive).returncode == 0
    jobs = yaml.safe_load((archive / ".github" / "workflows" / "qualify.yml").read_text(encoding="utf-8"))["jobs"]
    assert sorted(jobs) == ["aggregate", "linux", "macos", "windows"]
    assert jobs["macos"]["secrets"]["QUALIFY_CODESIGN_IDENTITY"] == "${{ secrets.QUALIFY_CODESIGN_IDENTITY }}"


@pytest.mark.parametrize(("kind", "journey", "display"),
                         list(itertools.product(_render.INSTALLER_KINDS, _render.JOURNEYS, _render.DISPLAYS)))
def test_every_choice_renders_a_policy_the_loader_accepts(tmp_path: Path, kind: str, journey: str,
                                                          display: str) -> None:
    choices = _render.Choices(name="my-app", kind=kind, display=display, journey=journey, example=False)
    files = _render.render(choices)
    path = tmp_path / "policies" / "qualify.toml"
    path.parent.mkdir()
    path.write_text(files[_render.POLICY_PATH], encoding="utf-8")
    app = load_policy(path, tmp_path).file.app
    for platform in _render._KIND_PLATFORMS[kind]:
        target = getattr(app.install, platform)
        assert target is not None
        assert target.kind == kind
    assert app.journey.argv == _render._journey_argv(choices)
    assert "@@" not in "".join(files.values())  # every template token filled


@pytest.mark.parametrize(("kind", "journey"), list(itertools.product(_render.EXAMPLE_KINDS, ("app", "pytest"))))
def test_the_example_renders_python_that_compiles_and_lints(tmp_path: Path, kind: str, journey: str) -> None:
    files = _render.render(_render.Choices(name="hello", kind=kind, display="none", journey=journey, example=True))
    python = {name: text for name, text in files.items() if name.endswith(".py")}
    assert sorted(python) == sorted(["app/main.py", "app/build.py",
                                     *(["app/journey/conftest.py", "app/journey/test_journey.py"]
                                       if journey == "pytest" else [])])
    for name, text in python.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed in this environment")
    # Pyflakes' rules: an undefined name or a broken import in a template is a team's first failure.
    done = subprocess.run([str(ruff), "check", "--isolated", "--select", "F,E9", "--target-version", "py311",
                           str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_an_existing_file_refuses_the_whole_init_and_nothing_changes(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "qualify.yml").write_text("name: ours\n", encoding="utf-8")
    (repo / "journey").symlink_to("elsewhere")  # a dangling link is there too: never followed, never replaced
    before = _tree(repo)
    done = qualify("init", "--journey", "pytest", cwd=repo)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{Code.USAGE.value}: qualify init never overwrites a file: "
                                  ".github/workflows/qualify.yml")
    assert _tree(repo) == before
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".github", "journey"]


def test_a_write_that_fails_half_way_takes_back_what_it_wrote(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path / "repo")
    real = _init.write_atomic
    calls: list[Path] = []

    def failing(path: Path, data: bytes, *, mode: int = 0o644) -> None:
        calls.append(path)
        if len(calls) == 3:
            raise QualificationError(Code.ENVIRONMENT, f"{path}: cannot write (disk full)")
        real(path, data, mode=mode)

    monkeypatch.setattr(_init, "write_atomic", failing)
    with pytest.raises(QualificationError, match="disk full"):
        _init.init(start=repo, name=None, kind=None, display=None, journey=None, example=True, upstream=None,
                   interactive=False)
    assert len(calls) == 3
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_outside_a_git_repository_it_refuses(tmp_path: Path) -> None:
    done = qualify("init", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"{Code.USAGE.value}: {tmp_path.resolve()} is not inside a git work tree")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "message"), [
    (["--example", "--journey", "playwright"], "the example app has no window for Playwright"),
    (["--example", "--kind", "msi"], "--example builds archive or deb only"),
    (["--name", "9lives"], "--name '9lives'"),
    (["--upstream", "not a repo"], "--upstream 'not a repo' is not OWNER/REPO"),
])
def test_choices_it_cannot_honour_are_refused_before_anything_is_written(tmp_path: Path, args: list[str],
                                                                         message: str) -> None:
    repo = _repo(tmp_path / "repo")
    done = qualify("init", *args, cwd=repo)
    assert done.returncode == 2
    assert done.stderr.startswith(Code.USAGE.value)
    assert message in done.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_on_a_terminal_it_asks_what_no_flag_said(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    asked: list[str] = []
    answers = iter(["zip", "deb", "", "pytest"])  # an answer outside the choices is asked again

    def read(prompt: str) -> str:
        asked.append(prompt)
        return next(answers)

    chosen = _init.choose(root=repo, name=None, kind=None, display=None, journey=None, example=False,
                          upstream=None, interactive=True, read=read)
    assert (chosen.kind, chosen.display, chosen.journey) == ("deb", "none", "pytest")
    assert [p.split(" [")[0] for p in asked] == ["installer kind", "installer kind", "display", "journey style"]
    flagged = _init.choose(root=repo, name="x", kind="appimage", display="xvfb", journey="app", example=False,
                           upstream=None, interactive=True, read=read)
    assert (flagged.kind, flagged.display, flagged.journey) == ("appimage", "xvfb", "app")  # flags: nothing asked
    assert len(asked) == 4


def test_the_command_lines_choices_are_the_renderers() -> None:
    assert (_cli.INSTALLER_KINDS, _cli.DISPLAYS, _cli.JOURNEYS) == \
        (_render.INSTALLER_KINDS, _render.DISPLAYS, _render.JOURNEYS)


def test_the_shipped_templates_are_package_data() -> None:
    # The wheel carries them (pyproject's package-data globs): every template the renderer reads is listed.
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["desktop_qualify.qualify_init"]
    templates = Path(_render.__file__).parent / "templates"
    shipped = {p for g in globs for p in templates.parent.glob(g) if p.is_file()}
    assert shipped == {p for p in templates.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert os.access(templates, os.R_OK)
