"""Fixtures for the Sigstore tests."""

from __future__ import annotations

import pytest
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_trust._sigstore_expected import ExpectedWorkflow
from desktop_qualify.qualify_trust._sigstore_root import load_pinned_trusted_root
from desktop_qualify.qualify_trust.sigstore import PinnedTrustedRoot
from sigstore_vectors import PRODUCTION_ROOT, PRODUCTION_SHA256, RELEASE_POLICY


@pytest.fixture(scope="session")
def production_root() -> PinnedTrustedRoot:
    return load_pinned_trusted_root(PRODUCTION_ROOT, PRODUCTION_SHA256)


@pytest.fixture(scope="session")
def release_expected() -> ExpectedWorkflow:
    return ExpectedWorkflow.from_policy(load_policy(RELEASE_POLICY))
