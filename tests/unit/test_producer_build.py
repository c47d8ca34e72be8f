"""producer/_build: PyInstaller (code of the artifact under test) never sees the job's credentials.

The real PyInstaller run is the e2e test's; here a stand-in "PyInstaller" is a
real child process started through the real ``run_bounded`` with the build's
environment, which records what it can read, as a spec file or hook could.
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from desktop_qualify.producer import _build
from desktop_qualify.producer._build import BUILD_ENV_ALLOWED, build, build_environment
from desktop_qualify.producer._platform_signing import PlatformSigner, SigningOutcome
from desktop_qualify.producer._process import ProcessResult, run_bounded
from support.chain import git

SECRETS = {
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.example/token",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-request-secret",
    "ACTIONS_RUNTIME_TOKEN": "runtime-secret",
    "GITHUB_TOKEN": "ghs_secret",
    "GH_TOKEN": "ghs_secret2",
    "QUALIFY_CODESIGN_IDENTITY": "Developer ID Application: X",
    "QUALIFY_SIGNTOOL_CERT_SHA1": "a" * 40,
    "QUALIFY_LOCAL_KEY": "ed25519-private",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "PYTHONPATH": "/attacker",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
}


def test_build_environment_is_the_allow_list_and_nothing_else(tmp_path: Path) -> None:
    allowed = {name: f"value-of-{name}" for name in BUILD_ENV_ALLOWED}
    env = build_environment({**allowed, **SECRETS}, tmp_path / "build_info.json")
    assert env == {**allowed, "SKILLHOST_BUILD_INFO": str(tmp_path / "build_info.json")}


def test_missing_allowed_names_are_not_invented(tmp_path: Path) -> None:
    assert build_environment({"PATH": "/bin", **SECRETS}, tmp_path / "i.json") == {
        "PATH": "/bin", "SKILLHOST_BUILD_INFO": str(tmp_path / "i.json")}


_FAKE_PYINSTALLER = """
import json, os, pathlib, sys
argv = sys.argv[1:]
dist = pathlib.Path(argv[argv.index("--distpath") + 1])
bundle = dist / "app"
(bundle / "_internal").mkdir(parents=True)
(bundle / "app").write_bytes(b"\\x7fELF fake app")
(bundle / "_internal" / "lib.so").write_bytes(b"\\x7fELF fake lib")
pathlib.Path(sys.argv[0]).with_name("seen-env.json").write_text(json.dumps(dict(os.environ)))
"""


class _RecordingSigner(PlatformSigner):
    tool = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[Path, Path, list[str]]] = []

    def sign_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def verify_commands(self, bundle: Path, executable: Path) -> list[list[str]]:
        return []

    def sign(self, bundle: Path, executable: Path) -> SigningOutcome:
        self.calls.append((bundle, executable, sorted(p.name for p in bundle.rglob("*"))))
        return SigningOutcome(self.tool, "signed")


@pytest.fixture
def app_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "app.spec").write_text("# stand-in spec\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    return repo, git(repo, "rev-parse", "HEAD")


def _fake_pyinstaller(where: Path, seen: list[dict[str, Any]]) -> Any:
    script = where / "pyinstaller_standin.py"
    script.write_text(_FAKE_PYINSTALLER, encoding="utf-8")

    def run(argv: list[str], **kwargs: Any) -> ProcessResult:
        assert argv[1:3] == ["-m", "PyInstaller"]
        seen.append({"argv": argv, "env": dict(kwargs["env"])})
        # The real runner, the real environment: only the program is a stand-in.
        return run_bounded([sys.executable, str(script), *argv[3:]], **kwargs)

    return run


@pytest.mark.parametrize("source", ["process", "argument"])
def test_the_build_sees_no_secret_and_signing_happens_after_it(
        source: str, app_repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = app_repo
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(_build, "run_bounded", _fake_pyinstaller(tmp_path, seen))
    environ: dict[str, str] | None = None
    if source == "process":
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
    else:
        environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **SECRETS}
    signer = _RecordingSigner()
    out = build(repo=repo, sha=sha, ref="refs/heads/main", app_source=repo / "app", spec="app.spec", app_name="app",
                platform="linux", arch="x86_64", work=tmp_path / "work", artifacts=tmp_path / "artifacts",
                signer=signer, timeout=60, environ=environ)

    [call] = seen
    child_env = json.loads((tmp_path / "seen-env.json").read_text())
    for env in (call["env"], child_env):
        assert not set(SECRETS) & set(env), "a job secret reached the build"
        assert set(env) - {"SKILLHOST_BUILD_INFO"} <= set(BUILD_ENV_ALLOWED)
    build_info = json.loads(Path(child_env["SKILLHOST_BUILD_INFO"]).read_text())
    assert build_info["build_sha"] == sha
    # The OS signer ran in this process, after the build, on the bundle folder and its executable.
    bundle = tmp_path / "work" / "dist" / "app"
    assert signer.calls == [(bundle, bundle / "app", ["_internal", "app", "lib.so"])]
    assert out.signing == SigningOutcome("recorder", "signed")
    with tarfile.open(out.archive, "r:gz") as tf:
        assert sorted(tf.getnames()) == ["app", "app/_internal", "app/_internal/lib.so", "app/app"]
    assert out.record.build_sha == sha
