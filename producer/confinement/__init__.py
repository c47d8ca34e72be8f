"""Confinement of app-controlled code: one adapter per platform behind one interface, and the stage runner."""

from desktop_qualify.evidence_schemas import APP_STAGES, AppStage

from ._choose import choose_confinement, platform_confinement
from ._run import StageRunner, producer_python
from ._stage import (
    ConfinedCommand,
    Confinement,
    ConfinementError,
    ConfinementFacts,
    StageSandbox,
    exposes,
    inside,
)
from ._unconfined import Unconfined

__all__ = ["APP_STAGES", "AppStage", "ConfinedCommand", "Confinement", "ConfinementError", "ConfinementFacts",
           "StageRunner", "StageSandbox", "Unconfined", "choose_confinement", "exposes", "inside",
           "platform_confinement", "producer_python"]
