"""The second example app (examples/qt-notes) through the whole local chain: its own build, a .deb, a Qt GUI
under a private Xvfb, a journey runner driving the installed binary from outside; ends QUALIFIED.

The app and its policy are committed into a fresh repository on `main`, laid
out as the project is (the policy's keyring paths point at the repository's
`.qualify/`), so the run tests them as they are now. Then the evidence is
tampered with, and judged under policies that ask more than the app showed:
each is refused with its own code.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from desktop_qualify.evidence_schemas import PlatformStatement, canonical_bytes, provenance_statement
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._envelope import sign_envelope
from desktop_qualify.qualify_verify import verify_release
from desktop_qualify.qualify_verify._informational import is_informational
from support.chain import REPO, git, qualify
from support.leaves import set_leaf, walk_leaves
from support.readme import blocks
from support.slsa_format import check_slsa_provenance

POLICY = Path("examples") / "qt-notes" / "policy.toml"


@dataclass(frozen=True)
class ExampleChain:
    repo: Path
    out: Path
    sha: str

    @property
    def policy(self) -> Path:
        return self.repo / POLICY

    @property
    def artifacts(self) -> list[Path]:
        return sorted((self.out / "artifacts").iterdir())

    def record(self, name: str) -> dict[str, object]:
        loaded: dict[str, object] = json.loads((self.out / "records" / "linux" / f"{name}.json").read_text())
        return loaded

    def verify(self, *, policy: Path | None = None, evidence: Path | None = None,
               artifacts: list[Path] | None = None) -> tuple[int, str]:
        candidate = [arg for path in (artifacts or self.artifacts) for arg in ("--artifact", path)]
        done = qualify("verify", "--policy", policy or self.policy, "--evidence", evidence or self.out / "evidence",
                       *candidate)
        return done.returncode, done.stdout + done.stderr


def _requirements() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the example app is a Debian package: Linux only")
    missing = [name for name in ("dpkg-deb", "Xvfb") if shutil.which(name) is None]
    if importlib.util.find_spec("PySide6") is None:
        missing.append("PySide6 (pip install '.[example]')")
    if missing:
        pytest.skip(f"the example app's chain needs {', '.join(missing)}, not installed here "
                    "(Debian: apt-get install dpkg xvfb)")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> ExampleChain:
    _requirements()
    root = tmp_path_factory.mktemp("example")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "e2e@desktop-qualify.invalid")
    git(repo, "config", "user.name", "e2e")
    shutil.copytree(REPO / "examples" / "qt-notes", repo / "examples" / "qt-notes",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copyfile(REPO / ".gitignore", repo / ".gitignore")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the example app under qualification")
    sha = git(repo, "rev-parse", "HEAD")
    out, policy = root / "out", repo / POLICY
    steps = {
        "keygen": qualify("keygen", "--policy", policy),
        "produce": qualify("produce", "--policy", policy, "--platform", "linux", "--out", out, "--run-id", "example-1"),
        "aggregate": qualify("aggregate", "--policy", policy, "--evidence", out / "evidence",
                             "--out", out / "evidence"),
    }
    for name, done in steps.items():
        assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return ExampleChain(repo, out, sha)


def test_the_example_app_is_qualified_end_to_end(example: ExampleChain) -> None:
    code, said = example.verify()
    assert code == 0, said
    assert "QUALIFIED" in said.splitlines()
    [artifact] = example.artifacts
    assert artifact.name == f"qt-notes-{example.sha[:12]}-linux-{artifact.name.split('-linux-')[1]}"
    assert artifact.name.endswith(".deb")


def test_every_extension_point_is_the_example_apps_own(example: ExampleChain) -> None:
    build = example.record("build")
    assert build["command"] == ["{python}", "build.py", "--out", "{out}"]
    assert "dpkg-deb" in build["tools"]  # type: ignore[operator]
    assert "pyinstaller" not in build["tools"]  # type: ignore[operator]
    install = example.record("install")
    assert (install["method"], install["executable"]) == ("deb", "opt/qt-notes/qt-notes")
    probe = example.record("launch-probe")
    assert probe["display"] == "xvfb"
    reported = {check["name"]: check for check in probe["report"]["checks"]}  # type: ignore[index]
    assert set(reported) == {"qt-platform-loaded", "window-renders", "notebook-roundtrip", "build-info-embedded"}
    assert all(check["passed"] for check in reported.values())
    assert "'xcb' platform" in reported["qt-platform-loaded"]["detail"]  # drawn by X, under the private Xvfb
    journey = example.record("journey")
    assert journey["display"] == "xvfb"
    assert journey["command"][:2] == ["{python}", "journey/run.py"]  # type: ignore[index]
    observed = {step["id"]: (step["observed"], step["code"]) for step in journey["steps"]}  # type: ignore[union-attr]
    assert observed == {
        "save-note": ("allow", None),
        "open-note-renders-window": ("allow", None),
        "open-too-large-refused": ("reject", "NOTES_FILE_TOO_LARGE"),
        "open-not-utf8-refused": ("reject", "NOTES_NOT_UTF8"),
        "save-outside-notebook-refused": ("reject", "NOTES_PATH_OUTSIDE_NOTEBOOK"),
        "open-missing-refused": ("reject", "NOTES_NOT_FOUND"),
    }


def test_a_flipped_byte_in_the_package_is_refused(example: ExampleChain, tmp_path: Path) -> None:
    [artifact] = example.artifacts
    tampered = tmp_path / artifact.name
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 1
    tampered.write_bytes(bytes(data))
    code, said = example.verify(artifacts=[tampered])
    assert code == 1
    assert "QE_ARTIFACT_DIGEST_MISMATCH" in said


@pytest.mark.parametrize("name", ["platform-linux.dsse.json", "aggregate.dsse.json"])
def test_a_flipped_byte_in_the_evidence_is_refused(example: ExampleChain, tmp_path: Path, name: str) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(example.out / "evidence", evidence)
    data = bytearray((evidence / name).read_bytes())
    middle = len(data) // 2
    data[middle] = ord("A") if data[middle] != ord("A") else ord("B")
    (evidence / name).write_bytes(bytes(data))
    code, said = example.verify(evidence=evidence)
    assert code == 1
    assert "QE_" in said
    assert "Traceback" not in said


@pytest.mark.parametrize(("old", "new", "refusal"), [
    # The app installed a .deb; a policy that names another installer kind does not accept it.
    ('kind = "deb"', 'kind = "archive"', "install method 'deb' is not the policy's installer kind 'archive'"),
    # A check the policy requires and the app never reported.
    ('require = ["qt-platform-loaded"', 'require = ["spell-check-loaded", "qt-platform-loaded"',
     "required check(s) not reported: spell-check-loaded"),
    # A step outcome other than the policy's: the app's own code is not the one the policy requires.
    ('code = "NOTES_NOT_FOUND"', 'code = "NOTES_MISSING"',
     "open-missing-refused: observed reject NOTES_NOT_FOUND, the policy requires reject NOTES_MISSING"),
    # A step the policy requires and the runner never walked.
    ('[signing]', 'open-read-only-refused = { expect = "reject", code = "NOTES_READ_ONLY" }\n\n[signing]',
     "QE_JOURNEY_INCOMPLETE"),
])
def test_the_policy_not_the_app_decides(example: ExampleChain, old: str, new: str, refusal: str) -> None:
    text = example.policy.read_text(encoding="utf-8")
    assert old in text
    stricter = example.policy.with_name("stricter.toml")
    stricter.write_text(text.replace(old, new, 1), encoding="utf-8")
    try:
        code, said = example.verify(policy=stricter)
    finally:
        stricter.unlink()
    assert code == 1, said
    assert refusal in said


def _payload(envelope: Path) -> bytes:
    return base64.b64decode(json.loads(envelope.read_bytes())["payload"])


def _key(example: ExampleChain, role: str) -> Ed25519PrivateKey:
    key = load_pem_private_key((example.repo / ".qualify" / "qt-notes" / "keys" / f"{role}.ed25519.pem").read_bytes(),
                               None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


class _Resigner:
    """The real chain's statements with one leaf changed, signed again with the chain's own keys and re-bound.

    The provenance is made again for the changed statement, as the producer makes it, by a holder of every key:
    what the walk finds is then what the platform checks read, not only that the provenance no longer matches.
    """

    def __init__(self, example: ExampleChain) -> None:
        evidence = example.out / "evidence"
        self.example = example
        self.platform_payload = _payload(evidence / "platform-linux.dsse.json")
        self.statement: dict[str, Any] = json.loads(self.platform_payload)
        self.aggregate: dict[str, Any] = json.loads(_payload(evidence / "aggregate.dsse.json"))
        self.provenance_payload = _payload(evidence / "provenance-linux.dsse.json")
        self.provenance: dict[str, Any] = json.loads(self.provenance_payload)
        self.keys = {role: _key(example, role) for role in ("platform", "aggregate")}
        # The stricter form of the example's policy (as the release policy is): a clean work tree is required,
        # so the gate's flag is a checked fact too. The aggregate is re-bound to it.
        text = example.policy.read_text(encoding="utf-8")
        assert "require_clean_worktree = false" in text
        stricter = example.policy.with_name("stricter-clean.toml")
        stricter.write_text(text.replace("require_clean_worktree = false", "require_clean_worktree = true"),
                            encoding="utf-8")
        try:
            self.policy = load_policy(stricter)
        finally:
            stricter.unlink()
        self.aggregate["predicate"]["policy_sha256"] = self.policy.sha256

    def provenance_of(self, payload: bytes, policy_sha256: str) -> bytes:
        """The provenance the producer signs for the platform statement ``payload`` under a policy of that digest."""
        parameters = self.provenance["predicate"]["buildDefinition"]["externalParameters"]
        return canonical_bytes(provenance_statement(
            PlatformStatement.model_validate_json(payload).predicate, statement_name="platform-linux.dsse.json",
            statement_sha256=hashlib.sha256(payload).hexdigest(), policy_path=parameters["policy"]["path"],
            policy_sha256=policy_sha256, builder_id=self.provenance["predicate"]["runDetails"]["builder"]["id"]))

    def qualifies(self, folder: Path, statement: dict[str, Any]) -> bool:
        payload = canonical_bytes(PlatformStatement.model_validate(statement))
        provenance = self.provenance_of(payload, self.policy.sha256)
        aggregate = copy.deepcopy(self.aggregate)
        aggregate["predicate"]["platforms"][0]["payload_sha256"] = hashlib.sha256(payload).hexdigest()
        aggregate["predicate"]["platforms"][0]["provenance_sha256"] = hashlib.sha256(provenance).hexdigest()
        folder.mkdir()
        (folder / "platform-linux.dsse.json").write_bytes(sign_envelope(payload, self.keys["platform"]))
        (folder / "provenance-linux.dsse.json").write_bytes(sign_envelope(provenance, self.keys["platform"]))
        (folder / "aggregate.dsse.json").write_bytes(
            sign_envelope(canonical_bytes(aggregate), self.keys["aggregate"]))
        return verify_release(self.policy, [folder], self.example.artifacts).qualified


# The app folder's digest is compared between the platform statements of one commit (qualify_verify's
# check_one_commit); the verifier itself has no source to recompute it from. Under a policy that requires one
# platform (a .deb is Linux only) only the release gate and `qualify audit --root` read it, recomputing it from
# git archive of the commit in their checkout (tests/unit/test_source_digest.py); this walk calls the verifier.
_UNREAD_WITH_ONE_PLATFORM = {("predicate", "build", "source_digest")}


def test_every_leaf_of_the_example_apps_statement_is_checked_or_informational(example: ExampleChain,
                                                                             tmp_path: Path) -> None:
    """The leaf-coverage walk of tests/unit/test_evidence_leaves.py, on the example app's real, re-signed evidence:
    its .deb install, its Xvfb display, its runner's command, its own checks and codes are all read by a check."""
    resign = _Resigner(example)
    # The re-signing reproduces the producer's bytes exactly, so an untouched statement qualifies.
    assert canonical_bytes(PlatformStatement.model_validate(resign.statement)) == resign.platform_payload
    # ... and the provenance the verifier derives is the producer's, byte for byte, and SLSA Provenance v1.
    producer_policy = resign.provenance["predicate"]["buildDefinition"]["externalParameters"]["policy"]["sha256"]
    assert resign.provenance_of(resign.platform_payload, producer_policy) == resign.provenance_payload
    check_slsa_provenance(resign.provenance_payload)
    assert resign.qualifies(tmp_path / "untouched", resign.statement)
    base = {"predicate": resign.statement["predicate"]}
    leaf_folders = (tmp_path / f"leaf-{index}" for index in range(100_000))

    def qualifies(path: tuple[str, ...], changed: Any) -> bool:
        statement = copy.deepcopy(resign.statement)
        set_leaf(statement, path, changed)
        return resign.qualifies(next(leaf_folders), statement)

    def informational(path: tuple[str, ...]) -> str | None:
        if path in _UNREAD_WITH_ONE_PLATFORM:
            return "one-platform"
        return "informational" if is_informational("platform", path) else None

    walk = walk_leaves("platform", base, qualifies, informational=informational)
    print(f"example app statement leaves: {walk.counts}")
    assert walk.counts["checked"] > 100
    walk.assert_complete()


def test_the_readmes_example_recipes_run_against_the_example_chain(example: ExampleChain, tmp_path: Path) -> None:
    # The README's example-app recipe, as written, against this chain's output in its folder.
    recipes = [b for b in blocks() if b.kind == "after-example"]
    assert recipes, "the README has no recipe for the example app"
    clone = tmp_path / "clone"
    shutil.copytree(example.repo, clone, symlinks=True)
    (clone / "qualification-out-example").symlink_to(example.out, target_is_directory=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for block in recipes:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        said = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.path.name} line {block.line}:\n{block.body}\n--\n{said}"
        assert "QUALIFIED" in done.stdout
        assert "Traceback" not in said
