"""Hostile numbers inside otherwise well-formed bundles: refused with a code, never a crash."""

from __future__ import annotations

import json

import pytest
from desktop_qualify.evidence_schemas import QualificationError
from desktop_qualify.qualify_trust._sigstore_root import load_pinned_trusted_root
from desktop_qualify.qualify_trust.sigstore import CertificateIdentity, verify_artifact_bundle
from sigstore_vectors import PRODUCTION_ROOT, PRODUCTION_SHA256, vectors_dir

BEACON = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/" \
         "extremely-dangerous-oidc-beacon.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"


def _mutated(change: str) -> tuple[bytes, bytes]:
    folder = vectors_dir("github-sigstore-bundles", "beacon_hashedrekord_v03")
    bundle = json.loads((folder / "bundle.sigstore.json").read_bytes())
    entry = bundle["verificationMaterial"]["tlogEntries"][0]
    if change == "integrated-time-overflow":
        entry["integratedTime"] = "4611686018427387904"
    elif change == "integer-past-digit-limit":
        text = json.dumps(bundle).replace('"logIndex": "' + entry["logIndex"] + '"', '"logIndex": ' + "9" * 5000)
        return text.encode(), (folder / "a.txt").read_bytes()
    return json.dumps(bundle).encode(), (folder / "a.txt").read_bytes()


@pytest.mark.parametrize("change", ["integrated-time-overflow", "integer-past-digit-limit"])
def test_hostile_number_is_a_rejection(change: str) -> None:
    root = load_pinned_trusted_root(PRODUCTION_ROOT, PRODUCTION_SHA256)
    bundle, artifact = _mutated(change)
    with pytest.raises(QualificationError) as refused:
        verify_artifact_bundle(bundle, artifact, root, None, certificate_identity=CertificateIdentity(BEACON, ISSUER),
                               what="hostile bundle")
    assert refused.value.exit_status == 1
    assert refused.value.code.value.startswith("QE_")


def test_untouched_bundle_still_verifies() -> None:
    root = load_pinned_trusted_root(PRODUCTION_ROOT, PRODUCTION_SHA256)
    folder = vectors_dir("github-sigstore-bundles", "beacon_hashedrekord_v03")
    verify_artifact_bundle((folder / "bundle.sigstore.json").read_bytes(), (folder / "a.txt").read_bytes(), root,
                           None, certificate_identity=CertificateIdentity(BEACON, ISSUER), what="beacon")
