"""The pinned trusted root: exact bytes, exact digest, no refresh."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._sigstore_root import load_pinned_trusted_root
from desktop_qualify.qualify_trust.sigstore import load_trusted_root, trusted_root_from_bytes
from sigstore_vectors import (
    PRODUCTION_ROOT,
    PRODUCTION_SHA256,
    RELEASE_POLICY,
    STAGING_ROOT,
    STAGING_SHA256,
    vectors_dir,
)


def test_committed_roots_are_the_sigstore_wheel_copies() -> None:
    bundles = vectors_dir("github-sigstore-bundles")
    assert PRODUCTION_ROOT.read_bytes() == (bundles / "trusted_root.production.json").read_bytes()
    assert STAGING_ROOT.read_bytes() == (bundles / "trusted_root.staging.json").read_bytes()


def test_release_policy_pins_the_committed_root() -> None:
    policy = load_policy(RELEASE_POLICY)
    trust = policy.sigstore
    assert trust is not None
    path = policy.resolve(trust.trusted_root)
    assert path == PRODUCTION_ROOT.resolve()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == trust.trusted_root_sha256 == PRODUCTION_SHA256
    root = load_pinned_trusted_root(path, trust.trusted_root_sha256)
    assert root.sha256 == PRODUCTION_SHA256
    assert root.trusted_root.get_fulcio_certs()


def test_staging_root_loads_under_its_pin() -> None:
    assert load_pinned_trusted_root(STAGING_ROOT, STAGING_SHA256).sha256 == STAGING_SHA256


def test_another_digest_is_refused() -> None:
    with pytest.raises(QualificationError) as info:
        load_pinned_trusted_root(PRODUCTION_ROOT, STAGING_SHA256)
    assert info.value.code is Code.POLICY_INVALID
    assert "pinned" in info.value.message


def test_one_changed_byte_is_refused(tmp_path: Path) -> None:
    data = bytearray(PRODUCTION_ROOT.read_bytes())
    data[-2] = ord(" ")  # still valid JSON, different bytes
    changed = tmp_path / "root.json"
    changed.write_bytes(bytes(data))
    with pytest.raises(QualificationError) as info:
        load_pinned_trusted_root(changed, PRODUCTION_SHA256)
    assert info.value.code is Code.POLICY_INVALID


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b'{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1"',
        b'{"mediaType": "x", "mediaType": "y"}',
        b'{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.9", "tlogs": []}',
        b'{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs": NaN}',
        b"{}",
        b"\xff\xfe",
        b"[" * 100 + b"]" * 100,
    ],
    ids=["empty", "array", "truncated", "duplicate key", "unknown version", "NaN", "empty object", "not utf-8", "deep"],
)
def test_unusable_root_is_a_policy_error(data: bytes) -> None:
    with pytest.raises(QualificationError) as info:
        trusted_root_from_bytes(data, what="root")
    assert info.value.code is Code.POLICY_INVALID


def test_missing_and_oversized_roots_are_policy_errors(tmp_path: Path) -> None:
    with pytest.raises(QualificationError) as info:
        load_pinned_trusted_root(tmp_path / "absent.json", PRODUCTION_SHA256)
    assert info.value.code is Code.POLICY_INVALID
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (300 * 1024) + b"{}")
    with pytest.raises(QualificationError) as info:
        load_trusted_root(big)
    assert info.value.code is Code.POLICY_INVALID
    assert "limit" in info.value.message
