"""consumer/_anchor.py, the parts the bundle corpus refuses by code but never reads word for word.

A bundle's keyring checked against the auditor's (each refusal's code and message), the facets ``differences``
compares, the read-back anchor, the pre-check's digest prefix, and a hung git cut off by its timeout.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from desktop_qualify.consumer import _anchor
from desktop_qualify.consumer._anchor import (
    Anchor,
    KeyGrant,
    PolicyFacets,
    anchor_for,
    check_keys,
    differences,
    policy_facets,
    precheck_policy,
)
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import add_to_keyring

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "policies" / "release.toml"
SOURCE = Path("old.qualify-bundle.zip")
FACETS = PolicyFacets(trust="t", signers="s", journey="j")


def _keyring(path: Path, entries: list[tuple[str, list[str]]]) -> list[str]:
    """A keyring file holding one fresh key per (name, roles); returns their key ids in order."""
    return [add_to_keyring(path, name, Ed25519PrivateKey.generate().public_key(), roles)  # type: ignore[arg-type]
            for name, roles in entries]


def _bundled(keyring: Path, *, sigstore: object = None) -> Any:
    # check_keys reads the bundled policy's mode and its keyring's path.
    return SimpleNamespace(sigstore=sigstore, ed25519=SimpleNamespace(keyring=str(keyring)),
                           resolve=Path)


def _anchor_with(keys: dict[str, KeyGrant]) -> Anchor:
    return Anchor("a" * 64, FACETS, None, None, keys)


def _refusal(bundled: Any, anchor: Anchor) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        check_keys(bundled, anchor, SOURCE)
    return caught.value


def test_a_github_mode_bundle_under_a_local_policy_is_a_mode_mismatch(tmp_path: Path) -> None:
    refused = _refusal(_bundled(tmp_path / "none.json", sigstore=object()), _anchor_with({}))
    assert refused.code == Code.MODE_MISMATCH
    assert refused.message == f"bundle {SOURCE}: a GitHub-mode bundle audited under a local-mode policy"


def test_a_key_the_auditor_does_not_hold_is_named_by_its_short_id(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    (keyid,) = _keyring(ring, [("stranger", ["platform"])])
    refused = _refusal(_bundled(ring), _anchor_with({}))
    assert refused.code == Code.BUNDLE_UNANCHORED
    assert refused.message == (f"bundle {SOURCE}: its keyring holds key {keyid[:16]}, which the auditor's keyring "
                               "does not")


def test_a_renamed_key_names_both_names(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    long_name = "n" * 64  # the keyring's own cap on a name
    (keyid,) = _keyring(ring, [(long_name, ["platform"])])
    refused = _refusal(_bundled(ring), _anchor_with({keyid: KeyGrant("local-linux", frozenset({"platform"}))}))
    assert refused.code == Code.BUNDLE_UNANCHORED
    assert refused.message == (f"bundle {SOURCE}: its keyring names key {keyid[:16]} {'n' * 64!r}, the auditor's "
                               "keyring 'local-linux'")


@pytest.mark.parametrize(("granted", "extra", "given"), [
    (["platform"], "aggregate, verifier", "platform"),
    (["aggregate", "platform"], "verifier", "aggregate, platform"),
])
def test_a_role_the_auditor_withholds_is_named_with_the_roles_it_gives(tmp_path: Path, granted: list[str],
                                                                        extra: str, given: str) -> None:
    ring = tmp_path / "keyring.json"
    (keyid,) = _keyring(ring, [("local-linux", ["aggregate", "platform", "verifier"])])
    refused = _refusal(_bundled(ring), _anchor_with({keyid: KeyGrant("local-linux", frozenset(granted))}))
    assert refused.code == Code.BUNDLE_UNANCHORED
    assert refused.message == (f"bundle {SOURCE}: its keyring gives key 'local-linux' the role {extra}, which the "
                               f"auditor's keyring does not (it gives {given})")


def test_the_auditors_own_keys_and_roles_pass(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    ids = _keyring(ring, [("local-linux", ["platform"]), ("local-aggregate", ["aggregate"])])
    grants = {ids[0]: KeyGrant("local-linux", frozenset({"platform"})),
              ids[1]: KeyGrant("local-aggregate", frozenset({"aggregate", "verifier"}))}
    check_keys(_bundled(ring), _anchor_with(grants), SOURCE)


def test_the_read_back_anchor_accepts_only_the_auditors_policy_and_says_why() -> None:
    anchor = anchor_for(load_policy(RELEASE), exact_only=True)
    assert anchor.exact_only is True
    assert (anchor.repository, anchor.relative) == (None, None)
    assert anchor.no_history == "read-back accepts only the auditor's --policy"
    assert anchor.keys is None  # GitHub mode: no keyring


def test_the_precheck_names_the_bundled_policys_digest_prefix() -> None:
    digest = "0123456789abcdef" * 4
    anchor = Anchor("f" * 64, FACETS, None, None, None, no_history="WHY")
    with pytest.raises(QualificationError) as caught:
        precheck_policy(SimpleNamespace(sha256=digest), anchor, SOURCE)  # type: ignore[arg-type]
    assert caught.value.code == Code.BUNDLE_UNANCHORED
    assert caught.value.message == (f"bundle {SOURCE}: its policy (0123456789ab) is not the auditor's --policy, and "
                                    "no history can anchor it: WHY")


def test_the_trust_facet_is_the_mode_and_the_pinned_roots_digest() -> None:
    file = load_policy(RELEASE).file
    pinned = file.trust.trusted_root_sha256  # type: ignore[union-attr]
    assert len(pinned) == 64
    assert json.loads(policy_facets(file).trust) == [file.trust.mode, pinned]


def test_the_signers_facet_is_the_signers_the_repository_and_the_workflow() -> None:
    file = load_policy(RELEASE).file
    facet = json.loads(policy_facets(file).signers)
    assert set(facet) == {"signers", "repository", "workflow"}
    assert facet["repository"] == file.producer.repository
    assert facet["workflow"] == file.producer.workflow
    assert facet["signers"] == json.loads(file.producer.model_dump_json(include={"signers"}))["signers"]


@pytest.mark.parametrize(("changed", "said"), [
    ({"signers": "other"}, "signers"),
    ({"journey": "other"}, "journey"),
    ({"trust": "other", "signers": "other", "journey": "other"}, "trust root, signers, journey"),
])
def test_differences_name_each_facet_that_differs(changed: dict[str, str], said: str) -> None:
    file = load_policy(RELEASE).file
    facets = policy_facets(file)
    mine = PolicyFacets(**{**facets.__dict__, **changed})
    line = differences(SimpleNamespace(file=file), Anchor("a" * 64, mine, None, None, None), None)  # type: ignore[arg-type]
    assert line == f"the anchored policy differs from the auditor's in: {said}"


@pytest.mark.skipif(os.name != "posix" or shutil.which("sh") is None, reason="a fake git is a POSIX shell script")
def test_a_hung_git_is_cut_off_by_the_timeout_and_reads_as_no_history(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    # exec: the timeout kills the one process holding the pipe; it would answer "late" after 5 s.
    late = "import time; time.sleep(5); print('late')"
    fake.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(late)}\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(_anchor, "_GIT_TIMEOUT", 0.3)
    assert _anchor._git(tmp_path, "rev-parse", "--show-toplevel") is None
