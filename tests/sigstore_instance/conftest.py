"""Fixtures for the test Sigstore instance's own tests.

Every test here runs with outbound connections refused (loopback excepted),
so a pass proves that verification needed no network.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sigstore.verify import policy
from support.sigstore_instance import GitHubIdentity, TestSigstoreInstance

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if host not in _LOOPBACK:
            raise OSError(f"network access attempted in an offline test: {address!r}")
        real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """`<repo>/../shared/vectors`: real GitHub bundles to compare shapes with."""
    path = Path(__file__).resolve().parents[2] / ".." / "shared" / "vectors"
    if not path.is_dir():
        pytest.skip(f"test vectors not found at {path} (the shared vectors folder is absent)")
    return path


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore-a"), name="instance-a")


@pytest.fixture(scope="module")
def other_instance(tmp_path_factory: pytest.TempPathFactory) -> TestSigstoreInstance:
    return TestSigstoreInstance(tmp_path_factory.mktemp("sigstore-b"), name="instance-b")


@pytest.fixture
def identity() -> GitHubIdentity:
    return GitHubIdentity(sha="9f2c4e1a7b3d5f60718293a4b5c6d7e8f9a0b1c2", run_id=987654321, attempt=2)


def _github_policy(ident: GitHubIdentity) -> policy.AllOf:
    return policy.AllOf(
        [
            policy.Identity(identity=ident.san_uri, issuer=ident.issuer),
            policy.OIDCIssuerV2(ident.issuer),
            policy.OIDCBuildSignerURI(ident.san_uri),
            policy.OIDCBuildSignerDigest(ident.sha),
            policy.OIDCRunnerEnvironment(ident.runner_environment),
            policy.OIDCSourceRepositoryURI(f"https://github.com/{ident.repository}"),
            policy.OIDCSourceRepositoryDigest(ident.sha),
            policy.OIDCSourceRepositoryRef(ident.ref),
            policy.OIDCBuildConfigURI(ident.build_config_uri),
            policy.OIDCBuildTrigger(ident.trigger),
            policy.OIDCRunInvocationURI(ident.run_invocation_uri),
            policy.GitHubWorkflowRepository(ident.repository),
            policy.GitHubWorkflowSHA(ident.sha),
        ]
    )


@pytest.fixture
def github_policy() -> Callable[[GitHubIdentity], policy.AllOf]:
    """The checks a GitHub-mode consumer makes, from sigstore's public policies only."""
    return _github_policy
