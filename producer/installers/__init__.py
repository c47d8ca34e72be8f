"""The install stage: the artifact's private copy installed into a fresh prefix by its installer kind's adapter."""

from __future__ import annotations

from ._install import install, install_expected

__all__ = ["install", "install_expected"]
