"""The install stage: the artifact's private copy installed into a fresh prefix by its installer kind's adapter."""

from __future__ import annotations

from ._grant import PrefixGrant, prefix_grant
from ._install import install, install_expected
from ._installers import SignatureRequirement

__all__ = ["PrefixGrant", "SignatureRequirement", "install", "install_expected", "prefix_grant"]
