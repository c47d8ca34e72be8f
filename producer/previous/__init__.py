"""The last qualified release the update journey starts from: its bundle audited, then its artifact.

The release read from GitHub (``previous_from_release``) loads on first use: a local run, given the
bundle and the artifact, pays for no GitHub client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_qualify.qualify_lazy import lazy_attributes

from ._previous import AuditedPrevious, PreviousInput, audit_previous

if TYPE_CHECKING:
    from ._previous_github import previous_from_release

__getattr__ = lazy_attributes(__name__, {"previous_from_release": "._previous_github"})

__all__ = ["AuditedPrevious", "PreviousInput", "audit_previous", "previous_from_release"]
