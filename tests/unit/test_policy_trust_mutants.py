"""From a local policy's [trust] section to the signer of each role, exactly.

``signer_for`` picks the key a job signs with by role; a key of the wrong role signs statements the verifier then
refuses far from the cause. These tests sign with each role's signer and verify with the policy's own verifier under
that role (the keyring names the signer), and hold the refusal of a role the policy names no key for to its code,
message and hint. Written for the mutants of ``qualify_trust._policy_trust`` that survived the suite
(docs/mutation.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust import signer_for, verifier_for
from support.evidence_factory import make_keys, policy_text


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(policy_text(make_keys(tmp_path / "keys")), encoding="utf-8")
    return path


@pytest.mark.parametrize(("role", "name"), [("platform", "local-platform"), ("aggregate", "local-aggregate")])
def test_each_role_signs_with_its_own_key(role: str, name: str, policy_path: Path) -> None:
    policy = load_policy(policy_path)
    envelope = signer_for(policy, role).sign_statement(b'{"a statement": true}')  # type: ignore[arg-type]
    verified = verifier_for(policy).verify_statement(envelope, role=role, what="statement")  # type: ignore[arg-type]
    assert verified.signer.name == name
    assert verified.payload == b'{"a statement": true}'


def test_a_role_the_policy_names_no_key_for_is_refused_with_what_to_add(policy_path: Path) -> None:
    policy = load_policy(policy_path)
    with pytest.raises(QualificationError) as caught:
        signer_for(policy, "verifier")
    assert (caught.value.code, caught.value.message) == (
        Code.POLICY_INVALID, f"{policy.path}: [trust] names no verifier_key")
    assert caught.value.hint == ("add verifier_key to [trust] (policies/local.toml shows it) and run "
                                 "'qualify keygen --policy FILE'")
