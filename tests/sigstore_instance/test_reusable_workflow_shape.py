"""The test instance shapes a reusable workflow's certificate the way Fulcio does.

The real `attest_reusable_workflow` bundle (cli/cli's test data, signed by
github/artifact-attestations-workflows' attest.yml called from
malancas/attest-demo's shared.yml) is the reference: the SAN and .9 name the
reusable (called) file, .18 the caller, .19 the caller's commit, and the
repository, ref and run are the caller's run.
"""

from __future__ import annotations

import json
from pathlib import Path

from cryptography import x509
from desktop_qualify.qualify_trust._sigstore_identity import identity_from_certificate
from sigstore.models import Bundle
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

_ARC = "1.3.6.1.4.1.57264.1."
# The v2 claims Fulcio writes for GitHub Actions that this project reads or pins.
_READ = ("8", "9", "10", "11", "12", "13", "14", "18", "19", "20", "21")


def _leaf(raw: bytes) -> x509.Certificate:
    return Bundle.from_json(raw).signing_certificate


def _arcs(certificate: x509.Certificate) -> set[str]:
    return {e.oid.dotted_string.removeprefix(_ARC) for e in certificate.extensions
            if e.oid.dotted_string.startswith(_ARC)}


def test_real_reusable_workflow_certificate_names_the_called_file_and_the_caller(vectors_dir: Path) -> None:
    folder = vectors_dir / "github-sigstore-bundles" / "attest_reusable_workflow"
    leaf = _leaf((folder / "reusable-workflow-attestation.sigstore.json").read_bytes())
    real = identity_from_certificate(leaf)
    assert real.san_uri == real.build_signer_uri
    assert real.build_signer_uri.startswith("https://github.com/github/artifact-attestations-workflows/"
                                            ".github/workflows/attest.yml@")
    assert real.build_config_uri == "https://github.com/malancas/attest-demo/.github/workflows/shared.yml@refs/heads/main"
    assert real.source_repository_uri == "https://github.com/malancas/attest-demo"
    assert real.build_config_digest == real.source_repository_digest
    assert set(_READ) <= _arcs(leaf)


def test_instance_reusable_certificate_has_the_real_shape(instance: TestSigstoreInstance, vectors_dir: Path) -> None:
    folder = vectors_dir / "github-sigstore-bundles" / "attest_reusable_workflow"
    real_leaf = _leaf((folder / "reusable-workflow-attestation.sigstore.json").read_bytes())
    who = GitHubIdentity(signer_workflow=".github/workflows/produce-macos.yml")
    ours_leaf = _leaf(instance.issue_dsse_bundle(json.dumps({}).encode(), extensions=who.extensions,
                                                 san_uri=who.san_uri))
    ours = identity_from_certificate(ours_leaf)
    # Same claims present (the real one has more informational ones: .15-.17, .22).
    assert set(_READ) <= _arcs(ours_leaf) <= _arcs(real_leaf)
    assert ours.san_uri == ours.build_signer_uri == (
        "https://github.com/desktop-qualify/desktop-qualify/.github/workflows/produce-macos.yml@refs/heads/main")
    assert ours.build_config_uri == (
        "https://github.com/desktop-qualify/desktop-qualify/.github/workflows/qualify.yml@refs/heads/main")
    # A local reusable workflow runs at the caller's commit: .10, .13 and .19 are the one SHA.
    assert ours.build_signer_digest == ours.source_repository_digest == ours.build_config_digest == who.sha
    assert (ours.source_repository_ref, ours.build_trigger) == (who.ref, who.trigger)


def test_a_top_level_job_signs_as_its_own_build_config(instance: TestSigstoreInstance) -> None:
    who = GitHubIdentity()
    ours = identity_from_certificate(_leaf(instance.issue_dsse_bundle(b"{}", extensions=who.extensions,
                                                                       san_uri=who.san_uri)))
    assert ours.build_signer_uri == ours.build_config_uri == who.build_config_uri
