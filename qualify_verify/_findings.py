"""Accumulated reasons: verification reports every problem it can see, not just the first."""

from __future__ import annotations

from dataclasses import dataclass, field

from desktop_qualify.evidence_schemas import Code, Platform, QualificationError, Reason


@dataclass
class Findings:
    reasons: list[Reason] = field(default_factory=list)

    def add(self, code: Code, message: str, platform: Platform | None = None) -> None:
        reason = Reason(code=code, message=message[:4000], platform=platform)
        if reason not in self.reasons:
            self.reasons.append(reason)

    def add_error(self, exc: QualificationError, platform: Platform | None = None) -> None:
        self.add(exc.code, exc.message, platform)

    @property
    def ok(self) -> bool:
        return not self.reasons
