"""Where the Sigstore tests find their data: the shared vectors, the pinned roots, the release policy.

A module with its own name (not conftest) so that `from ... import` cannot pick
up another suite's conftest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / ".." / "shared" / "vectors"
PRODUCTION_ROOT = REPO / "policies" / "sigstore" / "trusted_root.production.json"
STAGING_ROOT = REPO / "policies" / "sigstore" / "trusted_root.staging.json"
PRODUCTION_SHA256 = "6494e21ea73fa7ee769f85f57d5a3e6a08725eae1e38c755fc3517c9e6bc0b66"
STAGING_SHA256 = "81f5af777952d2c3955062ad56924c05ca916b5d49f3a0bce945faa475a8b1cc"
RELEASE_POLICY = REPO / "policies" / "release.toml"


def vectors_dir(*parts: str) -> Path:
    """A folder of the shared test vectors, or a skip saying why it is missing."""
    path = VECTORS.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(f"test vectors not present at {path.resolve()} "
                    "(they live beside the repository, in ../shared/vectors)")
    return path
