"""producer/_build: the team's own build command (code of the artifact under test) never sees the job's credentials.

The build here is a real committed script run through the real ``run_bounded``
with the build's environment, as the policy's ``[app.build] argv`` names it: it
records what it can read, as any build tool or hook could, and writes its one
output file. It runs through a ``StageRunner``: unconfined where the build's logic
is under test, and also under the real Linux adapter (bubblewrap) where what the
build can see is. The real PyInstaller build is the e2e test's.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.producer._build import BUILD_ENV_ALLOWED, BuildPlan, build, build_environment
from desktop_qualify.producer.confinement import StageRunner
from desktop_qualify.producer.os_signing._output_signing import sign_output
from desktop_qualify.producer.os_signing._platform_signing import NoPlatformSigner, PlatformSigner, SigningOutcome
from support.chain import commit_tree
from support.stage_runners import confined_runner, unconfined_runner

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

# The team's build: a bundle folder packed into one .tar.gz under --out, and what it could see, recorded.
_BUILD_SCRIPT = """
import json, os, pathlib, sys, tarfile
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
seen = pathlib.Path(os.environ["SEEN"]) if "SEEN" in os.environ else out / "seen-env.json"
peek = sys.argv[sys.argv.index("--peek") + 1:] if "--peek" in sys.argv else []
seen.write_text(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(),
                            "info": json.loads(pathlib.Path(os.environ["QUALIFY_BUILD_INFO"]).read_text()),
                            "peek": {path: os.path.exists(path) for path in peek}}))
bundle = pathlib.Path(os.environ["TMPDIR"]) / "bundle" / "app"
(bundle / "_internal").mkdir(parents=True)
(bundle / "app").write_bytes(b"\\x7fELF fake app")
(bundle / "_internal" / "lib.so").write_bytes(b"\\x7fELF fake lib")
names = sys.argv[sys.argv.index("--names") + 1:] if "--names" in sys.argv else ["app-1.0-linux.tar.gz"]
for name in names:
    with tarfile.open(out / name, "w:gz") as tf:
        tf.add(bundle, arcname="app")
