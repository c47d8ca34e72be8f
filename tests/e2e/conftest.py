"""One real local chain per test session: the PyInstaller bundle is built once.

The app and the policies are copied from this work tree into a fresh git
repository on `main`, so the end-to-end run tests the code as it is now and
does not depend on the outer checkout's branch or cleanliness; the chain runs
under that repository's own `policies/local.toml`, as `nox -s qualify` does.
"""

from __future__ import annotations

import pytest
from support.chain import Chain, make_app_repo, qualify


@pytest.fixture(scope="session")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    root = tmp_path_factory.mktemp("chain")
    source_repo = root / "repo"
    # Laid out as a fresh clone: the committed policies/local.toml, unchanged, keys in .qualify/.
    sha = make_app_repo(source_repo, with_policies=True)
    policy = source_repo / "policies" / "local.toml"
    out = root / "out"
    logs = {"keygen": qualify("keygen", "--policy", policy)}
    logs["produce"] = qualify("produce", "--policy", policy, "--platform", "linux", "--out", out,
                              "--run-id", "e2e-run-1")
    logs["aggregate"] = qualify("aggregate", "--policy", policy, "--evidence", out / "evidence",
                                "--out", out / "evidence")
    for name, done in logs.items():
        assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return Chain(root, policy, out, source_repo, sha, logs)
