"""The reference app's own output, parsed as the untrusted input it is.

The shapes here are the app's command-line contract (its `probe` and `journey`
commands print one line of JSON). They are validated strictly and bounded,
then copied into the evidence records.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from desktop_qualify.evidence_schemas import (
    MAX_APP_OUTPUT_BYTES,
    MAX_LIST,
    ErrnoName,
    GitSha,
    JsonBounds,
    LayerName,
    Record,
    Sha256Hex,
    load_json,
    validate_model,
)
from pydantic import BaseModel, Field

_Short = Annotated[str, Field(min_length=1, max_length=256)]
_StepId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
_SkillCode = Annotated[str, Field(pattern=r"^CC_SKILL_[A-Z_]{1,64}$")]


class AppLayer(Record):
    name: LayerName
    applied: bool
    detail: Annotated[str, Field(max_length=120)]


class AppError(Record):
    """What the app prints when it refuses (exit 3): its stable code and a bounded message."""

    kind: Literal["skillhost-error"]
    version: Literal[1]
    code: _SkillCode
    message: Annotated[str, Field(max_length=300)]


class AppProbe(Record):
    kind: Literal["skillhost-probe"]
    version: Literal[1]
    app_version: _Short
    build_sha: GitSha
    built_at: _Short
    platform: Literal["linux", "macos", "windows"]
    frozen: bool
    executable_sha256: Sha256Hex
    worker_entry_resolvable: bool
    catalog_verified: bool
    isolation_available: bool
    isolation_layers: list[AppLayer] = Field(max_length=16)


class AppJourneyStep(Record):
    id: _StepId
    expected: Literal["allow", "reject"]
    expected_code: _SkillCode | None
    observed: Literal["allow", "reject"]
    observed_code: _SkillCode | None
    passed: bool
    detail: Annotated[str, Field(max_length=400)]
    errno: ErrnoName | None


class AppJourney(Record):
    kind: Literal["skillhost-journey"]
    version: Literal[1]
    app_version: _Short
    build_sha: GitSha
    platform: Literal["linux", "macos", "windows"]
    host_pid: Annotated[int, Field(ge=0)]
    duration_ms: Annotated[int, Field(ge=0)]
    passed: bool
    steps: list[AppJourneyStep] = Field(max_length=MAX_LIST)
    isolation_layers: list[AppLayer] = Field(max_length=16)


M = TypeVar("M", bound=BaseModel)


def parse_app_output(model: type[M], stdout: bytes, *, what: str) -> M:
    """One line of JSON, bounded, strictly validated; raises QualificationError."""
    bounds = JsonBounds(max_bytes=MAX_APP_OUTPUT_BYTES, max_depth=8)
    return validate_model(model, load_json(stdout.strip(), what=what, bounds=bounds), what=what)
