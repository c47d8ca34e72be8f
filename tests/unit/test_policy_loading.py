"""Loading a policy: bounded, TOML, strict, platform resolution, trust-mode access."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import host_platform, load_policy

REPO = Path(__file__).resolve().parents[2]
LOCAL = (REPO / "policies" / "local.toml").read_text(encoding="utf-8")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        load_policy(path)
    assert caught.value.code is Code.POLICY_INVALID
    assert caught.value.exit_status == 2
    return caught.value


def test_the_committed_local_policy_loads(tmp_path: Path) -> None:
    policy = load_policy(REPO / "policies" / "local.toml")
    assert policy.required_platforms == (host_platform(),)
    assert policy.sha256 == hashlib.sha256((REPO / "policies" / "local.toml").read_bytes()).hexdigest()
    assert policy.ed25519.mode == "ed25519"
    assert policy.sigstore is None
    # Paths in the policy are relative to the policy file, not to the working folder.
    assert policy.resolve(policy.ed25519.keyring) == (REPO / ".qualify" / "keyring.json").resolve()


@pytest.mark.parametrize(
    "text",
    [
        "version = = 1",
        LOCAL + "\n[unknown]\nx = 1\n",
        LOCAL.replace('name = "local"', 'name = "local"\ncolour = "blue"'),
        LOCAL.replace("require_clean_worktree = true", "require_clean_worktree = true\nextra = 1"),
        LOCAL.replace("require_clean_worktree = true", 'require_clean_worktree = "no"'),
        LOCAL.replace("version = 2", "version = 1"),
        LOCAL.replace('ref = "refs/heads/main"', 'ref = "refs/heads/release"'),
        LOCAL.replace('repository = "local/desktop-qualify"', 'repository = "no-slash"'),
        LOCAL.replace('workflow = ".github/workflows/qualify.yml"', 'workflow = "../evil.yml"'),
        LOCAL.replace('required = ["host"]', "required = []"),
        LOCAL.replace('required = ["host"]', 'required = ["beos"]'),
        LOCAL.replace('linux = ["unsigned"]', 'linux = ["trusted-by-me"]'),
        LOCAL.replace("max_statement_bytes = 1048576", "max_statement_bytes = 10"),
        LOCAL.replace('mode = "ed25519"', 'mode = "pgp"'),
        LOCAL.replace('catalog-verified = { expect = "allow" }', '"Catalog Verified" = { expect = "allow" }'),
        # A required step must say what it must show; a refusal must name its code, an allow path none.
        LOCAL.replace('catalog-verified = { expect = "allow" }', "catalog-verified = {}"),
        LOCAL.replace('catalog-verified = { expect = "allow" }', 'catalog-verified = "allow"'),
        LOCAL.replace('catalog-verified = { expect = "allow" }', 'catalog-verified = { expect = "maybe" }'),
        LOCAL.replace('code = "CC_SKILL_SIGNATURE_MISSING" }', "}"),
        LOCAL.replace('catalog-verified = { expect = "allow" }',
                      'catalog-verified = { expect = "allow", code = "CC_SKILL_TIMEOUT" }'),
        LOCAL.replace('code = "CC_SKILL_SIGNATURE_MISSING"', 'code = "QE_SIGNATURE_MISSING"'),
        LOCAL.replace('catalog-verified = { expect = "allow" }',
                      'catalog-verified = { expect = "allow", note = "ok" }'),
        # The list form of earlier versions names steps without their outcomes: refused, not guessed.
        LOCAL.replace('[journey.steps]', '[journey]\nrequired_steps = ["catalog-verified"]\n[journey.steps]'),
        LOCAL[:LOCAL.index("[journey.steps]")] + "[journey.steps]\n" + LOCAL[LOCAL.index("[signing]"):],
        LOCAL.replace('macos = ["unsigned"]', 'macos = ["unsigned"]\n').replace('linux = ["unsigned"]',
                                                                                 'linux = ["notarized"]'),
        LOCAL.replace('windows = ["unsigned"]', 'windows = ["signed", "notarized"]'),
        # The app contract's [app] section (docs/app-contract.md).
        LOCAL.replace('[app]\n', '[artifact]\nname = "skillhost"\napp_source = "../reference_app"\n'
                      'spec = "skillhost.spec"\n\n[app]\n'),
        LOCAL.replace('"--out", "{out}"]', '"--out", "{out}", "--token", "{token}"]'),
        LOCAL.replace('"--out", "{out}"]', '"--out", "{out}", "{"]'),
        LOCAL.replace('probe", "--record", "{record}"]', 'probe", "--record", "{out}"]'),
        LOCAL.replace('argv = ["{python}", "tools/build_release.py", "--out", "{out}"]', "argv = []"),
        LOCAL.replace("[app.build]\n", '[app.build]\nenv = ["GITHUB_TOKEN"]\n'),
        LOCAL.replace("[app.build]\n", '[app.build]\nenv = ["NPM_API_KEY"]\n'),
        LOCAL.replace("[app.build]\n", '[app.build]\nenv = ["ACTIONS_ID_TOKEN_REQUEST_URL"]\n'),
        LOCAL.replace("[app.build]\n", '[app.build]\nenv = ["lower"]\n'),
        LOCAL.replace('linux = { kind = "archive"', 'linux = { kind = "msi"'),
        LOCAL.replace('windows = { kind = "archive"', 'windows = { kind = "deb"'),
        LOCAL.replace('linux = { kind = "archive"', 'linux = { kind = "snap"'),
        LOCAL.replace('executable = "skillhost/skillhost" }', 'executable = "/usr/bin/skillhost" }'),
        LOCAL.replace('executable = "skillhost/skillhost" }', 'executable = "../skillhost" }'),
        LOCAL.replace('executable = "skillhost/skillhost.exe" }', 'executable = "skillhost\\\\skillhost.exe" }'),
        LOCAL.replace('linux = "skillhost-*-linux.tar.gz"', 'linux = "../skillhost-*-linux.tar.gz"'),
        LOCAL.replace('require = ["catalog-verified", "worker-entry-resolvable", "isolation"]',
                      'require = ["catalog-verified", "catalog-verified"]'),
        LOCAL.replace("[app.codes]", '[app.display]\nmacos = "xvfb"\n\n[app.codes]'),
        LOCAL.replace("[app.codes]", '[app.display]\nlinux = "wayland"\n\n[app.codes]'),
        LOCAL.replace('pattern = "^CC_SKILL_[A-Z_]{1,64}$"', 'pattern = "CC_SKILL_.*"'),
        LOCAL.replace('pattern = "^CC_SKILL_[A-Z_]{1,64}$"', 'pattern = "^CC_SKILL_[$"'),
        LOCAL.replace('pattern = "^CC_SKILL_[A-Z_]{1,64}$"', 'pattern = "^APP_[A-Z_]{1,64}$"'),
        # The refusing layer of a kernel step: only with an errno, one of [isolation]'s for its platform.
        LOCAL.replace('catalog-verified = { expect = "allow" }',
                      'catalog-verified = { expect = "allow", layer = { linux = "seccomp" } }'),
        LOCAL.replace('code = "CC_SKILL_SIGNATURE_MISSING" }',
                      'code = "CC_SKILL_SIGNATURE_MISSING", layer = { linux = "seccomp" } }'),
        LOCAL.replace('layer = { linux = "seccomp", macos', 'layer = { linux = "user-net-namespace", macos', 1),
        LOCAL.replace('macos = "sandbox-exec", windows = "no-child-process"',
                      'macos = "sandbox-exec", windows = "landlock-fs"'),
        LOCAL.replace('windows = "no-child-process" }', 'windows = "no-child-process", freebsd = "capsicum" }'),
        LOCAL.replace('layer = { linux = "seccomp", macos', 'layer = { linux = "Seccomp", macos', 1),
        # What each layer refuses with: listed layers only, and each step's layer gives one of its errnos.
        LOCAL.replace('seccomp = ["EPERM"]\n', 'seccomp = ["EPERM"]\ncapsicum = ["ECAPMODE"]\n'),
        LOCAL.replace('seccomp = ["EPERM"]\n', 'seccomp = ["ENOSYS"]\n'),
        LOCAL.replace('seccomp = ["EPERM"]\n', ''),
        LOCAL.replace('seccomp = ["EPERM"]\n', 'seccomp = []\n'),
    ],
    ids=["bad-toml", "unknown-table", "unknown-key", "unknown-nested-key", "wrong-type", "version", "ref-not-main",
         "repository", "workflow-path", "no-platforms", "unknown-platform", "unknown-signing-state",
         "limit-out-of-range", "unknown-trust-mode", "bad-step-id", "step-without-expectation",
         "step-as-bare-string", "step-unknown-outcome", "reject-without-code", "allow-with-code",
         "code-not-a-skill-code", "step-unknown-key", "old-required-steps-list", "no-steps", "linux-notarized",
         "windows-notarized", "v1-artifact-section", "unknown-placeholder", "stray-brace",
         "build-placeholder-in-probe", "empty-build-argv", "env-token", "env-key", "env-actions", "env-lower-case",
         "msi-on-linux", "deb-on-windows", "unknown-installer", "absolute-executable", "executable-escapes",
         "executable-backslash", "output-glob-with-folder", "check-required-twice", "xvfb-on-macos",
         "unknown-display", "unanchored-code-pattern", "code-pattern-does-not-compile", "step-code-outside-pattern",
         "allow-step-with-layer", "reject-step-without-errno-with-layer", "layer-not-required-by-isolation",
         "layer-of-another-platform", "layer-unknown-platform", "layer-bad-name", "refusals-of-unlisted-layer",
         "step-layer-never-gives-its-errno", "step-layer-without-refusals", "refusals-empty"],
)
def test_invalid_policies_are_refused(text: str, tmp_path: Path) -> None:
    _refused(_write(tmp_path, text))


def test_a_required_platform_needs_an_output_and_an_installer(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    without_output = LOCAL.replace('linux = "skillhost-*-linux.tar.gz"\n', "")
    assert "[app.build.outputs] linux" in _refused(_write(tmp_path, without_output)).message
    without_installer = LOCAL.replace('linux = { kind = "archive", executable = "skillhost/skillhost" }\n', "")
    assert "[app.install] linux" in _refused(_write(tmp_path, without_installer)).message
    # A platform the policy does not require needs neither.
    monkeypatch.setattr(sys, "platform", "darwin")
    assert load_policy(_write(tmp_path, without_output)).required_platforms == ("macos",)


def test_isolation_is_optional_and_the_code_pattern_has_a_default(tmp_path: Path) -> None:
    # The section headers, not a comment that names them.
    text = LOCAL[:LOCAL.index("\n[isolation]\n") + 1] + LOCAL[LOCAL.index("\n[signing]\n") + 1:]
    text = text.replace('[app.codes]\npattern = "^CC_SKILL_[A-Z_]{1,64}$"\n', "")
    # Without [isolation] no step can be owned by a layer (the loader refuses that: see below).
    text = re.sub(r", layer = \{[^}]*\}", "", text)
    policy = load_policy(_write(tmp_path, text))
    assert policy.file.isolation is None
    assert policy.file.app.codes.pattern == "^[A-Z][A-Z0-9_]{2,64}$"
    assert policy.file.app.display.kind("linux") == "none"
    assert policy.file.app.install.get("windows") is not None


def test_policy_file_problems(tmp_path: Path) -> None:
    _refused(tmp_path / "absent.toml")
    _refused(tmp_path)
    (tmp_path / "big.toml").write_bytes(b"#" * (64 * 1024 + 1))
    _refused(tmp_path / "big.toml")
    (tmp_path / "latin1.toml").write_bytes(LOCAL.encode().replace(b'"local"', b'"l\xe9"', 1))
    _refused(tmp_path / "latin1.toml")


@pytest.mark.parametrize(
    ("required", "platform"),
    [('["host", "linux"]', "linux"), ('["linux", "linux"]', "linux"), ('["macos", "host"]', "macos")],
)
def test_a_platform_required_twice_is_refused(required: str, platform: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", {"linux": "linux", "macos": "darwin"}[platform])
    error = _refused(_write(tmp_path, LOCAL.replace('required = ["host"]', f"required = {required}")))
    assert platform in error.message


@pytest.mark.parametrize(("sys_platform", "expected"), [("linux", "linux"), ("darwin", "macos"),
                                                        ("win32", "windows")])
def test_host_resolves_to_this_machine(sys_platform: str, expected: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", sys_platform)
    assert load_policy(_write(tmp_path, LOCAL)).required_platforms == (expected,)


def test_an_unknown_host_is_an_environment_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "sunos5")
    with pytest.raises(QualificationError) as caught:
        load_policy(_write(tmp_path, LOCAL))
    assert caught.value.code is Code.ENVIRONMENT


def test_required_platforms_come_out_in_canonical_order(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path, LOCAL.replace('required = ["host"]',
                                                        'required = ["windows", "linux", "macos"]')))
    assert policy.required_platforms == ("linux", "macos", "windows")


SIGSTORE_TRUST = """[producer.signers]
linux = ".github/workflows/produce-linux.yml"
macos = ".github/workflows/produce-macos.yml"
windows = ".github/workflows/produce-windows.yml"
aggregate = ".github/workflows/qualify.yml"

[trust]
mode = "sigstore"
issuer = "https://token.actions.githubusercontent.com"
trusted_root = "sigstore/trusted_root.production.json"
trusted_root_sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
"""


def test_a_sigstore_policy_has_no_ed25519_trust(tmp_path: Path) -> None:
    head, rest = LOCAL.split("[trust]", 1)
    text = head + SIGSTORE_TRUST + "\n[source]" + rest.split("[source]", 1)[1]
    policy = load_policy(_write(tmp_path, text))
    assert policy.sigstore is not None
    with pytest.raises(QualificationError) as caught:
        _ = policy.ed25519
    assert caught.value.code is Code.POLICY_INVALID
    assert caught.value.exit_status == 2


def test_sigstore_trust_must_not_carry_ed25519_keys(tmp_path: Path) -> None:
    head, rest = LOCAL.split("[trust]", 1)
    text = (head + SIGSTORE_TRUST + 'keyring = "x.json"\n' + "\n[source]" + rest.split("[source]", 1)[1])
    _refused(_write(tmp_path, text))
