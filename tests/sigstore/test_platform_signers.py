"""One signer identity per platform (docs/design.md §3.4): each case names the code it must produce.

Each platform's producer is a reusable workflow of its own, called by
qualify.yml; the release policy maps each platform, and the aggregate, to the
one file whose certificate (.9 and the SAN) may speak for it, and every
certificate must have been made under qualify.yml (.18).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import GitHubIdentity
from desktop_qualify.qualify_trust._sigstore_expected import (
    ExpectedWorkflow,
    SignerRole,
    check_identity,
    check_platform_signer,
)
from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate
from fulcio_certs import REPO, SHA, Claims, make_certificate
from sigstore_vectors import RELEASE_POLICY

WIM = Code.WORKFLOW_IDENTITY_MISMATCH
PLATFORMS = ("linux", "macos", "windows")
PRODUCER = {p: f".github/workflows/produce-{p}.yml" for p in PLATFORMS}


def _identity(claims: Claims) -> GitHubIdentity:
    return identity_from_certificate(make_certificate(claims))


def _code(call: object, *args: object) -> Code | None:
    try:
        call(*args)  # type: ignore[operator]
    except QualificationError as exc:
        return exc.code
    return None


def test_release_policy_names_one_signer_per_platform_and_the_aggregate(release_expected: ExpectedWorkflow) -> None:
    assert release_expected.workflow_uri == f"https://github.com/{REPO}/.github/workflows/qualify.yml@refs/heads/main"
    for platform in PLATFORMS:
        assert release_expected.signer_uri(platform) == f"https://github.com/{REPO}/{PRODUCER[platform]}@refs/heads/main"
    assert release_expected.signer_uri("aggregate") == \
        f"https://github.com/{REPO}/.github/workflows/aggregate.yml@refs/heads/main"
    assert len(release_expected.signer_uris("platform")) == 3


@pytest.mark.parametrize(("signed_by", "speaks_for"), list(itertools.product(PLATFORMS, PLATFORMS)))
def test_a_platform_job_speaks_for_its_own_platform_only(release_expected: ExpectedWorkflow, signed_by: str,
                                                         speaks_for: str) -> None:
    identity = _identity(Claims(signer=PRODUCER[signed_by]))
    check_identity(identity, release_expected, "platform")  # any platform's signer gets this far
    expected = None if signed_by == speaks_for else WIM
    assert _code(check_platform_signer, identity, release_expected, speaks_for) is expected


SIGNER_ATTACKS: list[tuple[str, Claims, SignerRole, Code]] = [
    ("the aggregate's identity signs a platform statement", Claims(), "platform", WIM),
    ("a platform job signs the aggregate", Claims(signer=PRODUCER["linux"]), "aggregate", WIM),
    ("a platform signer called by another workflow",
     Claims(signer=PRODUCER["macos"], workflow=".github/workflows/evil.yml"), "platform", WIM),
    ("a platform signer called by another workflow, for the aggregate",
     Claims(workflow=".github/workflows/evil.yml"), "aggregate", WIM),
    ("a lookalike signer file name", Claims(signer=PRODUCER["linux"] + ".evil.yml"), "platform", WIM),
    ("another reusable workflow of the repository", Claims(signer=".github/workflows/release.yml"), "platform", WIM),
    ("the signer from another repository",
     Claims(signer=PRODUCER["linux"], overrides={"9": f"https://github.com/{REPO}-evil/{PRODUCER['linux']}"
                                                       "@refs/heads/main"},
            san_uris=(f"https://github.com/{REPO}-evil/{PRODUCER['linux']}@refs/heads/main",)), "platform", WIM),
    ("the signer at a SHA ref (a remote-style call)",
     Claims(signer=PRODUCER["linux"], overrides={"9": f"https://github.com/{REPO}/{PRODUCER['linux']}@{SHA}"},
            san_uris=(f"https://github.com/{REPO}/{PRODUCER['linux']}@{SHA}",)), "platform", WIM),
    ("the signer file from another commit", Claims(signer=PRODUCER["linux"], overrides={"10": "f" * 40}),
     "platform", WIM),
    ("the caller's file from another commit (.19)", Claims(signer=PRODUCER["linux"], overrides={"19": "e" * 40}),
     "platform", WIM),
    ("SAN names another platform's signer than .9",
     Claims(signer=PRODUCER["linux"], san_uris=(f"https://github.com/{REPO}/{PRODUCER['macos']}@refs/heads/main",)),
     "platform", WIM),
]


@pytest.mark.parametrize(("claims", "role", "code"), [(c, r, k) for _, c, r, k in SIGNER_ATTACKS],
                         ids=[n for n, _, _, _ in SIGNER_ATTACKS])
def test_signer_attack_is_refused(release_expected: ExpectedWorkflow, claims: Claims, role: SignerRole,
                                  code: Code) -> None:
    assert _code(check_identity, _identity(claims), release_expected, role) is code


def test_a_platform_the_policy_has_no_signer_for_is_unknown(release_expected: ExpectedWorkflow) -> None:
    identity = _identity(Claims(signer=PRODUCER["linux"]))
    assert _code(check_platform_signer, identity, release_expected, "host") is Code.PLATFORM_UNKNOWN


def _policy_with(tmp_path: Path, signers: str | None, *, trust: str | None = None) -> Path:
    text = RELEASE_POLICY.read_text(encoding="utf-8")
    start = text.index("[producer.signers]")
    end = text.index("[trust]")
    replacement = "" if signers is None else f"[producer.signers]\n{signers}\n\n"
    text = text[:start] + replacement + text[end:]
    if trust is not None:
        start, end = text.index("[trust]"), text.index("[source]")
        text = text[:start] + "[trust]\n" + trust + "\n\n" + text[end:]
    (tmp_path / "sigstore").mkdir(exist_ok=True)
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return path


_OK = "\n".join(f'{p} = "{PRODUCER[p]}"' for p in PLATFORMS)
POLICY_CASES = [
    ("no signers in a sigstore policy", None, None, "names [producer.signers]"),
    ("two platforms share a signer", _OK.replace(PRODUCER["macos"], PRODUCER["linux"]) +
     '\naggregate = ".github/workflows/qualify.yml"', None, "a signer workflow of its own"),
    ("the aggregate signs as a platform", _OK + f'\naggregate = "{PRODUCER["windows"]}"', None,
     "the aggregate cannot sign as"),
    ("the caller is a platform's signer", _OK.replace(PRODUCER["linux"], ".github/workflows/qualify.yml") +
     '\naggregate = ".github/workflows/aggregate.yml"', None, "build config workflow cannot also be"),
    ("no aggregate signer", _OK, None, "signers.aggregate"),
    ("a signer outside .github/workflows", _OK.replace(PRODUCER["linux"], "produce-linux.yml") +
     '\naggregate = ".github/workflows/qualify.yml"', None, "signers.linux"),
    ("signers under an ed25519 policy", _OK + '\naggregate = ".github/workflows/qualify.yml"',
     'mode = "ed25519"\nkeyring = "k.json"\nplatform_key = "p.pem"\naggregate_key = "a.pem"',
     "an ed25519 policy signs with its keyring"),
]


@pytest.mark.parametrize(("signers", "trust", "reason"), [c[1:] for c in POLICY_CASES],
                         ids=[c[0] for c in POLICY_CASES])
def test_policy_with_a_bad_signer_map_is_refused(tmp_path: Path, signers: str | None, trust: str | None,
                                                 reason: str) -> None:
    path = _policy_with(tmp_path, signers, trust=trust)
    with pytest.raises(QualificationError) as refused:
        load_policy(path)
    assert refused.value.code is Code.POLICY_INVALID
    assert reason in refused.value.message


def test_policy_with_the_release_signer_map_loads(tmp_path: Path) -> None:
    path = _policy_with(tmp_path, _OK + '\naggregate = ".github/workflows/qualify.yml"')
    signers = load_policy(path).file.producer.signers
    assert signers is not None
    assert signers.model_dump() == {**PRODUCER, "aggregate": ".github/workflows/qualify.yml"}
