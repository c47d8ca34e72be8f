"""No confinement: the honest record of a stage that ran beside the producer.

Used only where the policy requires no confinement for the platform and no adapter can run here; the
evidence then says ``mechanism = "none"`` with no layers, and a policy that requires confinement refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._stage import ConfinedCommand, Confinement, ConfinementFacts, StageSandbox


class Unconfined(Confinement):
    """Runs the command as it is, and records that it had nothing."""

    mechanism = "none"

    def __init__(self, why: str) -> None:
        self._why = why

    def unavailable(self) -> str | None:
        """Always usable: it confines nothing."""
        return None

    def wrap(self, argv: Sequence[str], sandbox: StageSandbox, env: Mapping[str, str]) -> ConfinedCommand:
        """``argv`` unchanged; ``finish`` records no layer and why."""
        def finish() -> ConfinementFacts:
            return ConfinementFacts(sandbox.stage, "none", (), True, f"not confined: {self._why}"[:2000])

        return ConfinedCommand(argv=list(argv), env=dict(env), finish=finish)


__all__ = ["Unconfined"]