"""
BUILD_ARGV = ["{python}", "build.py", "--out", "{out}"]


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
        executable.write_bytes(executable.read_bytes() + b"\nsigned")
        return SigningOutcome(self.tool, "signed")


@pytest.fixture
def app_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "build.py").write_text(_BUILD_SCRIPT, encoding="utf-8")
    return repo, commit_tree(repo, "app")


def _plan(**changes: object) -> BuildPlan:
    values: dict[str, object] = {"argv": BUILD_ARGV, "env_names": (), "tools": {}, "output_glob": "app-*-linux.tar.gz",
                                 "kind": "archive", "executable": "app/app"}
    values.update(changes)
    return BuildPlan(**values)  # type: ignore[arg-type]


def _build(repo: Path, sha: str, tmp_path: Path, *, plan: BuildPlan | None = None,
           signer: PlatformSigner | None = None, environ: dict[str, str] | None = None,
           runner: StageRunner | None = None):  # type: ignore[no-untyped-def]
    return build(repo=repo, sha=sha, ref="refs/heads/main", app_source=repo / "app", plan=plan or _plan(),
                 app_name="app", platform="linux", arch="x86_64", work=tmp_path / "work",
                 artifacts=tmp_path / "artifacts", signer=signer or NoPlatformSigner(), timeout=60,
                 runner=runner or unconfined_runner(),
                 environ=environ if environ is not None else {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})


def test_build_environment_is_the_allow_list_the_policys_names_and_the_build_info(tmp_path: Path) -> None:
    allowed = {name: f"value-of-{name}" for name in BUILD_ENV_ALLOWED}
    env = build_environment({**allowed, **SECRETS, "NODE_OPTIONS": "--max-old-space-size=4096"},
                            tmp_path / "build_info.json", ["NODE_OPTIONS"])
    assert env == {**allowed, "NODE_OPTIONS": "--max-old-space-size=4096",
                   "QUALIFY_BUILD_INFO": str(tmp_path / "build_info.json")}


def test_missing_allowed_names_are_not_invented(tmp_path: Path) -> None:
    assert build_environment({"PATH": "/bin", **SECRETS}, tmp_path / "i.json", ["NODE_OPTIONS"]) == {
        "PATH": "/bin", "QUALIFY_BUILD_INFO": str(tmp_path / "i.json")}


@pytest.mark.parametrize("confinement", ["unconfined", "bubblewrap"])
@pytest.mark.parametrize("source", ["process", "argument"])
def test_the_build_sees_no_secret_and_signing_happens_after_it(
        source: str, confinement: str, app_repo: tuple[Path, str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    repo, sha = app_repo
    # The job's HOME holds a private key, and is on the job's PATH (as ~/.local/bin is): neither may reach the build.
    job_home = tmp_path / "job-home"
    key = job_home / ".qualify" / "keys" / "platform.key"
    key.parent.mkdir(parents=True)
    key.write_text("ed25519-private", encoding="utf-8")
    path = f"{job_home}:/usr/bin:/bin"
    environ: dict[str, str] | None = None
    if source == "process":
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
        monkeypatch.setenv("HOME", str(job_home))
        monkeypatch.setenv("PATH", path)
    else:
        environ = {"PATH": path, "HOME": str(job_home), "SOURCE_DATE_EPOCH": "1700000000", **SECRETS}
    # The job's runner protects its checkout and HOME (producer/_pipeline.protected_paths).
    runner = unconfined_runner() if confinement == "unconfined" else confined_runner(protected=(repo, job_home))
    signer = _RecordingSigner()
    argv = [*BUILD_ARGV, "--peek", str(key), str(repo / "app" / "build.py")]
    out = build(repo=repo, sha=sha, ref="refs/heads/main", app_source=repo / "app", plan=_plan(argv=argv),
                app_name="app", platform="linux", arch="x86_64", work=tmp_path / "work",
                artifacts=tmp_path / "artifacts", signer=signer, timeout=60, environ=environ, runner=runner)

    seen = json.loads((tmp_path / "work" / "out" / "seen-env.json").read_text())
    assert not set(SECRETS) & set(seen["env"]), "a job secret reached the build"
    if confinement == "bubblewrap":
        # bubblewrap itself sets PWD to the folder it started the build in (--chdir), nothing of the job's.
        assert seen["env"].pop("PWD") == seen["cwd"]
    assert set(seen["env"]) - {"QUALIFY_BUILD_INFO"} <= set(BUILD_ENV_ALLOWED)
    # Its temporary folder is its own, in the job's work folder (a killed build leaves nothing elsewhere).
    assert seen["env"]["TMPDIR"] == seen["env"]["TEMP"] == seen["env"]["TMP"] == str(tmp_path / "work" / "build-tmp")
    # Its HOME is its own too, never the job's (which holds the runner's credentials and caches).
    assert seen["env"]["HOME"] == str(tmp_path / "work" / "home")
    # The build ran in the exported copy of the committed app folder, never in the work tree.
    assert Path(seen["cwd"]) == tmp_path / "work" / "source" / "app"
    assert seen["info"] == {"kind": "qualify-build-info", "version": 1, "build_sha": sha,
                            "built_at": seen["info"]["built_at"], "source_ref": "refs/heads/main",
                            "platform": "linux"}
    # The build ran through the job's runner, as the build stage.
    [facts] = runner.facts
    assert (facts.stage, facts.mechanism) == ("build", "none" if confinement == "unconfined" else "bubblewrap")
    if confinement == "bubblewrap":
        # Confined, the job's key and the checkout are not there to read, though the job's PATH named the HOME.
        assert seen["peek"] == {str(key): False, str(repo / "app" / "build.py"): False}
        assert {"user-namespace", "pid-namespace", "mount-namespace", "private-home"} <= set(facts.layers)
    # The OS signer ran in this process, after the build, on the unpacked bundle folder and its executable.
    [(bundle, exe, names)] = signer.calls
    assert (bundle.name, exe.relative_to(bundle).as_posix(), names) == ("app", "app", ["_internal", "app", "lib.so"])
    assert out.signing == SigningOutcome("recorder", "signed")
    # The released artifact is the signed repack, named for the app, commit, platform and architecture.
    assert out.archive.name == f"app-{sha[:12]}-linux-x86_64.tar.gz"
    with tarfile.open(out.archive, "r:gz") as tf:
        assert sorted(tf.getnames()) == ["app", "app/_internal", "app/_internal/lib.so", "app/app"]
        member = tf.extractfile("app/app")
        assert member is not None
        assert member.read().endswith(b"signed")
    assert out.record.build_sha == sha
    assert out.record.command == argv
    assert out.record.artifact.sha256 == hashlib.sha256(out.archive.read_bytes()).hexdigest()


def test_unsigned_the_artifact_is_the_builds_output_byte_for_byte(app_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = app_repo
    out = _build(repo, sha, tmp_path)
    built = tmp_path / "work" / "out" / "app-1.0-linux.tar.gz"
    assert out.archive.read_bytes() == built.read_bytes()
    assert out.signing == SigningOutcome("none", "unsigned")


def test_the_tools_the_policy_names_are_recorded_from_their_own_answer(app_repo: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    repo, sha = app_repo
    tools = {"fake-tool": ["{python}", "-c", "print('fake-tool 9.8.7'); print('more')"]}
    out = _build(repo, sha, tmp_path, plan=_plan(tools=tools))
    assert out.record.tools["fake-tool"] == "fake-tool 9.8.7"
    assert {"python", "os", "machine"} <= set(out.record.tools)


@pytest.mark.parametrize(("plan", "why"), [
    (_plan(output_glob="nothing-*.tar.gz"), "matched nothing"),
    (_plan(argv=[*BUILD_ARGV, "--names", "app-1-linux.tar.gz", "app-2-linux.tar.gz"]), "app-1-linux.tar.gz"),
    (_plan(argv=[*BUILD_ARGV, "--names", "app-1.0-linux.tgz"], output_glob="app-*"), "no ending"),
    (_plan(kind="deb"), "no ending"),
    (_plan(argv=["{python}", "-c", "raise SystemExit(3)"]), "exit 3"),
    (_plan(tools={"broken": ["{python}", "-c", "raise SystemExit(1)"]}), "version command of tool 'broken'"),
], ids=["no-match", "two-matches", "unknown-ending", "ending-of-another-kind", "build-fails", "tool-fails"])
def test_a_build_that_does_not_give_exactly_one_artifact_is_refused(
        plan: BuildPlan, why: str, app_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = app_repo
    with pytest.raises(QualificationError) as caught:
        _build(repo, sha, tmp_path, plan=plan)
    assert caught.value.code is Code.BUILD_FAILED
    assert why in caught.value.message
    assert not (tmp_path / "artifacts").exists() or not any((tmp_path / "artifacts").iterdir())


def test_the_producer_does_not_sign_an_installer_it_cannot_open(tmp_path: Path) -> None:
    """Only an archive is signed inside; another kind is released as built and honestly 'unsigned'."""
    package = tmp_path / "app_1.0_amd64.deb"
    package.write_bytes(b"!<arch>\n")
    signer = _RecordingSigner()
    released, outcome = sign_output("deb", package, signer, "usr/bin/app", tmp_path / "staging")
    assert (released, outcome, signer.calls) == (package, SigningOutcome("none", "unsigned"), [])


def test_an_archive_with_more_than_its_bundle_at_the_top_is_not_signed(tmp_path: Path) -> None:
    bundle = tmp_path / "tree"
    (bundle / "app").mkdir(parents=True)
    (bundle / "app" / "app").write_bytes(b"exe")
    (bundle / "README").write_bytes(b"hi")
    archive = tmp_path / "app.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(bundle / "app", arcname="app")
        tf.add(bundle / "README", arcname="README")
    with pytest.raises(QualificationError) as caught:
        sign_output("archive", archive, _RecordingSigner(), "app/app", tmp_path / "staging")
    assert caught.value.code is Code.BUILD_FAILED
    assert "only top-level entry" in caught.value.message
