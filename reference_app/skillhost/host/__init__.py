"""The host: one ``SkillHost`` per session decides each skill's tier and runs it.

A bundled skill runs in this process after the catalog check (``run_bundled``);
an external one only after package validation and signature verification, in a
one-shot worker started confined (``run_external`` over ``spawn_confined``); an
``Authority`` narrows what the brokers offer for the session or task.
"""

from skillhost.host._authority import AUTHORITY_DENIED, Authority
from skillhost.host._bundled import BundledRefusalError, run_bundled
from skillhost.host._channel import spawn_confined
from skillhost.host._host import HostConfig, SkillHost
from skillhost.host._runner import (
    MAX_DURATION,
    MAX_FRAME,
    PROTOCOL_VERSION,
    Outcome,
    WorkerSelfTest,
    host_hardened,
    run_external,
    self_test,
)

__all__ = [
    "AUTHORITY_DENIED", "MAX_DURATION", "MAX_FRAME", "PROTOCOL_VERSION", "Authority", "BundledRefusalError",
    "HostConfig", "Outcome", "SkillHost", "WorkerSelfTest", "host_hardened", "run_bundled", "run_external",
    "self_test", "spawn_confined",
]  # fmt: skip
