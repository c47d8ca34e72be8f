"""Which adapter confines this job's app code: the platform's own, or an honest "none" where allowed."""

from __future__ import annotations

import logging

from desktop_qualify.evidence_schemas import Code, Platform, QualificationError

from ._stage import Confinement
from ._unconfined import Unconfined

_log = logging.getLogger(__name__)


def platform_confinement(platform: Platform) -> Confinement:
    """The platform's adapter (not yet checked for availability)."""
    if platform == "linux":
        from ._bubblewrap import BubblewrapConfinement  # noqa: PLC0415 - each platform loads only its own

        return BubblewrapConfinement()
    if platform == "macos":
        from ._macos import SandboxExecConfinement  # noqa: PLC0415

        return SandboxExecConfinement()
    from ._windows import JobObjectConfinement  # noqa: PLC0415

    return JobObjectConfinement()


def choose_confinement(platform: Platform, *, required: bool, adapter: Confinement | None = None) -> Confinement:
    """The platform's adapter when it can run here; otherwise refuse (``required``) or run unconfined, said.

    ``required``: the policy's ``[confinement]`` names layers for this platform, so a stage without them
    would be refused by the verifier anyway; the producer stops before running any app code instead.
    """
    chosen = adapter or platform_confinement(platform)
    why = chosen.unavailable()
    if why is None:
        return chosen
    if required:
        raise QualificationError(Code.CONFINEMENT_UNAVAILABLE, f"app code cannot be confined on this machine: {why}",
                                 hint="the policy's [confinement] requires it for this platform")
    _log.warning("app code runs unconfined (the policy does not require confinement): %s", why)
    return Unconfined(why)


__all__ = ["choose_confinement", "platform_confinement"]
