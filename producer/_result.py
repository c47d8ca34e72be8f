"""What a producer job (or its signing step) reports back: where its output went and which stages failed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from desktop_qualify.evidence_schemas import BuildRecord, InstallRecord, JourneyRecord, LaunchProbeRecord, UpdateRecord


@dataclass(frozen=True)
class ProduceResult:
    """What a producer job wrote: its statement (or unsigned run) and artifact, whether every stage passed, and
    which did not."""

    statement: Path
    archive: Path
    passed: bool
    failures: list[str]


class _Stages(Protocol):
    @property
    def build(self) -> BuildRecord: ...
    @property
    def install(self) -> InstallRecord: ...
    @property
    def launch_probe(self) -> LaunchProbeRecord: ...
    @property
    def journey(self) -> JourneyRecord: ...
    @property
    def update(self) -> UpdateRecord | None: ...


def failed_stages(stages: _Stages, *, signature_passed: bool | None = None) -> list[str]:
    """The stages whose record says it failed (the producer's summary; the verifier decides from the facts)."""
    repro = stages.build.reproduction
    signature = getattr(stages, "signature", None)
    signed = signature_passed if signature_passed is not None else signature is None or signature.passed
    checks = (("build reproduction", repro is None or repro.reproduced), ("signature", signed),
              ("install", stages.install.passed), ("launch probe", stages.launch_probe.passed),
              ("journey", stages.journey.passed), ("update", stages.update is None or stages.update.passed))
    return [name for name, ok in checks if not ok]


__all__ = ["ProduceResult", "failed_stages"]
