"""Loading a policy: bounded, TOML, strict, platform resolution, trust-mode access."""

from __future__ import annotations

import hashlib
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
        LOCAL.replace("require_clean_worktree = false", "require_clean_worktree = false\nextra = 1"),
        LOCAL.replace("require_clean_worktree = false", 'require_clean_worktree = "no"'),
        LOCAL.replace("version = 1", "version = 2"),
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
    ],
    ids=["bad-toml", "unknown-table", "unknown-key", "unknown-nested-key", "wrong-type", "version", "ref-not-main",
         "repository", "workflow-path", "no-platforms", "unknown-platform", "unknown-signing-state",
         "limit-out-of-range", "unknown-trust-mode", "bad-step-id", "step-without-expectation",
         "step-as-bare-string", "step-unknown-outcome", "reject-without-code", "allow-with-code",
         "code-not-a-skill-code", "step-unknown-key", "old-required-steps-list", "no-steps", "linux-notarized",
         "windows-notarized"],
)
def test_invalid_policies_are_refused(text: str, tmp_path: Path) -> None:
    _refused(_write(tmp_path, text))


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
