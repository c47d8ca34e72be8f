"""`qualify verify-vsa`: the gate's level in GitHub mode, a policy read under --root, an artifact that cannot be
hashed, and the exact end of what it prints (mutants that survived test_vsa.py and test_verify_vsa_messages.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from desktop_qualify.consumer._verify_vsa import artifact_digest, check_level, gate_level
from desktop_qualify.evidence_schemas import VSA_LEVELS, Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from support.evidence_factory import Evidence, make_evidence
from test_vsa import Qualify, _verify_vsa, _with_verifier_key, _written

ROOT = Path(__file__).resolve().parents[2]


def test_in_github_mode_the_gates_level_is_the_release_gates() -> None:
    policy = load_policy(ROOT / "policies" / "release.toml")
    assert policy.sigstore is not None
    assert gate_level(policy) == VSA_LEVELS["release-gate"] == "DESKTOP_QUALIFIED_RELEASE_GATE"
    assert check_level(None, policy) == "DESKTOP_QUALIFIED_RELEASE_GATE"


def test_in_local_mode_the_gates_level_is_the_local_checks() -> None:
    policy = load_policy(ROOT / "policies" / "local.toml")
    assert gate_level(policy) == "DESKTOP_QUALIFIED_LOCAL_CHECK"


def test_an_artifact_that_cannot_be_hashed_is_a_usage_refusal_naming_it(tmp_path: Path) -> None:
    artifact = tmp_path / "app.bin"
    artifact.write_bytes(b"0123456789")
    policy = SimpleNamespace(file=SimpleNamespace(limits=SimpleNamespace(max_candidate_bytes=4)))
    with pytest.raises(QualificationError) as caught:
        artifact_digest(policy, artifact)  # type: ignore[arg-type]
    assert caught.value.code == Code.USAGE
    assert caught.value.message == (f"--artifact {artifact}: cannot be hashed (10 bytes, above the policy's [limits] "
                                    "max_candidate_bytes (4))")


@pytest.fixture
def committed_chain(tmp_path: Path) -> Evidence:
    # The policy's paths are relative to its folder, as a committed policy's are.
    evidence = make_evidence(tmp_path, committed_layout=True)
    _with_verifier_key(evidence)
    return evidence


def test_a_policy_copied_out_of_its_checkout_is_read_under_root(qualify: Qualify, committed_chain: Evidence,
                                                                 tmp_path: Path) -> None:
    vsa = _written(qualify, committed_chain, tmp_path)
    copy = tmp_path / "elsewhere" / "copied" / committed_chain.policy_path.name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(committed_chain.policy_path, copy)
    # Without --root its keyring path resolves beside the copy, where there is none.
    assert _verify_vsa(qualify, committed_chain, vsa, policy=copy).status != 0
    done = qualify(["verify-vsa", "--policy", str(copy), "--root", str(committed_chain.root), "--artifact",
                    str(committed_chain.artifact_paths[0]), str(vsa)])
    assert done.status == 0, done.text
    assert "VSA ACCEPTED" in done.out


def test_the_acceptance_ends_with_one_newline(qualify: Qualify, committed_chain: Evidence, tmp_path: Path) -> None:
    vsa = _written(qualify, committed_chain, tmp_path)
    done = _verify_vsa(qualify, committed_chain, vsa)
    assert done.status == 0, done.text
    policy = committed_chain.policy
    assert done.out.endswith(f"under {policy.path.name} (sha256 {policy.sha256[:16]})\n")
    assert not done.out.endswith("\n\n")
